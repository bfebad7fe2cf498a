"""The benchmark scripts run (in quick mode, so they cannot rot); their times are not judged."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from helpers import BENCH


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
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
    assert set(report["rows"]) == {
        "hand-written loop",
        "LoopExecutor.run",
        "LoopExecutor.arun",
        "LoopExecutor.run, as a sub-agent",
        "LoopExecutor.run, reporting usage",
        "LoopExecutor.run, with a priced cost budget",
        "LoopExecutor.run, priced by calc_price",
    }
    for name, row in report["rows"].items():
        assert name in printed
        assert row["per_turn_us"] > 0
    assert "as a sub-agent: " in printed
    assert "per turn over LoopExecutor.run (best" in printed
    for name in ("as a sub-agent", "with a priced cost budget", "priced by calc_price"):
        assert isinstance(report["rows"][f"LoopExecutor.run, {name}"]["over_per_turn_us"], float)


IN_PROCESS = [
    "resolve(), warm",
    "resolve(), warm, with a three-key table set",
    "resolve(), warm, with a policy file",
    "resolve(), warm: files written a moment ago",
    "resolve(), cold: project file changed",
    'factory("agent.max_steps", preset="opendot")()',
    'floor: int(os.environ.get("OPENDOT_MAX_STEPS", "40"))',
    "dynaconf: Dynaconf(...).loop.max_steps",
    "pydantic-settings: Settings().loop.max_steps",
    "json.load(settings.json)",
    "tomllib.load(settings.toml)",
    "yaml.safe_load(workflow.yaml)",
]
START_UP = [
    "start-up: python -c pass",
    'start-up: python -c "import budgetconf"',
    "start-up: import budgetconf, factory(...)()",
    "start-up: budgetconf explain --format json",
    "start-up: budgetconf explain (table)",
]
LOOP = [
    "loop: hand-written loop, per turn",
    "loop: LoopExecutor.run, per turn",
    "loop: LoopExecutor.arun, per turn",
    "loop: LoopExecutor.run, as a sub-agent, per turn",
    "loop: LoopExecutor.run, reporting usage, per turn",
    "loop: LoopExecutor.run, with a priced cost budget, per turn",
    "loop: LoopExecutor.run, priced by calc_price, per turn",
]
SCALE = [
    *(
        f"scale: {fields:,} fields × {size} source{'s' if size > 1 else ''}"
        for fields in (10, 100, 1000)
        for size in range(1, 10)
    ),
    "scale: cost per added field×source",
]
PRICES = [
    "prices: one response at a flat price (gpt-4o-mini)",
    "prices: one response through calc_price (gemini-2.5-pro)",
]
REPORT = ["report: 10,000-turn events file"]
TARGETS = [  # the rows that carry an issue's target, and say whether it holds
    "resolve(), warm",
    "resolve(), warm, with a three-key table set",
    "resolve(), warm, with a policy file",
    "resolve(), warm: files written a moment ago",
    'factory("agent.max_steps", preset="opendot")()',
    "dynaconf: Dynaconf(...).loop.max_steps",
    "pydantic-settings: Settings().loop.max_steps",
    'start-up: python -c "import budgetconf"',
    "start-up: budgetconf explain --format json",
    "scale: cost per added field×source",
    "loop: LoopExecutor.run, as a sub-agent, per turn",
    "prices: one response at a flat price (gpt-4o-mini)",
    *REPORT,
]


def test_the_benchmark_reports_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quick prints one table and writes the same rows, with the machine's facts, as JSON."""
    out = tmp_path / "run.json"
    assert _load("run").main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))
    assert list(report["rows"]) == IN_PROCESS + START_UP + LOOP + PRICES + SCALE + REPORT
    for name, row in report["rows"].items():
        assert name in printed
        assert row["median_us"] > 0
        assert row["samples"] >= 1
    for name in TARGETS:
        assert report["rows"][name]["target"]
        assert isinstance(report["rows"][name]["holds"], bool)
    assert report["mode"] == "quick"
    assert report["machine"]["cpu_count"] >= 1
    assert report["machine"]["python"] in printed


