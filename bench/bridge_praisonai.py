"""Per-turn overhead of the praisonaiagents bridge against the same Agent run without it.

Both runs drive the same fake model (`_fake_model`), a chat-completions server
on 127.0.0.1 that asks for a tool on every call offering one, so each run ends at its step budget of
``TURNS`` model calls: ``agent.start`` under ``ExecutionConfig(max_steps=…)``
alone, and `budgetconf.integrations.praisonai.run` with the same budget, whose
Meter asks before each request and decides each tool call (the last turn's
call is answered without running, as in the executor: the tool is an addition,
so that saves next to nothing). Repetitions run in alternating pairs
(`_paired`): the rows are the medians of each (ns a turn, measured with
time.perf_counter_ns) and of the pairs' differences. The loopback round trip is
in both.

`streamed_rows` times two streamed runs of ``STREAMED_TURNS`` requests each,
iterated to their end: ``agent.start(task, stream=True)`` alone (its own stream
runs one round of tools, then asks for the answer: two requests), and the
bridge's ``stream(agent, task, budget)`` under a step budget of two, every
request streamed by each.

    python bench/bridge_praisonai.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator

from _fake_model import FakeModel, fake_model

from _paired import paired

TURNS = 5
ALONE = "praisonai: framework alone, per turn"
BRIDGED = "praisonai: through the bridge, per turn"
COST = "praisonai: the bridge's cost per turn"
STREAMED = (
    "praisonai, streamed: framework alone, per turn",
    "praisonai, streamed: through the bridge, per turn",
    "praisonai, streamed: the bridge's cost per turn",
)
#: the requests of agent.start(stream=True) when every response asks for a tool
STREAMED_TURNS = 2


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    with served():
        alone, bridged = sides().values()
        found = paired(alone, bridged, 3 if quick else 41, TURNS)
    return dict(zip((ALONE, BRIDGED, COST), found, strict=True))


def streamed_rows(quick: bool) -> dict[str, float]:
    """`rows`, of two runs streamed."""
    with served():
        alone, bridged = streamed_sides().values()
        found = paired(alone, bridged, 3 if quick else 41, STREAMED_TURNS)
    return dict(zip(STREAMED, found, strict=True))


@contextlib.contextmanager
def served() -> Iterator[None]:
    """The fake model on a loopback port, named by the variables PraisonAI reads, and its
    loop-guard warnings (once a turn, to its own logger and to the root one) quiet."""
    import praisonaiagents  # noqa: F401 - it configures the root logger as it loads: first

    names = (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL_NAME",
        "PRAISONAI_TELEMETRY_DISABLED",
    )
    saved = {name: os.environ.get(name) for name in names}
    quiet = [logging.getLogger("praisonaiagents"), logging.getLogger()]
    levels = [each.level for each in quiet]
    for each in quiet:
        each.setLevel(logging.ERROR)
    try:
        with fake_model() as url:
            os.environ.update(
                OPENAI_BASE_URL=url,
                OPENAI_API_KEY="sk-bench",
                OPENAI_MODEL_NAME="fake",
                PRAISONAI_TELEMETRY_DISABLED="true",
            )
            yield
    finally:
        for each, level in zip(quiet, levels, strict=True):
            each.setLevel(level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def sides() -> dict[str, Callable[[], int]]:
    """One run alone and one through the bridge, each timed (ns), of one agent (`served`)."""
    from praisonaiagents import Agent, ExecutionConfig

    from budgetconf.integrations import praisonai

    agent = Agent(
        name="b", instructions="Add.", tools=[add], execution=ExecutionConfig(max_steps=TURNS)
    )
    budget = {"loop.max_steps": TURNS}
    agent.start("warm up", stream=False, output="silent")  # first use loads its client

    # the agent keeps its chat history from run to run, and each request sends it whole:
    # every run starts from none, or the later run would send the longer conversation
    def alone() -> int:
        agent.clear_history()
        began = time.perf_counter_ns()
        agent.start("add", stream=False, output="silent")
        return time.perf_counter_ns() - began

    def bridged() -> int:
        agent.clear_history()
        began = time.perf_counter_ns()
        praisonai.run(agent, "add", budget)
        return time.perf_counter_ns() - began

    return {"alone": alone, "bridged": bridged}


def streamed_sides() -> dict[str, Callable[[], int]]:
    """`sides`, streamed: two requests each (the fake model's count tells)."""
    from praisonaiagents import Agent

    from budgetconf.integrations import praisonai

    agent = Agent(name="b", instructions="Add.", tools=[add])
    budget = {"loop.max_steps": STREAMED_TURNS}
    for _ in agent.start("warm up", stream=True):  # first use loads its client
        pass

    def timed(run: Callable[[], object]) -> int:
        agent.clear_history()
        served = FakeModel.served
        began = time.perf_counter_ns()
        run()
        elapsed = time.perf_counter_ns() - began
        assert FakeModel.served - served == STREAMED_TURNS, FakeModel.served - served
        return elapsed

    def alone() -> int:
        return timed(lambda: list(agent.start("add", stream=True)))

    def bridged() -> int:
        return timed(lambda: list(praisonai.stream(agent, "add", budget)))

    return {"alone": alone, "bridged": bridged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    quick = parser.parse_args().quick
    found = {**rows(quick), **streamed_rows(quick)}
    for name, ns in found.items():
        print(f"{name:45} {ns / 1e6:9.3f} ms")


if __name__ == "__main__":
    main()
