"""The benchmark scripts run (in quick mode, so they cannot rot); their times are not judged."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parent.parent / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_loop_overhead_benchmark_reports_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quick prints the table and writes the same rows as JSON."""
    out = tmp_path / "loop.json"
    assert _load("loop_overhead").main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert set(report["rows"]) == {"hand-written loop", "LoopExecutor.run", "LoopExecutor.arun"}
    for name, row in report["rows"].items():
        assert name in printed
        assert row["per_turn_us"] > 0
