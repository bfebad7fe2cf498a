"""docs/policy.md runs as written: its policy file, its checks, its table and its stop."""

from __future__ import annotations

import pytest

from conftest import Place
from helpers import ROOT
from helpers.pages import Session

INSTALLED = "/etc/budgetconf/policy.json"


class PolicySession(Session):
    """A page session whose /etc/budgetconf/policy.json is the test's own installed policy.

    The page names the real path; the test writes and reads ``place.policy``
    in its place, and shows it by the real path, so no test touches /etc.
    """

    def write(self, name: str, text: str) -> None:
        if name == INSTALLED:
            self.place.policy.parent.mkdir(parents=True, exist_ok=True)
            self.place.policy.write_text(text, encoding="utf-8")
            return
        super().write(name, text)

    def execute(self, command: str) -> str:
        shown = super().execute(command.replace(INSTALLED, str(self.place.policy)))
        return shown.replace(str(self.place.policy), INSTALLED)


def test_the_policy_page_runs_as_written(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command of docs/policy.md prints what the page shows."""
    PolicySession(place, monkeypatch, capsys).run_page("policy.md")


def test_the_policy_page_is_linked_where_the_other_pages_are() -> None:
    """The README's list of pages names docs/policy.md."""
    readme = (ROOT / "README.md").read_text()
    assert "(docs/policy.md)" in readme
