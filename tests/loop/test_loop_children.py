"""Sub-agents: `current_run()`, `carve()`, and a child's run charged to its parent's budgets."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.loop import (
    Budget,
    LoopExecutor,
    RunHandle,
    RunResult,
    ScriptedModel,
    StopReason,
    current_run,
)

from conftest import Place
from helpers.loops import Driver, Echo, answer, budget, call, calls, usage

Build = Callable[[RunHandle], LoopExecutor]


def delegate(
    drive: Driver, build: Build, seen: list[RunResult], *, sync: bool = False
) -> Callable[..., Any]:
    """A tool that runs a child executor, built from the current run's handle, to its end.

    The child runs as its parent does (``arun`` in async mode), unless ``sync``: then the
    tool is a sync one, which `arun` runs on a worker thread under a deadline.
    """
    if drive.mode == "async" and not sync:

        async def atool(task: str = "sub") -> str:
            handle = current_run()
            assert handle is not None
            result = await build(handle).arun(task)
            seen.append(result)
            return result.output

        atool.__name__ = "delegate"
        return atool

    def tool(task: str = "sub") -> str:
        handle = current_run()
        assert handle is not None
        result = build(handle).run(task)
        seen.append(result)
        return result.output

    tool.__name__ = "delegate"
    return tool


def child(
    drive: Driver, model: ScriptedModel, caps: dict[str, Any] | None = None, **tools: Any
) -> Build:
    """Build a child executor over ``model`` with the budget carved with ``caps``."""
    tools = tools or {"echo": Echo()}

    def build(handle: RunHandle) -> LoopExecutor:
        return drive.executor(model, tools, handle.carve(**(caps or {})))

    return build


def parent(
    drive: Driver, responses: list[Any], build: Build, seen: list[RunResult], **fields: Any
) -> LoopExecutor:
    tool = delegate(drive, build, seen)
    return drive.executor(ScriptedModel(responses), {"delegate": tool}, budget(**fields))


DELEGATE = {"tool_calls": [call("delegate", task="sub")]}


def run_child(drive: Driver, caps: dict[str, Any], **fields: Any) -> RunResult:
    """The result of a child carved with ``caps`` from a parent with ``fields``."""
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([answer("sub done")]), caps)
    result = drive.run(parent(drive, [DELEGATE, answer()], build, seen, **fields), "go")
    assert result.status == "ok", result.message
    return seen[0]


def carving(drive: Driver, caps: dict[str, Any], **fields: Any) -> Budget | Exception:
    """The budget a tool carves with ``caps`` in a parent with ``fields``, or what it raised."""
    got: list[Budget | Exception] = []

    def build(handle: RunHandle) -> LoopExecutor:
        try:
            got.append(handle.carve(**caps))
        except Exception as exc:
            got.append(exc)
            raise
        return drive.executor(ScriptedModel([answer()]), {}, got[-1])

    drive.run(parent(drive, [DELEGATE, answer()], build, [], **fields), "go")
    return got[0]


def carved(drive: Driver, caps: dict[str, Any], **fields: Any) -> Budget:
    got = carving(drive, caps, **fields)
    assert isinstance(got, Budget)
    return got


# --- current_run() ------------------------------------------------------------------------


def test_current_run_is_none_outside_any_run() -> None:
    """Outside a run there is no current run."""
    assert current_run() is None


@pytest.mark.parametrize("deadline", [False, True], ids=["direct", "worker thread"])
def test_a_tool_sees_its_run_as_the_current_run(drive: Driver, deadline: bool) -> None:
    """In run() and arun(), called directly or on a worker thread, a tool sees its own run."""
    seen: list[tuple[RunHandle | None, str]] = []

    def look(text: str) -> str:
        seen.append((current_run(), threading.current_thread().name))
        return text

    fields = {"max_steps": 3, **({"timeout_seconds": 30} if deadline else {})}
    ex = drive.executor(
        ScriptedModel([calls(1, "look"), answer()]), {"look": look}, budget(**fields)
    )
    result = drive.run(ex, "go")
    assert result.status == "ok"
    ((handle, thread),) = seen
    assert isinstance(handle, RunHandle)
    assert handle.ended  # the run is over: its handle carves no more
    assert handle.totals.turns == 2
    # arun awaits an async tool on its own thread; a sync call under a deadline is a worker's
    assert thread.startswith("budgetconf-") is (deadline and drive.mode == "sync")
    assert current_run() is None


def test_a_sync_tool_in_arun_on_a_worker_thread_sees_its_run() -> None:
    """arun() runs a sync tool on a worker thread under a deadline; the tool sees the run."""
    seen: list[RunResult] = []
    drive = Driver("async")
    build = child(Driver("sync"), ScriptedModel([calls(1), answer("sub")]), {"max_steps": 4})
    tool = delegate(drive, build, seen, sync=True)
    model = ScriptedModel([DELEGATE, answer()])

    async def amodel(messages: Any, tools: Any) -> Any:
        return model(messages, tools)

    ex = LoopExecutor(amodel, {"delegate": tool}, budget(max_steps=3, timeout_seconds=30))
    result = asyncio.run(ex.arun("go"))
    assert result.status == "ok"
    assert seen[0].output == "sub"
    assert result.tool_calls_executed == 2  # the delegate call and the child's echo


def test_a_childs_tools_see_the_child_and_the_parents_see_the_parent_again(drive: Driver) -> None:
    """The current run is the innermost one, and the outer one again once the child ends."""
    handles: list[RunHandle | None] = []

    def look(text: str) -> str:
        handles.append(current_run())
        return text

    def build(handle: RunHandle) -> LoopExecutor:
        handles.append(handle)
        return drive.executor(
            ScriptedModel([calls(1, "look"), answer()]), {"look": look}, handle.carve()
        )

    seen: list[RunResult] = []
    tool = delegate(drive, build, seen)
    model = ScriptedModel([{"tool_calls": [call("delegate", task="sub"), call("look")]}, answer()])
    ex = drive.executor(model, {"delegate": tool, "look": look}, budget(max_steps=3))
    assert drive.run(ex, "go").status == "ok"
    outer, inner, after = handles
    assert inner is not outer
    assert after is outer


def test_carving_from_a_run_that_ended_is_a_usage_error(drive: Driver) -> None:
    """A handle kept past its run carves nothing, and a budget carved from it runs nothing."""
    kept: list[Budget] = []

    def build(handle: RunHandle) -> LoopExecutor:
        kept.append(handle.carve())
        return drive.executor(ScriptedModel([answer()]), {}, kept[-1])

    drive.run(parent(drive, [DELEGATE, answer()], build, [], max_steps=3), "go")
    handle = kept[0].parent  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="the run has ended"):
        handle.carve()
    with pytest.raises(UsageError, match="the run this budget was carved from has ended"):
        drive.run(drive.executor(ScriptedModel([answer()]), {}, kept[0]), "again")


# --- carve() ------------------------------------------------------------------------------


def test_a_cap_above_the_parents_remainder_is_lowered_to_it(drive: Driver) -> None:
    """Tokens and cost: the child gets what the parent has left, with the parent's evidence."""
    responses = [{**DELEGATE, **usage(30), "cost_usd": 0.25}, answer()]
    got: list[Budget] = []

    def build(handle: RunHandle) -> LoopExecutor:
        got.append(handle.carve(max_tokens=500, max_cost_usd=5))
        return drive.executor(ScriptedModel([answer()]), {}, got[-1])

    drive.run(parent(drive, responses, build, [], max_tokens=100, max_cost_usd=1.0), "go")
    tokens, cost = got[0].limits["max_tokens"], got[0].limits["max_cost_usd"]
    assert (tokens.value, tokens.source, tokens.locator) == (70, "explicit", "explicit")
    assert (cost.value, cost.field, cost.source) == (0.75, "limits.max_cost_usd", "explicit")


