"""docs/telemetry.md runs as a reader would run it."""

from __future__ import annotations

import os

from conftest import Place
from helpers.pages import Session


def test_the_telemetry_page_runs_as_written(place: Place, session: Session) -> None:
    """The console exporter prints the run span with its budget and its stop."""
    project = place.home / "project"
    project.mkdir()
    os.chdir(project)
    session.run_page("telemetry.md")
    assert (project / "traced.py").is_file()
