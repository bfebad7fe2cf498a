"""docs/testing.md runs as a reader would run it."""

from __future__ import annotations

import os

from conftest import Place
from helpers.pages import Session


def test_the_testing_page_runs_as_written(place: Place, session: Session) -> None:
    """The budget test it shows passes against a LoopbackServer, through the real client."""
    project = place.home / "project"
    project.mkdir()
    os.chdir(project)
    session.run_page("testing.md")
    assert (project / "test_budget.py").is_file()
