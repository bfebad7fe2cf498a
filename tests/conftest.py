"""Every test runs in an empty working directory with an empty home and no budget variables."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from budgetconf.sources import _files


@dataclass
class Place:
    """Where a test runs: ``work`` is the cwd, ``home`` is $HOME."""

    work: Path
    home: Path

    @property
    def budgetconf_home(self) -> Path:
        return self.home / ".budgetconf"

    def write(self, relative: str, text: str, *, base: Path | None = None) -> Path:
        """Write ``text`` to ``relative`` under ``base`` (the cwd by default)."""
        path = (base or self.work) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the expected outputs under tests/data/golden from the current code",
    )


@pytest.fixture(autouse=True)
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    for name in list(os.environ):
        if name.startswith(("BUDGETCONF_", "OPENDOT_", "PRAISONAI_", "NO_COLOR", "COLUMNS")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    yield Place(work, home)
    _files._cache.clear()
