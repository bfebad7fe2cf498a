"""The shared ledger's cost per turn, across one scope and three, in the executor with one round
trip to Redis a turn or two, and its turns per second with many processes drawing at once.

For each backend (SQLite in a temporary folder; Redis on a redis-server this
script starts on a free loopback port, or the one `--redis-url` names):

- a reservation and its settle, in one scope and across three at once (a user,
  its team and its org, each with its maximum and its window), timed one by one
  (`time.perf_counter_ns`) in alternating blocks of turns, median and 99th
  percentile; for Redis also the turn as one call that settles and reserves the
  next (`settle_and_reserve`);
- for Redis, the executor's turn drawing on the three scopes: a `LoopExecutor`
  run of a scripted model reporting usage, its time over its turns, as today's
  ledger makes it (one server call a turn: the settle with the next
  reservation) and as a ledger settling and reserving in two calls would
  (`TwoStep`), in alternating pairs of runs (`_paired`);
- turns per second with 1, 4 and 16 processes at once, each running the
  executor on a user of its own under one team and one org: each process builds
  its run, says it is ready, waits for the word, and runs its turns; the time is
  from the word to the last process's end. The median of five rounds, each of
  which runs every row once.

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

import budgetconf
import budgetconf.ledger
from budgetconf.ledger import Ledger, LedgerURL, Reservation, ScopeLimit, open_ledger
from budgetconf.loop import LoopExecutor

from _paired import paired

HERE = Path(__file__).resolve().parent

SCOPE = "bench"
#: the three scopes of a fleet's turn: a user, its team, its org, each its maximum and window
FLEET = (
    ScopeLimit("bench:user", "day", max_tokens=10**12),
    ScopeLimit("bench:team", "week", max_tokens=10**12),
    ScopeLimit("bench:org", "month", max_cost_usd=9_000_000.0),
)
PROCESSES = (1, 4, 16)
QUICK_PROCESSES = (1, 2)  # a smoke run starts few processes: each costs an interpreter's start
#: backend -> the one-scope turn's median target in µs
MEDIAN_TARGET_US = {"sqlite": 300.0, "redis": 600.0}
#: three scopes' turn at most this many times one scope's
SCOPES_TARGET = 1.5
#: Redis: 16 processes at least this share of one process's turns per second
SCALE_TARGET = 0.9
ONE = "reserve + settle, one scope"
THREE = "reserve + settle, three scopes"
COMBINED = "settle_and_reserve, one scope"
ONE_TRIP = "executor turn, one round trip"
TWO_TRIPS = "executor turn, two round trips"


@dataclass
class Mode:
    quick: bool
    turns: int  # timed turns of each reserve + settle row
    runs: int  # executor runs of each kind, in alternating pairs
    run_turns: int  # turns of each executor run
    scale_turns: int  # turns of each process of a throughput row
    rounds: int  # throughput rounds, each row once per round
    processes: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Mode:
        if quick:
            return cls(True, 40, 2, 10, 5, 1, QUICK_PROCESSES)
        return cls(False, 3000, 21, 200, 500, 5, PROCESSES)


# ---------------------------------------------------------------------------- a turn's calls


def turns(led: Ledger, scopes: tuple[ScopeLimit, ...] | None) -> Callable[[], None]:
    """One model call's share of the ledger, in one scope (None) or in ``scopes``: reserve,
    then settle what was used."""

    def step() -> None:
        if scopes is None:
            held = led.reserve(
                SCOPE, tokens=4096, cost_usd=0.05, lease_seconds=300, max_tokens=10**12
            )
        else:
            held = led.reserve(scopes=scopes, tokens=4096, cost_usd=0.05, lease_seconds=300)
        if held is None:
            raise RuntimeError("the benchmark's reservation was refused: it measures a broken path")
        led.settle(held, tokens=812, cost_usd=0.0123)

    return step


def combined_turns(led: Ledger) -> Callable[[], None]:
    """Turns as Redis can make them: one call settles this turn and reserves the next."""
    first = led.reserve(SCOPE, tokens=4096, cost_usd=0.05, lease_seconds=300, max_tokens=10**12)
    state: dict[str, Reservation | None] = {"held": first}

    def step() -> None:
        held = state["held"]
        if held is None:
            raise RuntimeError("the benchmark's reservation was refused")
        state["held"], _ = led.settle_and_reserve(
            held,
            tokens=812,
            cost_usd=0.0123,
            reserve_tokens=4096,
            reserve_cost_usd=0.05,
            lease_seconds=300,
            max_tokens=10**12,
        )

    return step


def timed(
    steps: dict[str, Callable[[], None]], count: int, block: int = 50
) -> dict[str, list[int]]:
    """Nanoseconds of each of ``count`` calls of each step, after a few untimed ones; the steps
    take turns in blocks of ``block`` calls, so that a slow spell falls on all of them."""
    for step in steps.values():
        for _ in range(min(count, 20)):
            step()
    samples: dict[str, list[int]] = {name: [] for name in steps}
    while any(len(found) < count for found in samples.values()):
        for name, step in steps.items():
            found = samples[name]
            for _ in range(min(block, count - len(found))):
                start = time.perf_counter_ns()
                step()
                found.append(time.perf_counter_ns() - start)
    return samples


def percentile(samples: list[int], share: float) -> float:
    ordered = sorted(samples)
    return float(ordered[min(len(ordered) - 1, int(share * len(ordered)))])


# ---------------------------------------------------------------------------- the executor


def _two_step_ledger() -> Callable[[str | LedgerURL], Ledger]:
    """`open_ledger` for a Redis ledger that settles a turn and reserves the next in two calls:
    its `_finish_and_reserve` is its base class's, as for a backend without a combined step."""
    from budgetconf.ledger._redis import RedisLedger

    class TwoStep(RedisLedger):
        def _finish_and_reserve(self, settling: Any, asked: Any) -> Any:
            return super(RedisLedger, self)._finish_and_reserve(settling, asked)

    def opened(url: str | LedgerURL) -> Ledger:
        return TwoStep(url if isinstance(url, LedgerURL) else budgetconf.ledger.parse_url(url))

    return opened


