"""The LangGraph bridge's stream() and astream(): graph.stream's own items, within the budget.

Real langgraph and langchain graphs on the scripted chat model (budgetconf.testing), and
langchain-openai's ChatOpenAI over the loopback chat server where a streamed request is
what is tested."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.errors import EmptyInputError
from langgraph.graph import START, MessagesState, StateGraph

import budgetconf
from budgetconf.integrations.langgraph import arun, astream, middleware, run, stream
from budgetconf.loop import RunStatus
from budgetconf.testing import langchain_model

from helpers.chat_server import reply, serving

USAGE = {"prompt_tokens": 10, "completion_tokens": 5}
STEP: dict[str, Any] = {
    "content": "adding",
    "tool_calls": [{"name": "add", "arguments": {"a": 1}}],
    "usage": USAGE,
}
DONE: dict[str, Any] = {"content": "done", "usage": USAGE}
ran: list[int] = []


@tool
def add(a: int) -> int:
    """Add one."""
    ran.append(a)
    return a + 1


@tool
def slow(a: int) -> int:
    """Take a while."""
    time.sleep(1.2)
    return a


@tool
async def sleepy(a: int) -> int:
    """Take too long."""
    await asyncio.sleep(10)
    return a


def agent(script: list[dict[str, Any]], res: Any = None, tools: Any = (add,)) -> Any:
    """create_agent on the script, with the bridge's middleware() when ``res`` is given."""
    extra = [] if res is None else middleware(res)
    return create_agent(langchain_model(script), list(tools), middleware=extra)


def budget(**values: str) -> budgetconf.Resolution:
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})


def asked() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "add"}]}


def shown(item: Any) -> Any:
    """An item, comparable across two runs: its shape, and its messages' kinds and text."""
    if isinstance(item, tuple):
        return tuple(shown(part) for part in item)
    if isinstance(item, dict):
        return {k: shown(v) for k, v in item.items()}
    if isinstance(item, list):
        return [shown(v) for v in item]
    if hasattr(item, "content"):
        return (type(item).__name__, item.content)
    return type(item).__name__


def same(result: Any, other: Any) -> None:
    """Two results of one run: the same end, usage and events."""
    fields = ("status", "stop_reason", "message", "output", "turns", "limit", "usage")
    assert [getattr(result, f) for f in fields] == [getattr(other, f) for f in fields]
    assert [e["type"] for e in result.events] == [e["type"] for e in other.events]


@pytest.mark.parametrize(
    "mode", [None, "updates", "messages", ["messages", "updates"], ["values", "custom"]]
)
@pytest.mark.parametrize("with_middleware", [True, False])
def test_the_items_are_what_the_graphs_own_stream_yields(mode: Any, with_middleware: bool) -> None:
    res = budget(max_steps="5")
    script = [STEP, DONE]
    keywords = {} if mode is None else {"stream_mode": mode}
    own = [shown(i) for i in agent(script).stream(asked(), **keywords)]
    bridged = stream(agent(script, res if with_middleware else None), asked(), res, **keywords)
    # the middleware's own node reports its (empty) updates, as any middleware's does
    assert [shown(i) for i in bridged if "BudgetconfMeter" not in repr(i)] == own
    assert (bridged.result.status, bridged.result.output) == (RunStatus.OK, "done")


def test_subgraphs_gives_each_item_its_namespace() -> None:
    res = budget(max_steps="5")
    own = list(agent([STEP, DONE]).stream(asked(), stream_mode="updates", subgraphs=True))
    found = list(stream(agent([STEP, DONE]), asked(), res, stream_mode="updates", subgraphs=True))
    assert [shown(i) for i in found] == [shown(i) for i in own]
    assert all(isinstance(i, tuple) and i[0] == () for i in found)


@pytest.mark.parametrize("with_middleware", [True, False])
def test_a_stop_ends_the_stream_without_raising_with_the_result_run_gives(
    with_middleware: bool,
) -> None:
    res = budget(max_steps="3")
    graph = agent([STEP], res if with_middleware else None)
    ran.clear()
    bridged = stream(graph, asked(), res, stream_mode="messages")
    items = list(bridged)
    assert items
    assert all(isinstance(chunk, tuple) for chunk in items)
    result = bridged.result
    assert (result.status, result.stop_reason, result.turns, ran) == (
        RunStatus.TRUNCATED,
        "max_steps",
        3,
        [1, 1],
    )
    assert result.usage.total_tokens == 45
    same(result, run(agent([STEP], res if with_middleware else None), asked(), res))
    assert repr(bridged) == "<BridgeStream truncated>"


