"""Many processes on one scope, a fleet of users under a team under an org, and a worker killed
while it holds a reservation, on each backend.

Every worker is a real process (tests/helpers/ledger_worker.py), waited for with a
bound and killed by its pid if it overstays.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.ledger import Ledger, open_ledger

from helpers import ROOT

WORKER = ROOT / "tests" / "helpers" / "ledger_worker.py"
DAYS = (dt.datetime(2026, 3, 14, 12, tzinfo=dt.UTC), dt.datetime(2026, 3, 15, 12, tzinfo=dt.UTC))


class Worker:
    """One worker process: its stdout read line by line on a thread, its stderr in a file."""

    def __init__(self, argv: list[str], env: dict[str, str], err: Path) -> None:
        self.err = err
        with err.open("w", encoding="utf-8") as stderr:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=env,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout: float) -> str:
        """Its next line of output, waited for at most ``timeout`` seconds."""
        try:
            found = self.lines.get(timeout=max(0.01, timeout))
        except queue.Empty:
            raise AssertionError(
                f"worker {self.process.pid} said nothing in {timeout:g} s"
            ) from None
        assert found is not None, f"worker {self.process.pid} ended: {self.errors()}"
        return found

    def say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def errors(self) -> str:
        self.process.poll()
        return self.err.read_text(encoding="utf-8", errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL by its pid, and wait for it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


class Workers:
    """The worker processes a test started; each is stopped by its pid at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[Worker] = []

    def start(self, url: str, *args: str, env: dict[str, str] | None = None) -> Worker:
        src = str(Path(budgetconf.__file__).parent.parent)
        environment = os.environ | {"PYTHONPATH": src} | (env or {})
        argv = [sys.executable, str(WORKER), url, *args]
        err = self.folder / f"worker-{len(self.started)}.err"
        worker = Worker(argv, environment, err)
        self.started.append(worker)
        return worker

    def results(self, workers: list[Worker], timeout: float) -> list[dict[str, Any]]:
        """Each worker's last line, read as JSON, once it has ended with 0; all within
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        found = []
        for worker in workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pid = worker.process.pid
                raise AssertionError(f"worker {pid} overstayed {timeout:g} s") from None
            assert worker.process.returncode == 0, worker.errors()
            worker.reader.join(10)
            lines = []
            while not worker.lines.empty():
                line = worker.lines.get()
                if line is not None:
                    lines.append(line)
            assert lines, worker.errors()
            found.append(json.loads(lines[-1]))
        return found

    def stop_all(self) -> None:
        for worker in self.started:
            worker.kill()
            worker.reader.join(10)  # at the end of its output, since the process is gone
            for stream in (worker.process.stdin, worker.process.stdout):
                if stream is not None:
                    stream.close()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    started = Workers(tmp_path)
    yield started
    started.stop_all()


def test_sixteen_processes_on_one_scope_lose_nothing_and_pass_no_maximum(
    url: str, workers: Workers
) -> None:
    """16 workers of 25 turns each across a day's end: each day's settled total is the sum of what
    the workers settled in it, within the maximum, and nothing is left reserved."""
    maximum = 16 * 25 * 100 // 6  # under what the workers would spend in a day: refusals
    started = [
        workers.start(
            url,
            "--cycles",
            "25",
            "--max-tokens",
            str(maximum),
            "--seed",
            str(n),
            "--start",
            "2026-03-14T23:59:48+00:00",
            *(["--combined"] if n % 2 else []),
        )
        for n in range(16)
    ]
    results = workers.results(started, timeout=120)
    with open_ledger(url) as led:
        for day in DAYS:
            key = day.date().isoformat()
            tokens = sum(r["settled"].get(key, [0, 0])[0] for r in results)
            nano = sum(r["settled"].get(key, [0, 0])[1] for r in results)
            status = led.status("load", window="day", at=day)
            assert (status.spent_tokens, status.spent_cost_usd) == (tokens, nano / 1e9)
            assert status.spent_tokens <= maximum
            assert (status.reserved_tokens, status.reserved_cost_usd) == (0, 0.0)
    assert sum(r["granted"] for r in results) + sum(r["refused"] for r in results) == 16 * 25
    assert sum(r["refused"] for r in results) > 0


def test_a_worker_killed_holding_a_reservation_frees_it_when_its_lease_ends(
    url: str, workers: Workers
) -> None:
    """SIGKILL while holding 600 of 1000 tokens: the others are refused what does not fit until
    the lease ends, then go on as if the worker had never been."""
    start = dt.datetime.now(dt.UTC).isoformat()
    holder = workers.start(
        url,
        "--hold",
        "--tokens",
        "600",
        "--lease",
        "1.5",
        "--max-tokens",
        "1000",
        "--start",
        start,
    )
    assert holder.line(30) == "holding"
    holder.kill()
    killed_at = time.monotonic()
    with open_ledger(url) as led:
        assert led.status("load").reserved_tokens == 600
        refused = led.reserve("load", tokens=500, cost_usd=0, lease_seconds=5, max_tokens=1000)
        assert refused is None
        while led.status("load").reserved_tokens and time.monotonic() - killed_at < 10:
            time.sleep(0.1)
        assert 1.0 <= time.monotonic() - killed_at < 10
        others = [
            workers.start(
                url,
                "--cycles",
                "5",
                "--tokens",
                "20",
                "--max-tokens",
                "1000",
                "--seed",
                str(n),
                "--start",
                start,
            )
            for n in range(4)
        ]
        results = workers.results(others, timeout=60)
        assert [r["refused"] for r in results] == [0, 0, 0, 0]
        status = led.status("load")
        settled = sum(sum(t for t, _ in r["settled"].values()) for r in results)
        assert (status.spent_tokens, status.reserved_tokens) == (settled, 0)


# ---------------------------------------------------------------------------- a fleet


#: the fleet's runs' clock: mid-day, mid-week (a Wednesday), mid-month, so that no window ends
AT = dt.datetime(2026, 3, 18, 12, tzinfo=dt.UTC)
TEAM, ORG = "team:t", "org:o"
#: each scope's window, and its maximum: (the unit, the maximum in it)
WINDOW = {"user:a": "day", "user:b": "day", "user:c": "day", TEAM: "week", ORG: "month"}
MAXIMUM = {
    "user:a": ("tokens", 1500),
    "user:b": ("tokens", 100_000),
    "user:c": ("tokens", 100_000),
    TEAM: ("tokens", 8000),
    ORG: ("nano", 500_000_000),  # $0.50
}


@dataclasses.dataclass(frozen=True)
class Kind:
    """The workers of one user: what each reservation holds, what a response reports (a
    random part of the reservation, never more), and how long a call takes."""

    scope: str
    reserve_tokens: int
    reserve_micro: int  # millionths of a dollar
    used_tokens: str  # LO:HI
    used_micro: str
    sleep: float

    def env(self, url: str, lease: float = 60.0) -> dict[str, str]:
        by_scope = ",".join(f"{s}={m}" for s, (unit, m) in MAXIMUM.items() if unit == "tokens")
        return {
            "BUDGETCONF_LEDGER_URL": url,
            "BUDGETCONF_LEDGER_SCOPE": self.scope,
            "BUDGETCONF_LEDGER_PARENTS": f"{TEAM},{ORG}",
            "BUDGETCONF_LEDGER_WINDOW": "day",
            "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": f"{TEAM}=week,{ORG}=month",
            "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE": by_scope,
            "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": f"{ORG}={MAXIMUM[ORG][1] / 1e9:g}",
            "BUDGETCONF_LEDGER_RESERVE_TOKENS": str(self.reserve_tokens),
            "BUDGETCONF_LEDGER_RESERVE_COST_USD": f"{self.reserve_micro / 1e6:g}",
            "BUDGETCONF_LEDGER_LEASE_SECONDS": f"{lease:g}",
            "BUDGETCONF_MAX_STEPS": "400",
        }

    def args(self, seed: int) -> list[str]:
        return [
            "--run",
            "--seed",
            str(seed),
            "--used-tokens",
            self.used_tokens,
            "--used-micro",
            self.used_micro,
            "--sleep",
            str(self.sleep),
            "--at",
            AT.isoformat(),
        ]


# user:a's runs fill user:a (1500 tokens) in a few fast turns; user:c's spend the org's
# dollars and few tokens, fast too; user:b's spend tokens only, slowly, and fill the team
# (8000 tokens) well after the others have stopped and the killed worker's lease has ended.
# Nothing but user:c's runs costs anything, so the org's maximum stops them alone.
KINDS = (
    Kind("user:a", 100, 0, "50:100", "0:0", 0.01),
    Kind("user:b", 200, 0, "100:200", "0:0", 0.5),
    Kind("user:c", 20, 10_000, "10:20", "5000:10000", 0.01),
)
#: the scope that stops each user's runs, and the reservation that no longer fits in it
STOPPED_BY = {"user:a": ("user:a", 100), "user:b": (TEAM, 200), "user:c": (ORG, 10_000_000)}
HOLDER_LEASE = 1.0


def _left(led: Ledger, scope: str) -> tuple[int, int, int, int]:
    """Spent and reserved, tokens and billionths of a dollar, in ``scope``'s window at `AT`."""
    s = led.status(scope, window=WINDOW[scope], at=AT)
    return (
        s.spent_tokens,
        round(s.spent_cost_usd * 1e9),
        s.reserved_tokens,
        round(s.reserved_cost_usd * 1e9),
    )