def test_a_cap_within_the_remainder_is_the_childs_own(drive: Driver) -> None:
    """A cap below what the parent has left is the child's: source carve, carve(NAME=V)."""
    budget_ = carved(drive, {"max_tokens": 20, "max_cost_usd": 0.5}, max_tokens=100)
    tokens, cost = budget_.limits["max_tokens"], budget_.limits["max_cost_usd"]
    assert (tokens.value, tokens.source, tokens.locator) == (20, "carve", "carve(max_tokens=20)")
    assert (cost.value, cost.locator) == (0.5, "carve(max_cost_usd=0.5)")
    assert tokens.to_dict() == {
        "field": "limits.max_tokens",
        "value": 20,
        "source": "carve",
        "locator": "carve(max_tokens=20)",
        "raise_with": [],
    }


def test_the_tool_call_remainder_leaves_out_the_calls_admitted_and_not_finished(
    drive: Driver,
) -> None:
    """Of 10 calls with 2 run, a batch of 3 (the child's call first) leaves the child 5."""
    got: list[Budget] = []

    def build(handle: RunHandle) -> LoopExecutor:
        got.append(handle.carve(max_tool_calls=50))
        return drive.executor(ScriptedModel([answer()]), {}, got[-1])

    tool = delegate(drive, build, [])
    model = ScriptedModel(
        [calls(2), {"tool_calls": [call("delegate", task="sub"), call(), call()]}, answer()]
    )
    ex = drive.executor(model, {"delegate": tool, "echo": Echo()}, budget(max_tool_calls=10))
    result = drive.run(ex, "go")
    assert result.tool_calls_executed == 5
    limit = got[0].limits["max_tool_calls"]
    assert (limit.value, limit.source) == (5, "explicit")


def test_an_unlimited_parent_leaves_the_shared_caps_to_the_child(drive: Driver) -> None:
    """A budget the parent does not have is only the child's cap, or absent."""
    budget_ = carved(drive, {"max_tool_calls": 4}, max_steps=3)
    assert budget_.limits["max_tool_calls"].source == "carve"
    assert "max_tokens" not in budget_.limits
    assert "timeout_seconds" not in budget_.limits


def test_steps_and_the_per_turn_cap_are_the_childs_own(drive: Driver) -> None:
    """max_steps and the per-turn cap: asked, else the parent's resolution's, never lowered."""
    asked = carved(drive, {"max_steps": 50, "max_tool_calls_per_turn": 9}, max_steps=3)
    assert asked.limits["max_steps"].value == 50
    assert asked.limits["max_steps"].locator == "carve(max_steps=50)"
    assert asked.limits["max_tool_calls_per_turn"].value == 9
    inherited = carved(drive, {}, max_steps=3, max_tool_calls_per_turn=2)
    steps = inherited.limits["max_steps"]
    assert (steps.value, steps.source, steps.field) == (3, "explicit", "loop.max_steps")
    assert inherited.limits["max_tool_calls_per_turn"].value == 2
    assert (inherited.last_turn, inherited.over_cap) == ("wrap_up", "reject")


