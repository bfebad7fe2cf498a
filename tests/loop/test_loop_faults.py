"""Faults in a run: tools and models that raise, hang, answer nonsense or are interrupted."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from budgetconf import UsageError
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel

from helpers.loops import Driver, answer, budget, call, calls, types


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event hung calls wait on; set at the end so no abandoned worker outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_a_tool_that_raises_becomes_an_error_message_and_the_run_goes_on(drive: Driver) -> None:
    """The exception is the tool's answer; the model sees it and can recover."""

    def broken(text: str) -> str:
        raise RuntimeError("disk full")

    model = ScriptedModel([calls(1), answer("recovered")])
    result = drive.run(drive.executor(model, {"echo": broken}, budget(max_steps=5)), "go")
    assert (result.status, result.output) == ("ok", "recovered")
    assert result.messages[2]["content"] == "error: RuntimeError: disk full"
    executed = next(e for e in result.events if e["type"] == "tool_executed")
    assert (executed["ok"], executed["error"]) == (False, "RuntimeError: disk full")
    assert result.tool_calls_executed == 1


def test_wrong_arguments_are_the_tools_error(drive: Driver) -> None:
    """Arguments the tool does not take raise TypeError in the call, reported the same way."""
    model = ScriptedModel([{"tool_calls": [call("echo", nope=1)]}, answer()])
    result = drive.run(
        drive.executor(model, {"echo": lambda text: text}, budget(max_steps=5)), "go"
    )
    assert result.messages[2]["content"].startswith("error: TypeError:")
    assert result.status == "ok"


def test_an_unknown_tool_or_unreadable_arguments_are_refused_not_run(drive: Driver) -> None:
    """A call the loop cannot make is answered with an error naming what is wrong; it goes on."""
    seen: list[str] = []
    bad = {"tool_calls": [call("search"), {"name": "echo", "arguments": "{not json"}]}
    model = ScriptedModel([bad, answer()])
    result = drive.run(drive.executor(model, {"echo": seen.append}, budget(max_steps=5)), "go")
    assert seen == []
    first, second = (m["content"] for m in result.messages[2:4])
    assert first == "error: no tool named 'search'; the tools are echo"
    assert second.startswith("error: arguments are not valid JSON")
    assert types(result).count("tool_refused") == 2
    assert result.tool_calls_executed == 0


def test_a_model_that_raises_fails_the_run_and_keeps_the_transcript(drive: Driver) -> None:
    """The run ends with error; the conversation so far is in the result."""
    script = ScriptedModel([calls(1)])

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if len(script.received) == 1:
            raise ConnectionError("provider down")
        return script(messages, tools)

    result = drive.run(
        drive.executor(model, {"echo": lambda text: text}, budget(max_steps=5)), "go"
    )
    assert (result.status, result.stop_reason, result.turns) == ("failed", "error", 2)
    assert result.message == "failed: the model raised ConnectionError: provider down (turn 2)"
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool"]
    assert result.limit is None


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        (None, "expected a dict or an object with content and tool_calls, got None"),
        ({"tool_calls": "echo"}, "tool_calls: expected a list, got 'echo'"),
        ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0]: expected a tool name, got None"),
        ({"content": 5}, "content: expected text or null, got 5"),
        (
            {"tool_calls": [{"id": "a", "name": "echo"}, {"id": "a", "name": "echo"}]},
            "tool_calls: the id 'a' is used by more than one call",
        ),
        ({"content": "x", "finish_reason": "done"}, "finish_reason: expected one of"),
    ],
)
def test_a_malformed_response_fails_the_run(drive: Driver, response: Any, problem: str) -> None:
    """A response the loop cannot act on ends the run with error, saying what is wrong."""
    model = ScriptedModel([answer()])
    model.responses = [response]
    result = drive.run(drive.executor(model, None, budget(max_steps=5)), "go")
    assert (result.status, result.stop_reason) == ("failed", "error")
    assert result.message.startswith(f"failed: malformed model response: {problem}")


