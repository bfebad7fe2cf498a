"""The pydantic-ai bridge's stream() and astream(), against the real framework, offline, on
budgetconf.testing.pydantic_ai_model: what they yield, how they end, what they refuse."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelResponse

import budgetconf
from budgetconf.integrations import pydantic_ai as bridge
from budgetconf.loop import RunStatus, StopReason
from budgetconf.testing import pydantic_ai_model

CALL: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}}
USAGE = {
    "prompt_tokens": 30,
    "completion_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 8},
}
ANSWERS: list[dict[str, Any]] = [
    {"tool_calls": [CALL], "usage": USAGE},
    {"content": "3", "usage": USAGE},
]
ALWAYS: list[dict[str, Any]] = [{"content": "adding", "tool_calls": [CALL], "usage": USAGE}]


@pytest.fixture(autouse=True)
def _default_loop_closed() -> Iterator[None]:
    """Close the loop ``run_sync`` (and ``stream()``) leave current for their next run:
    ``asyncio.run`` would drop it unclosed, and its ResourceWarning fails the test."""
    yield
    policy = asyncio.get_event_loop_policy()
    loop = policy._local._loop  # type: ignore[attr-defined]
    if loop is not None:
        loop.close()
        policy.set_event_loop(None)


def adder(script: list[dict[str, Any]], ran: list[int] | None = None) -> Agent[Any, str]:
    agent = Agent(pydantic_ai_model(script), name="adder")

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        if ran is not None:
            ran.append(a + b)
        return a + b

    return agent


def same(result: Any) -> tuple[Any, ...]:
    """What a streamed run must share with the same run not streamed."""
    return (
        result.status,
        result.stop_reason,
        result.turns,
        result.tool_calls_executed,
        result.message,
        result.limit,
        result.output,
        result.usage,
        [{k: v for k, v in e.items() if k not in ("run_id", "time")} for e in result.events],
    )


def res(**explicit: Any) -> budgetconf.Resolution:
    return budgetconf.resolve(env={}, explicit=explicit)


def test_the_items_are_pydantic_ais_own_events_of_the_run() -> None:
    """stream() yields what run_stream_events yields on the same agent, its result's last."""

    async def own() -> list[Any]:
        async with adder(ANSWERS).run_stream_events("go") as events:
            return [event async for event in events]

    expected = asyncio.run(own())
    stream = bridge.stream(adder(ANSWERS), "go", res(**{"loop.max_steps": 5}))
    items = list(stream)
    assert [type(i) for i in items] == [type(e) for e in expected]
    assert isinstance(items[-1], AgentRunResultEvent)
    assert items[-1].result.output == "3"
    assert stream.result.native is items[-1].result


@pytest.mark.parametrize(
    ("script", "budget", "status", "reason"),
    [
        (ANSWERS, {"loop.max_steps": 5}, RunStatus.OK, "completed"),
        (ALWAYS, {"loop.max_steps": 2}, RunStatus.TRUNCATED, "max_steps"),
        (
            ALWAYS,
            {"loop.max_steps": 9, "limits.max_tokens": 100},
            RunStatus.TRUNCATED,
            "max_tokens",
        ),
        (
            ALWAYS,
            {"loop.max_steps": 9, "limits.max_tool_calls": 2},
            RunStatus.TRUNCATED,
            "max_tool_calls",
        ),
    ],
    ids=["answers", "step stop", "token stop", "tool-call stop"],
)
def test_the_streams_result_is_the_runs(
    script: list[dict[str, Any]], budget: dict[str, Any], status: RunStatus, reason: str
) -> None:
    """A stop ends the stream without raising (no result event), with run()'s result."""
    resolved = res(**budget)
    ran: list[int] = []
    done = bridge.run(adder(script, ran), "go", resolved)
    streamed: list[int] = []
    stream = bridge.stream(adder(script, streamed), "go", resolved)
    items = list(stream)
    assert (stream.result.status, stream.result.stop_reason) == (status, reason)
    assert same(stream.result) == same(done)
    assert streamed == ran
    assert isinstance(items[-1], AgentRunResultEvent) == (status is RunStatus.OK)


def test_astream_is_stream_in_an_event_loop() -> None:
    resolved = res(**{"loop.max_steps": 2})

    async def streamed() -> Any:
        stream = bridge.astream(adder(ALWAYS), "go", resolved)
        assert [item async for item in stream]
        return stream.result

    result = asyncio.run(streamed())
    assert same(result) == same(bridge.run(adder(ALWAYS), "go", resolved))
    assert result.stop_reason == "max_steps"


def test_the_deadline_stops_the_stream_and_keeps_what_was_done() -> None:
    """pydantic-ai's own timeout, set from the budget, cancels the tool in flight: a stop."""
    agent = Agent(pydantic_ai_model(ALWAYS), name="slow")

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two numbers, slowly."""
        await asyncio.sleep(5)
        return a + b

    stream = bridge.stream(agent, "go", res(**{"limits.timeout_seconds": 0.3}))
    items = list(stream)
    assert items
    result = stream.result
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.TRUNCATED, "timeout", 1)
    assert result.output == "adding"


def test_a_tool_that_fails_fails_the_streamed_run() -> None:
    agent = Agent(pydantic_ai_model(ALWAYS))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers, badly."""
        raise ValueError("no adding today")

    stream = bridge.stream(agent, "go", {"loop.max_steps": 3})
    assert list(stream)
    result = stream.result
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert result.message == "failed: ValueError: no adding today (turn 1)"
    assert isinstance(result.native, ValueError)


