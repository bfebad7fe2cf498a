"""docs/ledger.md runs as a reader would run it: in a folder under home, each block in order."""

from __future__ import annotations

import os

from test_docs import Session, session  # noqa: F401  # the fixture, for the page's session

from conftest import Place


def test_the_ledger_page_runs_as_written(place: Place, session: Session) -> None:  # noqa: F811
    """The settings, the stop at the scope's maximum, ledger status and runs, the Python API."""
    fleet = place.home / "fleet"
    fleet.mkdir()
    os.chdir(fleet)
    session.run_page("ledger.md")
    assert (fleet / "ledger.db").exists()
