"""The openai-agents offline double the bridge's tests share: tracing off, the loop that
``Runner.run_sync`` leaves open closed, and the responses a scripted `Model` gives.

A test module takes the fixtures by importing them: pytest finds a fixture by the names in
the module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Model, ModelResponse, Usage, set_tracing_disabled
from agents.tracing import get_trace_provider
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """Tracing off, so that nothing is exported (and nothing is printed at exit)."""
    provider: Any = get_trace_provider()
    before = provider._manual_disabled
    set_tracing_disabled(True)
    yield
    provider._manual_disabled = before
    provider._refresh_disabled_flag()


@pytest.fixture(autouse=True)
def _default_loop_closed() -> Iterator[None]:
    """Close the loop ``Runner.run_sync`` leaves open on purpose (it reuses it next time).

    ``asyncio.run`` would otherwise drop it unclosed, and its ResourceWarning fails the run.
    """
    yield
    policy = asyncio.get_event_loop_policy()
    loop = policy._local._loop  # type: ignore[attr-defined]
    if loop is not None:
        loop.close()
        policy.set_event_loop(None)


def text(t: str) -> ResponseOutputMessage:
    """A response's message of text ``t``."""
    content: list[Any] = [ResponseOutputText(type="output_text", text=t, annotations=[])]
    return ResponseOutputMessage(
        id="m", type="message", role="assistant", status="completed", content=content
    )


def call(cid: str, a: int = 1, name: str = "add") -> ResponseFunctionToolCall:
    """A response's call of the tool ``name`` (``add`` by default) with ``a`` and ``b=1``."""
    arguments = json.dumps({"a": a, "b": 1})
    return ResponseFunctionToolCall(
        id=f"f{cid}", type="function_call", call_id=cid, name=name, arguments=arguments
    )


Output = list[Any]


class Scripted(Model):
    """Gives each response of ``script`` in turn, then a text and a tool call, for ever."""

    def __init__(self, script: list[Output] | None = None, *, tokens: int = 15, sleep: float = 0):
        self.script = list(script or [])
        self.tokens = tokens
        self.sleep = sleep
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(kwargs["input"])
        n = len(self.inputs)
        if self.sleep:
            await asyncio.sleep(self.sleep)
        out: Output = self.script.pop(0) if self.script else [text(f"working {n}"), call(f"c{n}")]
        usage = Usage(requests=1, input_tokens=10, output_tokens=self.tokens - 10)
        usage.total_tokens = self.tokens
        return ModelResponse(output=out, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @property
    def calls(self) -> int:
        return len(self.inputs)
