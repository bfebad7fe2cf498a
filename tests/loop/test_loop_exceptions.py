"""Every exception a model, a tool, a response or ``on_event`` can raise ends the run with a result.

Each exception type is raised from each place a run calls code it was given,
through `run`, through `arun` with sync callables and with async ones, with
and without a deadline (with one, sync calls run on worker threads). Only
two go past: KeyboardInterrupt ends the run ``cancelled``, with a result;
SystemExit is raised again.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from budgetconf.loop import LoopExecutor, RunResult

from helpers.loops import answer, budget, call


class Oops(Exception):
    """An application's own exception."""


class Abort(BaseException):
    """An application's own BaseException, as some frameworks raise to unwind."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


class UnprintableBase(Exception):
    def __str__(self) -> str:
        raise Abort("no text either")


EXCEPTIONS: list[tuple[str, Callable[[], BaseException], str]] = [
    # (id, a new exception, how its description starts)
    ("ValueError", lambda: ValueError("bad value"), "ValueError: bad value"),
    ("own Exception", lambda: Oops("oops"), "Oops: oops"),
    ("CancelledError", asyncio.CancelledError, "CancelledError"),
    ("GeneratorExit", GeneratorExit, "GeneratorExit"),
    ("StopIteration", lambda: StopIteration(1), "StopIteration: 1"),
    ("StopAsyncIteration", StopAsyncIteration, "StopAsyncIteration"),
    ("RecursionError", lambda: RecursionError("too deep"), "RecursionError: too deep"),
    ("MemoryError", MemoryError, "MemoryError"),
    ("TimeoutError", lambda: TimeoutError("slow"), "TimeoutError: slow"),
    ("own BaseException", lambda: Abort("unwind"), "Abort: unwind"),
    (
        "ExceptionGroup",
        lambda: ExceptionGroup("two", [ValueError("a"), KeyError("b")]),
        "ExceptionGroup: two (2 sub-exceptions)",
    ),
    (
        "BaseExceptionGroup",
        lambda: BaseExceptionGroup("one", [Abort("a")]),
        "BaseExceptionGroup: one (1 sub-exception)",
    ),
    (
        "__str__ raises",
        Unprintable,
        "Unprintable: (its message cannot be read: ValueError)",
    ),
    (
        "__str__ raises a BaseException",
        UnprintableBase,
        "UnprintableBase: (its message cannot be read: Abort)",
    ),
]

PLACES = ["model", "tool", "attribute", "get", "usage", "on_event", "return value"]
MODES = ["run", "arun sync", "arun async"]

CALLER = [
    {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
    {"role": "user", "content": "go"},
]


class Shaped:
    """A response object whose ``content`` is a property that raises."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @property
    def content(self) -> str:
        raise self.exc

    tool_calls = None


class Getting(Mapping[str, Any]):
    """A mapping response whose ``get`` raises, as a lazy mapping's may."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __getitem__(self, key: str) -> Any:
        raise self.exc

    def __iter__(self) -> Iterator[str]:
        return iter(["content"])

    def __len__(self) -> int:
        return 1

    def get(self, key: str, default: Any = None) -> Any:
        raise self.exc


class Usage:
    """A usage object whose counts are read lazily, and fail."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @property
    def total_tokens(self) -> int:
        raise self.exc