def test_the_timeout_is_at_most_the_parents_remaining_time(drive: Driver) -> None:
    """timeout_seconds is the parent's remaining time when asked for more; less is its own."""
    more = carved(drive, {"timeout_seconds": 3600}, timeout_seconds=30)
    limit = more.limits["timeout_seconds"]
    assert 25 < limit.value <= 30
    assert limit.source == "explicit"
    less = carved(drive, {"timeout_seconds": 2.5}, timeout_seconds=30)
    assert less.limits["timeout_seconds"].locator == "carve(timeout_seconds=2.5)"


@pytest.mark.parametrize(
    ("caps", "error", "message"),
    [
        ({"max_token": 5}, UsageError, "no budget named 'max_token'; did you mean max_tokens?"),
        ({"speed": 5}, UsageError, "no budget named 'speed'; the budgets are max_steps, "),
        ({"max_tokens": -1}, UsageError, "max_tokens: expected at least 0, got -1"),
        ({"timeout_seconds": -0.5}, UsageError, "timeout_seconds: expected at least 0, got -0.5"),
        ({"max_steps": 0}, UsageError, "max_steps: expected at least 1, got 0"),
        (
            {"max_cost_usd": float("nan")},
            UsageError,
            "max_cost_usd: expected a finite number, got nan",
        ),
        ({"max_tokens": "9"}, UsageTypeError, "max_tokens: expected an integer, got str"),
        ({"max_tokens": 2.5}, UsageTypeError, "max_tokens: expected an integer, got float"),
        ({"max_tool_calls": True}, UsageTypeError, "max_tool_calls: expected an integer, got bool"),
        ({"max_cost_usd": "1"}, UsageTypeError, "max_cost_usd: expected a number, got str"),
    ],
)
def test_a_cap_that_is_no_budget_is_a_usage_error(
    caps: dict[str, Any], error: type[Exception], message: str
) -> None:
    """An unknown name, a negative or non-finite cap, or one of the wrong type is refused."""
    got = carving(Driver("sync"), caps, max_steps=3)
    assert type(got) is error
    assert str(got).startswith("carve: " + message)


def test_a_budget_the_preset_does_not_enforce_cannot_be_carved() -> None:
    """opendot's loop table has no token budget: carving one is a usage error that says so."""
    got: list[Exception] = []

    def tool(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        try:
            handle.carve(max_tokens=5)
        except UsageError as exc:
            got.append(exc)
        return "ok"

    res = budgetconf.resolve("opendot", env={})
    LoopExecutor(ScriptedModel([DELEGATE, answer()]), {"delegate": tool}, res).run("go")
    assert str(got[0]) == (
        "carve: the preset 'opendot' has no max_tokens budget: its [loop] table names no field"
        " for it"
    )


# --- charges ------------------------------------------------------------------------------


def test_a_childs_consumption_is_charged_to_its_parent(drive: Driver) -> None:
    """The parent's totals include the child's tokens, cost and tool calls executed."""
    seen: list[RunResult] = []
    work = {**calls(2), **usage(7), "cost_usd": 0.125}
    build = child(drive, ScriptedModel([work, {**answer("sub"), **usage(3)}]))
    responses = [{**DELEGATE, **usage(5), "cost_usd": 0.5}, answer()]
    result = drive.run(parent(drive, responses, build, seen, max_steps=5), "go")
    sub = seen[0]
    assert (sub.tokens, sub.cost_usd, sub.tool_calls_executed, sub.turns) == (10, 0.125, 2, 2)
    assert (result.tokens, result.cost_usd, result.tool_calls_executed) == (15, 0.625, 3)
    assert result.turns == 2  # turns are each run's own


def test_a_child_stopped_by_its_own_cap_names_its_own_limit(drive: Driver) -> None:
    """A child's own cap stops it with source carve and no scope; the parent goes on."""
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([{**calls(1), **usage(10)}]), {"max_tokens": 15})
    result = drive.run(parent(drive, [DELEGATE, answer()], build, seen, max_tokens=100), "go")
    sub = seen[0]
    assert (sub.status, sub.stop_reason, sub.tokens) == ("truncated", "max_tokens", 20)
    assert sub.limit == {
        "field": "limits.max_tokens",
        "value": 15,
        "source": "carve",
        "locator": "carve(max_tokens=15)",
        "raise_with": [],
    }
    assert sub.message == (
        "stopped: hit max_tokens (15): limits.max_tokens = 15 from carve(max_tokens=15);"
        " raise it where it is set"
    )
    assert (result.status, result.tokens) == ("ok", 20)


def test_the_parents_token_remainder_stops_the_child_and_then_the_parent(drive: Driver) -> None:
    """The child stops naming the parent's limit, scope parent; the parent stops before its
    next model call with the same budget, though its model would have answered."""
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([{**calls(1), **usage(40)}]), {"max_tokens": 500})
    responses = [{**DELEGATE, **usage(10)}, answer()]
    ex = parent(drive, responses, build, seen, max_tokens=100, max_steps=5)
    result = drive.run(ex, "go")
    sub = seen[0]
    assert (sub.status, sub.stop_reason, sub.tokens, sub.turns) == (
        "truncated",
        "max_tokens",
        120,
        3,
    )
    assert sub.limit == {
        "field": "limits.max_tokens",
        "value": 100,
        "source": "explicit",
        "locator": "explicit",
        "raise_with": [],
        "scope": "parent",
    }
    assert sub.message == (
        "stopped: hit max_tokens (100) of the parent run, which had 90 left when this run"
        " started: limits.max_tokens = 100 from explicit; raise it where it is set"
    )
    assert sub.messages[-1]["content"].startswith("not executed")  # its last calls did not run
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_tokens", 1)
    assert result.limit is not None
    assert "scope" not in result.limit
    assert result.tokens == 130


