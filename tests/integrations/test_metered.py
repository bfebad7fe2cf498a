"""The bridges' adapter to the Meter (integrations/_metered.Bridged), driven by hand as a
framework's hooks would drive it."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import UNSEEN, Bridged
from budgetconf.ledger import open_ledger
from budgetconf.loop import Budget, Call, RunStatus, Usage, current_run

FRAMEWORK = FRAMEWORKS["openai_agents"]


def bridged(**values: str) -> Bridged:
    env = {f"BUDGETCONF_{k.upper()}": v for k, v in values.items()}
    return Bridged(FRAMEWORK, Budget.of(budgetconf.resolve(env=env)), tools={"add"})


def adds(*ids: str) -> list[Call]:
    return [Call(i, "add", {}) for i in ids]


def test_a_tool_runs_when_the_plan_runs_it_and_sees_the_run_as_current() -> None:
    run = bridged(max_steps="3")
    assert run.call() is None
    run.answered(Usage(total_tokens=10), "adding", adds("a"))
    seen: list[Any] = []

    def add() -> int:
        seen.append(current_run())
        return 3

    assert run.tool("a", "add", add) == 3
    assert seen[0] is not None
    assert run.meter.executed == 1


def test_a_call_the_plan_does_not_run_is_answered_without_running() -> None:
    """On the last turn the call is answered with the executor's text; the tool never runs."""
    run = bridged(max_steps="1")
    assert run.call() is None
    plan = run.answered(Usage(), None, adds("a"))
    assert plan.stop is not None
    ran: list[int] = []
    answer = run.tool("a", "add", lambda: ran.append(1))
    assert answer == "not executed: this was the last turn the step budget allows"
    assert ran == []
    stop = run.call()
    assert stop is not None
    assert (stop.status, stop.stop_reason) == (RunStatus.TRUNCATED, "max_steps")


def test_a_call_no_response_asked_for_is_not_run() -> None:
    run = bridged()
    assert run.call() is None
    run.answered(Usage(), None, adds("a"))
    assert run.tool("zz", "other", lambda: 1) == UNSEEN


def test_calls_run_on_threads_at_once_are_each_counted_once() -> None:
    """A framework may run one response's calls on threads: each is decided once, and the
    counts end exact."""
    run = bridged(max_tool_calls_per_turn="40")
    ids = [f"c{i}" for i in range(32)]
    assert run.call() is None
    run.answered(Usage(), None, adds(*ids))
    barrier = threading.Barrier(8)

    def worker(mine: list[str]) -> None:
        barrier.wait()
        for cid in mine:
            run.tool(cid, "add", lambda: 1)

    threads = [threading.Thread(target=worker, args=(ids[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (run.meter.executed, run.meter.pending, run.started) == (32, 0, 32)


def test_a_model_call_made_again_gives_back_what_the_first_held(tmp_path: Path) -> None:
    """A framework that tries a failed call again reserves anew: the first share goes back."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    run = bridged(ledger_url=url, ledger_reserve_tokens="100")
    assert run.call() is None
    assert run.call() is None  # the first call raised; the framework made it again
    with open_ledger(url) as led:
        assert led.status("default", window="day").reserved_tokens == 100
    run.answered(Usage(total_tokens=7), "done")
    result = run.result("native", "done")
    assert result.stop_reason == "completed"
    with open_ledger(url) as led:
        status = led.status("default", window="day")
    assert (status.spent_tokens, status.reserved_tokens) == (7, 0)


def test_an_exception_before_any_model_call_is_raised_again() -> None:
    run = bridged()
    with pytest.raises(ValueError, match="set up wrong"):
        run.failed(ValueError("set up wrong"))
    after = bridged()
    assert after.call() is None
    result = after.failed(ValueError("the model broke"))
    assert (result.stop_reason, result.message) == (
        "error",
        "failed: ValueError: the model broke (turn 1)",
    )


def test_a_budget_with_no_step_budget_has_no_last_turn() -> None:
    """A budget made in code may leave the step budget out: its runs never reach a last turn."""
    base = Budget.of(budgetconf.resolve(env={}))
    budget = dataclasses.replace(
        base, limits={k: v for k, v in base.limits.items() if k != "max_steps"}
    )
    run = Bridged(FRAMEWORK, budget, tools={"add"})
    for _ in range(5):
        assert run.call() is None
        assert not run.meter.last
        run.answered(Usage(), None, adds("a"))
        run.tool("a", "add", lambda: 1)
    assert run.result("native", "").stop_reason == "completed"


def test_a_response_asking_more_calls_than_the_run_has_left_runs_none_and_stops() -> None:
    """Two calls against max_tool_calls = 1: neither runs, each is answered, the run stops."""
    run = bridged(max_tool_calls="1")
    assert run.call() is None
    plan = run.answered(Usage(), None, adds("a", "b"))
    refused = "not executed: the run's tool-call budget would be exceeded"
    assert plan.answers == (refused, refused)
    assert plan.stop is not None
    assert (plan.stop.status, plan.stop.stop_reason) == (RunStatus.TRUNCATED, "max_tool_calls")
    assert run.tool("a", "add", lambda: 1) == refused
    assert run.meter.executed == 0
    skipped = [e for e in run.meter.events if e["type"] == "calls_not_executed"]
    assert [(e["ids"], e["reason"]) for e in skipped] == [
        (["a", "b"], "the run's tool-call budget would be exceeded")
    ]
    assert run.call() is plan.stop


def test_a_meter_and_a_plan_say_in_their_repr_where_the_run_is() -> None:
    """A Meter shows its preset, turn and event count; a Plan its calls and those it runs."""
    run = bridged(max_steps="3")
    assert run.call() is None
    plan = run.answered(Usage(), None, adds("a", "b"))
    assert repr(plan) == "<Plan 2 calls, run ['add', 'add'], stop=False>"
    assert repr(run.meter) == "<Meter budgetconf turn 1, 3 events>"


def test_a_call_the_framework_gives_no_id_for_is_decided_by_its_name() -> None:
    """Without an id, the first undecided call of that name is the one that runs."""
    run = bridged(max_steps="3")
    assert run.call() is None
    run.answered(Usage(), None, adds("a", "b"))
    assert run.tool(None, "add", lambda: 1) == 1
    assert run.tool(None, "add", lambda: 2) == 2
    assert run.tool(None, "add", lambda: 3) == UNSEEN
    started = [e["id"] for e in run.meter.events if e["type"] == "tool_started"]
    assert started == ["a", "b"]
