"""Per-turn overhead of the openai-agents bridge against the same run without it.

Both sides run the same agent with the same scripted model (a tool call on
every turn but the last) and the same tool, through ``Runner.run_sync``; the
bridge's side goes through ``budgetconf.integrations.openai_agents.run``
(hooks, input filter, budget checks). The streamed rows do the same with the
framework's own stream (``Runner.run_streamed``, its ``stream_events()`` on the
thread's loop, asking for usage as the bridge does: a token budget needs it)
against the bridge's ``stream()``, on the model
``budgetconf.testing.openai_agents_model`` makes (the framework's own scripted
model, which streams). Repetitions run in alternating pairs (`_paired`);
tracing is off.

    python bench/bridge_openai_agents.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    RunConfig,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import budgetconf
from budgetconf.integrations import openai_agents
from budgetconf.integrations._openai_agents_run import default_loop
from budgetconf.testing import openai_agents_model

from _paired import paired

DONE: Any = ResponseOutputMessage(
    id="m",
    type="message",
    role="assistant",
    status="completed",
    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
)


class Scripted(Model):
    """A tool call on every turn but the last."""

    def __init__(self, turns: int) -> None:
        self.turns, self.n = turns, 0

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.n += 1
        arguments = json.dumps({"text": "hi"})
        call = ResponseFunctionToolCall(
            id=f"f{self.n}", type="function_call", call_id=f"c{self.n}", name="echo",
            arguments=arguments,
        )  # fmt: skip
        output: Any = [DONE] if self.n >= self.turns else [call]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


NAMES = (
    "openai_agents: framework alone, per turn",
    "openai_agents: through the bridge, per turn",
    "openai_agents: the bridge's cost per turn",
)


@function_tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def _once(turns: int, bridged: bool, budget: Any) -> int:
    agent = Agent[Any](name="bench", model=Scripted(turns), tools=[echo])
    start = time.perf_counter_ns()
    if bridged:
        result = openai_agents.run(agent, "go", budget)
        assert result.stop_reason == "completed", result.message
    else:
        Runner.run_sync(agent, "go", max_turns=turns + 1)
    return time.perf_counter_ns() - start


TURNS = 20  # a run's turns, out of quick mode


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    found = sides(turns)
    for each in found.values():  # warm both paths
        each()
    return dict(zip(NAMES, paired(*found.values(), repeat, turns), strict=True))


def sides(turns: int = TURNS) -> dict[str, Callable[[], int]]:
    """One timed run (ns) of ``turns`` turns alone and one through the bridge; tracing off."""
    set_tracing_disabled(True)
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns + 1})  # no last-turn notice
    return {
        "alone": lambda: _once(turns, False, budget),
        "bridged": lambda: _once(turns, True, budget),
    }


STREAMED_NAMES = (
    "openai_agents, streamed: framework alone, per turn",
    "openai_agents, streamed: through the bridge, per turn",
    "openai_agents, streamed: the bridge's cost per turn",
)


def _script(turns: int) -> dict[str, Any]:
    """A tool call on every turn but the last, as `Scripted` plays it."""
    call = {"name": "echo", "arguments": {"text": "hi"}}
    responses: list[dict[str, Any]] = [{"tool_calls": [call]}] * (turns - 1)
    return {"responses": [*responses, {"content": "done"}]}


def _streamed_once(turns: int, bridged: bool, budget: Any) -> int:
    agent = Agent[Any](name="bench", model=openai_agents_model(_script(turns)), tools=[echo])
    loop = default_loop()

    async def alone() -> None:  # asking for usage, as the bridge does: a token budget needs it
        config = RunConfig(model_settings=ModelSettings(include_usage=True))
        streaming = Runner.run_streamed(agent, "go", max_turns=turns + 1, run_config=config)
        async for _ in streaming.stream_events():
            pass

    start = time.perf_counter_ns()
    if bridged:
        stream = openai_agents.stream(agent, "go", budget)
        for _ in stream:
            pass
        assert stream.result.stop_reason == "completed", stream.result.message
    else:
        loop.run_until_complete(alone())
    return time.perf_counter_ns() - start


def streamed_rows(quick: bool) -> dict[str, float]:
    """`rows`, for the framework's own stream against the bridge's ``stream()``.

    They run on a loop of their own: ``Runner.run_sync`` shuts down the async generators of
    the loop it runs on (asyncio then warns of each one a later stream starts there).
    """
    turns, repeat = (5, 3) if quick else (TURNS, 41)
    set_tracing_disabled(True)
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns + 1})
    previous = default_loop()  # the caller's, given back after
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:

        def alone() -> int:
            return _streamed_once(turns, False, budget)

        def bridged() -> int:
            return _streamed_once(turns, True, budget)

        alone(), bridged()  # warm both paths
        return dict(zip(STREAMED_NAMES, paired(alone, bridged, repeat, turns), strict=True))
    finally:
        loop.close()
        asyncio.set_event_loop(previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    quick = parser.parse_args().quick
    found = {**rows(quick), **streamed_rows(quick)}
    for name, ns in found.items():
        print(f"{name:55} {ns / 1000:10.1f} us")


if __name__ == "__main__":
    main()
