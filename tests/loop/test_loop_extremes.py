"""The loop at the edges of what it accepts: far deadlines, the largest budgets, shared content,
and an ``on_event`` callback that fails."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any

import pytest

from budgetconf import UsageError, UsageTypeError
from budgetconf._field import MAX_INT
from budgetconf.loop import LoopExecutor, ScriptedModel, current_run

from helpers.loops import Driver, Echo, answer, budget, calls, types

# --- far deadlines and the largest budgets ----------------------------------------------


@pytest.mark.parametrize(
    "seconds", [9.3e9, 1e300, sys.float_info.max], ids=["past TIMEOUT_MAX", "1e300", "max float"]
)
def test_a_deadline_however_far_is_waited_for(drive: Driver, seconds: float) -> None:
    """limits.timeout_seconds takes any finite number: a far deadline is simply not reached."""
    assert seconds > threading.TIMEOUT_MAX  # past what one wait may be given
    model = _slow_script(ScriptedModel([calls(1), answer("done")]))
    ex = drive.executor(model, {"echo": Echo()}, budget(timeout_seconds=seconds))
    result = drive.run(ex, "go")
    assert (result.status, result.output, result.tool_calls_executed) == ("ok", "done", 1)


def _slow_script(script: ScriptedModel) -> Any:
    def model(messages: Any, tools: Any) -> Any:
        time.sleep(0.05)
        return script(messages, tools)

    return model


def test_arun_waits_for_a_sync_call_under_a_far_deadline() -> None:
    """arun with a sync model on a worker thread: a 1e300-second deadline is no error."""
    ex = LoopExecutor(_slow_script(ScriptedModel([answer()])), budget=budget(timeout_seconds=1e300))
    assert asyncio.run(ex.arun("go")).status == "ok"


def test_the_largest_budgets_are_enforced_without_overflow(drive: Driver) -> None:
    """Every budget at the largest value the schema accepts: the run goes as with any other."""
    limits = budget(
        max_steps=MAX_INT,
        max_tool_calls_per_turn=MAX_INT,
        max_tool_calls=MAX_INT,
        max_tokens=MAX_INT,
        max_cost_usd=sys.float_info.max,
        timeout_seconds=sys.float_info.max,
    )
    model = ScriptedModel([{**calls(2), "usage": {"total_tokens": 2**40}}, answer()])
    result = drive.run(drive.executor(model, {"echo": Echo()}, limits), "go")
    assert (result.status, result.turns, result.tool_calls_executed) == ("ok", 2, 2)
    assert result.tokens == 2**40


def test_a_response_reporting_more_than_a_response_can_use_fails_the_run(drive: Driver) -> None:
    """2**63 - 1 tokens (or a cost past 10**6 USD) is no report a model makes: the run ends
    error before the response's calls run, as for any unreadable response."""
    for usage in ({"usage": {"total_tokens": 2**63 - 1}}, {"cost_usd": 1e7}):
        model = ScriptedModel([{**calls(1), **usage}, answer()])
        result = drive.run(drive.executor(model, {"echo": Echo()}, budget()), "go")
        assert (result.status, result.stop_reason, result.turns) == ("failed", "error", 1)
        assert result.message.startswith("failed: malformed model response: ")
        assert result.tool_calls_executed == 0


def test_a_resume_by_the_largest_number_of_steps_runs(drive: Driver) -> None:
    """resume(extra_steps=2**63 - 1) continues like any other."""
    model = ScriptedModel([calls(1), calls(1), answer()])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=1))
    first = drive.run(ex, "go")
    assert first.stop_reason == "max_steps"
    more = drive.resume(ex, first, extra_steps=MAX_INT)
    assert (more.status, more.turns) == ("ok", 3)


# --- the caller's messages, nested content included ---------------------------------------


def _caller() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "content": [{"type": "text", "text": "go"}], "meta": {"tags": ["a"]}},
    ]


def test_changing_the_results_nested_content_leaves_the_callers_alone(drive: Driver) -> None:
    """result.messages shares nothing with the caller's list: not a part, not a tag."""
    caller = _caller()
    result = drive.run(drive.executor(ScriptedModel([answer()]), None, budget()), caller)
    result.messages[0]["content"][0]["text"] = "changed"
    result.messages[1]["meta"]["tags"].append("b")
    assert caller == _caller()


def test_changing_the_callers_nested_content_leaves_the_result_alone(drive: Driver) -> None:
    """The other way: the caller's later changes do not reach result.messages."""
    caller = _caller()
    result = drive.run(drive.executor(ScriptedModel([answer()]), None, budget()), caller)
    caller[0]["content"][0]["text"] = "changed"
    caller[1]["meta"]["tags"].append("b")
    assert result.messages[:2] == _caller()


def test_a_model_that_changes_what_it_is_sent_leaves_the_callers_alone(drive: Driver) -> None:
    """A model that writes into the nested content it receives changes only the run's copy."""

    def model(messages: list[dict[str, Any]], tools: Any) -> Any:
        messages[0]["content"][0]["text"] = "rewritten"
        messages[1]["meta"]["tags"].clear()
        return answer()

    caller = _caller()
    drive.run(drive.executor(model, None, budget()), caller)
    assert caller == _caller()


