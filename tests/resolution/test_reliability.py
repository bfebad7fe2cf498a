"""Resolution under concurrent change, and the loop executor over 10,000 runs.

The work is done by bench/reliability.py, which also measures; here it runs
in a small size and every result is checked. Nothing here judges speed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place
from helpers import BENCH


def _bench() -> ModuleType:
    path = BENCH / "reliability.py"
    spec = importlib.util.spec_from_file_location("reliability", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _bench()


def test_eight_threads_resolve_while_the_file_and_environment_change(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every result is one version whole, never older than one seen before, never stale."""
    monkeypatch.setenv(bench.TOOLS_VAR, "1")  # restored after the test, with the cost variable
    monkeypatch.delenv(bench.COST_VAR, raising=False)

    report = bench.stress(place.work, threads=8, versions=60)

    assert report.problems == []
    assert report.resolutions > 0
    assert os.environ[bench.TOOLS_VAR] == "61"


def test_ten_thousand_runs_do_not_grow_memory() -> None:
    """Faults and budget stops alike, 10,000 runs leave no objects behind and keep their lists."""
    report = bench.soak(10_000, warmup=300, trace=False)

    assert report.problems == []
    assert sum(report.by_reason.values()) == 10_000
    assert set(report.by_reason) == {"completed", "max_steps", "error", "refused"}
    # a leak of one object per run would add 10,000
    assert report.objects_after_runs - report.objects_after_warmup < 500


def _tree(*roots: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``roots``: its mode, size and modification time."""
    found = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            st = path.lstat()
            found[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def test_resolve_explain_check_and_run_write_no_file(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """With every source in place, no command but an --events log adds or changes a file."""
    place.write(".budgetconf/settings.json", '{"loop": {"max_steps": 9}}', base=place.home)
    place.write(".budgetconf/profiles/fast.json", '{"loop": {"max_steps": 8}}', base=place.home)
    place.write("settings.toml", "[loop]\nmax_steps = 7\n")
    place.write(
        "wf.yaml", "loop: {max_steps: 6}\nsteps:\n  - name: review\n    loop: {max_steps: 5}\n"
    )
    place.write("model.json", '{"responses": [{"tool_calls": [{"name": "echo"}]}]}')
    options = ["--profile", "fast", "--workflow", "wf.yaml", "--step", "review"]
    before = _tree(place.work, place.home)

    budgetconf.resolve(env={}, profile="fast", workflow="wf.yaml", step="review")
    codes = [main(["explain", *options, "--format", fmt]) for fmt in ("table", "json", "toml")]
    codes.append(main(["check", *options]))
    codes.append(main(["run", *options, "--model", "model.json", "go"]))
    codes.append(main(["run", *options, "--model", "model.json", "--output", "json", "go"]))
    capsys.readouterr()

    assert codes == [0, 0, 0, 0, 2, 2]
    assert _tree(place.work, place.home) == before