def test_a_hung_tool_is_abandoned_at_the_deadline(drive: Driver, gate: threading.Event) -> None:
    """limits.timeout_seconds: the run ends with timeout while the tool still runs.

    The running call started and may yet act, so it counts as executed and its
    answer says the outcome is unknown; the call after it never started.
    """
    model = ScriptedModel([calls(2)])
    hang = drive.hang(gate, "late")
    ex = drive.executor(model, {"echo": hang}, budget(max_steps=5, timeout_seconds=0.2))
    result = drive.run(ex, "go")
    assert (result.status, result.stop_reason) == ("truncated", "timeout")
    assert result.limit is not None
    assert result.limit["field"] == "limits.timeout_seconds"
    answers = [(m["tool_call_id"], m["content"]) for m in result.messages if m["role"] == "tool"]
    abandoned = "abandoned: still running at the run's deadline; it started, and its outcome"
    assert answers == [
        ("call_1_0", abandoned + " is unknown"),
        ("call_1_1", "not executed: the run's deadline passed"),
    ]
    assert result.tool_calls_executed == 1
    assert "tool_abandoned" in types(result)


def test_a_hung_model_is_abandoned_at_the_deadline(drive: Driver, gate: threading.Event) -> None:
    """A model that never answers ends the run with timeout, not a hang."""
    model = drive.hang(gate, answer())
    result = drive.run(drive.executor(model, None, budget(max_steps=5, timeout_seconds=0.2)), "go")
    assert (result.stop_reason, result.turns) == ("timeout", 1)
    assert result.message.startswith("stopped: hit timeout_seconds (0.2): limits.timeout_seconds")


def test_a_run_within_its_deadline_is_not_affected(drive: Driver) -> None:
    """With a generous deadline, calls run on workers and the run completes as usual."""
    model = ScriptedModel([calls(1), answer()])
    ex = drive.executor(model, {"echo": lambda text: text}, budget(max_steps=5, timeout_seconds=60))
    result = drive.run(ex, "go")
    assert (result.status, result.messages[2]["content"]) == ("ok", "0")


def test_a_keyboard_interrupt_in_a_call_ends_the_run_cancelled(drive: Driver) -> None:
    """Ctrl-C during a model call: status failed, stop cancelled, transcript kept."""
    script = ScriptedModel([calls(1)])

    def model(messages: Any, tools: Any) -> Any:
        if script.received:
            raise KeyboardInterrupt
        return script(messages, tools)

    result = drive.run(
        drive.executor(model, {"echo": lambda text: text}, budget(max_steps=5)), "go"
    )
    assert (result.status, result.stop_reason, result.turns) == ("failed", "cancelled", 2)
    assert result.message == "cancelled on turn 2"
    assert len(result.messages) == 3


def test_an_interrupted_tool_answers_the_calls_left() -> None:
    """Ctrl-C in a tool: that call is abandoned (it ran), the ones after it never ran."""

    def tool(text: str) -> str:
        raise KeyboardInterrupt

    result = LoopExecutor(ScriptedModel([calls(2)]), {"echo": tool}, budget(max_steps=3)).run("go")
    assert result.stop_reason == "cancelled"
    assert [m["content"] for m in result.messages[2:]] == [
        "abandoned: interrupted while it ran; it started, and its outcome is unknown",
        "not executed: the run was cancelled",
    ]
    assert result.tool_calls_executed == 1


def test_cancelling_the_task_ends_the_run_cancelled() -> None:
    """arun: a cancelled task returns a cancelled result with the conversation so far."""
    started = asyncio.Event()

    async def model(messages: Any, tools: Any) -> Any:
        started.set()
        await asyncio.sleep(30)
        return answer()

    async def main() -> Any:
        task = asyncio.create_task(LoopExecutor(model, budget=budget(max_steps=5)).arun("go"))
        await started.wait()
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert (result.status, result.stop_reason) == ("failed", "cancelled")
    assert result.messages == [{"role": "user", "content": "go"}]


