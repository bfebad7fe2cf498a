"""The conformance suite's drivers for the agno bridge: agno's own OpenAI chat model on its
real OpenAI client against the suite's loopback server (tests/helpers/conformance.py), run
and streamed, with agno's telemetry off."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, drained, driver


@contextmanager
def no_telemetry() -> Iterator[None]:
    """``AGNO_TELEMETRY=false`` while the block runs: agno reads it at each run."""
    saved = os.environ.get("AGNO_TELEMETRY")
    os.environ["AGNO_TELEMETRY"] = "false"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AGNO_TELEMETRY", None)
        else:
            os.environ["AGNO_TELEMETRY"] = saved


def agent(url: str, adder: Adder, model: str) -> Any:
    """An agno `Agent` with the one tool ``add``, on ``OpenAIChat`` (the openai client's own
    two retries, as every driver's client has them)."""
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    chat = OpenAIChat(id=model, base_url=url, api_key=KEY, max_retries=2)
    return Agent(model=chat, tools=[add], instructions="You add numbers.", telemetry=False)


def within(url: str, adder: Adder, model: str, bridged: Callable[[Any], Any]) -> Any:
    with no_telemetry():
        return bridged(agent(url, adder, model))


@driver("agno", needs="agno")
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import agno

    return within(url, adder, model, lambda made: agno.run(made, "Add.", res))


@driver("agno, streamed", needs="agno", streams=True)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import agno

    return within(url, adder, model, lambda made: drained(agno.stream(made, "Add.", res)))