def test_the_parents_cost_remainder_stops_the_child(drive: Driver) -> None:
    """Cost charged to the picodollar: three child responses at 0.3 spend the parent's 0.9."""
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([{**calls(1), "cost_usd": 0.3}]))
    responses = [{**DELEGATE, "cost_usd": 0.1}, answer()]
    result = drive.run(parent(drive, responses, build, seen, max_cost_usd=1.0), "go")
    sub = seen[0]
    assert (sub.stop_reason, sub.turns, sub.tool_calls_executed) == ("max_cost", 3, 3)
    assert sub.limit is not None
    assert (sub.limit["field"], sub.limit["value"], sub.limit["scope"]) == (
        "limits.max_cost_usd",
        1.0,
        "parent",
    )
    assert "which had $0.9 left when this run started" in sub.message
    assert (result.stop_reason, result.cost_usd) == ("max_cost", 1.0)


def test_the_parents_tool_call_remainder_stops_the_child_and_sticks(drive: Driver) -> None:
    """A child whose batch would pass the parent's remaining calls runs none of it; the
    parent, at its cap or not, stops at its next check with max_tool_calls."""
    seen: list[RunResult] = []
    echo = Echo()
    build = child(drive, ScriptedModel([calls(2)]), echo=echo)
    responses = [{"tool_calls": [call("delegate", task="sub"), call("echo")]}, answer()]
    tool = delegate(drive, build, seen)
    ex = drive.executor(
        ScriptedModel(responses), {"delegate": tool, "echo": Echo()}, budget(max_tool_calls=6)
    )
    result = drive.run(ex, "go")
    sub = seen[0]
    # 6 calls, 2 admitted: the child has 4, runs 2 + 2, and its third batch would pass them
    assert (sub.stop_reason, sub.tool_calls_executed, len(echo.seen)) == ("max_tool_calls", 4, 4)
    assert sub.limit is not None
    assert (sub.limit["value"], sub.limit["scope"]) == (6, "parent")
    assert "(6) of the parent run, which had 4 left when this run started" in sub.message
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_tool_calls", 1)
    assert result.tool_calls_executed == 6  # the child's four, the delegate call and the echo


