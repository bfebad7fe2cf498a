"""`budgetconf report` on a long run's events file: the time the command takes, and the page's size.

Writes the events of a real run of the executor (a tool call on every turn,
stopped by its step budget at ``--turns``, 10,000 by default) to a file,
then runs ``budgetconf report`` on it as a process, as a CI job would, and
prints the median time and the size of the page written. `--quick` runs it
once; `--json FILE` writes the numbers.

    python bench/report.py [--turns 10000] [--repeat 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from budgetconf.loop import LoopExecutor, ScriptedModel

CALL = {
    "tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}],
    "usage": {"total_tokens": 120},
    "cost_usd": 0.0004,
}


def echo(text: str) -> str:
    return text


def events_file(folder: Path, turns: int) -> Path:
    """The events of one run of ``turns`` turns, as `budgetconf run --events` writes them."""
    budget = {"loop.max_steps": turns, "limits.max_tokens": 200 * turns, "loop.last_turn": "warn"}
    lines = []
    ex = LoopExecutor(
        ScriptedModel([CALL], record=False),
        {"echo": echo},
        budget,
        on_event=lambda event: lines.append(json.dumps(event, default=str)),
    )
    result = ex.run("go")
    if result.turns != turns:
        raise RuntimeError(f"the benchmark's run went wrong: {result.message}")
    path = folder / f"events-{turns}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def measure(folder: Path, turns: int, repeat: int) -> dict[str, Any]:
    """Nanoseconds per `budgetconf report` process, and the bytes it read and wrote."""
    events = events_file(folder, turns)
    page = folder / "page.html"
    command = [sys.executable, "-m", "budgetconf", "report", str(events), "-o", str(page)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter_ns() - start)
    return {
        "turns": turns,
        "times_ns": times,
        "events_bytes": events.stat().st_size,
        "page_bytes": page.stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    with tempfile.TemporaryDirectory(prefix="budgetconf-bench-report-") as tmp:
        found = measure(Path(tmp), args.turns, repeat)
    median = statistics.median(found["times_ns"]) / 1e9
    print(
        f"budgetconf report, {found['turns']:,} turns: {median:.2f} s (median of {repeat}),"
        f" {found['events_bytes'] / 1e6:.1f} MB of events read,"
        f" {found['page_bytes'] / 1e6:.2f} MB of page written"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({**found, "median_s": median}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