def test_the_bridges_benchmark_reports_every_bridge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quick measures each bridge against its framework alone, run and streamed, and prints
    both."""
    out = tmp_path / "bridges.json"
    assert _load("bridges").main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    scripts = {p.stem.removeprefix("bridge_"): p.read_text() for p in BENCH.glob("bridge_*.py")}
    streamed = [f"{n}, streamed" for n, text in scripts.items() if "def streamed_rows(" in text]
    assert len(streamed) == len(scripts)  # every bridge has a stream()
    # a framework installed in another environment (CrewAI's: noxfile.py) is said to be absent
    absent = {n for n, row in rows.items() if "skipped" in row}
    measured = [s for s in streamed if s.removesuffix(", streamed") not in absent]
    assert sorted(rows) == sorted([*scripts, *measured])
    for name, row in rows.items():
        assert f"| {name} |" in printed
        if name not in absent:
            assert row["alone_us"] > 0
            assert row["bridged_us"] > 0


def test_the_report_benchmark_measures_the_command_and_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quick runs `budgetconf report` once on a short run and says what it wrote."""
    out = tmp_path / "report.json"
    assert _load("report").main(["--quick", "--turns", "50", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    found = json.loads(out.read_text())
    assert found["turns"] == 50
    assert found["page_bytes"] > 1000
    assert "MB of page written" in printed


def test_the_ledger_benchmark_reports_both_backends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quick times a turn in one scope and in three on SQLite and on a redis-server it starts,
    the executor's Redis turn with one round trip and with two, and turns per second."""
    out = tmp_path / "ledger.json"
    assert _load("ledger").main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    backends = ["sqlite", "redis"] if shutil.which("redis-server") else ["sqlite"]
    assert list(rows) == backends
    timed = ["reserve + settle, one scope", "reserve + settle, three scopes"]
    for name in backends:
        for row in timed:
            assert rows[name][row]["median_us"] > 0
            assert rows[name][row]["p99_us"] >= rows[name][row]["median_us"]
            assert isinstance(rows[name][row]["holds"], bool)
            assert f"| {name} | {row} |" in printed
        assert "x one scope" in rows[name]["reserve + settle, three scopes"]["reading"]
        assert rows[name]["1 process"]["turns_per_s"] > 0
        assert rows[name]["2 processes"]["turns_per_s"] > 0
    if "redis" in rows:
        for row in ("executor turn, one round trip", "executor turn, two round trips"):
            assert rows["redis"][row]["median_us"] > 0
            assert f"| redis | {row} |" in printed
        assert rows["redis"]["settle_and_reserve, one scope"]["median_us"] > 0


def test_pairs_alternate_which_side_runs_first_and_cost_is_the_median_difference() -> None:
    """bench/_paired.py: a slow spell that falls on one pair moves neither side's median nor
    the cost, and neither side always runs first."""
    order: list[str] = []
    firsts = iter([100, 100, 900, 100, 100])  # the third pair ran in a slow spell
    seconds = iter([130, 120, 1000, 130, 125])

    def first() -> int:
        order.append("first")
        return next(firsts)

    def second() -> int:
        order.append("second")
        return next(seconds)

    assert _load("_paired").paired(first, second, 5, 10) == (10.0, 13.0, 3.0)
    assert order[:4] == ["first", "second", "second", "first"]


def test_the_instructions_benchmark_runs_one_side_in_process() -> None:
    """bench/instructions.py's own process work (what it counts under valgrind), once each way;
    an unknown framework is a usage error."""
    pytest.importorskip("smolagents")
    module = _load("instructions")
    assert module.main(["--side", "smolagents", "bridged", "1"]) == 0
    with pytest.raises(SystemExit):
        module.main(["no-such-framework"])


def test_the_telemetry_benchmark_times_it_on_and_off(tmp_path: Path) -> None:
    """--quick times OtelSink against the SDK directly, and an off run against the commit
    before telemetry in its own checkout (its own process: the bench sets the providers)."""
    out = tmp_path / "telemetry.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "telemetry.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["on"]["spans"] == 2 * report["turns"]  # a chat span a turn, a tool span, a run
    assert report["on"]["otel_sink_us"] > 0
    assert report["on"]["direct_us"] > 0
    assert "on:  OtelSink" in done.stdout
    off = report["off"]
    if off["against"] is not None:  # a checkout with the commit before telemetry
        assert off["imports_opentelemetry"] is False
        assert off["off_us"] > 0
        assert off["before_us"] > 0