def test_the_parents_deadline_is_the_childs(place: object) -> None:
    """A child's deadline is its parent's when that comes first: its stop names the parent's
    timeout, and the parent stops with its timeout too."""
    seen: list[RunResult] = []
    done = threading.Event()
    gate = threading.Event()
    drive = Driver("sync")
    build = child(
        drive,
        ScriptedModel([{"tool_calls": [call("wait")]}]),
        {"timeout_seconds": 60},
        wait=drive.hang(gate, "late"),
    )

    def tool(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        seen.append(build(handle).run(task))
        done.set()
        return "ok"

    ex = LoopExecutor(
        ScriptedModel([DELEGATE, answer()]), {"delegate": tool}, budget(timeout_seconds=0.5)
    )
    try:
        result = ex.run("go")
        assert done.wait(10)
    finally:
        gate.set()
    sub = seen[0]
    assert (result.stop_reason, sub.stop_reason) == ("timeout", "timeout")
    assert sub.limit is not None
    assert (sub.limit["field"], sub.limit["value"], sub.limit["scope"]) == (
        "limits.timeout_seconds",
        0.5,
        "parent",
    )
    assert "of the parent run, which had 0." in sub.message


def test_a_childs_own_shorter_timeout_is_its_own(drive: Driver) -> None:
    """A child whose own timeout comes first stops with it, and the parent goes on."""
    seen: list[RunResult] = []
    gate = threading.Event()
    build = child(
        drive,
        ScriptedModel([{"tool_calls": [call("wait")]}]),
        {"timeout_seconds": 0.2},
        wait=drive.hang(gate, "late"),
    )
    try:
        ex = parent(drive, [DELEGATE, answer()], build, seen, timeout_seconds=60)
        result = drive.run(ex, "go")
    finally:
        gate.set()
    sub = seen[0]
    assert sub.stop_reason == "timeout"
    assert sub.limit is not None
    assert (sub.limit["locator"], "scope" in sub.limit) == ("carve(timeout_seconds=0.2)", False)
    assert result.status == "ok"


# --- events -------------------------------------------------------------------------------


def test_the_parent_records_child_start_and_child_end(drive: Driver) -> None:
    """child_start carries the child's limits; child_end its status, stop and totals."""
    seen: list[RunResult] = []
    received: list[dict[str, Any]] = []
    build = child(drive, ScriptedModel([{**calls(1), **usage(4)}, answer("sub")]), {"max_steps": 4})
    tool = delegate(drive, build, seen)
    ex = drive.executor(
        ScriptedModel([DELEGATE, answer()]),
        {"delegate": tool},
        budget(max_tokens=50),
        on_event=received.append,
    )
    result = drive.run(ex, "go")
    mine = [e for e in result.events if e["type"].startswith("child_")]
    assert {(e["run_id"], e["child_run_id"]) for e in mine} == {(result.run_id, seen[0].run_id)}
    assert [
        {k: v for k, v in e.items() if k not in ("run_id", "child_run_id", "time")} for e in mine
    ] == [
        {
            "type": "child_start",
            "turn": 1,
            "limits": {"max_steps": 4, "max_tool_calls_per_turn": 10, "max_tokens": 50},
        },
        {
            "type": "child_end",
            "turn": 1,
            "status": "ok",
            "stop_reason": "completed",
            "turns": 2,
            "tokens": 4,
            "cost_usd": 0.0,
            "tool_calls_executed": 1,
        },
    ]
    kinds = [e["type"] for e in result.events]
    assert kinds.index("child_end") < kinds.index("tool_executed")
    assert [e for e in received if e["type"].startswith("child_")] == mine
    assert not any(e["type"].startswith("child_") for e in seen[0].events)


# --- depth --------------------------------------------------------------------------------


def test_three_levels_charge_the_top_and_stop_with_its_budget(drive: Driver) -> None:
    """A grandchild that spends the top run's tokens names it (two levels up); the middle
    run stops at its next check naming its parent; the top stops with its own limit."""
    middles: list[RunResult] = []
    bottoms: list[RunResult] = []
    bottom = child(drive, ScriptedModel([{**calls(1), **usage(30)}]))
    middle_tool = delegate(drive, bottom, bottoms)

    def middle(handle: RunHandle) -> LoopExecutor:
        model = ScriptedModel([{**DELEGATE, **usage(10)}, answer()])
        return drive.executor(model, {"delegate": middle_tool}, handle.carve(max_steps=5))

    top = parent(
        drive, [{**DELEGATE, **usage(10)}, answer()], middle, middles, max_tokens=100, max_steps=5
    )
    result = drive.run(top, "go")
    (mid,), (low,) = middles, bottoms
    assert low.stop_reason == "max_tokens"
    assert low.limit is not None
    assert (low.limit["value"], low.limit["scope"]) == (100, "parent")
    assert low.message.startswith(
        "stopped: hit max_tokens (100) of an enclosing run (2 levels up), which had 80 left"
    )
    assert (low.tokens, mid.tokens, result.tokens) == (90, 100, 110)
    assert (mid.stop_reason, mid.turns) == ("max_tokens", 1)
    assert mid.limit is not None
    assert mid.limit["scope"] == "parent"
    assert "of the parent run, which had 90 left" in mid.message
    assert (result.stop_reason, result.turns) == ("max_tokens", 1)
    assert result.limit is not None
    assert "scope" not in result.limit
    top_children = [e["type"] for e in result.events if e["type"].startswith("child_")]
    assert top_children == ["child_start", "child_end"]  # its direct child only
    assert [e["type"] for e in mid.events if e["type"].startswith("child_")] == top_children


def test_a_middle_runs_own_cap_is_named_when_it_runs_out(drive: Driver) -> None:
    """The nearest enclosing run whose own limit ran out is named, not the top."""
    bottoms: list[RunResult] = []
    bottom = child(drive, ScriptedModel([{**calls(1), **usage(30)}]))
    middle_tool = delegate(drive, bottom, bottoms)

    def middle(handle: RunHandle) -> LoopExecutor:
        model = ScriptedModel([DELEGATE, answer()])
        return drive.executor(model, {"delegate": middle_tool}, handle.carve(max_tokens=50))

    result = drive.run(parent(drive, [DELEGATE, answer()], middle, [], max_tokens=1000), "go")
    low = bottoms[0]
    assert low.limit is not None
    assert (low.limit["source"], low.limit["value"], low.limit["scope"]) == ("carve", 50, "parent")
    assert "of the parent run, which had 50 left" in low.message
    assert result.status == "ok"
    assert result.tokens == 60


def test_siblings_share_the_parents_remainder(drive: Driver) -> None:
    """A second child gets what the first left: the remainder is the parent's, live."""
    got: list[Budget] = []

    def build(handle: RunHandle) -> LoopExecutor:
        got.append(handle.carve(max_tokens=1000))
        return drive.executor(ScriptedModel([{**answer(), **usage(30)}]), {}, got[-1])

    responses = [
        {"tool_calls": [call("delegate", task="sub"), call("delegate", task="sub")]},
        answer(),
    ]
    tool = delegate(drive, build, [])
    ex = drive.executor(ScriptedModel(responses), {"delegate": tool}, budget(max_tokens=100))
    assert drive.run(ex, "go").tokens == 60
    assert [b.limits["max_tokens"].value for b in got] == [100, 70]


def test_a_child_budget_shows_its_limits_and_its_parent() -> None:
    """The repr names the preset, the limits and the running parent."""
    shown: list[str] = []

    def build(handle: RunHandle) -> LoopExecutor:
        shown.append(repr(handle.carve(max_steps=2)))
        return LoopExecutor(ScriptedModel([answer()]), {}, handle.carve())

    drive = Driver("sync")
    drive.run(parent(drive, [DELEGATE, answer()], build, [], max_steps=3), "go")
    assert shown == [
        "ChildBudget(preset='budgetconf', limits={'max_steps': 2, 'max_tool_calls_per_turn': 10},"
        " parent=<RunHandle budgetconf running, turn 1>)"
    ]


def test_a_child_run_started_late_still_counts_from_its_own_start() -> None:
    """The child's own timeout counts from its start, not from the carve."""
    seen: list[RunResult] = []

    def build(handle: RunHandle) -> LoopExecutor:
        carved_ = handle.carve(timeout_seconds=0.3)
        time.sleep(0.4)  # longer than the child's own timeout
        return LoopExecutor(ScriptedModel([answer("in time")]), {}, carved_)

    drive = Driver("sync")
    drive.run(parent(drive, [DELEGATE, answer()], build, seen, max_steps=3), "go")
    assert (seen[0].status, seen[0].output) == ("ok", "in time")


def test_a_child_stop_reason_is_a_stop_reason() -> None:
    """The stop kind of a child stopped by its parent is the budget's StopReason."""
    drive = Driver("sync")
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([{**calls(1), **usage(60)}]))
    drive.run(parent(drive, [DELEGATE, answer()], build, seen, max_tokens=100), "go")
    assert seen[0].stop_kind is StopReason.MAX_TOKENS


