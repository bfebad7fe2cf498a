"""The conformance suite's drivers for the CrewAI bridge: its framework's own OpenAI-native
LLM against the suite's loopback server (tests/helpers/conformance.py), run and streamed."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, drained, driver

# CrewAI's own telemetry, off before its first import (not OTEL_SDK_DISABLED: budgetconf's
# span tests read the OpenTelemetry SDK)
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
#: the module whose DeprecationWarnings CrewAI 1.15 makes of fields of its own
#: (function_calling_llm, reasoning, …), which it reads itself in every Agent() and kickoff
DEPRECATED = "crewai"
#: what CrewAI 1.15's first import warns, of itself
IMPORTING = "Cannot set an attribute on 'crewai"


@contextmanager
def quiet() -> Iterator[None]:
    """Within: the warnings CrewAI makes of its own code are not errors (the suite's are)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", IMPORTING, ImportWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=DEPRECATED)
        yield


def agent(url: str, adder: Adder, model: str, **options: Any) -> Any:
    """An `Agent` with the one tool ``add``, on CrewAI's OpenAI-native LLM at ``url``."""
    from crewai import LLM, Agent
    from crewai.tools import tool

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    llm = LLM(model=model, provider="openai", base_url=url, api_key=KEY, max_retries=2)
    return Agent(
        role="adder",
        goal="Add numbers.",
        backstory="You add.",
        llm=llm,
        tools=[tool("add")(add)],
        **options,
    )


def within(url: str, adder: Adder, model: str, bridged: Callable[[Any], Any]) -> Any:
    """``bridged(agent)`` for an agent with the one tool ``add``, its LLM on ``url``."""
    with quiet():
        return bridged(agent(url, adder, model))


@driver("crewai", needs="crewai")
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    with quiet():
        from budgetconf.integrations import crewai

    return within(url, adder, model, lambda agent: crewai.run(agent, "Add.", res))


@driver("crewai, streamed", needs="crewai", streams=True)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    with quiet():
        from budgetconf.integrations import crewai

    return within(url, adder, model, lambda agent: drained(crewai.stream(agent, "Add.", res)))
