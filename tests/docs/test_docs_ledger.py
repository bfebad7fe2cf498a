"""docs/ledger.md runs as a reader would run it: in a folder under home, each block in order."""

from __future__ import annotations

import os

from conftest import Place
from helpers.pages import Session


def test_the_ledger_page_runs_as_written(place: Place, session: Session) -> None:
    """The settings, the stop at the scope's maximum, ledger status and runs, the Python API."""
    fleet = place.home / "fleet"
    fleet.mkdir()
    os.chdir(fleet)
    session.run_page("ledger.md")
    assert (fleet / "ledger.db").exists()
