"""`budgetconf.testing.agno_model` against the real agno: its own agents play the script on
it, run, streamed and awaited, and the bridge on it stops where the executor stops on the same
script."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat

import budgetconf
from budgetconf.integrations.agno import run, stream
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import agno_model

RAN: list[tuple[int, int]] = []


def add(a: int, b: int) -> int:
    """Add two numbers."""
    RAN.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGNO_TELEMETRY", "false")
    RAN.clear()


USAGE = {"prompt_tokens": 60, "completion_tokens": 40}
CACHED = {**USAGE, "prompt_tokens_details": {"cached_tokens": 20}}
ONCE: list[dict[str, Any]] = [
    {
        "content": "adding",
        "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}],
        "usage": CACHED,
    },
    {"content": "3", "usage": {**USAGE, "cost": 0.25}},
]


def agent(model: Any) -> Agent:
    return Agent(model=model, tools=[add], telemetry=False)


def test_agnos_own_run_plays_the_script_with_its_usage_and_cost() -> None:
    model = agno_model({"responses": ONCE})
    assert isinstance(model, OpenAIChat)  # agno's own kind, read by its own parsers
    assert (model.id, getattr(model, "calls", None)) == ("scripted", 0)
    out = agent(model).run("go")
    assert (out.content, RAN, getattr(model, "calls", None)) == ("adding3", [(1, 2)], 2)
    metrics = out.metrics
    assert metrics is not None
    assert (metrics.input_tokens, metrics.output_tokens, metrics.cache_read_tokens) == (120, 80, 20)
    assert metrics.cost == 0.25


def test_agnos_own_stream_and_async_run_play_it_too() -> None:
    model = agno_model(ONCE)
    texts = [getattr(e, "content", None) for e in agent(model).run("go", stream=True)]
    assert [t for t in texts if t] == ["adding", "3"]
    awaited = agno_model(ONCE)
    assert asyncio.run(agent(awaited).arun("go")).content == "adding3"
    assert (RAN, model.calls, awaited.calls) == ([(1, 2), (1, 2)], 2, 2)

    async def streamed() -> list[Any]:
        return [e async for e in agent(agno_model(ONCE)).arun("go", stream=True)]

    assert any(getattr(e, "content", None) == "3" for e in asyncio.run(streamed()))


def test_the_last_response_repeats() -> None:
    model = agno_model([{"content": "again", "tool_calls": [{"name": "add", "arguments": {}}]}])
    result = run(agent(model), "go", {"loop.max_steps": 3})
    assert (result.stop_reason, model.calls) == ("max_steps", 3)


def test_the_bridge_on_it_stops_where_the_executor_stops() -> None:
    always = [
        {
            "content": "step",
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}],
            "usage": USAGE,
        }
    ]
    budget = budgetconf.resolve(explicit={"limits.max_tokens": 250})
    bridged = run(agent(agno_model(always)), "go", budget)
    streamed = stream(agent(agno_model(always)), "go", budget)
    list(streamed)
    executed = LoopExecutor(ScriptedModel(always), {"add": add}, budget).run("go")
    for found in (bridged, streamed.result):
        assert (found.stop_reason, found.turns, found.tool_calls_executed) == (
            executed.stop_reason,
            executed.turns,
            executed.tool_calls_executed,
        )
        assert found.usage.total_tokens == executed.usage.total_tokens


def test_without_agno_the_import_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "agno.models.openai", None)
    monkeypatch.delitem(sys.modules, "budgetconf.testing._agno")
    with pytest.raises(ImportError, match="pip install 'budgetconf\\[agno\\]'"):
        importlib.import_module("budgetconf.testing._agno")