def test_an_async_model_or_tool_in_run_is_a_usage_error() -> None:
    """run() cannot await: an async model or tool is refused before the run starts."""

    async def model(messages: Any, tools: Any) -> Any:
        return answer()

    async def echo(text: str) -> str:
        return text

    with pytest.raises(UsageError, match=r"^the model is async: run it with arun\(\)$"):
        LoopExecutor(model, budget=budget(max_steps=2)).run("go")
    sync_model = ScriptedModel([answer()])
    with pytest.raises(UsageError, match=r"^the tool 'echo' is async: run it with arun\(\)$"):
        LoopExecutor(sync_model, {"echo": echo}, budget(max_steps=2)).run("go")


def test_a_coroutine_from_a_sync_callable_fails_the_run() -> None:
    """A callable that only returns a coroutine is found out when it does, and the run fails."""

    async def answer_later() -> Any:
        return answer()

    result = LoopExecutor(lambda m, t: answer_later(), budget=budget(max_steps=2)).run("go")
    assert result.stop_reason == "error"
    assert "<lambda> is async: run it with arun()" in result.message


def test_cancelled_error_raised_by_a_tool_is_its_error_not_a_cancel() -> None:
    """A tool that raises CancelledError while the run is not cancelled fails like any error."""

    async def tool(text: str) -> str:
        raise asyncio.CancelledError

    ex = LoopExecutor(ScriptedModel([calls(1), answer()]), {"echo": tool}, budget(max_steps=3))
    result = asyncio.run(ex.arun("go"))
    assert result.status == "ok"
    assert result.messages[2]["content"] == "error: CancelledError"


def test_a_tool_on_a_worker_sees_the_callers_context_variables() -> None:
    """With a deadline, a sync call runs on a worker thread that carries the caller's context."""
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")

    def tool(text: str) -> str:
        return request_id.get()

    request_id.set("r-42")
    ex = LoopExecutor(
        ScriptedModel([calls(1), answer()]), {"echo": tool}, budget(max_steps=3, timeout_seconds=30)
    )
    assert ex.run("go").messages[2]["content"] == "r-42"


def test_arun_takes_sync_callables_too() -> None:
    """A sync model and tools work under arun, with or without a deadline."""
    for limit in ({}, {"timeout_seconds": 30}):
        model = ScriptedModel([calls(1), answer("ok")])
        ex = LoopExecutor(model, {"echo": lambda text: text}, budget(max_steps=3, **limit))
        result = asyncio.run(ex.arun("go"))
        assert (result.status, result.output, result.tool_calls_executed) == ("ok", "ok", 1)


def test_arun_abandons_a_hung_sync_tool_at_the_deadline(gate: threading.Event) -> None:
    """A sync tool under arun runs on a worker thread, so the deadline still holds."""

    def hang(text: str) -> str:
        gate.wait(30)
        return text

    ex = LoopExecutor(
        ScriptedModel([calls(1)]), {"echo": hang}, budget(max_steps=3, timeout_seconds=0.2)
    )
    result = asyncio.run(ex.arun("go"))
    assert result.stop_reason == "timeout"


def test_an_async_callable_object_is_awaited_and_cancelled_at_the_deadline() -> None:
    """An object whose __call__ is async counts as async: arun cancels it at the deadline."""

    class Slow:
        async def __call__(self, messages: Any, tools: Any) -> Any:
            await asyncio.sleep(30)
            return answer()

    ex = LoopExecutor(Slow(), budget=budget(max_steps=3, timeout_seconds=0.1))
    result = asyncio.run(ex.arun("go"))
    assert (result.stop_reason, result.turns) == ("timeout", 1)


def test_a_result_that_cannot_be_turned_into_text_is_the_tools_error(drive: Driver) -> None:
    """A return value JSON cannot hold (a cycle) is answered as an error that says so."""
    loop: list[object] = []
    loop.append(loop)
    model = ScriptedModel([calls(1), answer()])
    result = drive.run(
        drive.executor(model, {"echo": lambda text: loop}, budget(max_steps=3)), "go"
    )
    assert result.status == "ok"
    assert result.messages[2]["content"] == (
        "error: its return value cannot be written as text: ValueError: Circular reference detected"
    )
    assert result.tool_calls_executed == 1


# --- every fault, one table: a RunResult, the caller's list unchanged, the transcript kept ----

_CALLER = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "go"},
]
_FIRST = {"tool_calls": [{"id": "first", "name": "echo", "arguments": {"text": "one"}}]}


