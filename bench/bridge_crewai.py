"""Per-turn overhead of the CrewAI bridge against the same Agent run without it.

Both runs drive the same fake model (`_fake_model`), a chat-completions server on 127.0.0.1
that asks for a tool on every call offering tools (and answers a call offering
none with text), so each run makes ``TURNS`` model calls: ``agent.kickoff``
under ``max_iter = TURNS - 1`` alone (what `limits()` gives: CrewAI's forced
final call is the last), and `budgetconf.integrations.crewai.run` with a step
budget of ``TURNS``, whose hooks ask the Meter before each call and decide each
tool call (the last turn's call is answered without running, as in the
executor). Repetitions run in alternating pairs (`_paired`): the rows are the
medians of each (ns a turn) and of the pairs' differences. The loopback round
trip is in both.

`streamed_rows` times the same two runs with every call streamed: an LLM made
with ``stream=True`` alone, and the bridge's ``stream(agent, task, budget)``
iterated to its end.

    python bench/bridge_crewai.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from _fake_model import FakeModel, fake_model

from _paired import paired

TURNS = 5
ALONE = "crewai: framework alone, per turn"
BRIDGED = "crewai: through the bridge, per turn"
COST = "crewai: the bridge's cost per turn"
STREAMED = (
    "crewai, streamed: framework alone, per turn",
    "crewai, streamed: through the bridge, per turn",
    "crewai, streamed: the bridge's cost per turn",
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    with served() as url:
        alone, bridged = sides(url, stream=False).values()
        found = paired(alone, bridged, 3 if quick else 41, TURNS)
    return dict(zip((ALONE, BRIDGED, COST), found, strict=True))


def streamed_rows(quick: bool) -> dict[str, float]:
    """`rows`, of the two runs streamed."""
    with served() as url:
        alone, bridged = sides(url, stream=True).values()
        found = paired(alone, bridged, 3 if quick else 41, TURNS)
    return dict(zip(STREAMED, found, strict=True))


@contextlib.contextmanager
def served() -> Iterator[str]:
    """The fake model on a loopback port (its base URL), CrewAI's telemetry off, and its own
    warnings (deprecated fields it reads itself) and console logging quiet."""
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    quiet = logging.getLogger("crewai")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), fake_model() as url:
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="crewai")
            warnings.filterwarnings("ignore", "Cannot set an attribute on 'crewai", ImportWarning)
            yield url
    finally:
        quiet.setLevel(level)


def sides(url: str, *, stream: bool) -> dict[str, Callable[[], int]]:
    """One run alone and one through the bridge, each timed (ns), of one agent each."""
    from crewai import LLM, Agent
    from crewai.tools import tool

    from budgetconf.integrations import crewai

    budget = {"loop.max_steps": TURNS}

    def agent() -> Any:
        llm = LLM(model="fake", provider="openai", base_url=url, api_key="sk-bench", stream=stream)
        return Agent(
            role="b", goal="Add.", backstory="Adds.", llm=llm, tools=[tool("add")(add)], cache=False
        )

    mine, theirs = agent(), agent()
    theirs.max_iter = TURNS - 1  # what limits() gives for the step budget
    with contextlib.redirect_stdout(io.StringIO()):
        mine.kickoff("warm up")  # first use loads its client

    def timed(run: Callable[[], object]) -> int:
        served = FakeModel.served
        # CrewAI draws its panels whatever verbose says: into a buffer, on both sides
        with contextlib.redirect_stdout(io.StringIO()):
            began = time.perf_counter_ns()
            run()
            elapsed = time.perf_counter_ns() - began
        assert FakeModel.served - served == TURNS, FakeModel.served - served
        return elapsed

    def alone() -> int:
        return timed(lambda: theirs.kickoff("add"))

    def bridged() -> int:
        if stream:
            return timed(lambda: list(crewai.stream(mine, "add", budget)))
        return timed(lambda: crewai.run(mine, "add", budget))

    return {"alone": alone, "bridged": bridged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    quick = parser.parse_args().quick
    found = {**rows(quick), **streamed_rows(quick)}
    for name, ns in found.items():
        print(f"{name:50} {ns / 1e6:9.3f} ms")


if __name__ == "__main__":
    main()
