"""Per-turn overhead of the LangGraph bridge against the same graph streamed without it.

Both sides stream the same graph with ``stream_mode="values"``, driven by
langchain-core's fake chat model (a tool call on every turn but the last)
and the same tool; the bridge's side goes through `run()` with a step,
tool-call and token budget, so the difference per turn is what it adds: the
Meter's checks before each model call, its plan of each response and each
tool call through it. Two graphs: langchain's ``create_agent`` carrying the
bridge's `middleware()` (against the same agent built without it), which is
what `rows()` reports (`streamed_rows()`: the same streamed with
``stream_mode="messages"``, alone and through the bridge's `stream()`, on
budgetconf.testing's chat model, whose responses stream in chunks), and a
hand-built agent-tools loop whose streamed states drive the Meter. The script
also times the agent with a middleware whose hooks do nothing: langchain
wraps every ``wrap_*`` hook for tracing (tens of µs a call, tracing off),
which any middleware pays, so the bridge's own share is the difference from
that. The two sides of each comparison run
in alternating pairs (`_paired`): medians of each and of the pairs'
differences, per turn, in nanoseconds.

    python bench/bridge_langgraph.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import budgetconf
from budgetconf.integrations.langgraph import middleware, run, stream
from budgetconf.testing import langchain_model

from _paired import paired

ALONE = "langgraph: create_agent alone, per turn"
BRIDGED = "langgraph: create_agent with the bridge's middleware(), per turn"
HOOKS = "langgraph: create_agent with a middleware whose hooks do nothing, per turn"
LOOP_ALONE = "langgraph: an agent-tools loop alone, per turn"
LOOP_BRIDGED = "langgraph: the loop through the bridge's states, per turn"
COST = "langgraph: the bridge's cost per turn"
HOOKS_COST = "langgraph: an empty middleware's cost per turn"
LOOP_COST = "langgraph: the bridge's cost per turn of the loop"
STREAMED_ALONE = "langgraph, streamed: create_agent alone, per turn"
STREAMED = "langgraph, streamed: create_agent through the bridge's stream(), per turn"
STREAMED_COST = "langgraph, streamed: the bridge's cost per turn"
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
SCRIPTED = {"prompt_tokens": 10, "completion_tokens": 5}


class Hooks(AgentMiddleware[Any, Any, Any]):
    """The bridge's hooks, doing nothing: what langchain's middleware machinery costs."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def responses(turns: int) -> list[AIMessage]:
    calls = [
        AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": "hi"}, "id": f"c{n}"}],
            usage_metadata=USAGE,
        )
        for n in range(turns - 1)
    ]
    return [*calls, AIMessage("done", usage_metadata=USAGE)]


def agent(turns: int, middle: list[Any]) -> Any:
    return create_agent(FakeModel(messages=iter(responses(turns))), [echo], middleware=middle)


def scripted_agent(turns: int, middle: list[Any]) -> Any:
    """create_agent on budgetconf.testing's chat model, which streams its responses in chunks
    (langchain-core's fake gives a response with calls and no text no chunk)."""
    call = {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}], "usage": SCRIPTED}
    script = [*([call] * (turns - 1)), {"content": "done", "usage": SCRIPTED}]
    return create_agent(langchain_model(script), [echo], middleware=middle)