def test_a_child_that_brings_the_parent_exactly_to_its_limit_stops_before_its_next_turn(
    drive: Driver,
) -> None:
    """Reaching the parent's token limit (not passing it) stops the child before its next turn."""
    seen: list[RunResult] = []
    build = child(drive, ScriptedModel([{**calls(1), **usage(30)}]))
    responses = [{**DELEGATE, **usage(10)}, answer()]
    result = drive.run(parent(drive, responses, build, seen, max_tokens=100), "go")
    sub = seen[0]
    assert (sub.stop_reason, sub.turns, sub.tokens, sub.tool_calls_executed) == (
        "max_tokens",
        3,
        90,
        3,
    )
    assert sub.limit is not None
    assert sub.limit["scope"] == "parent"
    assert (result.stop_reason, result.tokens) == ("max_tokens", 100)


def test_a_child_response_that_takes_the_parent_past_its_cost_runs_none_of_its_calls(
    drive: Driver,
) -> None:
    """A response that takes the parent over its cost limit has its calls answered, not run."""
    seen: list[RunResult] = []
    echo = Echo()
    build = child(drive, ScriptedModel([{**calls(1), "cost_usd": 0.4}]), echo=echo)
    responses = [{**DELEGATE, "cost_usd": 0.1}, answer()]
    result = drive.run(parent(drive, responses, build, seen, max_cost_usd=1.0), "go")
    sub = seen[0]
    assert (sub.stop_reason, sub.turns, len(echo.seen)) == ("max_cost", 3, 2)
    assert sub.limit is not None
    assert sub.limit["scope"] == "parent"
    assert result.cost_usd == 1.3


def test_a_parents_secret_limit_stays_masked_in_its_childs_stop(place: Place) -> None:
    """The value and what was left show as *** in the child's message and limit."""
    preset = Path(budgetconf.__file__).parent / "_presets" / "budgetconf.toml"
    text = preset.read_text().replace(
        '[fields."limits.max_cost_usd"]', '[fields."limits.max_cost_usd"]\nsecret = true'
    )
    vault = place.write("secret-cost.toml", text.replace('name = "budgetconf"', 'name = "vault"'))
    res = budgetconf.resolve(str(vault), env={}, explicit={"limits.max_cost_usd": 0.5})
    seen: list[RunResult] = []
    drive = Driver("sync")
    build = child(drive, ScriptedModel([{**calls(1), "cost_usd": 0.25}]))
    tool = delegate(drive, build, seen)
    LoopExecutor(ScriptedModel([DELEGATE, answer()]), {"delegate": tool}, res).run("go")
    sub = seen[0]
    assert sub.limit is not None
    assert (sub.limit["value"], sub.limit["scope"]) == ("***", "parent")
    assert sub.message.startswith(
        "stopped: hit max_cost_usd (***) of the parent run, which had *** left"
    )
    assert "0.5" not in sub.message


