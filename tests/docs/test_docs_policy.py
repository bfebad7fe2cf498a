"""docs/policy.md runs as written: its policy file, its checks, its table and its stop."""

from __future__ import annotations

from helpers import ROOT
from helpers.pages import Session


def test_the_policy_page_runs_as_written(session: Session) -> None:
    """Every command of docs/policy.md prints what the page shows (its installed policy the
    test's own, shown by the real path)."""
    session.run_page("policy.md")


def test_the_policy_page_is_linked_where_the_other_pages_are() -> None:
    """The README's list of pages names docs/policy.md."""
    readme = (ROOT / "README.md").read_text()
    assert "(docs/policy.md)" in readme
