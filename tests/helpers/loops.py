"""Helpers for the loop executor's tests: scripted responses, tools, and the two drivers."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel

if TYPE_CHECKING:
    from conftest import Place  # conftest imports this module: no import at run time

Tools = Mapping[str, Callable[..., Any]]


def call(name: str = "echo", **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments or {"text": "hi"}}


def calls(n: int, name: str = "echo") -> dict[str, Any]:
    """A response asking for ``n`` tool calls."""
    return {"tool_calls": [call(name, text=str(i)) for i in range(n)]}


def answer(text: str = "done", **extra: Any) -> dict[str, Any]:
    return {"content": text, "finish_reason": "stop", **extra}


class Echo:
    """A tool that records what it was called with."""

    __name__ = "echo"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, text: str) -> str:
        self.seen.append(text)
        return text


def _as_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


class Driver:
    """Builds executors and runs them the sync way or the async way (with async callables)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def executor(
        self, model: Callable[..., Any], tools: Tools | None = None, budget: Any = None, **kw: Any
    ) -> LoopExecutor:
        if self.mode == "async":
            model = _as_async(model)
            tools = {name: _as_async(tool) for name, tool in (tools or {}).items()}
        return LoopExecutor(model, tools, budget, **kw)

    def hang(self, gate: threading.Event, value: Any) -> Callable[..., Any]:
        """A callable that does not return until ``gate`` is set: blocking, or awaiting."""
        if self.mode == "async":

            async def wait(*args: Any, **kwargs: Any) -> Any:
                while not gate.is_set():
                    await asyncio.sleep(0.01)
                return value

            return wait

        def block(*args: Any, **kwargs: Any) -> Any:
            gate.wait(30)
            return value

        return block

    def run(self, ex: LoopExecutor, messages: Any) -> RunResult:
        if self.mode == "async":
            return asyncio.run(ex.arun(messages))
        return ex.run(messages)

    def resume(self, ex: LoopExecutor, result: RunResult, **kw: Any) -> RunResult:
        if self.mode == "async":
            return asyncio.run(ex.aresume(result, **kw))
        return ex.resume(result, **kw)


_LOOP_FIELDS = frozenset({"max_steps", "max_tool_calls_per_turn", "last_turn", "over_cap"})


def budget(**fields: Any) -> dict[str, Any]:
    """Explicit values for the default preset: ``budget(max_steps=3, max_tokens=9)``."""
    return {f"{'loop' if n in _LOOP_FIELDS else 'limits'}.{n}": v for n, v in fields.items()}


def types(result: RunResult) -> list[str]:
    return [e["type"] for e in result.events]


def usage(tokens: int) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": tokens - 1, "completion_tokens": 1, "total_tokens": tokens}}


#: a response that calls a tool, for a model that never gives a final answer
ECHO = {"tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]}


def busy(n: int = 1) -> ScriptedModel:
    """A model that asks for ``n`` tool calls on every turn and never answers."""
    return ScriptedModel([calls(n)])


def script(place: Place, *responses: object, name: str = "model.json") -> str:
    """A model script file for `budgetconf run --model`, holding ``responses``; its path."""
    return str(place.write(name, json.dumps({"responses": list(responses)})))