def test_a_preset_without_a_per_turn_cap_gives_the_child_none() -> None:
    """Under opendot a child has the step budget alone, taken from the parent's resolution."""
    got: list[Budget] = []

    def tool(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        got.append(handle.carve())
        return "ok"

    res = budgetconf.resolve("opendot", env={})
    LoopExecutor(ScriptedModel([DELEGATE, answer()]), {"delegate": tool}, res).run("go")
    assert list(got[0].limits) == ["max_steps"]
    assert got[0].limits["max_steps"].field == "agent.max_steps"


def test_a_child_that_outlives_its_parent_leaves_the_parents_events_alone() -> None:
    """A child still running when its parent ends sends no child_end to the ended run."""
    tasks: list[asyncio.Task[RunResult]] = []

    async def slow(messages: Any, tools: Any) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return answer("late")

    async def spawn(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        tasks.append(asyncio.ensure_future(LoopExecutor(slow, {}, handle.carve()).arun(task)))
        await asyncio.sleep(0)  # the child starts, and waits for its model
        return "spawned"

    async def model(messages: Any, tools: Any) -> dict[str, Any]:
        return DELEGATE if len(messages) == 1 else answer()

    ex = LoopExecutor(model, {"delegate": spawn}, budget(max_steps=3))

    async def main() -> tuple[RunResult, RunResult]:
        result = await ex.arun("go")
        return result, await tasks[0]

    result, sub = asyncio.run(main())
    assert (result.status, sub.status, sub.output) == ("ok", "ok", "late")
    assert [e["type"] for e in result.events if e["type"].startswith("child_")] == ["child_start"]


def test_a_child_whose_on_event_fails_ends_once_in_its_parents_events(drive: Driver) -> None:
    """A child that fails as it stops is reported once, as failed."""
    seen: list[RunResult] = []

    def sink(event: dict[str, Any]) -> None:
        if event["type"] == "stopped":
            raise OSError("disk full")

    def build(handle: RunHandle) -> LoopExecutor:
        return drive.executor(ScriptedModel([answer()]), {}, handle.carve(), on_event=sink)

    result = drive.run(parent(drive, [DELEGATE, answer()], build, seen, max_steps=3), "go")
    assert seen[0].status == "failed"
    ends = [e for e in result.events if e["type"] == "child_end"]
    assert [(e["status"], e["stop_reason"]) for e in ends] == [("failed", "error")]


# --- interrupts -----------------------------------------------------------------------------


def test_an_interrupt_in_a_child_cancels_its_parent_too() -> None:
    """A KeyboardInterrupt that ends a child cancelled ends its parent cancelled, at its next
    check: the parent's model is not called again."""
    seen: list[RunResult] = []
    drive = Driver("sync")

    def interrupt(text: str) -> str:
        raise KeyboardInterrupt

    build = child(drive, ScriptedModel([calls(1, "stop")]), stop=interrupt)
    lead = ScriptedModel([DELEGATE, answer()])
    result = LoopExecutor(lead, {"delegate": delegate(drive, build, seen)}, budget()).run("go")
    assert seen[0].stop_reason == "cancelled"
    assert (result.status, result.stop_reason, result.turns) == ("failed", "cancelled", 1)
    assert result.message == "cancelled on turn 1: a sub-agent was cancelled"
    assert len(lead.received) == 1


def test_cancelling_the_task_cancels_the_child_and_its_parent() -> None:
    """The task that awaits the parent is cancelled while a child runs: both end cancelled."""
    seen: list[RunResult] = []
    started = asyncio.Event()

    async def slow(messages: Any, tools: Any) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(30)
        return answer()

    def build(handle: RunHandle) -> LoopExecutor:
        return LoopExecutor(slow, {}, handle.carve())

    lead = ScriptedModel([DELEGATE, answer()])
    tool = delegate(Driver("async"), build, seen)

    async def main() -> RunResult:
        ex = LoopExecutor(lead, {"delegate": tool}, budget())
        task = asyncio.ensure_future(ex.arun("go"))
        await started.wait()
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert seen[0].stop_reason == "cancelled"
    assert (result.stop_reason, len(lead.received)) == ("cancelled", 1)


def test_a_child_cancelled_by_its_tool_leaves_the_parent_running() -> None:
    """A tool that times its child out with wait_for cancels the child's task alone."""
    seen: list[RunResult] = []

    async def slow(messages: Any, tools: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return answer()

    async def bounded(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        sub = LoopExecutor(slow, {}, handle.carve())
        seen.append(await asyncio.wait_for(sub.arun(task), 0.05))
        return seen[-1].stop_reason

    lead = ScriptedModel([DELEGATE, answer()])
    result = asyncio.run(LoopExecutor(lead, {"delegate": bounded}, budget()).arun("go"))
    assert seen[0].stop_reason == "cancelled"
    assert (result.status, result.turns) == ("ok", 2)


# --- more than one child --------------------------------------------------------------------


def test_children_running_together_share_the_parents_remainder_live() -> None:
    """Two children gathered at once both stop when, together, they spend the parent's tokens."""
    seen: list[RunResult] = []

    def worker() -> Callable[..., Any]:
        async def model(messages: Any, tools: Any) -> dict[str, Any]:
            await asyncio.sleep(0)  # the other child's turn comes between two of this one's
            return {**calls(1), **usage(20)}

        return model

    async def fan_out(task: str = "") -> str:
        handle = current_run()
        assert handle is not None
        subs = [LoopExecutor(worker(), {"echo": Echo()}, handle.carve()) for _ in range(2)]
        seen.extend(await asyncio.gather(*(s.arun(task) for s in subs)))
        return "both done"

    lead = ScriptedModel([DELEGATE, answer()])
    result = asyncio.run(
        LoopExecutor(lead, {"delegate": fan_out}, budget(max_tokens=100)).arun("go")
    )
    assert [s.limit["scope"] if s.limit else None for s in seen] == ["parent", "parent"]
    assert sum(s.tokens for s in seen) == result.tokens
    assert 100 <= result.tokens <= 120  # the response that crossed it, and no turn after
    assert result.stop_reason == "max_tokens"


def test_a_resumed_child_charges_only_what_it_consumes_anew(drive: Driver) -> None:
    """Resuming a child's truncated run in the same tool charges the parent the new turns."""
    seen: list[RunResult] = []

    def build(handle: RunHandle) -> LoopExecutor:
        return drive.executor(
            ScriptedModel([{**calls(1), **usage(5)}]), {"echo": Echo()}, handle.carve(max_steps=2)
        )

    if drive.mode == "async":

        async def tool(task: str = "") -> str:
            handle = current_run()
            assert handle is not None
            ex = build(handle)
            first = await ex.arun(task)
            seen.append(await ex.aresume(first, extra_steps=1))
            return "ok"
    else:

        def tool(task: str = "") -> str:  # type: ignore[misc]
            handle = current_run()
            assert handle is not None
            ex = build(handle)
            first = ex.run(task)
            seen.append(ex.resume(first, extra_steps=1))
            return "ok"

    lead = ScriptedModel([DELEGATE, answer()])
    result = drive.run(drive.executor(lead, {"delegate": tool}, budget(max_steps=3)), "go")
    assert (seen[0].turns, seen[0].tokens) == (3, 15)
    assert result.tokens == 15
    assert [e["type"] for e in result.events].count("child_end") == 2


class Counted:
    """A tool that counts its runs across threads, a little slowly, so that threads interleave."""

    def __init__(self) -> None:
        self.runs = 0
        self.lock = threading.Lock()

    def __call__(self) -> str:
        time.sleep(0.002)
        with self.lock:
            self.runs += 1
        return "ran"


ALWAYS = {"tool_calls": [{"name": "t", "arguments": {}}]}


def test_two_children_on_two_threads_never_pass_the_parents_tool_call_cap() -> None:
    """What each child admits comes out of the parent's remainder at once, under the tree's
    lock: together they run at most what the parent had left, never each its own copy."""
    tool = Counted()
    results: list[RunResult] = []

    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        budgets = [handle.carve(max_steps=50), handle.carve(max_steps=50)]

        def child(budget: Budget) -> None:
            results.append(LoopExecutor(ScriptedModel([ALWAYS]), {"t": tool}, budget).run("go"))

        threads = [threading.Thread(target=child, args=(b,)) for b in budgets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return "spawned"

    model = ScriptedModel([{"tool_calls": [{"name": "spawn", "arguments": {}}]}, answer()])
    limits = {"loop.max_steps": 5, "limits.max_tool_calls": 5}
    parent = LoopExecutor(model, {"spawn": spawn}, limits).run("go")
    assert tool.runs == 4  # the parent's 5, less the call running the children
    assert parent.tool_calls_executed == 5
    assert sorted(r.stop_reason for r in results) == ["max_tool_calls", "max_tool_calls"]
    assert all(r.limit is not None and r.limit["scope"] == "parent" for r in results)


def test_a_grandchild_never_passes_its_grandparents_tool_call_cap() -> None:
    tool = Counted()

    def nested(levels: int) -> Callable[[], str]:
        def spawn() -> str:
            handle = current_run()
            assert handle is not None
            tools: dict[str, Any] = {"t": tool}
            script: list[dict[str, Any]] = [ALWAYS]
            if levels:
                tools["spawn"] = nested(levels - 1)
                script = [{"tool_calls": [{"name": "spawn", "arguments": {}}]}, ALWAYS]
            budget = handle.carve(max_steps=50)
            LoopExecutor(ScriptedModel(script), tools, budget).run("go")
            return "done"

        return spawn

    model = ScriptedModel([{"tool_calls": [{"name": "spawn", "arguments": {}}]}, answer()])
    limits = {"loop.max_steps": 5, "limits.max_tool_calls": 5}
    top = LoopExecutor(model, {"spawn": nested(1)}, limits).run("go")
    # the top's spawn and the child's spawn are running: 3 of the 5 are left for the grandchild
    assert tool.runs == 3
    assert top.tool_calls_executed == 5


def test_a_child_over_its_own_tool_call_cap_runs_none_of_the_response(drive: Driver) -> None:
    """A child carved max_tool_calls=2 that asks for 3 calls runs none and stops on its own
    cap; a call to a tool it lacks, before, takes none of that cap."""
    seen: list[RunResult] = []
    echo = Echo()

    def build(handle: RunHandle) -> LoopExecutor:
        model = ScriptedModel([{"tool_calls": [call("nope")]}, calls(3), answer()])
        return drive.executor(model, {"echo": echo}, handle.carve(max_tool_calls=2))

    tool = delegate(drive, build, seen)
    model = ScriptedModel([{"tool_calls": [call("delegate", task="sub")]}, answer()])
    ex = drive.executor(model, {"delegate": tool}, budget(max_tool_calls=10))
    result = drive.run(ex, "go")
    [child] = seen
    assert (child.stop_reason, child.tool_calls_executed, child.turns) == ("max_tool_calls", 0, 2)
    refused = [e for e in child.events if e["type"] == "calls_not_executed"]
    assert [e["reason"] for e in refused] == ["the run's tool-call budget would be exceeded"]
    assert echo.seen == []
    assert (result.stop_reason, result.tool_calls_executed) == ("completed", 1)


def test_a_parent_that_ran_a_child_is_still_held_to_its_own_tool_call_cap(drive: Driver) -> None:
    """After a sub-agent, a parent response asking past max_tool_calls runs none of its calls."""
    seen: list[RunResult] = []
    echo = Echo()

    def build(handle: RunHandle) -> LoopExecutor:
        return drive.executor(ScriptedModel([answer("sub done")]), {}, handle.carve())

    tool = delegate(drive, build, seen)
    model = ScriptedModel([{"tool_calls": [call("delegate", task="sub")]}, calls(3), answer()])
    ex = drive.executor(model, {"delegate": tool, "echo": echo}, budget(max_tool_calls=3))
    result = drive.run(ex, "go")
    assert [r.output for r in seen] == ["sub done"]
    assert (result.stop_reason, result.tool_calls_executed, result.turns) == (
        "max_tool_calls",
        1,
        2,
    )
    refused = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert [e["reason"] for e in refused] == ["the run's tool-call budget would be exceeded"]
    assert echo.seen == []