def test_a_fleet_of_users_under_a_team_under_an_org_stays_within_every_maximum(
    url: str, workers: Workers
) -> None:
    """16 executor runs in processes of their own draw on their user, the team and the org at
    once, each scope its own maximum and window, until a maximum stops each of them; one of
    them is killed with SIGKILL in its third call. Every level's maximum is reached and none is
    passed; each scope's spend is the sum of what the runs that drew on it settled (their own
    count, and their records), the killed run's two settled turns included; nothing stays
    reserved once its lease has ended."""
    fleet = [(kind, n) for n in range(5) for kind in KINDS]
    runs = [
        workers.start(url, *kind.args(seed), "--wait", env=kind.env(url)) for kind, seed in fleet
    ]
    b = KINDS[1]
    holder = workers.start(
        url,
        *b.args(99),
        "--report-calls",
        "--block-at",
        "3",
        env=b.env(url, lease=HOLDER_LEASE) | {"BUDGETCONF_LEDGER_SCOPE": "user:b"},
    )
    deadline = time.monotonic() + 60
    held = [holder.line(deadline - time.monotonic()) for _ in range(3)]
    assert held[2] == "blocking", held
    holder_settled = [sum(int(line.split()[i]) for line in held[:2]) for i in (1, 2)]
    for worker in runs:
        assert worker.line(deadline - time.monotonic()) == "ready"
    holder.kill()  # in its third call: two turns settled, the third's reservation held
    with open_ledger(url) as led:
        for scope in ("user:b", TEAM, ORG):
            assert _left(led, scope)[2:] == (b.reserve_tokens, 0)
        for worker in runs:
            worker.say("go")
        results = workers.results(runs, timeout=90)
        until = time.monotonic() + HOLDER_LEASE + 10  # the killed run's lease ends meanwhile
        while any(_left(led, s)[2:] != (0, 0) for s in WINDOW) and time.monotonic() < until:
            time.sleep(0.1)
        found = {scope: _left(led, scope) for scope in WINDOW}
        records = {scope: led.runs(scope, limit=100) for scope in WINDOW}
        counted = {scope: led.status(scope, at=AT).runs for scope in WINDOW}

    # each run went on until the ledger refused it, and counted what its model reported
    for r in results:
        assert (r["status"], r["stop_reason"]) in {
            ("truncated", "max_tokens"),
            ("truncated", "max_cost"),
        }, r["message"]
        assert r["turns"] == r["calls"]  # none, for a run refused its first call
        assert (r["tokens"], round(r["cost_usd"] * 1e9)) == (r["used_tokens"], r["used_nano"])
    # nothing is left reserved: the killed run's lease has ended too
    assert {scope: f[2:] for scope, f in found.items()} == dict.fromkeys(WINDOW, (0, 0))
    for scope, (spent_tokens, spent_nano, _, _) in found.items():
        drew = [r for (kind, _), r in zip(fleet, results, strict=True) if _draws(kind, scope)]
        killed = holder_settled if scope in ("user:b", TEAM, ORG) else [0, 0]
        # the runs' own counts, and the killed run's settled turns, are the scope's spend
        assert spent_tokens == sum(r["tokens"] for r in drew) + killed[0], scope
        assert spent_nano == sum(r["used_nano"] for r in drew) + killed[1], scope
        # so are the records: a user's of its own runs, the team's and org's through parents
        kept = records[scope]
        if scope.startswith("user:"):
            assert {k["scope"] for k in kept} == {scope}
        else:
            assert all(k["parents"] == [TEAM, ORG] for k in kept)
        assert sorted(k["run_id"] for k in kept) == sorted(r["run_id"] for r in drew)
        assert counted[scope] == len(drew)
        assert spent_tokens == sum(k["tokens"] for k in kept) + killed[0]
        assert spent_nano == sum(round(k["cost_usd"] * 1e9) for k in kept) + killed[1]
        # no maximum is passed
        unit, most = MAXIMUM[scope]
        assert (spent_tokens if unit == "tokens" else spent_nano) <= most, scope
    # every level's maximum is reached: what is left of it is less than the reservation of
    # the runs it stopped
    for scope, reservation in STOPPED_BY.values():
        unit, most = MAXIMUM[scope]
        spent = found[scope][0] if unit == "tokens" else found[scope][1]
        assert most - reservation < spent <= most, scope


def _draws(kind: Kind, scope: str) -> bool:
    return scope in (kind.scope, TEAM, ORG)
