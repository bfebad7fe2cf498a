"""The conformance suite's driver for the smolagents bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/helpers/conformance.py)."""

from __future__ import annotations

from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, driver


@driver("smolagents")
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool  # type: ignore[import-untyped]
    from smolagents.monitoring import LogLevel  # type: ignore[import-untyped]

    from budgetconf.integrations import smolagents

    @tool  # type: ignore[untyped-decorator]
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: the first
            b: the second
        """
        return adder(a, b)

    chat = OpenAIServerModel(
        model_id=model, api_base=url, api_key=KEY, client_kwargs={"max_retries": 2}
    )
    agent = ToolCallingAgent(tools=[add], model=chat, verbosity_level=LogLevel.OFF)
    return smolagents.run(agent, "Add.", res)