@contextmanager
def ledgers_opened_by(opener: Callable[[str | LedgerURL], Ledger] | None) -> Iterator[None]:
    """Runs that open their ledger with ``opener`` (None: as they do)."""
    if opener is None:
        yield
        return
    kept = budgetconf.ledger.open_ledger
    budgetconf.ledger.open_ledger = opener  # type: ignore[assignment]
    try:
        yield
    finally:
        budgetconf.ledger.open_ledger = kept


def fleet_executor(url: str, user: str, turns: int) -> LoopExecutor:
    """An executor whose runs draw on ``user``, the team and the org at once, with a model that
    calls a tool ``turns - 1`` times and then answers, reporting usage and a cost each time."""
    used = {"usage": {"total_tokens": 812}, "cost_usd": 0.0123}
    call = {**used, "tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}]}
    done = {**used, "content": "done"}
    state = {"n": 0}

    def model(messages: object, tools: object) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] >= turns:
            state["n"] = 0  # the next run starts again
            return done
        return call

    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": user,
        "BUDGETCONF_LEDGER_PARENTS": "bench-team,bench-org",
        "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE": f"{user}=1000000000000,bench-team=1000000000000",
        "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "bench-org=9000000",
        "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "bench-team=week,bench-org=month",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "4096",
        "BUDGETCONF_LEDGER_RESERVE_COST_USD": "0.05",
        "BUDGETCONF_MAX_STEPS": str(turns + 1),  # the last turn answers: no wrap-up notice
    }
    return LoopExecutor(model, {"echo": lambda text: text}, budgetconf.resolve(env=env))


def executor_run(executor: LoopExecutor, turns: int) -> int:
    """Nanoseconds of one run of ``executor``, checked to have made its ``turns`` turns."""
    start = time.perf_counter_ns()
    result = executor.run("go")
    elapsed = time.perf_counter_ns() - start
    if result.status.value != "ok" or result.turns != turns:
        raise RuntimeError(f"the benchmark's run did not make its turns: {result.message}")
    return elapsed


def executor_rows(url: str, mode: Mode) -> dict[str, Any]:
    """The executor's turn with one round trip to Redis and with two, in alternating pairs."""
    executor = fleet_executor(url, "bench-user", mode.run_turns)
    executor_run(executor, mode.run_turns)  # the scripts loaded, the scopes' windows recorded
    two_step = _two_step_ledger()

    def one() -> int:
        return executor_run(executor, mode.run_turns)

    def two() -> int:
        with ledgers_opened_by(two_step):
            return executor_run(executor, mode.run_turns)

    first, second, more = paired(one, two, mode.runs, mode.run_turns)
    return {
        ONE_TRIP: {
            "median_us": first / 1000,
            "reading": f"{more / 1000:.0f} µs a turn less than two round trips",
            "samples": mode.runs,
        },
        TWO_TRIPS: {"median_us": second / 1000, "samples": mode.runs},
    }


# ---------------------------------------------------------------------------- processes


def worker(url: str, turns: int, index: int) -> int:
    """A process of the throughput rows: build the run, say ready, wait for the word, run it."""
    executor = fleet_executor(url, f"bench-user-{index}", turns)
    print("ready", flush=True)
    if sys.stdin.readline() != "go\n":
        return 1
    executor_run(executor, turns)
    print("done", flush=True)
    return 0


def throughput(url: str, processes: int, turns: int) -> float:
    """Turns per second of ``processes`` processes of ``turns`` turns each, all at once."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    script = str(Path(__file__).resolve())
    started = [
        subprocess.Popen(
            [sys.executable, script, "--worker", url, str(turns), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(processes)
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
    rows: dict[str, Any] = {}
    with open_ledger(url) as led:
        steps = {ONE: turns(led, None), THREE: turns(led, FLEET)}
        if name == "redis":
            steps[COMBINED] = combined_turns(led)
        for row, samples in timed(steps, mode.turns).items():
            rows[row] = _latency(samples)
    if name == "redis":
        rows |= executor_rows(url, mode)
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
    rows[ONE] |= {"target": f"median ≤ {target:g} µs", "holds": rows[ONE]["median_us"] <= target}
    ratio = rows[THREE]["median_us"] / rows[ONE]["median_us"]
    rows[THREE] |= {
        "reading": f"{ratio:.2f}x one scope",
        "target": f"≤ {SCOPES_TARGET:g}x one scope",
        "holds": ratio <= SCOPES_TARGET,
    }
    if name == "redis" and "16 processes" in rows:
        ratio = rows["16 processes"]["turns_per_s"] / rows["1 process"]["turns_per_s"]
        rows["16 processes"] |= {
            "reading": f"{ratio:.2f}x one process",
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
    parser.add_argument(
        "--worker", nargs=3, metavar=("URL", "TURNS", "INDEX"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
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
        f" {mode.turns} timed turns of each reserve + settle row; executor turns:"
        f" {mode.runs} runs of {mode.run_turns} turns each way; turns/s: {mode.scale_turns}"
        f" turns per process, the median of {mode.rounds} rounds"
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
