"""The conformance suite's drivers for the PraisonAI bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/helpers/conformance.py), run and
streamed."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import budgetconf

from helpers.conformance import ENDS_AT_A_TOOL_ERROR, KEY, MODEL, Adder, drained, driver

#: what praisonaiagents reads when it makes its OpenAI client, at the run's first request;
#: OPENAI_MAX_RETRIES=2 is the openai client's own default, as every driver's client has it
_ENV = {
    "OPENAI_API_KEY": KEY,
    "OPENAI_MAX_RETRIES": "2",
    "PRAISONAI_TELEMETRY_DISABLED": "true",
    "DO_NOT_TRACK": "true",
}


#: praisonaiagents ends its chat when a tool raises
RAISES = "praisonaiagents ends its chat when a tool raises"
DIFFERS = {"the same failing call every turn under max_repeats = 3": (ENDS_AT_A_TOOL_ERROR, RAISES)}


@driver("praisonai", needs="praisonaiagents", differs=DIFFERS)
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import praisonai

    return within(url, adder, model, lambda agent: praisonai.run(agent, "Add.", res))


@driver("praisonai, streamed", needs="praisonaiagents", streams=True, differs=DIFFERS)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import praisonai

    return within(url, adder, model, lambda agent: drained(praisonai.stream(agent, "Add.", res)))


def within(url: str, adder: Adder, model: str, bridged: Callable[[Any], Any]) -> Any:
    """``bridged(agent)`` for an agent with the one tool ``add``, its client on ``url``."""
    from praisonaiagents import Agent  # type: ignore[import-untyped]

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    given = {**_ENV, "OPENAI_BASE_URL": url}
    saved = {name: os.environ.get(name) for name in (*given, "OPENAI_API_BASE")}
    os.environ.pop("OPENAI_API_BASE", None)  # it would win over OPENAI_BASE_URL
    os.environ.update(given)
    try:
        return bridged(
            Agent(name="adder", instructions="You add numbers.", model=model, tools=[add])
        )
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
