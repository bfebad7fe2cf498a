"""budgetconf.testing.openai_agents_model, against the real openai-agents package: the
framework's own runs play the script, and the bridge stops where the executor stops."""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel as TheirScriptedModel

import budgetconf
from budgetconf.integrations import openai_agents
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import openai_agents_model

from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)

ran: list[str] = []


@function_tool
def echo(text: str) -> str:
    """Echo the text."""
    ran.append(text)
    return text


def plain_echo(text: str) -> str:
    ran.append(text)
    return text


USAGE = {
    "prompt_tokens": 30,
    "completion_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 20},
}
CALL = {"id": "c1", "name": "echo", "arguments": {"text": "again"}}
SCRIPT: dict[str, Any] = {
    "responses": [
        {"content": "echoing", "tool_calls": [CALL], "usage": USAGE},
        {"content": "done", "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
    ]
}


def agent(script: Any = SCRIPT) -> Agent[Any]:
    ran.clear()
    return Agent(name="echoer", model=openai_agents_model(script), tools=[echo])


def test_the_model_is_the_frameworks_own_scripted_model() -> None:
    assert isinstance(openai_agents_model(SCRIPT), TheirScriptedModel)


def test_the_frameworks_run_plays_the_script_with_its_usage() -> None:
    """Runner.run_sync: the call runs, the answer is the second response's, usage summed."""
    result = Runner.run_sync(agent(), "go")
    assert result.final_output == "done"
    assert ran == ["again"]
    usage = result.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (2, 80, 15)
    assert usage.total_tokens == 95
    assert usage.input_tokens_details.cached_tokens == 20


def test_the_frameworks_stream_plays_the_script() -> None:
    """Runner.run_streamed: the Responses-API events, the completed response with usage."""

    async def streamed() -> tuple[Any, list[Any]]:
        streaming = Runner.run_streamed(agent(), "go")
        return streaming, [event async for event in streaming.stream_events()]

    streaming, events = asyncio.run(streamed())
    raw = [e.data for e in events if e.type == "raw_response_event"]
    kinds = [e.type for e in raw]
    assert kinds.count("response.created") == kinds.count("response.completed") == 2
    completed = [e.response for e in raw if e.type == "response.completed"]
    assert [r.usage.input_tokens for r in completed] == [30, 50]
    assert completed[0].usage.input_tokens_details.cached_tokens == 20
    assert "response.function_call_arguments.done" in kinds
    assert streaming.final_output == "done"
    assert ran == ["again"]


def test_the_last_response_repeats_and_a_response_without_usage_reports_none() -> None:
    always = {"responses": [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}]}
    budget = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "3"})
    result = openai_agents.run(agent(always), "go", budget)
    assert (result.stop_reason, result.turns) == ("max_steps", 3)
    assert ran == ["x", "x"]
    assert result.usage.total_tokens == 0


@pytest.mark.parametrize("env", [{"BUDGETCONF_MAX_STEPS": "3"}, {"BUDGETCONF_MAX_TOKENS": "90"}])
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_the_bridge_stops_where_the_executor_stops_on_the_same_script(
    env: dict[str, str], streamed: bool
) -> None:
    """On one script, the bridge's run (and stream) and the executor: the same model calls,
    tool runs, stop and usage."""
    call = {"name": "echo", "arguments": {"text": "again"}}  # a new id each response
    always = {"responses": [{"content": "echoing", "tool_calls": [call], "usage": USAGE}]}
    budget = budgetconf.resolve(env=env)
    ran.clear()
    expected = LoopExecutor(ScriptedModel(always["responses"]), {"echo": plain_echo}, budget).run(
        "go"
    )
    executed = list(ran)
    calc = agent(always)
    if streamed:
        stream = openai_agents.stream(calc, "go", budget)
        list(stream)
        result = stream.result
    else:
        result = openai_agents.run(calc, "go", budget)
    assert ran == executed
    assert (result.status, result.stop_reason, result.turns) == (
        expected.status,
        expected.stop_reason,
        expected.turns,
    )
    assert result.limit == expected.limit
    assert result.usage.total_tokens == expected.usage.total_tokens
    assert result.usage.cached_input_tokens == expected.usage.cached_input_tokens == 60


def test_without_the_framework_the_import_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.delitem(sys.modules, "budgetconf.testing._openai_agents")
    with pytest.raises(ImportError, match=r"pip install 'budgetconf\[openai-agents\]'"):
        importlib.import_module("budgetconf.testing._openai_agents")
