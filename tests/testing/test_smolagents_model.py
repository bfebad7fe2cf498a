"""`budgetconf.testing.smolagents_model` against the real smolagents: its own agents play
the script on it, run and streamed, and the bridge on it stops where the executor stops on
the same script."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.memory import ActionStep  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessageStreamDelta,
    agglomerate_stream_deltas,
)
from smolagents.monitoring import LogLevel  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations.smolagents import run, stream
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import smolagents_model

RAN: list[tuple[int, int]] = []


def adding(a: int, b: int) -> int:
    """Add two numbers."""
    RAN.append((a, b))
    return a + b


@tool  # type: ignore[untyped-decorator]
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    return adding(a, b)


@pytest.fixture(autouse=True)
def _ran() -> None:
    RAN.clear()


def calls(*made: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments} for name, arguments in made]


USAGE = {"prompt_tokens": 60, "completion_tokens": 40}
CACHED = {**USAGE, "prompt_tokens_details": {"cached_tokens": 20}}
ONCE = [
    {"content": "adding", "tool_calls": calls(("add", {"a": 1, "b": 2})), "usage": CACHED},
    {"content": "", "tool_calls": calls(("final_answer", {"answer": "3"})), "usage": USAGE},
]


def agent(model: Any, **options: Any) -> ToolCallingAgent:
    return ToolCallingAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF, **options)


def test_smolagents_own_run_plays_the_script() -> None:
    model = smolagents_model({"responses": ONCE})
    ag = agent(model)
    assert ag.run("go") == "3"
    assert (RAN, model.calls, model.model_id) == ([(1, 2)], 2, "scripted")
    first = next(s for s in ag.memory.steps if isinstance(s, ActionStep))
    message = first.model_output_message
    assert (message.content, first.token_usage.input_tokens, first.token_usage.output_tokens) == (
        "adding",
        60,
        40,
    )
    raw = message.raw  # read as OpenAIServerModel's raw completion is read
    assert (raw.model, raw.choices[0].finish_reason) == ("scripted", "tool_calls")
    assert raw.usage.prompt_tokens_details.cached_tokens == 20


def test_smolagents_own_stream_plays_the_script_as_deltas() -> None:
    model = smolagents_model(ONCE)
    items = list(agent(model, stream_outputs=True).run("go", stream=True))
    deltas = [i for i in items if isinstance(i, ChatMessageStreamDelta)]
    first = agglomerate_stream_deltas(deltas[:3])  # text, the call, the usage
    assert first.content == "adding"
    assert [(c.id, c.function.name, c.function.arguments) for c in first.tool_calls] == [
        ("call_1_0", "add", '{"a": 1, "b": 2}')
    ]
    assert (first.token_usage.input_tokens, first.token_usage.output_tokens) == (60, 40)
    assert (items[-1].output, RAN, model.calls) == ("3", [(1, 2)], 2)


def test_a_response_without_usage_reports_none() -> None:
    model = smolagents_model([{"content": "hi"}])
    assert model.generate([]).token_usage is None
    assert [(d.content, d.token_usage) for d in model.generate_stream([])] == [("hi", None)]


def test_a_code_agent_runs_the_code_a_response_holds() -> None:
    code = "Thought: add them.\n<code>\nfinal_answer(add(a=2, b=3))\n</code>"
    model = smolagents_model([{"content": code, "usage": USAGE}])
    ag = CodeAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF)
    assert (ag.run("go"), RAN) == (5, [(2, 3)])


#: a call of ``add`` on every response (three where asked), 100 tokens each
def looping(count: int = 1) -> list[dict[str, Any]]:
    made = calls(*[("add", {"a": 1, "b": i}) for i in range(count)])
    return [{"content": "adding", "tool_calls": made, "usage": USAGE}]


@pytest.mark.parametrize(
    ("budget", "count"),
    [
        ({"BUDGETCONF_MAX_STEPS": "3"}, 1),
        ({"BUDGETCONF_MAX_TOKENS": "250"}, 1),
        ({"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOOL_CALLS": "4"}, 3),
        ({"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "2"}, 3),
    ],
    ids=["steps", "tokens", "tool calls", "calls a response"],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_the_bridge_on_it_stops_where_the_executor_stops_on_the_script(
    budget: dict[str, str], count: int, streamed: bool
) -> None:
    res = budgetconf.resolve(env=budget)
    script = ScriptedModel(looping(count))
    ran = LoopExecutor(script, {"add": adding}, res).run("go")
    executed = list(RAN)
    RAN.clear()
    model = smolagents_model(looping(count))
    if streamed:
        streaming = stream(agent(model, stream_outputs=True), "go", res)
        list(streaming)
        bridged = streaming.result
    else:
        bridged = run(agent(model), "go", res)
    assert (model.calls, sorted(RAN)) == (script.calls, sorted(executed))
    fields = ("status", "stop_reason", "message", "turns", "limit", "usage")
    assert [getattr(bridged, f) for f in fields] == [getattr(ran, f) for f in fields]


def test_without_smolagents_the_import_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "smolagents.models", None)  # as for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.testing._smolagents")
    with pytest.raises(ImportError, match=r"pip install 'budgetconf\[smolagents\]'") as raised:
        _ = budgetconf.testing.smolagents_model
    assert raised.value.name == "smolagents"
