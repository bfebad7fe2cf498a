"""Per-turn overhead of the agno bridge against the same agno run without it.

Both runs drive agno's own OpenAI chat model playing one script in process
(`budgetconf.testing.agno_model`): a call of the tool ``add`` on each of the
first ``TURNS - 1`` responses, then an answer, so each run makes ``TURNS`` model
calls and ``TURNS - 1`` tool calls: alone with ``agent.run(task)``, through the
bridge with ``run(agent, task, budget)`` for a step budget of ``TURNS + 1`` (the
run completes on its last turn, with no last-turn notice: both send the same
requests). Each run gets an agent and a model of its own, made before the timing,
so both start from the script's first response and an empty session. Repetitions
alternate (`_paired`): the rows are the medians of each (ns a turn,
`time.perf_counter_ns`) and of the pairs' differences.
`streamed_rows` times the same two runs streamed, each iterated to its end:
``agent.run(task, stream=True)`` alone, the bridge's ``stream(agent, task,
budget)`` through it. agno's telemetry is off (``AGNO_TELEMETRY=false``).

    python bench/bridge_agno.py [--quick]
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ["AGNO_TELEMETRY"] = "false"

from agno.agent import Agent

import budgetconf
from budgetconf.integrations.agno import run, stream
from budgetconf.testing import agno_model

from _paired import paired

ALONE = "agno: framework alone, per turn"
BRIDGED = "agno: through the bridge, per turn"
COST = "agno: the bridge's cost per turn"
STREAMED = (
    "agno, streamed: framework alone, per turn",
    "agno, streamed: through the bridge, per turn",
    "agno, streamed: the bridge's cost per turn",
)
TURNS = 20  # a run's turns, out of quick mode
_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script(turns: int) -> dict[str, Any]:
    """``turns - 1`` responses that each call ``add``, then the answer."""
    calls = [
        {"content": "", "tool_calls": [{"name": "add", "arguments": {"a": n, "b": 1}}]}
        for n in range(turns - 1)
    ]
    return {
        "responses": [
            *({**c, "usage": _USAGE} for c in calls),
            {"content": "done", "usage": _USAGE},
        ]
    }


def agent(turns: int) -> Any:
    return Agent(model=agno_model(script(turns)), tools=[add], telemetry=False)


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
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns + 1})  # no last-turn notice
    agent(turns).run("warm up")  # agno loads its run machinery on the first run

    def alone() -> int:
        made = agent(turns)
        start = time.perf_counter_ns()
        made.run("go")
        elapsed = time.perf_counter_ns() - start
        assert made.model.calls == turns, made.model.calls
        return elapsed

    def bridged() -> int:
        made = agent(turns)
        start = time.perf_counter_ns()
        result = run(made, "go", budget)
        elapsed = time.perf_counter_ns() - start
        assert (result.turns, result.stop_reason) == (turns, "completed"), result
        return elapsed

    return {"alone": alone, "bridged": bridged}


def streamed_sides(turns: int = TURNS) -> dict[str, Callable[[], int]]:
    """`sides`, each run streamed and iterated to its end."""
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns + 1})  # no last-turn notice
    for _ in agent(turns).run("warm up", stream=True):
        pass

    def alone() -> int:
        made = agent(turns)
        start = time.perf_counter_ns()
        for _ in made.run("go", stream=True):
            pass
        elapsed = time.perf_counter_ns() - start
        assert made.model.calls == turns, made.model.calls
        return elapsed

    def bridged() -> int:
        made = agent(turns)
        start = time.perf_counter_ns()
        streamed = stream(made, "go", budget)
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
