"""The conformance suite's driver for the PraisonAI bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/helpers/conformance.py)."""

from __future__ import annotations

import os
from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, driver

#: what praisonaiagents reads when it makes its OpenAI client, at the run's first request;
#: OPENAI_MAX_RETRIES=2 is the openai client's own default, as every driver's client has it
_ENV = {
    "OPENAI_API_KEY": KEY,
    "OPENAI_MAX_RETRIES": "2",
    "PRAISONAI_TELEMETRY_DISABLED": "true",
    "DO_NOT_TRACK": "true",
}


@driver("praisonai")
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from praisonaiagents import Agent  # type: ignore[import-untyped]

    from budgetconf.integrations import praisonai

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    given = {**_ENV, "OPENAI_BASE_URL": url}
    saved = {name: os.environ.get(name) for name in (*given, "OPENAI_API_BASE")}
    os.environ.pop("OPENAI_API_BASE", None)  # it would win over OPENAI_BASE_URL
    os.environ.update(given)
    try:
        agent = Agent(name="adder", instructions="You add numbers.", model=model, tools=[add])
        return praisonai.run(agent, "Add.", res)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
