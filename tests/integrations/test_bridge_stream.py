"""`BridgeStream`, as every bridge's ``stream()`` returns it: the framework's items through,
the run's result at their end, a stop without raising, and a stream closed early cancelled.
Each bridge's own streams are tested with its framework (test_bridge_*.py, and the
conformance suite's streamed twins)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

import budgetconf
from budgetconf.integrations import BridgeResult, BridgeStream
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import Bridged
from budgetconf.loop import Budget, Usage

FRAMEWORK = FRAMEWORKS["smolagents"]


def bridged(**env: str) -> Bridged:
    return Bridged(FRAMEWORK, Budget.of(budgetconf.resolve(env=env)), tools={"add"})


def turns(run: Bridged, answers: int) -> Iterator[str]:
    """A framework's stream: a model call and its answer per item, until the Meter stops it."""
    for n in range(answers):
        if run.call() is not None:
            return
        run.answered(Usage(10, 0, 5), f"item {n}")
        yield f"item {n}"


def finish(run: Bridged) -> object:
    def finished(exc: BaseException | None) -> BridgeResult:
        return run.result(None, "done") if exc is None else run.failed(exc)

    return finished


def test_the_items_come_through_and_the_result_is_the_runs_once_they_end() -> None:
    run = bridged()
    stream = BridgeStream(turns(run, 2), finish(run))  # type: ignore[arg-type]
    assert repr(stream) == "<BridgeStream running>"
    with pytest.raises(budgetconf.UsageError, match="the stream has not ended"):
        stream.result  # noqa: B018
    assert list(stream) == ["item 0", "item 1"]
    assert (stream.result.status.value, stream.result.turns) == ("ok", 2)
    assert stream.result.usage.total_tokens == 30
    assert list(stream) == []
    assert repr(stream) == "<BridgeStream ok>"


def test_a_budget_stop_ends_the_stream_without_raising() -> None:
    run = bridged(BUDGETCONF_MAX_STEPS="2")
    stream = BridgeStream(turns(run, 5), finish(run))  # type: ignore[arg-type]
    assert list(stream) == ["item 0", "item 1"]
    assert (stream.result.stop_reason, stream.result.limit["field"]) == (  # type: ignore[index]
        "max_steps",
        "loop.max_steps",
    )


def test_a_failure_of_the_framework_is_the_result_and_a_mistake_of_the_callers_is_raised() -> None:
    def failing(run: Bridged, exc: Exception) -> Iterator[str]:
        yield from turns(run, 1)
        raise exc

    run = bridged()
    stream = BridgeStream(failing(run, RuntimeError("the model is down")), finish(run))  # type: ignore[arg-type]
    assert list(stream) == ["item 0"]
    assert stream.result.status.value == "failed"
    assert stream.result.message == "failed: RuntimeError: the model is down (turn 1)"

    run = bridged()

    def at_once() -> Iterator[str]:
        if not run.meter.turns:  # before any model call: the framework refused the input
            raise ValueError("no such input")
        yield "never"  # pragma: no cover

    with pytest.raises(ValueError, match="no such input"):
        list(BridgeStream(at_once(), finish(run)))  # type: ignore[arg-type]


def test_a_stream_closed_before_its_end_closes_the_frameworks_and_is_cancelled() -> None:
    closed = []

    def items(run: Bridged) -> Iterator[str]:
        try:
            yield from turns(run, 5)
        finally:
            closed.append(True)

    run = bridged()
    with BridgeStream(items(run), finish(run)) as stream:  # type: ignore[arg-type]
        assert next(stream) == "item 0"
    assert closed == [True]
    assert (stream.result.stop_reason, stream.result.message) == (
        "cancelled",
        "cancelled on turn 1",
    )
    stream.close()  # again: nothing more
    assert stream.result.stop_reason == "cancelled"


def test_a_stream_the_meter_ended_keeps_its_stop_when_closed() -> None:
    run = bridged(BUDGETCONF_MAX_STEPS="1")
    stream = BridgeStream(turns(run, 5), finish(run))  # type: ignore[arg-type]
    assert next(stream) == "item 0"
    assert run.call() is not None  # the Meter ends the run before the next call
    stream.close()
    assert stream.result.stop_reason == "max_steps"


def test_an_async_stream_is_iterated_and_closed_with_async_for() -> None:
    async def items(run: Bridged) -> AsyncIterator[str]:
        for item in turns(run, 3):
            yield item

    async def drive() -> tuple[list[str], str, str]:
        run = bridged()
        stream = BridgeStream(items(run), finish(run))  # type: ignore[arg-type]
        got = [item async for item in stream]
        run = bridged()
        async with BridgeStream(items(run), finish(run)) as early:  # type: ignore[arg-type]
            await anext(early)
        return got, stream.result.stop_reason, early.result.stop_reason

    assert asyncio.run(drive()) == (["item 0", "item 1", "item 2"], "completed", "cancelled")


def test_a_stream_is_iterated_the_way_its_framework_streams() -> None:
    async def nothing() -> AsyncIterator[str]:
        return
        yield  # pragma: no cover

    run = bridged()
    with pytest.raises(
        budgetconf.UsageError, match="this stream is async: iterate it with async for"
    ):
        iter(BridgeStream(nothing(), finish(run)))  # type: ignore[arg-type]
    with pytest.raises(
        budgetconf.UsageError, match="this stream is not async: iterate it with for"
    ):
        BridgeStream(iter(()), finish(run)).__aiter__()  # type: ignore[arg-type]