class Value:
    """A tool's return value whose text cannot be had: JSON writes it with str()."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        raise self.exc


def _executor(place: str, make: Callable[[], BaseException], mode: str, deadline: bool) -> Any:
    """An executor whose run meets the exception at ``place`` on turn 1 or 2."""
    first = {"tool_calls": [call("echo", text="x")]}
    turns = {"n": 0}

    def model(messages: Any, tools: Any) -> Any:
        turns["n"] += 1
        if place == "model":
            raise make()
        if place in ("tool", "return value") and turns["n"] == 1:
            return first
        if place == "attribute":
            return Shaped(make())
        if place == "get":
            return Getting(make())
        if place == "usage":
            return answer(usage=Usage(make()))
        return answer()

    def echo(text: str) -> Any:
        if place == "tool":
            raise make()
        if place == "return value":
            return Value(make())
        return text

    def on_event(event: dict[str, Any]) -> None:
        if place == "on_event" and event["type"] == "model_response":
            raise make()

    callables: dict[str, Callable[..., Any]] = {"model": model, "echo": echo}
    if mode == "arun async":
        callables = {name: _awaiting(fn) for name, fn in callables.items()}
    limits = budget(max_steps=3, **({"timeout_seconds": 30} if deadline else {}))
    return LoopExecutor(callables["model"], {"echo": callables["echo"]}, limits, on_event=on_event)


def _awaiting(fn: Callable[..., Any]) -> Callable[..., Any]:
    async def awaited(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args, **kwargs)

    return awaited


def _run(ex: LoopExecutor, mode: str, messages: Any) -> RunResult:
    return ex.run(messages) if mode == "run" else asyncio.run(ex.arun(messages))


def _expected(place: str, shown: str) -> tuple[str, str]:
    """The stop reason a fault at ``place`` ends in, and what the run says of it."""
    return {
        "model": ("error", f"failed: the model raised {shown}"),
        "tool": ("completed", f"error: {shown}"),
        "attribute": ("error", f"failed: malformed model response: reading it raised {shown}"),
        "get": ("error", f"failed: malformed model response: reading it raised {shown}"),
        "usage": ("error", f"failed: malformed model response: reading it raised {shown}"),
        "on_event": ("error", f"failed: on_event raised {shown}"),
        "return value": (
            "completed",
            f"error: its return value cannot be written as text: {shown}",
        ),
    }[place]


@pytest.mark.parametrize("deadline", [False, True], ids=["direct", "on workers"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(
    ("make", "shown"), [pytest.param(m, s, id=name) for name, m, s in EXCEPTIONS]
)
def test_every_exception_ends_the_run_with_a_result(
    make: Callable[[], BaseException], shown: str, place: str, mode: str, deadline: bool
) -> None:
    """The run returns, says what was raised where, and leaves the caller's messages as given."""
    caller = copy.deepcopy(CALLER)
    reason, said = _expected(place, shown)
    if mode == "arun async" and place in ("model", "tool") and type(make()) is StopIteration:
        # Python's own rule for a coroutine, the async callable's here (PEP 479)
        said = said.replace("StopIteration: 1", "RuntimeError: coroutine raised StopIteration")

    result = _run(_executor(place, make, mode, deadline), mode, caller)

    assert isinstance(result, RunResult)
    assert result.stop_reason == reason, result.message
    if reason == "error":
        assert result.status == "failed"
        assert result.message.startswith(said), result.message
        assert "\n" not in result.message
    else:  # a tool's fault is its answer, and the run goes on to the final answer
        assert (result.status, result.output) == ("ok", "done")
        assert result.messages[3]["content"].startswith(said), result.messages[3]
        executed = next(e for e in result.events if e["type"] == "tool_executed")
        assert executed["ok"] is False
    assert caller == CALLER
    assert result.events[-1]["type"] == "stopped"
    assert [e["type"] for e in result.events].count("stopped") == 1


@pytest.mark.parametrize("deadline", [False, True], ids=["direct", "on workers"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", PLACES)
def test_a_keyboard_interrupt_anywhere_ends_the_run_cancelled(
    place: str, mode: str, deadline: bool
) -> None:
    """Ctrl-C in any of them: a cancelled result, every call id answered, one stopped event."""
    result = _run(_executor(place, KeyboardInterrupt, mode, deadline), mode, CALLER)

    assert (result.status, result.stop_reason) == ("failed", "cancelled")
    asked = {c["id"] for m in result.messages for c in m.get("tool_calls", ())}
    answered = {m["tool_call_id"] for m in result.messages if m["role"] == "tool"}
    assert asked == answered
    assert [e["type"] for e in result.events].count("stopped") == 1


@pytest.mark.parametrize("deadline", [False, True], ids=["direct", "on workers"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", PLACES)
def test_system_exit_anywhere_goes_past_the_run(place: str, mode: str, deadline: bool) -> None:
    """A program that asks to exit is not a fault of its model: SystemExit is raised again."""
    ex = _executor(place, lambda: SystemExit(3), mode, deadline)
    with pytest.raises(SystemExit) as raised:
        _run(ex, mode, CALLER)
    assert raised.value.code == 3


class Pending:
    """An awaitable that stays pending: the coroutine awaiting it can be closed there."""

    def __await__(self) -> Any:
        yield "pending"
        return answer()


def test_closing_aruns_coroutine_closes_the_run_as_python_asks() -> None:
    """GeneratorExit at arun's own await is Python closing it: it is let through, not a fault."""

    async def model(messages: Any, tools: Any) -> Any:
        return await Pending()

    run = LoopExecutor(model, budget=budget(max_steps=3)).arun("go")
    assert run.send(None) == "pending"
    run.close()  # would raise RuntimeError("coroutine ignored GeneratorExit") were it caught
    assert inspect.getcoroutinestate(run) == "CORO_CLOSED"


class Interrupting(Exception):
    def __str__(self) -> str:
        raise KeyboardInterrupt


class Wordy(Exception):
    """An exception whose message is a str subclass, and long."""

    def __str__(self) -> str:
        class Text(str):
            pass

        return Text("word " * 200)


def test_an_interrupt_while_a_message_is_read_is_an_interrupt() -> None:
    """Ctrl-C inside an exception's __str__ is Ctrl-C: the run ends cancelled, not failed."""

    def model(messages: Any, tools: Any) -> Any:
        raise Interrupting

    result = LoopExecutor(model, budget=budget(max_steps=3)).run("go")
    assert result.stop_reason == "cancelled"


def test_a_long_message_is_cut_to_one_line_of_300_characters() -> None:
    """A message that is a str subclass is read as text, joined into one line and cut."""

    def model(messages: Any, tools: Any) -> Any:
        raise Wordy

    result = LoopExecutor(model, budget=budget(max_steps=3)).run("go")
    shown = result.message.removeprefix("failed: the model raised ").removesuffix(" (turn 1)")
    assert shown.startswith("Wordy: word word")
    assert len(shown) == len("Wordy: ") + 300
    assert shown.endswith("…")
