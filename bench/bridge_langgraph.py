"""Per-turn overhead of the LangGraph bridge against the same graph streamed without it.

Both sides stream the same agent-tools graph with ``stream_mode="values"``,
driven by langchain-core's fake chat model (a tool call on every turn but
the last) and the same tool; the bridge's side goes through `run()` with a
step, tool-call and token budget, so the difference per turn is what it
adds: checking the budget, counting the AI messages, their calls and usage.
Repetitions of the two alternate; medians, per turn, in nanoseconds.

    python bench/bridge_langgraph.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import budgetconf
from budgetconf.integrations.langgraph import run

ALONE = "langgraph: framework alone, per turn"
BRIDGED = "langgraph: through the bridge, per turn"
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def responses(turns: int) -> list[AIMessage]:
    calls = [
        AIMessage("", tool_calls=[{"name": "echo", "args": {"text": "hi"}, "id": f"c{n}"}])
        for n in range(turns - 1)
    ]
    return [*calls, AIMessage("done")]


def graph(turns: int) -> Any:
    model = FakeModel(messages=iter(responses(turns)))
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([echo]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def alone(turns: int) -> int:
    compiled = graph(turns)  # built outside the timing, as on the bridge's side
    config = {"recursion_limit": 2 * turns + 2}
    started = time.perf_counter_ns()
    for _ in compiled.stream({"messages": [HumanMessage("go")]}, config, stream_mode="values"):
        pass
    return time.perf_counter_ns() - started


def bridged(turns: int, res: budgetconf.Resolution) -> int:
    compiled = graph(turns)
    started = time.perf_counter_ns()
    result = run(compiled, {"messages": [HumanMessage("go")]}, res)
    elapsed = time.perf_counter_ns() - started
    assert result.stop_reason == "completed", result.message
    return elapsed


def rows(quick: bool) -> dict[str, float]:
    turns, repeat = (5, 3) if quick else (20, 21)
    res = budgetconf.resolve(
        explicit={
            "loop.max_steps": turns + 1,
            "limits.max_tool_calls": turns,
            "limits.max_tokens": 10**6,
        }
    )
    times: dict[str, list[int]] = {ALONE: [], BRIDGED: []}
    for _ in range(repeat):  # interleaved, so a slow spell of the machine hits both
        times[ALONE].append(alone(turns))
        times[BRIDGED].append(bridged(turns, res))
    return {name: statistics.median(found) / turns for name, found in times.items()}


def main(argv: list[str]) -> None:
    found = rows("--quick" in argv)
    for name, ns in found.items():
        print(f"{name}: {ns / 1000:.1f} µs")
    print(f"overhead per turn: {(found[BRIDGED] - found[ALONE]) / 1000:.1f} µs")


if __name__ == "__main__":
    main(sys.argv[1:])
