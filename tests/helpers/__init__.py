"""The tests' own helpers: doubles, servers, drivers and writers shared by the test folders,
and where the checkout's parts are."""

from __future__ import annotations

from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
DATA: Final = ROOT / "tests" / "data"
DOCS: Final = ROOT / "docs"
BENCH: Final = ROOT / "bench"
