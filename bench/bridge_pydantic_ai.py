"""What the pydantic-ai bridge adds per turn to the same run of the framework alone.

The same agent and the same fake model (pydantic-ai's own FunctionModel: a
tool call per response, then a final answer) run three ways: ``agent.run_sync``
with the bridge's `limits()`; the same with one capability that does nothing
added to the run (what pydantic-ai spends per turn on any run capability, which
the bridge's is); and the bridge's `run()` with the same resolution. Each of the
other two runs in alternating pairs with the first (`_paired`): the rows are the
medians of one run's time divided by its turns, and of the pairs' differences,
measured with `time.perf_counter_ns`.

`streamed_rows` measures the streams the same way: pydantic-ai's own stream of a
whole run (``agent.run_stream_events``) against the bridge's, both drained on the
loop, on the same scripted double (`budgetconf.testing.pydantic_ai_model`: a tool
call per response, then a final answer, every request streamed). pydantic-ai's
stream of a whole run is async only, so the bridge's twin of it is `astream()`;
what `stream()` adds to that, pulling each event on the loop for a sync caller, is
this script's own last row (most of it anyio's: it takes each pull's task for the
root of the run's tasks, so a sync tool gets a new worker thread at each call).

    python bench/bridge_pydantic_ai.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import budgetconf
from budgetconf.integrations import pydantic_ai as bridge
from budgetconf.testing import pydantic_ai_model

from _paired import paired

TURNS = 10
_T = TypeVar("_T")


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    n = sum(isinstance(m, ModelResponse) for m in messages) + 1
    usage = RequestUsage(input_tokens=10, output_tokens=5)
    if n >= TURNS:
        return ModelResponse(parts=[TextPart("done")], usage=usage)
    return ModelResponse(parts=[ToolCallPart("add", {"a": n, "b": 1})], usage=usage)


@dataclass(eq=False)
class _Nothing(AbstractCapability[Any]):
    """A capability that changes nothing: pydantic-ai still dispatches each hook to it."""


def _agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(_model), name="bench")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent


def _current_loop() -> asyncio.AbstractEventLoop | None:
    """The thread's current event loop, as run_sync would find it, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # none yet: one is made
            return asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # unset by an asyncio.run() or set_event_loop(None)
        return None


