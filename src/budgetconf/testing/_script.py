"""A model script, read once, and each of its responses as every scripted model plays it.

The script is ``budgetconf run --model``'s: ``{"responses": [...]}``, the list
itself, a `ScriptedModel`, or the path of a script file. `Script.turn` gives
the response to the ``n``-th call (the last one repeats) as a `Turn`: its text,
its calls with their ids and their arguments as JSON text, its usage with the
totals filled in, its finish reason, and the model it names.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from budgetconf.errors import UsageError
from budgetconf.loop import ScriptedModel

#: what a scripted model is made from
ScriptLike: TypeAlias = (
    "ScriptedModel | Mapping[str, Any] | Sequence[Mapping[str, Any]] | str | os.PathLike[str]"
)


class Turn:
    """One scripted response, as the ``number``-th call gets it."""

    __slots__ = ("calls", "content", "finish_reason", "model", "number", "usage")

    def __init__(self, response: Mapping[str, Any], number: int) -> None:
        self.number = number
        content = response.get("content")
        self.content: str | None = None if content is None else str(content)
        #: (id, name, arguments as JSON text) of each call
        self.calls: list[tuple[str, str, str]] = [
            (
                str(call.get("id") or f"call_{number}_{i}"),
                str(call.get("name")),
                _arguments(call.get("arguments")),
            )
            for i, call in enumerate(response.get("tool_calls") or ())
        ]
        self.finish_reason: str = str(
            response.get("finish_reason") or ("tool_calls" if self.calls else "stop")
        )
        model = response.get("model")
        self.model: str | None = None if model is None else str(model)
        self.usage = _usage(response.get("usage"))

    def __repr__(self) -> str:
        return f"Turn({self.number}, content={self.content!r}, calls={self.calls!r})"


def _arguments(arguments: object) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def _usage(usage: object) -> dict[str, Any] | None:
    """The usage as a chat completion reports it: its own fields, the totals filled in."""
    if not isinstance(usage, Mapping):
        return None
    prompt = int(usage.get("prompt_tokens", 0))
    output = int(usage.get("completion_tokens", 0))
    return {
        **usage,
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": int(usage.get("total_tokens", prompt + output)),
    }


class Script:
    """The responses of a script, played in turn: `next` counts the calls (thread-safe)."""

    __slots__ = ("_lock", "calls", "responses")

    def __init__(self, script: ScriptLike) -> None:
        if isinstance(script, str | os.PathLike):
            script = ScriptedModel.from_file(script)
        elif isinstance(script, Mapping):
            responses = script.get("responses")
            if not isinstance(responses, list):
                raise UsageError('a model script is {"responses": [...]}')
            script = ScriptedModel(responses)
        elif not isinstance(script, ScriptedModel):
            script = ScriptedModel(script)
        self.responses = [dict(r) for r in script.responses]
        self.calls = 0
        self._lock = threading.Lock()

    def next(self) -> Turn:
        """The response to the next call."""
        with self._lock:
            self.calls += 1
            number = self.calls
        return self.turn(number)

    def turn(self, number: int) -> Turn:
        """The response to the ``number``-th call (1 for the first)."""
        return Turn(self.responses[min(number, len(self.responses)) - 1], number)
