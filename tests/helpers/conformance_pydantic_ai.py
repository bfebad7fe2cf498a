"""The conformance suite's drivers for the pydantic-ai bridge: the framework's own
`OpenAIChatModel` on an `AsyncOpenAI` client against the suite's loopback server
(tests/helpers/conformance.py), through the bridge's `run()` and its `stream()`."""

from __future__ import annotations

from typing import Any

import budgetconf

from helpers.conformance import ENDS_AT_A_TOOL_ERROR, KEY, MODEL, Adder, drained, driver

#: pydantic-ai feeds back only a tool's ModelRetry: any other exception ends the run
RAISES = (
    "pydantic-ai feeds a tool's ModelRetry back to the model, and any other exception ends the run"
)
DIFFERS = {"the same failing call every turn under max_repeats = 3": (ENDS_AT_A_TOOL_ERROR, RAISES)}


def _agent(url: str, adder: Adder, model: str) -> Any:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=2)
    chat = OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client))
    agent = Agent(chat, name="adder")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    return agent


@driver("pydantic_ai", needs="pydantic_ai", prices_itself=True, differs=DIFFERS)
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import pydantic_ai

    return pydantic_ai.run(_agent(url, adder, model), "Add.", res)


@driver(
    "pydantic_ai, streamed",
    needs="pydantic_ai",
    streams=True,
    prices_itself=True,
    differs=DIFFERS,
)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import pydantic_ai

    return drained(pydantic_ai.stream(_agent(url, adder, model), "Add.", res))
