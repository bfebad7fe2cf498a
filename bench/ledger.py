"""The shared ledger's cost per turn, and its turns per second with many processes on one scope.

For each backend (SQLite in a temporary folder; Redis on a redis-server this
script starts on a free loopback port, or the one `--redis-url` names):

- a turn in one process: a reservation and its settle, timed one by one
  (`time.perf_counter_ns`), median and 99th percentile; for Redis also the
  turn as one call that settles and reserves the next (`settle_and_reserve`);
- turns per second with 1, 4 and 16 processes drawing on one scope at once:
  each process opens the ledger, says it is ready, waits for the word, and
  runs its turns; the time is from the word to the last process's end. The
  median of five rounds, each of which runs every row once.

Each target is printed beside its row, with whether it holds. `--quick` runs
few turns (a smoke run for CI: its times mean little); `--json FILE` writes
the rows.

    python bench/ledger.py [--quick] [--json FILE] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetconf.ledger import Ledger, open_ledger

HERE = Path(__file__).resolve().parent
SCOPE = "bench"
PROCESSES = (1, 4, 16)
QUICK_PROCESSES = (1, 2)  # a smoke run starts few processes: each costs an interpreter's start
#: backend -> the per-turn median's target in µs
MEDIAN_TARGET_US = {"sqlite": 300.0, "redis": 600.0}
#: Redis: 16 processes at least this many times one process's turns per second
SCALE_TARGET = 2.0


@dataclass
class Mode:
    quick: bool
    turns: int  # timed turns in one process
    scale_turns: int  # turns of each process of a throughput row
    rounds: int  # throughput rounds, each row once per round
    processes: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Mode:
        if quick:
            return cls(True, 30, 5, 1, QUICK_PROCESSES)
        return cls(False, 3000, 500, 5, PROCESSES)


def turn(led: Ledger) -> None:
    """One model call's share of the ledger: reserve, then settle what was used."""
    held = led.reserve(SCOPE, tokens=4096, cost_usd=0.05, lease_seconds=300)
    if held is None:
        raise RuntimeError("the benchmark's reservation was refused: it measures a broken path")
    led.settle(held, tokens=812, cost_usd=0.0123)


def combined_turns(led: Ledger) -> Callable[[], None]:
    """Turns as Redis can make them: one call settles this turn and reserves the next."""
    state = {"held": led.reserve(SCOPE, tokens=4096, cost_usd=0.05, lease_seconds=300)}

    def step() -> None:
        held = state["held"]
        if held is None:
            raise RuntimeError("the benchmark's reservation was refused")
        state["held"] = led.settle_and_reserve(
            held,
            tokens=812,
            cost_usd=0.0123,
            reserve_tokens=4096,
            reserve_cost_usd=0.05,
            lease_seconds=300,
        )

    return step


def timed(step: Callable[[], None], count: int) -> list[int]:
    """Nanoseconds of each of ``count`` calls of ``step``, after a few untimed ones."""
    for _ in range(min(count, 20)):
        step()
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        step()
        samples.append(time.perf_counter_ns() - start)
    return samples


def percentile(samples: list[int], share: float) -> float:
    ordered = sorted(samples)
    return float(ordered[min(len(ordered) - 1, int(share * len(ordered)))])


# ---------------------------------------------------------------------------- processes


def worker(url: str, turns: int) -> int:
    """A process of the throughput rows: open, say ready, wait for the word, run ``turns``."""
    with open_ledger(url) as led:
        turn(led)
        print("ready", flush=True)
        if sys.stdin.readline() != "go\n":
            return 1
        for _ in range(turns):
            turn(led)
    print("done", flush=True)
    return 0