def test_a_resumed_run_leaves_the_first_results_messages_alone(drive: Driver) -> None:
    """resume() copies result.messages: the continuation's changes stay in its own result."""
    model = ScriptedModel([calls(1), answer()])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=1))
    first = drive.run(ex, _caller())
    before = [dict(m) for m in first.messages]
    more = drive.resume(ex, first, extra_steps=2)
    more.messages[0]["content"][0]["text"] = "changed"
    assert first.messages == before
    assert first.messages[0]["content"][0]["text"] == "be brief"


def test_content_that_cannot_be_copied_is_a_usage_error() -> None:
    """A message holding a lock cannot be copied, so the run refuses it before it starts."""
    ex = LoopExecutor(ScriptedModel([answer()]), budget=budget())
    messages = [{"role": "user", "content": "go", "lock": threading.Lock()}]
    with pytest.raises(UsageTypeError, match=r"^messages\[0\]: cannot be copied: TypeError: "):
        ex.run(messages)


def test_content_nested_too_deeply_to_copy_is_a_usage_error() -> None:
    """Content nested past Python's recursion limit is refused in one line."""
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    ex = LoopExecutor(ScriptedModel([answer()]), budget=budget())
    with pytest.raises(UsageError, match=r"^messages\[0\]: nested too deeply to copy$"):
        ex.run([{"role": "user", "content": deep}])


# --- an on_event callback that fails ------------------------------------------------------


class Failing:
    """An on_event callback that raises on the first event of one type, and records the rest."""

    def __init__(self, on: str) -> None:
        self.on = on
        self.seen: list[str] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.seen.append(event["type"])
        if event["type"] == self.on:
            raise OSError(28, "No space left on device")


def test_a_callback_that_fails_at_the_start_stops_the_run_before_the_model(drive: Driver) -> None:
    """on_event raising on run_started: no model call is made, and the run failed."""
    model = ScriptedModel([answer()])
    sink = Failing("run_started")
    result = drive.run(drive.executor(model, None, budget(), on_event=sink), "go")
    assert (result.status, result.stop_reason, model.calls) == ("failed", "error", 0)
    assert result.message == (
        "failed: on_event raised OSError: [Errno 28] No space left on device (turn 0)"
    )
    assert sink.seen == ["run_started"]  # never called again
    assert types(result) == ["run_started", "stopped"]


def test_a_callback_that_fails_between_tools_stops_the_calls_after_it(drive: Driver) -> None:
    """on_event raising on a tool's event: the next call does not run, and is answered."""
    echo = Echo()
    sink = Failing("tool_executed")
    ex = drive.executor(
        ScriptedModel([calls(3), answer()]), {"echo": echo}, budget(), on_event=sink
    )
    result = drive.run(ex, "go")
    assert (result.stop_reason, echo.seen) == ("error", ["0"])
    assert [m["content"] for m in result.messages[3:]] == [
        "not executed: the run stopped (error)",
        "not executed: the run stopped (error)",
    ]


def test_a_callback_that_fails_after_a_sub_agent_stops_the_calls_after_it(drive: Driver) -> None:
    """The same in a run with a child carved (its counts then kept under the tree's lock): the
    calls after the failed event are counted no longer, and none runs."""
    echo = Echo()

    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        return LoopExecutor(ScriptedModel([answer()]), budget=handle.carve()).run("go").output

    first = {"tool_calls": [{"id": "s", "name": "spawn", "arguments": {}}, *calls(2)["tool_calls"]]}
    sink = Failing("tool_executed")
    ex = drive.executor(
        ScriptedModel([first, answer()]), {"echo": echo, "spawn": spawn}, budget(), on_event=sink
    )
    result = drive.run(ex, "go")
    assert (result.stop_reason, result.tool_calls_executed, echo.seen) == ("error", 1, [])
    assert [m["content"] for m in result.messages[3:]] == [
        "not executed: the run stopped (error)",
        "not executed: the run stopped (error)",
    ]


def test_a_callback_that_fails_on_the_last_event_fails_the_run(drive: Driver) -> None:
    """Even the stopped event: a run whose events could not all be delivered failed."""
    sink = Failing("stopped")
    result = drive.run(
        drive.executor(ScriptedModel([answer()]), None, budget(), on_event=sink), "go"
    )
    assert (result.status, result.output) == ("failed", "done")
    assert result.message.startswith("failed: on_event raised OSError:")
    stopped = [e for e in result.events if e["type"] == "stopped"]
    assert [e["status"] for e in stopped] == ["failed"]
    assert sink.seen.count("stopped") == 1


def test_a_callback_that_fails_as_a_turn_starts_stops_before_the_model(drive: Driver) -> None:
    """on_event raising on turn_started: the model of that turn is never asked."""
    model = ScriptedModel([answer()])
    sink = Failing("turn_started")
    result = drive.run(drive.executor(model, None, budget(), on_event=sink), "go")
    assert (result.stop_reason, model.calls, result.turns) == ("error", 0, 1)


def test_an_interrupt_in_the_callback_on_the_last_event_is_one_cancelled_stop(
    drive: Driver,
) -> None:
    """Ctrl-C while on_event handles ``stopped``: the run ends cancelled, with one stopped event."""

    def sink(event: dict[str, Any]) -> None:
        if event["type"] == "stopped":
            raise KeyboardInterrupt

    result = drive.run(
        drive.executor(ScriptedModel([answer()]), None, budget(), on_event=sink), "go"
    )
    assert (result.status, result.stop_reason) == ("failed", "cancelled")
    assert [e["stop_reason"] for e in result.events if e["type"] == "stopped"] == ["cancelled"]