def test_astream_yields_the_items_and_ends_as_arun_does() -> None:
    res = budget(max_steps="3")

    async def both() -> tuple[Any, list[Any], Any]:
        bridged = astream(agent([STEP], res), asked(), res, stream_mode=["updates"])
        items = [i async for i in bridged]
        return bridged.result, items, await arun(agent([STEP], res), asked(), res)

    result, items, ran_ = asyncio.run(both())
    assert items
    assert all(i[0] == "updates" for i in items)
    same(result, ran_)
    assert result.stop_reason == "max_steps"


def test_the_deadline_stops_the_stream() -> None:
    res = budget(timeout_seconds="1", max_steps="5")
    script = [{**STEP, "tool_calls": [{"name": "slow", "arguments": {"a": 1}}]}]
    bridged = stream(agent(script, res, tools=[slow]), asked(), res, stream_mode="updates")
    assert list(bridged)
    assert (bridged.result.stop_reason, bridged.result.turns) == ("timeout", 1)


def test_astream_cancels_a_step_still_running_at_the_deadline() -> None:
    res = budget(timeout_seconds="1", max_steps="5")
    script = [{**STEP, "tool_calls": [{"name": "sleepy", "arguments": {"a": 1}}]}]

    async def drain() -> Any:
        bridged = astream(agent(script, res, tools=[sleepy]), asked(), res)
        assert [i async for i in bridged]
        return bridged.result

    started = time.monotonic()
    result = asyncio.run(drain())
    assert time.monotonic() - started < 5
    assert (result.status, result.stop_reason) == (RunStatus.TRUNCATED, "timeout")


def failing(error: BaseException) -> Any:
    """A graph whose model answers once, and whose next node raises ``error``."""
    model = langchain_model([DONE])

    async def fail(state: Any) -> Any:
        raise error

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("fail", fail)
    g.add_edge(START, "agent")
    g.add_edge("agent", "fail")
    return g.compile()


def test_a_failure_of_the_graph_is_a_failed_result() -> None:
    res = budget(max_steps="3")

    async def drain() -> Any:
        bridged = astream(failing(RuntimeError("the tool broke")), asked(), res)
        assert [i async for i in bridged]
        return bridged.result

    result = asyncio.run(drain())
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert isinstance(result.native, RuntimeError)


def test_a_timeout_of_the_graphs_own_is_its_failure_not_the_deadline() -> None:
    res = budget(max_steps="3", timeout_seconds="30")
    result = asyncio.run(arun(failing(TimeoutError("its own")), asked(), res))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert isinstance(result.native, TimeoutError)


def test_the_callers_own_mistake_is_raised_from_the_stream() -> None:
    bridged = stream(agent([DONE]), None, budget(max_steps="3"))
    with pytest.raises(EmptyInputError):
        list(bridged)


@pytest.mark.parametrize("early", ["close", "with"])
def test_a_stream_closed_early_closes_the_graphs_and_the_run_is_cancelled(early: str) -> None:
    res = budget(max_steps="5")
    ran.clear()
    bridged = stream(agent([STEP], res), asked(), res, stream_mode="messages")
    if early == "close":
        next(bridged)
        bridged.close()
    else:
        with bridged:
            next(bridged)
    assert (bridged.result.status, bridged.result.stop_reason) == (RunStatus.FAILED, "cancelled")
    assert ran == []  # the tools node never ran: the graph's stream was closed
    assert list(bridged) == []


