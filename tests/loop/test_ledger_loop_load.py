"""Many processes drawing on one scope, and workers that die: against real SQLite and Redis.

Each worker is a process of its own running `LoopExecutor` with a scripted model
that reports usage; every process is bounded in time and stopped by its pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.ledger import open_ledger

SRC = str(Path(budgetconf.__file__).parent.parent)
WORKERS = 16

#: one worker: runs the executor once within the scope, prints its totals as JSON
WORKER = textwrap.dedent(
    """
    import json, sys, time
    import budgetconf
    from budgetconf.loop import LoopExecutor

    hold = sys.argv[1] == "hold"

    def model(messages, tools):
        if hold:
            print("holding", flush=True)
            time.sleep(120)  # killed before it answers, its reservation held
        return {
            "content": "",
            "tool_calls": [{"id": "c", "name": "t", "arguments": "{}"}],
            "usage": {"total_tokens": 100},
            "cost_usd": 0.01,
        }

    result = LoopExecutor(model, {"t": lambda: "ok"}, budgetconf.resolve()).run("go")
    print(json.dumps({
        "status": result.status.value,
        "stop_reason": result.stop_reason,
        "turns": result.turns,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "message": result.message,
    }), flush=True)
    """
)


@pytest.fixture(params=["sqlite", "redis"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real ledger: a SQLite file, or the session's redis-server emptied for the test."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url


def start(env: dict[str, str], mode: str = "run") -> subprocess.Popen[str]:
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": SRC, **env}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def finish(worker: subprocess.Popen[str], timeout: float = 120) -> tuple[dict[str, Any], str]:
    """The worker's totals and its stderr; killed by its pid if it outlives ``timeout``."""
    try:
        out, err = worker.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(worker.pid, signal.SIGKILL)
        worker.communicate(timeout=10)
        raise
    assert worker.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def test_sixteen_processes_share_one_scope_and_the_ledger_counts_each_turn_once(
    ledger_url: str,
) -> None:
    """Nothing lost, nothing counted twice, never past the maximum, nothing left reserved."""
    env = {
        "BUDGETCONF_LEDGER_URL": ledger_url,
        "BUDGETCONF_LEDGER_SCOPE": "fleet",
        "BUDGETCONF_LEDGER_MAX_COST_USD": "1.5",
        "BUDGETCONF_LEDGER_RESERVE_COST_USD": "0.02",  # covers every response (0.01)
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "200",
        "BUDGETCONF_MAX_STEPS": "20",
    }
    workers = [start(env) for _ in range(WORKERS)]
    try:
        results = [finish(w) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                os.kill(w.pid, signal.SIGKILL)
                w.communicate(timeout=10)
    totals = [r for r, _ in results]
    assert all(err == "" for _, err in results)
    assert {r["status"] for r in totals} <= {"ok", "truncated"}
    refused = [r for r in totals if r["stop_reason"] == "max_cost"]
    assert refused  # 16 x 20 turns want 3.20: the scope's 1.50 stops some
    assert all("scope fleet has spent" in r["message"] for r in refused)
    with open_ledger(ledger_url) as led:
        status = led.status("fleet", window="day")
        records = led.runs("fleet", limit=100)
    assert status.spent_tokens == sum(r["tokens"] for r in totals)
    assert status.spent_cost_usd == pytest.approx(sum(r["cost_usd"] for r in totals))
    assert status.spent_cost_usd <= 1.5 + 1e-9
    assert (status.reserved_tokens, status.reserved_cost_usd) == (0, 0.0)
    assert len(records) == status.runs == WORKERS
    assert sorted(r["tokens"] for r in records) == sorted(r["tokens"] for r in totals)


def test_a_worker_killed_holding_a_reservation_frees_it_when_its_lease_expires(
    ledger_url: str,
) -> None:
    env = {
        "BUDGETCONF_LEDGER_URL": ledger_url,
        "BUDGETCONF_LEDGER_SCOPE": "kill",
        "BUDGETCONF_LEDGER_MAX_TOKENS": "1000",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "600",
        "BUDGETCONF_LEDGER_LEASE_SECONDS": "1.5",
        "BUDGETCONF_MAX_STEPS": "1",
    }
    holder = start(env, "hold")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "holding\n"
        os.kill(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=10)
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
            holder.communicate(timeout=10)
    assert holder.returncode == -signal.SIGKILL
    with open_ledger(ledger_url) as led:
        assert led.status("kill", window="day").reserved_tokens == 600
    blocked, _ = finish(start(env))  # 600 held + 600 more would pass 1000: refused
    assert (blocked["stop_reason"], blocked["turns"]) == ("max_tokens", 0)
    time.sleep(1.6)  # the killed worker's lease runs out
    with open_ledger(ledger_url) as led:
        assert led.status("kill", window="day").reserved_tokens == 0
    after, _ = finish(start(env))
    assert (after["stop_reason"], after["turns"], after["tokens"]) == ("max_steps", 1, 100)
    with open_ledger(ledger_url) as led:
        status = led.status("kill", window="day")
    assert (status.spent_tokens, status.reserved_tokens) == (100, 0)
