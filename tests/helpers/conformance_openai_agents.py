"""The conformance suite's drivers for the openai-agents bridge: the framework's own
`OpenAIChatCompletionsModel` on an `AsyncOpenAI` client against the suite's loopback server,
run (``run``) and streamed (``stream``, each request streamed)."""

from __future__ import annotations

from typing import Any

import budgetconf

from helpers.conformance import KEY, MODEL, Adder, Outcome, drained, driver

#: openai-agents' own reading of a reused call id, which the bridge cannot change
REUSED = (
    "openai-agents takes a call whose id it has seen, word for word, as the call it already"
    " ran, and runs it no more"
)


#: the same, for both drivers
DIFFERS = {"one call id in every response": (Outcome(2, 1, "ok", "completed", None), REUSED)}


def _agent(url: str, adder: Adder, model: str) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # offline: nothing to export

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=2)
    chat = OpenAIChatCompletionsModel(model=model, openai_client=client)
    return Agent(name="adder", model=chat, tools=[add])


@driver("openai_agents", needs="agents", differs=DIFFERS)
def run(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import openai_agents

    return openai_agents.run(_agent(url, adder, model), "Add.", res)


@driver("openai_agents, streamed", needs="agents", streams=True, differs=DIFFERS)
def stream(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import openai_agents

    return drained(openai_agents.stream(_agent(url, adder, model), "Add.", res))