def test_an_async_stream_closed_early_is_cancelled() -> None:
    res = budget(max_steps="5")

    async def early() -> Any:
        bridged = astream(agent([STEP], res), asked(), res, stream_mode="messages")
        async with bridged:
            await anext(bridged)
        return bridged.result

    assert asyncio.run(early()).stop_reason == "cancelled"


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"output_keys": "messages"}, "output_keys= would change the states"),
        ({"version": "v2"}, "version= would change the states"),
        ({"stream_mode": []}, "stream_mode: expected a mode or a list of modes"),
        ({"subgraphs": "yes"}, "subgraphs: expected True or False"),
        ({"config": {"recursion_limit": 5}}, "recursion_limit= would set langgraph's own"),
    ],
)
def test_stream_refuses_what_run_refuses_and_what_would_change_the_states(
    keywords: dict[str, Any], says: str
) -> None:
    with pytest.raises(budgetconf.UsageError, match=says):
        stream(agent([DONE]), asked(), budget(max_steps="3"), **keywords)
    with pytest.raises(budgetconf.UsageError, match=says):
        astream(agent([DONE]), asked(), budget(max_steps="3"), **keywords)


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"stream": True}, r"stream=True: run\(\) runs the agent to its end"),
        ({"stream_mode": "messages"}, r"to stream the run in modes of your own, call stream\(\)"),
        ({"subgraphs": True}, "subgraphs= is set by the bridge"),
    ],
)
def test_run_refuses_streaming_and_names_stream(keywords: dict[str, Any], says: str) -> None:
    with pytest.raises(budgetconf.UsageError, match=says):
        run(agent([DONE]), asked(), budget(max_steps="3"), **keywords)
    with pytest.raises(budgetconf.UsageError, match=says):
        asyncio.run(arun(agent([DONE]), asked(), budget(max_steps="3"), **keywords))


def openai_agent(url: str, res: Any = None, stream_usage: bool | None = None) -> Any:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(
        base_url=url,
        api_key="sk-test",  # type: ignore[arg-type]
        model="gpt-test",
        max_retries=0,
        stream_usage=stream_usage,
    )
    return create_agent(model, [add], middleware=[] if res is None else middleware(res))


def asking(n: int, body: dict[str, Any]) -> Any:
    return reply(f"step {n}", calls=[(f"c{n}", "add", {"a": n})], usage=(60, 40))


def test_middleware_makes_each_streamed_request_ask_for_its_usage() -> None:
    res = budget(max_tokens="250")
    with serving(asking) as chat:
        bridged = stream(openai_agent(chat.url, res), asked(), res, stream_mode="messages")
        assert list(bridged)
    assert [b.get("stream_options") for b in chat.bodies] == [{"include_usage": True}] * 3
    assert (bridged.result.stop_reason, bridged.result.usage.total_tokens) == ("max_tokens", 300)


def test_without_middleware_a_token_budget_on_a_stream_without_usage_is_refused() -> None:
    res = budget(max_tokens="250", max_steps="3")
    says = (
        r"limits\.max_tokens = 250 from env:BUDGETCONF_MAX_TOKENS cannot be counted by langgraph"
        r" streaming a ChatOpenAI that reports no usage: ask it for its usage"
    )
    with serving(asking) as chat:
        with pytest.raises(budgetconf.UsageError, match=says):
            stream(openai_agent(chat.url), asked(), res, stream_mode="messages")
        with pytest.warns(budgetconf.BudgetConfWarning, match=says):
            bridged = stream(
                openai_agent(chat.url), asked(), res, stream_mode="messages", unenforced="warn"
            )
        assert list(bridged)
        assert bridged.result.stop_reason == "max_steps"
        # asked for its usage, it is counted; a run without tokens to count is not refused
        asking_usage = stream(
            openai_agent(chat.url, stream_usage=True), asked(), res, stream_mode="messages"
        )
        assert list(asking_usage)
        assert asking_usage.result.stop_reason == "max_tokens"
        steps = stream(
            openai_agent(chat.url), asked(), budget(max_steps="2"), stream_mode="messages"
        )
        assert list(steps)
        assert steps.result.stop_reason == "max_steps"


def test_the_streamed_bench_rows_run_in_quick_mode() -> None:
    """bench/bridge_langgraph.py's streamed rows: the framework's stream alone and through
    stream(), each run completing (its times are not judged here)."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).parents[2] / "bench"
    sys.path.insert(0, str(bench))  # the script imports its sibling _paired
    try:
        spec = importlib.util.spec_from_file_location(
            "bridge_langgraph", bench / "bridge_langgraph.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        rows = module.streamed_rows(True)
    finally:
        sys.path.remove(str(bench))
    assert list(rows) == [module.STREAMED_ALONE, module.STREAMED, module.STREAMED_COST]
    assert all(ns > 0 for ns in list(rows.values())[:2])