def test_the_callers_own_mistake_is_raised_from_the_iteration() -> None:
    """pydantic-ai's UserError (history given twice over) and a keyword it does not take."""
    agent = adder(ANSWERS)
    done = agent.run_sync("go")
    twice = bridge.stream(
        agent, "go", {"loop.max_steps": 3}, conversation=done.conversation, message_history=[]
    )
    with pytest.raises(UserError):
        next(iter(twice))
    unknown = bridge.stream(agent, "go", {"loop.max_steps": 3}, no_such_keyword=1)
    with pytest.raises(TypeError, match="no_such_keyword"):
        list(unknown)


def test_a_stream_closed_early_cancels_the_run() -> None:
    """close(), or leaving the with block, closes pydantic-ai's run: cancelled, its tool not run."""
    ran: list[int] = []
    stream = bridge.stream(adder(ALWAYS, ran), "go", {"loop.max_steps": 5})
    with stream:
        first = next(iter(stream))
    assert first.event_kind == "part_start"
    assert (stream.result.stop_kind, stream.result.turns) == (StopReason.CANCELLED, 1)
    assert ran == []
    closed = bridge.stream(adder(ALWAYS), "go", {"loop.max_steps": 5})
    closed.close()  # before its first item: pydantic-ai's run never started
    assert (closed.result.stop_kind, closed.result.turns) == (StopReason.CANCELLED, 0)
    assert list(closed) == []


def test_an_async_stream_closed_early_cancels_the_run() -> None:
    async def closed() -> Any:
        async with bridge.astream(adder(ALWAYS), "go", {"loop.max_steps": 5}) as stream:
            async for item in stream:
                assert item.event_kind == "part_start"
                break
        return stream.result

    result = asyncio.run(closed())
    assert (result.stop_kind, result.turns) == (StopReason.CANCELLED, 1)


def test_the_result_waits_for_the_streams_end() -> None:
    stream = bridge.stream(adder(ANSWERS), "go", {"loop.max_steps": 5})
    with pytest.raises(budgetconf.UsageError, match="has not ended"):
        stream.result  # noqa: B018
    stream.close()


def test_a_stream_refuses_what_run_refuses() -> None:
    """A keyword that sets pydantic-ai's own limit, a budget it cannot enforce, a handler of the
    caller's (the stream is the events), and run(stream=True)."""
    agent = adder(ANSWERS)
    with pytest.raises(budgetconf.UsageError, match="usage_limits"):
        bridge.stream(agent, "go", {"loop.max_steps": 3}, usage_limits=None)
    with pytest.raises(budgetconf.UsageError, match="timeout"):
        bridge.astream(agent, "go", {"loop.max_steps": 3}, timeout=3)
    with pytest.raises(budgetconf.UsageError, match="event_stream_handler"):
        bridge.stream(agent, "go", {"loop.max_steps": 3}, event_stream_handler=print)
    with pytest.raises(budgetconf.UsageError, match=r"expected a pydantic-ai agent"):
        bridge.stream(None, "go", {"loop.max_steps": 3})  # type: ignore[arg-type]
    with pytest.raises(budgetconf.UsageError, match=r"stream=True.*call stream\(\)"):
        bridge.run(agent, "go", {"loop.max_steps": 3}, stream=True)
    with pytest.raises(budgetconf.UsageError, match=r"stream=True"):
        asyncio.run(bridge.arun(agent, "go", {"loop.max_steps": 3}, stream=True))


def test_a_sync_stream_is_refused_inside_a_sync_tool() -> None:
    """As run_sync is: a sync run inside a sync tool would deadlock pydantic-ai's run."""
    inner = adder(ANSWERS)
    asks = [{"tool_calls": [{"name": "delegate", "arguments": {"a": 1, "b": 2}}]}]
    outer = Agent(pydantic_ai_model(asks))

    @outer.tool_plain
    def delegate(a: int, b: int) -> int:
        """Ask another agent, the sync way."""
        bridge.stream(inner, "go", {"loop.max_steps": 3})
        return 0

    with pytest.raises(UserError, match="cannot be used inside a synchronous tool"):
        bridge.run(outer, "go", {"loop.max_steps": 3})


def test_each_response_is_read_once_its_stream_has_ended() -> None:
    """The Meter reads a streamed response's usage, cached tokens too, as pydantic-ai reports it."""
    stream = bridge.stream(adder(ANSWERS), "go", {"loop.max_steps": 5})
    *_, last = stream
    assert isinstance(last, AgentRunResultEvent)
    responses = [m for m in last.result.all_messages() if isinstance(m, ModelResponse)]
    usage = stream.result.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (60, 16, 20)
    assert sum(r.usage.total_tokens for r in responses) == usage.total_tokens
