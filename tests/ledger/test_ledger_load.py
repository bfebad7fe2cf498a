"""Many processes on one scope, and a worker killed while it holds a reservation, on each backend.

Every worker is a real process (tests/helpers/ledger_worker.py), waited for with a
bound and killed by its pid if it overstays.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.ledger import open_ledger

from helpers import ROOT

WORKER = ROOT / "tests" / "helpers" / "ledger_worker.py"
DAYS = (dt.datetime(2026, 3, 14, 12, tzinfo=dt.UTC), dt.datetime(2026, 3, 15, 12, tzinfo=dt.UTC))


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    address: str = request.getfixturevalue("redis_url")
    return address


class Workers:
    """The worker processes a test started; each is stopped by its pid at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, url: str, *args: str) -> subprocess.Popen[str]:
        src = str(Path(budgetconf.__file__).parent.parent)
        env = os.environ | {"PYTHONPATH": src}
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.started.append(worker)
        return worker

    def results(self, workers: list[subprocess.Popen[str]], timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        found = []
        for worker in workers:
            out, err = worker.communicate(timeout=max(0.1, deadline - time.monotonic()))
            assert worker.returncode == 0, err
            found.append(json.loads(out))
        return found

    def stop_all(self) -> None:
        for worker in self.started:
            if worker.poll() is None:
                os.kill(worker.pid, signal.SIGKILL)
            worker.communicate(timeout=10)


@pytest.fixture
def workers() -> Iterator[Workers]:
    started = Workers()
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
    assert holder.stdout is not None
    assert holder.stdout.readline() == "holding\n"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
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