NAMES = (
    "pydantic_ai: framework alone, per turn",
    "pydantic_ai: through the bridge, per turn",
    "pydantic_ai: the bridge's cost per turn",
)
#: the cost of one empty capability: this script's own row, not bench/bridges.py's
EMPTY = "pydantic_ai: one empty capability's cost per turn"
STREAMED = (
    "pydantic_ai, streamed: framework alone, per turn",
    "pydantic_ai, streamed: through the bridge, per turn",
    "pydantic_ai, streamed: the bridge's cost per turn",
)
#: what the sync stream() costs over astream(): this script's own row, not bench/bridges.py's
PUMPED = "pydantic_ai, streamed: stream() over astream(), per turn"
#: the script of a streamed run: a tool call per response, an answer on the last
SCRIPT: Final = [
    *[
        {
            "tool_calls": [{"name": "add", "arguments": {"a": n, "b": 1}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
        for n in range(1, TURNS)
    ],
    {"content": "done", "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
]


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    return {name: ns for name, ns in _rows(quick).items() if name != EMPTY}


def streamed_rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn, streamed: the framework's own stream, the bridge's, its cost."""
    return {name: ns for name, ns in _streamed_rows(quick).items() if name != PUMPED}


def _streamed_rows(quick: bool) -> dict[str, float]:
    """`streamed_rows`, with what the sync `stream()` costs over `astream()` after them."""

    def measured() -> dict[str, float]:
        found = streamed_sides()
        repeat = 3 if quick else 61
        timed = paired(found["alone"], found["bridged"], repeat, TURNS)
        pumped = paired(found["bridged"], found["pumped"], repeat, TURNS)[2]
        return {**dict(zip(STREAMED, timed, strict=True)), PUMPED: pumped}

    return _on_a_loop_of_its_own(measured)


def _rows(quick: bool) -> dict[str, float]:
    """`rows`, with the framework's own cost of one more capability after them."""
    return _on_a_loop_of_its_own(lambda: _measured(quick))


def _on_a_loop_of_its_own(measure: Callable[[], _T]) -> _T:
    """``measure()`` with a current loop of its own, closed after it."""
    # run_sync reuses the thread's current loop, which another framework's run_sync may have
    # left with its async generators shut down: both ways run on a loop of their own
    previous = _current_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return measure()
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(previous)


def _measured(quick: bool) -> dict[str, float]:
    found = sides()
    alone, bridged = found["alone"], found["bridged"]
    repeat = 3 if quick else 61
    measured = dict(zip(NAMES, paired(alone, bridged, repeat, TURNS), strict=True))
    return {**measured, EMPTY: paired(alone, found["empty capability"], repeat, TURNS)[2]}


def sides() -> dict[str, Callable[[], int]]:
    """One timed run (ns) of `TURNS` turns each way: alone, with one capability that does
    nothing, and through the bridge."""
    agent = _agent()
    res = budgetconf.resolve(
        env={}, explicit={"loop.max_steps": TURNS, "limits.max_tokens": 10_000}
    )
    keywords = bridge.limits(res)

    def alone() -> int:
        start = time.perf_counter_ns()
        done = agent.run_sync("go", **keywords)
        elapsed = time.perf_counter_ns() - start
        assert done.output == "done"
        return elapsed

    def capable() -> int:
        start = time.perf_counter_ns()
        agent.run_sync("go", **keywords, capabilities=[_Nothing()])
        return time.perf_counter_ns() - start

    def bridged() -> int:
        start = time.perf_counter_ns()
        result = bridge.run(agent, "go", res)
        elapsed = time.perf_counter_ns() - start
        assert result.output == "done"
        assert result.turns == TURNS
        return elapsed

    return {"alone": alone, "empty capability": capable, "bridged": bridged}


def streamed_sides() -> dict[str, Callable[[], int]]:
    """One timed streamed run (ns) of `TURNS` turns each way, on a fresh scripted model each
    (made before the timing): pydantic-ai's own stream, the bridge's `astream()`, and its
    `stream()` pulling each event on the same loop."""
    agent = _agent()
    res = budgetconf.resolve(
        env={}, explicit={"loop.max_steps": TURNS, "limits.max_tokens": 10_000}
    )
    keywords = bridge.limits(res)
    loop = asyncio.get_event_loop_policy().get_event_loop()

    async def drained(model: Any) -> Any:
        async with agent.run_stream_events("go", model=model, **keywords) as events:
            async for event in events:
                last = event
        return last

    async def bridge_drained(model: Any) -> Any:
        stream = bridge.astream(agent, "go", res, model=model)
        async for _ in stream:
            pass
        return stream.result

    def alone() -> int:
        model = pydantic_ai_model(SCRIPT)
        start = time.perf_counter_ns()
        last = loop.run_until_complete(drained(model))
        elapsed = time.perf_counter_ns() - start
        assert last.result.output == "done"
        return elapsed

    def bridged() -> int:
        model = pydantic_ai_model(SCRIPT)
        start = time.perf_counter_ns()
        result = loop.run_until_complete(bridge_drained(model))
        elapsed = time.perf_counter_ns() - start
        assert (result.output, result.turns) == ("done", TURNS)
        return elapsed

    def pumped() -> int:
        model = pydantic_ai_model(SCRIPT)
        start = time.perf_counter_ns()
        stream = bridge.stream(agent, "go", res, model=model)
        for _ in stream:
            pass
        elapsed = time.perf_counter_ns() - start
        assert (stream.result.output, stream.result.turns) == ("done", TURNS)
        return elapsed

    return {"alone": alone, "bridged": bridged, "pumped": pumped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run")
    args = parser.parse_args(argv)
    for name, ns in {**_rows(args.quick), **_streamed_rows(args.quick)}.items():
        print(f"{name:<58} {ns / 1000:9.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
