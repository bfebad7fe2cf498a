"""Per-turn overhead of the smolagents bridge against the same smolagents run without it.

Both runs drive the same scripted `Model` (a tool call on every step) with the
same `ToolCallingAgent` until their step limit, and both make ``turns`` model
calls: alone with ``agent.run(task, max_steps=turns - 1)`` (its last call is
smolagents' forced, tool-less one), through the bridge with ``run(agent,
task, budget)`` for a step budget of ``turns`` (the Meter answers the last
call's tool call as not executed and refuses the next). Repetitions alternate
between the two, and each row is the median time per turn, in nanoseconds
(`time.perf_counter_ns`). Building the budget is outside the timing.
`streamed_rows` times the same two runs streamed, each iterated to its end:
``agent.run(task, stream=True, ...)`` alone, the bridge's ``stream(agent,
task, budget)`` through it.

    python bench/bridge_smolagents.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from smolagents import Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage

import budgetconf
from budgetconf.integrations.smolagents import run, stream

from _paired import paired

ALONE = "smolagents: framework alone, per turn"
BRIDGED = "smolagents: through the bridge, per turn"
COST = "smolagents: the bridge's cost per turn"
STREAMED = (
    "smolagents, streamed: framework alone, per turn",
    "smolagents, streamed: through the bridge, per turn",
    "smolagents, streamed: the bridge's cost per turn",
)


class Looping(Model):
    """A tool call on every step; the tool-less forced final call gets a summary."""

    def __init__(self) -> None:
        super().__init__(model_id="looping")
        function = ChatMessageToolCallFunction(name="add", arguments={"a": 1, "b": 1})
        self.call = ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[ChatMessageToolCall(id="c", type="function", function=function)],
            token_usage=TokenUsage(10, 5),
        )
        self.summary = ChatMessage(
            role=MessageRole.ASSISTANT, content="summary", token_usage=TokenUsage(7, 3)
        )

    def generate(self, messages: Any, tools_to_call_from: Any = None, **kwargs: Any) -> Any:
        return self.call if tools_to_call_from else self.summary


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    return a + b


TURNS = 20  # a run's turns, out of quick mode


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    found = paired(*sides(turns).values(), repeat, turns)
    return dict(zip((ALONE, BRIDGED, COST), found, strict=True))


def streamed_rows(quick: bool) -> dict[str, float]:
    """`rows`, of the two runs streamed."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    found = paired(*streamed_sides(turns).values(), repeat, turns)
    return dict(zip(STREAMED, found, strict=True))


def sides(turns: int = TURNS) -> dict[str, Callable[[], int]]:
    """One timed run (ns) of ``turns`` turns alone and one through the bridge."""
    agent = ToolCallingAgent(tools=[add], model=Looping(), verbosity_level=LogLevel.OFF)
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns})

    def alone() -> int:
        start = time.perf_counter_ns()
        agent.run("go", max_steps=turns - 1)
        return time.perf_counter_ns() - start

    def bridged() -> int:
        start = time.perf_counter_ns()
        result = run(agent, "go", budget)
        elapsed = time.perf_counter_ns() - start
        assert result.turns == turns, result
        return elapsed

    return {"alone": alone, "bridged": bridged}


def streamed_sides(turns: int = TURNS) -> dict[str, Callable[[], int]]:
    """One timed run (ns) of ``turns`` turns streamed alone and one through the bridge."""
    agent = ToolCallingAgent(tools=[add], model=Looping(), verbosity_level=LogLevel.OFF)
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns})

    def alone() -> int:
        start = time.perf_counter_ns()
        for _ in agent.run("go", stream=True, max_steps=turns - 1):
            pass
        return time.perf_counter_ns() - start

    def bridged() -> int:
        start = time.perf_counter_ns()
        streamed = stream(agent, "go", budget)
        for _ in streamed:
            pass
        elapsed = time.perf_counter_ns() - start
        assert streamed.result.turns == turns, streamed.result
        return elapsed

    return {"alone": alone, "bridged": bridged}


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    found = {**rows(quick), **streamed_rows(quick)}
    for name, ns in found.items():
        print(f"{name}: {ns / 1000:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
