"""docs/prices.md runs as a reader would run it: in a project folder under home, in order."""

from __future__ import annotations

import os

from conftest import Place
from helpers.pages import Session


def test_the_prices_page_runs_as_written(place: Place, session: Session) -> None:
    """A cost budget against a priced model, its price's source, an unknown model refused, and
    a price set in settings.toml."""
    project = place.home / "project"
    project.mkdir()
    os.chdir(project)
    session.run_page("prices.md")
    assert (project / "agent.py").is_file()
