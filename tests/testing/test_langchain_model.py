"""budgetconf.testing.langchain_model: a script as a langchain-core chat model, through the
real langchain and langgraph packages, against the executor on the same script."""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import budgetconf
from budgetconf.integrations import langgraph
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import langchain_model

CACHED = {
    "prompt_tokens": 30,
    "completion_tokens": 10,
    "prompt_tokens_details": {"cached_tokens": 20},
}
CALL = {"id": "c1", "name": "echo", "arguments": {"text": "again"}}
SCRIPT: list[dict[str, Any]] = [
    {"content": "echoing", "tool_calls": [CALL], "usage": CACHED, "model": "gpt-scripted"},
    {"content": "done", "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
]
ALWAYS = [SCRIPT[0]]
echoed: list[str] = []


@tool
def echo(text: str) -> str:
    """Echo the text."""
    echoed.append(text)
    return text


def asked() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "echo"}]}


def test_invoke_gives_each_response_with_its_usage_and_model_the_last_repeating() -> None:
    model = langchain_model({"responses": SCRIPT})
    first = model.invoke("go")
    assert first.content == "echoing"
    assert first.tool_calls == [
        {"name": "echo", "args": {"text": "again"}, "id": "c1", "type": "tool_call"}
    ]
    assert first.usage_metadata == {
        "input_tokens": 30,
        "output_tokens": 10,
        "total_tokens": 40,
        "input_token_details": {"cache_read": 20},
    }
    assert first.response_metadata == {"model_name": "gpt-scripted", "finish_reason": "tool_calls"}
    second, third = model.invoke("go"), model.invoke("go")
    assert (second.content, third.content, second.response_metadata["model_name"]) == (
        "done",
        "done",
        "scripted",
    )
    assert langchain_model([{"content": "no usage"}]).invoke("go").usage_metadata is None


def test_a_stream_gives_the_text_each_call_and_the_usage_in_chunks() -> None:
    chunks = list(langchain_model(SCRIPT).stream("go"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.content for c in chunks] == ["echoing", "", ""]
    assert chunks[1].tool_call_chunks[0]["name"] == "echo"
    whole = chunks[0] + chunks[1] + chunks[2]
    assert whole.tool_calls[0]["args"] == {"text": "again"}
    assert whole.usage_metadata is not None
    assert whole.usage_metadata["total_tokens"] == 40
    assert whole.response_metadata["finish_reason"] == "tool_calls"

    async def astreamed() -> list[Any]:
        return [c async for c in langchain_model(SCRIPT).astream("go")]

    assert [c.content for c in asyncio.run(astreamed())] == ["echoing", "", ""]


@pytest.mark.parametrize("mode", ["values", "messages"])
def test_create_agent_and_a_hand_built_graph_play_the_script(mode: str) -> None:
    echoed.clear()
    agent = create_agent(langchain_model(SCRIPT), [echo])
    items = list(agent.stream(asked(), stream_mode=mode))  # type: ignore[call-overload]
    assert items
    assert echoed == ["again"]
    final = agent.invoke(asked())  # type: ignore[call-overload]  # the script's last response repeats
    assert final["messages"][-1].content == "done"

    model = langchain_model(SCRIPT).bind_tools([echo])
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([echo]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    state = g.compile().invoke(asked())
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai"]


def executor(script: list[dict[str, Any]], res: budgetconf.Resolution) -> tuple[Any, int]:
    ran: list[str] = []

    def echo_(text: str) -> str:
        ran.append(text)
        return text

    result = LoopExecutor(ScriptedModel(script), {"echo": echo_}, res).run("echo")
    return result, len(ran)


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize(
    ("script", "env"),
    [
        (SCRIPT, {"BUDGETCONF_MAX_STEPS": "5"}),
        (ALWAYS, {"BUDGETCONF_MAX_STEPS": "3"}),
        (ALWAYS, {"BUDGETCONF_MAX_TOKENS": "100"}),
        (ALWAYS, {"BUDGETCONF_MAX_TOOL_CALLS": "2"}),
    ],
    ids=["answers", "steps", "tokens", "tool calls"],
)
def test_the_bridge_on_it_stops_where_the_executor_stops(
    script: list[dict[str, Any]], env: dict[str, str], how: str
) -> None:
    res = budgetconf.resolve(env=env)
    expected, runs = executor(script, res)
    model = langchain_model(script)
    agent = create_agent(model, [echo], middleware=langgraph.middleware(res))
    echoed.clear()
    if how == "run":
        result = langgraph.run(agent, asked(), res)
    else:
        bridged = langgraph.stream(agent, asked(), res, stream_mode="messages")
        assert list(bridged)
        result = bridged.result
    assert (model.script.calls, len(echoed)) == (expected.turns, runs)  # type: ignore[attr-defined]
    assert (result.status, result.stop_reason, result.turns, result.limit) == (
        expected.status,
        expected.stop_reason,
        expected.turns,
        expected.limit,
    )
    tokens = ("input_tokens", "cached_input_tokens", "output_tokens", "total_tokens")
    assert [getattr(result.usage, t) for t in tokens] == [
        getattr(expected.usage, t) for t in tokens
    ]


def test_without_langgraph_the_module_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.language_models", None)
    monkeypatch.delitem(sys.modules, "budgetconf.testing._langchain")
    with pytest.raises(ImportError, match=r"pip install .*langgraph"):
        importlib.import_module("budgetconf.testing._langchain")


def test_its_stream_without_a_callback_manager_gives_the_same_chunks() -> None:
    """A response without text streams its calls and its usage only."""
    from langchain_core.messages import HumanMessage

    model: Any = langchain_model([{"tool_calls": [CALL]}])
    chunks = [c.message for c in model._stream([HumanMessage("go")])]
    assert [c.content for c in chunks] == ["", ""]  # no text: the call, then the usage

    async def astreamed() -> list[Any]:
        return [c.message async for c in model._astream([HumanMessage("go")])]

    assert [c.tool_call_chunks[0]["id"] for c in asyncio.run(astreamed())[:1]] == ["c1"]
