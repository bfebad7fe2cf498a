"""What a model returns, read strictly into one shape, and the tools it is offered.

A response is a dict or an object with ``content``, ``tool_calls``,
``finish_reason``, ``usage`` and ``cost_usd``, any of which may be missing.
Anything else is `Malformed`, which ends the run with ``error``: a loop that
guessed at a broken response could run tools nobody asked for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Call", "Malformed", "Response", "read_response", "tool_specs", "tool_text"]

FINISH_REASONS: Final = frozenset({"stop", "tool_calls", "length", "content_filter", "refusal"})


class Malformed(Exception):
    """A response the loop cannot act on; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call: ``arguments`` is None when they could not be read (``problem`` says why)."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    problem: str | None = None

    def message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw_arguments},
        }


@dataclass(frozen=True, slots=True)
class Response:
    content: str | None
    calls: tuple[Call, ...]
    finish_reason: str
    tokens: int
    cost: float

    def message(self) -> dict[str, Any]:
        """The response as an assistant message of the conversation (OpenAI chat format)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            out["tool_calls"] = [c.message() for c in self.calls]
        return out


def _getter(raw: object) -> Callable[[str], Any]:
    if isinstance(raw, Mapping):
        return raw.get
    return lambda key: getattr(raw, key, None)


def read_response(raw: object, turn: int) -> Response:
    """``raw`` as a `Response`; calls without an id get ``call_<turn>_<index>``."""
    if raw is None or isinstance(raw, str | bytes | int | float | list | tuple):
        raise Malformed(
            f"expected a dict or an object with content and tool_calls, got {_kind(raw)}"
        )
    get = _getter(raw)
    content = get("content")
    if content is not None and not isinstance(content, str):
        raise Malformed(f"content: expected text or null, got {_kind(content)}")
    raw_calls = get("tool_calls") or []
    if not isinstance(raw_calls, list | tuple):
        raise Malformed(f"tool_calls: expected a list, got {_kind(raw_calls)}")
    calls = tuple(_call(item, turn, i) for i, item in enumerate(raw_calls))
    ids = [c.id for c in calls]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise Malformed(f"tool_calls: the id {twice!r} is used by more than one call")
    finish = get("finish_reason")
    if finish is None:
        finish = "tool_calls" if calls else "stop"
    elif finish not in FINISH_REASONS:
        known = ", ".join(sorted(FINISH_REASONS))
        raise Malformed(f"finish_reason: expected one of {known}, got {finish!r}")
    return Response(content, calls, finish, _tokens(get("usage")), _cost(get("cost_usd")))


def _call(raw: object, turn: int, index: int) -> Call:
    where = f"tool_calls[{index}]"
    if raw is None or isinstance(raw, str | bytes | int | float | list | tuple):
        raise Malformed(f"{where}: expected a dict or an object, got {_kind(raw)}")
    get = _getter(raw)
    function = get("function")  # the OpenAI shape nests name and arguments
    inner = _getter(function) if function is not None else get
    name = inner("name")
    if not isinstance(name, str) or not name:
        raise Malformed(f"{where}: expected a tool name, got {_kind(name)}")
    call_id = get("id")
    if call_id is None:
        call_id = f"call_{turn}_{index}"
    elif not isinstance(call_id, str) or not call_id:
        raise Malformed(f"{where}.id: expected text, got {_kind(call_id)}")
    arguments = inner("arguments")
    if arguments is None:
        return Call(call_id, name, {}, "{}")
    if isinstance(arguments, Mapping):
        return Call(call_id, name, dict(arguments), _dumps(arguments))
    if not isinstance(arguments, str):
        raise Malformed(
            f"{where}.arguments: expected an object or JSON text, got {_kind(arguments)}"
        )
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        return Call(call_id, name, None, arguments, f"arguments are not valid JSON: {exc}")
    if not isinstance(parsed, dict):
        return Call(call_id, name, None, arguments, "arguments are not a JSON object")
    return Call(call_id, name, parsed, arguments)


def _tokens(usage: object) -> int:
    if usage is None:
        return 0
    get = _getter(usage)
    total = get("total_tokens")
    if total is None:
        total = sum(n for n in (get("prompt_tokens"), get("completion_tokens")) if n is not None)
    if type(total) is not int or total < 0:
        raise Malformed(f"usage.total_tokens: expected a count, got {_kind(total)}")
    return total


def _cost(cost: object) -> float:
    if cost is None:
        return 0.0
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        raise Malformed(f"cost_usd: expected a non-negative number, got {_kind(cost)}")
    if not math.isfinite(cost) or cost < 0:
        raise Malformed(f"cost_usd: expected a non-negative number, got {_kind(cost)}")
    return float(cost)


def _kind(value: object) -> str:
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:40]) + "…"
    return type(value).__name__


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_text(value: object) -> str:
    """A tool's return value as the text of its tool message."""
    return value if isinstance(value, str) else _dumps(value)


_JSON_TYPES: Final = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def tool_specs(tools: Mapping[str, Callable[..., Any]]) -> list[dict[str, Any]]:
    """The tools as the OpenAI ``tools`` parameter: name, first docstring line, parameters."""
    import inspect  # only when there are tools to describe

    specs = []
    for name, tool in tools.items():
        properties: dict[str, Any] = {}
        required = []
        try:
            parameters = inspect.signature(tool).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature
            parameters = []  # type: ignore[assignment]
        for p in parameters:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                continue
            annotation = p.annotation  # a class, or its name under postponed annotations
            name = getattr(annotation, "__name__", annotation)
            kind = _JSON_TYPES.get(name) if isinstance(name, str) else None
            properties[p.name] = {"type": kind} if kind else {}
            if p.default is p.empty:
                required.append(p.name)
        doc = (inspect.getdoc(tool) or "").strip().split("\n")[0]
        function: dict[str, Any] = {
            "name": name,
            "parameters": {"type": "object", "properties": properties, "required": required},
        }
        if doc:
            function["description"] = doc
        specs.append({"type": "function", "function": function})
    return specs
