"""budgetconf.testing.pydantic_ai_model: pydantic-ai's own agent on it plays the script, and the
bridge on it stops where the executor stops on the same script."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model

import budgetconf
from budgetconf.integrations import pydantic_ai as bridge
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import pydantic_ai_model

CALL = {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}
CACHED = {
    "prompt_tokens": 30,
    "completion_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 20},
}
SCRIPT: dict[str, Any] = {
    "responses": [
        {"tool_calls": [CALL], "usage": CACHED, "model": "gpt-4o-mini"},
        {"content": "3", "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
    ]
}
ALWAYS: dict[str, Any] = {"responses": [{"content": "once more", **SCRIPT["responses"][0]}]}


@pytest.fixture(autouse=True)
def _default_loop_closed() -> Iterator[None]:
    """Close the loop ``run_sync`` leaves current for its next run: ``asyncio.run`` would drop
    it unclosed, and its ResourceWarning fails the test."""
    yield
    policy = asyncio.get_event_loop_policy()
    loop = policy._local._loop  # type: ignore[attr-defined]
    if loop is not None:
        loop.close()
        policy.set_event_loop(None)


def agent_on(script: Any, ran: list[tuple[int, int]]) -> Agent[None, str]:
    agent = Agent(pydantic_ai_model(script), name="adder")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return agent


def test_the_agents_own_run_plays_the_script() -> None:
    """Each request gets the next response: its calls with their ids, its text, its usage with
    the cached tokens, the model it names; the last response repeats."""
    ran: list[tuple[int, int]] = []
    done = agent_on(SCRIPT, ran).run_sync("go")
    assert (done.output, ran) == ("3", [(1, 2)])
    first, second = [m for m in done.all_messages() if isinstance(m, ModelResponse)]
    assert first.parts == [ToolCallPart("add", '{"a": 1, "b": 2}', "c1")]
    assert (first.model_name, first.finish_reason) == ("gpt-4o-mini", "tool_call")
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (30, 20)
    assert first.usage.output_tokens == 10
    assert second.parts == [TextPart("3")]
    assert (second.model_name, second.finish_reason) == ("scripted", "stop")
    usage = done.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (2, 80, 15)


def test_the_agents_own_stream_plays_the_script_as_the_run_does() -> None:
    """Streamed requests (``run_stream_events``) get the same responses, as pydantic-ai's events."""

    async def streamed() -> list[Any]:
        async with agent_on(SCRIPT, []).run_stream_events("go") as events:
            return [event async for event in events]

    events = asyncio.run(streamed())
    last = events[-1]
    assert isinstance(last, AgentRunResultEvent)
    assert last.result.output == "3"
    plain = agent_on(SCRIPT, []).run_sync("go")
    assert last.result.all_messages()[1].parts == plain.all_messages()[1].parts
    assert last.result.usage.input_tokens == plain.usage.input_tokens
    kinds = [event.event_kind for event in events]
    assert kinds.count("function_tool_call") == 1
    assert kinds[:2] == ["part_start", "part_end"]


def test_a_response_without_usage_reports_none() -> None:
    done = agent_on([{"content": "hi"}], []).run_sync("go")
    assert (done.output, done.usage.total_tokens) == ("hi", 0)


def test_the_model_is_pydantic_ais_own_type_and_reads_every_script_form(tmp_path: Any) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"responses": [{"content": "from a file"}]}')
    for script in (path, str(path), ScriptedModel([{"content": "from a file"}])):
        model = pydantic_ai_model(script)
        assert isinstance(model, Model)
        assert Agent(model).run_sync("go").output == "from a file"
    with pytest.raises(budgetconf.UsageError, match="responses"):
        pydantic_ai_model({"turns": []})


def outcome(result: Any) -> tuple[Any, ...]:
    return (
        result.status,
        result.stop_reason,
        result.turns,
        result.tool_calls_executed,
        result.usage.input_tokens,
        result.usage.cached_input_tokens,
        result.usage.output_tokens,
        result.usage.total_tokens,
        result.limit,
    )


@pytest.mark.parametrize(
    ("script", "budget"),
    [
        (SCRIPT, {"loop.max_steps": 5}),
        (ALWAYS, {"loop.max_steps": 3}),
        (ALWAYS, {"loop.max_steps": 9, "limits.max_tokens": 100}),
        (ALWAYS, {"loop.max_steps": 9, "limits.max_tool_calls": 2}),
    ],
    ids=["answers", "step stop", "token stop", "tool-call stop"],
)
def test_the_bridges_run_and_stream_stop_where_the_executor_stops(
    script: dict[str, Any], budget: dict[str, Any]
) -> None:
    res = budgetconf.resolve(env={}, explicit=budget)
    executed: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        executed.append((a, b))
        return a + b

    model = ScriptedModel(script["responses"])
    expected = LoopExecutor(model, {"add": add}, res).run("go")
    ran: list[tuple[int, int]] = []
    result = bridge.run(agent_on(script, ran), "go", res)
    assert outcome(result) == outcome(expected)
    assert (len(ran), result.output) == (len(executed), expected.output)
    streamed_ran: list[tuple[int, int]] = []
    stream = bridge.stream(agent_on(script, streamed_ran), "go", res)
    assert list(stream)
    assert outcome(stream.result) == outcome(expected)
    assert (len(streamed_ran), stream.result.output) == (len(executed), expected.output)


def test_without_pydantic_ai_the_import_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bridge's ImportError, from the model's own module."""
    # what Python does for a missing package, for the package and the module imported first
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.setitem(sys.modules, "pydantic_ai.messages", None)
    monkeypatch.delitem(sys.modules, "budgetconf.testing._pydantic_ai")
    with pytest.raises(ImportError) as raised:
        importlib.import_module("budgetconf.testing._pydantic_ai")
    assert raised.value.name == "pydantic-ai-slim"
    assert "pip install 'budgetconf[pydantic-ai]'" in str(raised.value)