def loop(turns: int) -> Any:
    model = FakeModel(messages=iter(responses(turns)))
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([echo]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def alone(compiled: Any, turns: int) -> int:
    config = {"recursion_limit": 4 * turns + 2}
    started = time.perf_counter_ns()
    for _ in compiled.stream({"messages": [HumanMessage("go")]}, config, stream_mode="values"):
        pass
    return time.perf_counter_ns() - started


def bridged(compiled: Any, res: budgetconf.Resolution) -> int:
    started = time.perf_counter_ns()
    result = run(compiled, {"messages": [HumanMessage("go")]}, res)
    elapsed = time.perf_counter_ns() - started
    assert result.stop_reason == "completed", result.message
    return elapsed


def streamed_alone(compiled: Any, turns: int) -> int:
    """The graph's own stream of its model's chunks (``stream_mode="messages"``)."""
    config = {"recursion_limit": 4 * turns + 2}
    started = time.perf_counter_ns()
    for _ in compiled.stream({"messages": [HumanMessage("go")]}, config, stream_mode="messages"):
        pass
    return time.perf_counter_ns() - started


def streamed(compiled: Any, res: budgetconf.Resolution) -> int:
    """The same, through the bridge's `stream()`."""
    started = time.perf_counter_ns()
    found = stream(compiled, {"messages": [HumanMessage("go")]}, res, stream_mode="messages")
    for _ in found:
        pass
    elapsed = time.perf_counter_ns() - started
    assert found.result.stop_reason == "completed", found.result.message
    return elapsed


TURNS = 20  # a run's turns, out of quick mode


def _budget(turns: int) -> budgetconf.Resolution:
    """A step, tool-call and token budget that a run of ``turns`` turns stays within."""
    return budgetconf.resolve(
        explicit={
            "loop.max_steps": turns + 1,
            "limits.max_tool_calls": turns,
            "limits.max_tokens": 10**6,
        }
    )


def sides(turns: int = TURNS) -> dict[str, Callable[[], int]]:
    """One timed run (ns) of ``turns`` turns each way of running create_agent: alone, with a
    middleware whose hooks do nothing, through the bridge with and without its middleware();
    each graph is built outside the timing."""
    res = _budget(turns)
    return {
        "alone": lambda: alone(agent(turns, []), turns),
        "empty middleware": lambda: alone(agent(turns, [Hooks()]), turns),
        "bridged": lambda: bridged(agent(turns, middleware()), res),
        "bridged without middleware()": lambda: bridged(agent(turns, []), res),
    }


def _pair(quick: bool, first: str, second: str, names: tuple[str, str, str]) -> dict[str, float]:
    """The sides ``first`` and ``second`` in alternating pairs, per turn."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    found = sides(turns)
    return dict(zip(names, paired(found[first], found[second], repeat, turns), strict=True))


def rows(quick: bool) -> dict[str, float]:
    """create_agent alone and with the bridge's middleware(), and the cost, per turn, in ns."""
    return _pair(quick, "alone", "bridged", (ALONE, BRIDGED, COST))


def streamed_rows(quick: bool) -> dict[str, float]:
    """create_agent's own stream of its model's chunks, alone and through the bridge's
    `stream()` with its middleware(), per turn, in ns."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    res = _budget(turns)
    found = paired(
        lambda: streamed_alone(scripted_agent(turns, []), turns),
        lambda: streamed(scripted_agent(turns, middleware()), res),
        repeat,
        turns,
    )
    return dict(zip((STREAMED_ALONE, STREAMED, STREAMED_COST), found, strict=True))


def hook_rows(quick: bool) -> dict[str, float]:
    """create_agent alone and with a middleware whose hooks do nothing, both streamed alone."""
    return _pair(quick, "alone", "empty middleware", (ALONE, HOOKS, HOOKS_COST))


def loop_rows(quick: bool) -> dict[str, float]:
    """The hand-built loop alone and through the bridge's streamed states."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    res = _budget(turns)
    found = paired(
        lambda: alone(loop(turns), turns), lambda: bridged(loop(turns), res), repeat, turns
    )
    return dict(zip((LOOP_ALONE, LOOP_BRIDGED, LOOP_COST), found, strict=True))


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    for found in (rows(quick), streamed_rows(quick), hook_rows(quick), loop_rows(quick)):
        bare, _, cost = found.values()
        for name, ns in found.items():
            print(f"{name}: {ns / 1000:.1f} µs")
        print(f"  ({cost / bare:+.1%} of the first)")


if __name__ == "__main__":
    main(sys.argv[1:])
