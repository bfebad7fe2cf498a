"""What the pydantic-ai bridge adds per turn to the same run of the framework alone.

The same agent and the same fake model (pydantic-ai's own FunctionModel: a
tool call per response, then a final answer) run three ways, interleaved so a
slow spell of the machine hits all alike: ``agent.run_sync`` with the
bridge's `limits()`; the same with one capability that does nothing added to
the run (what pydantic-ai spends per turn on any run capability, which the
bridge's is); and the bridge's `run()` with the same resolution. Each row is
the median over the repetitions of one run's time, divided by its turns,
measured with `time.perf_counter_ns`.

    python bench/bridge_pydantic_ai.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import warnings
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import budgetconf
from budgetconf.integrations import pydantic_ai as bridge

TURNS = 10


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


#: the row of the framework with an empty capability: this script's own, not bench/bridges.py's
EMPTY = "pydantic_ai: with one empty capability, per turn"


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, and through the bridge."""
    return {name: ns for name, ns in _rows(quick).items() if name != EMPTY}


def _rows(quick: bool) -> dict[str, float]:
    """`rows`, with the framework's own cost of one more capability between them."""
    # run_sync reuses the thread's current loop, which another framework's run_sync may have
    # left with its async generators shut down: both ways run on a loop of their own
    previous = _current_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return _measured(quick)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(previous)


def _measured(quick: bool) -> dict[str, float]:
    agent = _agent()
    res = budgetconf.resolve(
        env={}, explicit={"loop.max_steps": TURNS, "limits.max_tokens": 10_000}
    )
    keywords = bridge.limits(res)
    alone: list[float] = []
    capable: list[float] = []
    bridged: list[float] = []
    for _ in range(3 if quick else 60):
        start = time.perf_counter_ns()
        done = agent.run_sync("go", **keywords)
        alone.append((time.perf_counter_ns() - start) / TURNS)
        start = time.perf_counter_ns()
        agent.run_sync("go", **keywords, capabilities=[_Nothing()])
        capable.append((time.perf_counter_ns() - start) / TURNS)
        start = time.perf_counter_ns()
        result = bridge.run(agent, "go", res)
        bridged.append((time.perf_counter_ns() - start) / TURNS)
        assert done.output == result.output == "done"
        assert result.turns == TURNS
    return {
        "pydantic_ai: framework alone, per turn": statistics.median(alone),
        EMPTY: statistics.median(capable),
        "pydantic_ai: through the bridge, per turn": statistics.median(bridged),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run")
    args = parser.parse_args(argv)
    measured = _rows(args.quick)
    for name, ns in measured.items():
        print(f"{name:<50} {ns / 1000:9.1f} us")
    alone, capable, through = measured.values()
    print(f"{'overhead per turn':<50} {(through - alone) / 1000:9.1f} us")
    dispatch = (capable - alone) / 1000
    print(f"{'  of which pydantic-ai dispatching to a capability':<50} {dispatch:9.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