def _fault_model(fault: Any, gate: threading.Event, drive: Driver) -> Any:
    """A model that answers ``_FIRST``, then commits the fault on every later turn."""
    script = ScriptedModel([_FIRST])
    hang = drive.hang(gate, answer())

    def model(messages: Any, tools: Any) -> Any:
        if not script.received:
            return script(messages, tools)
        if fault == "hang":
            return hang(messages, tools)
        if isinstance(fault, BaseException):
            raise fault
        return fault

    async def awaiting(messages: Any, tools: Any) -> Any:
        if script.received and fault == "hang":
            return await hang(messages, tools)
        return model(messages, tools)

    return awaiting if drive.mode == "async" else model


_FAULTS = [
    # (name, the second response or what the model does, tools, stop reason)
    ("model raises", ConnectionError("down"), {}, "error"),
    ("model interrupted", KeyboardInterrupt(), {}, "cancelled"),
    ("model hangs", "hang", {}, "timeout"),
    ("response not a dict", ["content"], {}, "error"),
    ("tool_calls not a list", {"tool_calls": {"name": "echo"}}, {}, "error"),
    ("call without a name", {"tool_calls": [{"arguments": {}}]}, {}, "error"),
    ("duplicate call ids", {"tool_calls": [{"id": "x", "name": "echo"}] * 2}, {}, "error"),
    ("unknown finish reason", {"content": "x", "finish_reason": "eof"}, {}, "error"),
    ("usage not numbers", {"content": "x", "usage": {"total_tokens": "lots"}}, {}, "error"),
    (
        "arguments not JSON",
        {"tool_calls": [call("echo", text="x") | {"arguments": "{"}]},
        {},
        "max_steps",
    ),
    (
        "arguments a JSON list",
        {"tool_calls": [call("echo") | {"arguments": "[1]"}]},
        {},
        "max_steps",
    ),
    ("unknown tool", {"tool_calls": [call("rm", path="/")]}, {}, "max_steps"),
    ("tool raises", {"tool_calls": [call("explode")]}, {"explode": "raise"}, "max_steps"),
    ("tool interrupted", {"tool_calls": [call("explode")]}, {"explode": "interrupt"}, "cancelled"),
    ("tool hangs", {"tool_calls": [call("explode")]}, {"explode": "hang"}, "timeout"),
    ("missing keys: an empty response", {}, {}, "completed"),
]


def _tools(kind: str | None, gate: threading.Event, drive: Driver) -> dict[str, Any]:
    tools: dict[str, Any] = {"echo": lambda text="": text}
    if kind == "raise":
        tools["explode"] = lambda **kw: 1 / 0
    elif kind == "interrupt":

        def interrupt(**kw: Any) -> Any:
            raise KeyboardInterrupt

        tools["explode"] = interrupt
    elif kind == "hang":
        tools["explode"] = drive.hang(gate, "late")
    return tools


@pytest.mark.parametrize(
    ("fault", "extra", "reason"),
    [pytest.param(f, t.get("explode"), r, id=name) for name, f, t, r in _FAULTS],
)
def test_every_fault_ends_in_a_result_with_the_callers_list_unchanged(
    drive: Driver, gate: threading.Event, fault: Any, extra: str | None, reason: str
) -> None:
    """Whatever the model or a tool does on turn 2, the run returns; turn 1 stays recorded."""
    caller = [dict(m) for m in _CALLER]
    model = _fault_model(fault, gate, drive)
    limits = budget(max_steps=3, timeout_seconds=1.5)
    ex = drive.executor(model, _tools(extra, gate, drive), limits)

    result = drive.run(ex, caller)

    assert isinstance(result, RunResult)
    assert result.stop_reason == reason, result.message
    assert caller == _CALLER  # the caller's list and its messages are untouched
    assert result.messages[:2] == _CALLER
    assert result.messages[2]["tool_calls"][0]["id"] == "first"  # turn 1's transcript is kept
    assert result.messages[3] == {"role": "tool", "tool_call_id": "first", "content": "one"}
    assert result.turns == (3 if reason == "max_steps" else 2)  # a refused call lets it go on
    assert result.message