def throughput(url: str, processes: int, turns: int) -> float:
    """Turns per second of ``processes`` processes of ``turns`` turns each on one scope."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", url, str(turns)]
    started = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(processes)
    ]
    try:
        for process in started:
            assert process.stdout is not None
            if process.stdout.readline() != "ready\n":
                raise RuntimeError("a benchmark process did not start")
        began = time.perf_counter()
        for process in started:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        for process in started:
            assert process.stdout is not None
            if process.stdout.readline() != "done\n":
                raise RuntimeError("a benchmark process failed")
        elapsed = time.perf_counter() - began
    finally:
        for process in started:
            if process.poll() is None:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
    return processes * turns / elapsed


# ---------------------------------------------------------------------------- redis


@contextmanager
def redis_url(given: str | None, folder: Path) -> Iterator[str | None]:
    """``given``, or the address of a redis-server started here (None if none is installed)."""
    if given:
        yield given
        return
    sys.path.insert(0, str(HERE.parent / "tests"))
    from helpers.redis_server import EXECUTABLE, RedisServer

    if EXECUTABLE is None:
        yield None
        return
    server = RedisServer(folder / "redis").start()
    try:
        yield server.url
    finally:
        server.stop()


# ---------------------------------------------------------------------------- the run


def measure(name: str, url: str, mode: Mode) -> dict[str, Any]:
    with open_ledger(url) as led:
        rows: dict[str, Any] = {}
        samples = timed(lambda: turn(led), mode.turns)
        rows["turn"] = _latency(samples)
        if name == "redis":
            rows["turn, settle_and_reserve"] = _latency(timed(combined_turns(led), mode.turns))
    rates: dict[int, list[float]] = {count: [] for count in mode.processes}
    for _ in range(mode.rounds):  # the counts take turns, so a slow spell hits all of them
        for count in mode.processes:
            rates[count].append(throughput(url, count, mode.scale_turns))
    for count, found in rates.items():
        rows[processes_row(count)] = {"turns_per_s": statistics.median(found)}
    return rows


def processes_row(count: int) -> str:
    return f"{count} process{'es' if count > 1 else ''}"


def _latency(samples: list[int]) -> dict[str, Any]:
    return {
        "median_us": statistics.median(samples) / 1000,
        "p99_us": percentile(samples, 0.99) / 1000,
        "samples": len(samples),
    }


def judge(name: str, rows: dict[str, Any]) -> None:
    """Set each target's text and whether it holds, beside its row."""
    target = MEDIAN_TARGET_US[name]
    rows["turn"] |= {
        "target": f"median ≤ {target:g} µs",
        "holds": rows["turn"]["median_us"] <= target,
    }
    if name == "redis" and "16 processes" in rows:
        ratio = rows["16 processes"]["turns_per_s"] / rows["1 process"]["turns_per_s"]
        rows["16 processes"] |= {
            "reading": f"{ratio:.1f}x one process",
            "target": f"≥ {SCALE_TARGET:g}x one process",
            "holds": ratio >= SCALE_TARGET,
        }


def render(report: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| backend | measurement | median | p99 | turns/s | reading | target | holds |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for name, rows in report.items():
        for row, value in rows.items():
            median = f"{value['median_us']:.0f} µs" if "median_us" in value else ""
            p99 = f"{value['p99_us']:.0f} µs" if "p99_us" in value else ""
            rate = f"{value['turns_per_s']:,.0f}" if "turns_per_s" in value else ""
            holds = {True: "yes", False: "no", None: ""}[value.get("holds")]
            cells = [
                name,
                row,
                median,
                p99,
                rate,
                value.get("reading", ""),
                value.get("target", ""),
            ]
            lines.append("| " + " | ".join([*cells, holds]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few turns: a smoke run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--redis-url", help="a Redis to use (its database is written to)")
    parser.add_argument("--worker", nargs=2, metavar=("URL", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]))
    mode = Mode.of(args.quick)
    began = time.perf_counter()
    report: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="budgetconf-ledger-bench-") as tmp:
        folder = Path(tmp)
        with redis_url(args.redis_url, folder) as redis:
            urls = {"sqlite": f"sqlite:///{folder / 'ledger.db'}", "redis": redis}
            for name, url in urls.items():
                if url is None:
                    print("redis: no redis-server installed, its rows are left out")
                    continue
                report[name] = measure(name, url, mode)
                judge(name, report[name])
    load = " / ".join(f"{n:.1f}" for n in os.getloadavg())
    print(
        f"python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs"
        f" (load average {load} at the end);"
        f" {'quick' if args.quick else 'full'} run in {time.perf_counter() - began:.0f} s:"
        f" {mode.turns} timed turns in one process; turns/s: {mode.scale_turns} turns per"
        f" process, the median of {mode.rounds} rounds"
    )
    print(render(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            document = {
                "mode": "quick" if args.quick else "full",
                "load_average": load,
                "rows": report,
            }
            json.dump(document, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
