"""The conformance suite's drivers for the smolagents bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/helpers/conformance.py), run and
streamed."""

from __future__ import annotations

from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, drained, driver


def agent(url: str, adder: Adder, model: str, **options: Any) -> Any:
    """A ``ToolCallingAgent`` with the one tool ``add``, on ``OpenAIServerModel``."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool  # type: ignore[import-untyped]
    from smolagents.monitoring import LogLevel  # type: ignore[import-untyped]

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
    return ToolCallingAgent(tools=[add], model=chat, verbosity_level=LogLevel.OFF, **options)


@driver("smolagents", needs="smolagents")
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import smolagents

    return smolagents.run(agent(url, adder, model), "Add.", res)


#: smolagents' stream deltas carry a response's input and output tokens only (docs)
@driver("smolagents, streamed", needs="smolagents", streams=True, uncached=True)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import smolagents

    streamed = agent(url, adder, model, stream_outputs=True)
    return drained(smolagents.stream(streamed, "Add.", res))
