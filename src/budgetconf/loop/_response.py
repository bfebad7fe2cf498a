"""What a model returns, read strictly into one shape, and the tools it is offered.

A response is a dict or an object with ``content``, ``tool_calls``,
``finish_reason``, ``usage`` and ``cost_usd``, any of which may be missing.
Anything else is `Malformed`, which ends the run with ``error``: a loop that
guessed at a broken response could run tools nobody asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final

from budgetconf._usage import NO_USAGE, Unreadable, Usage, kind_of, read_usage

FINISH_REASONS: Final = frozenset({"stop", "tool_calls", "length", "content_filter", "refusal"})


class Malformed(Exception):
    """A response the loop cannot act on; the message says what is wrong with it."""


# Call and Response are made for every turn: plain slotted classes, which are
# cheaper to build than frozen ones.
@dataclass(slots=True)
class Call:
    """One tool call: ``arguments`` is None when they could not be read (``problem`` says why).

    A bridge describes the calls of a framework's response to its `Meter` as these:
    ``Call(id, name, arguments)``.
    """

    __module__ = "budgetconf.loop"

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = "{}"
    problem: str | None = None

    def message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw_arguments},
        }


@dataclass(slots=True)
class Response:
    content: str | None
    calls: tuple[Call, ...]
    finish_reason: str
    usage: Usage

    @property
    def tokens(self) -> int:
        return self.usage.total_tokens

    @property
    def cost(self) -> float:
        return self.usage.cost_usd

    def message(self) -> dict[str, Any]:
        """The response as an assistant message of the conversation (OpenAI chat format)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            out["tool_calls"] = [c.message() for c in self.calls]
        return out


_SCALARS: Final = (str, bytes, int, float, list, tuple, set, frozenset)
_RESPONSE_KEYS: Final = ("content", "tool_calls", "finish_reason")


def _getter(raw: object) -> Callable[[str], Any] | None:
    """How to read ``raw``'s keys: a dict's get, an object's attributes; None for a scalar."""
    if type(raw) is dict or isinstance(raw, Mapping):
        return raw.get
    if raw is None or isinstance(raw, _SCALARS):
        return None
    return lambda key: getattr(raw, key, None)


def read_response(raw: object, turn: int) -> Response:
    """``raw`` as a `Response`; calls without an id get ``call_<turn>_<index>``."""
    # a plain dict is the usual response: its get is read without a call
    get = raw.get if type(raw) is dict else _message_getter(raw)
    content = get("content")
    raw_calls = get("tool_calls")
    if content is None:
        if raw_calls is None:
            _refuse_completion(get)
    elif isinstance(content, str):
        content = _exact(content)
    else:
        raise Malformed(f"content: expected text or null, got {kind_of(content)}")
    if raw_calls is None:
        raw_calls = ()
    elif not isinstance(raw_calls, list | tuple):
        raise Malformed(f"tool_calls: expected a list, got {kind_of(raw_calls)}")
    calls = _calls(raw_calls, turn)
    finish = get("finish_reason")
    if isinstance(finish, str):
        finish = _exact(finish)
    if finish is None:
        finish = "tool_calls" if calls else "stop"
    elif not isinstance(finish, str) or finish not in FINISH_REASONS:
        known = ", ".join(sorted(FINISH_REASONS))
        raise Malformed(f"finish_reason: expected one of {known}, got {kind_of(finish)}")
    elif finish == "tool_calls" and not calls:
        raise Malformed("finish_reason is tool_calls, but the response has no tool calls")
    return Response(content, calls, finish, _usage(get("usage"), get("cost_usd"), get("model")))


def _exact(text: str) -> str:
    """``text`` as a plain str: a subclass's own methods (its hash, say) stay out of the run."""
    return text if type(text) is str else str.__str__(text)


def _message_getter(raw: object) -> Callable[[str], Any]:
    """How to read a response that is not a plain dict: a mapping, or an object with its keys."""
    get = _getter(raw)
    if get is None or not (isinstance(raw, Mapping) or _has_a_key(raw)):
        raise Malformed(
            f"expected a dict or an object with content and tool_calls, got {kind_of(raw)}"
        )
    return get


def _has_a_key(raw: object) -> bool:
    # a loop, not any() over a generator: a StopIteration from an attribute stays itself
    for key in _RESPONSE_KEYS:  # noqa: SIM110
        if hasattr(raw, key):
            return True
    return False


def _refuse_completion(get: Callable[[str], Any]) -> None:
    """Refuse a completion or a choice passed where its message belongs.

    Called for a response with neither content nor calls: read as a message,
    a whole completion would be an empty final answer, and the run would end
    as if it had succeeded.
    """
    if get("finish_reason") is None and (get("choices") is not None or get("message") is not None):
        raise Malformed(
            "this is a completion or a choice, not a message: pass choices[0].message,"
            " with the choice's finish_reason"
        )


def _calls(raw_calls: list[Any] | tuple[Any, ...], turn: int) -> tuple[Call, ...]:
    calls = [_call(item, i) for i, item in enumerate(raw_calls)]
    ids = {c.id for c in calls}
    if len(ids) == len(calls) and "" not in ids:  # the usual case: every id given, once
        return tuple(calls)
    given = [c.id for c in calls if c.id]
    if len(set(given)) != len(given):
        twice = next(i for i in given if given.count(i) > 1)
        raise Malformed(f"tool_calls: the id {twice!r} is used by more than one call")
    taken = set(given)
    for index, call in enumerate(calls):
        if not call.id:  # a call the model gave no id: one no other call has
            call.id = f"call_{turn}_{index}"
            while call.id in taken:
                call.id += "_"
            taken.add(call.id)
    return tuple(calls)


def _call(raw: object, index: int) -> Call:
    """One call; an id the model did not give is left empty for `_calls` to fill."""
    where = f"tool_calls[{index}]"
    # plain dicts are the usual calls: their get is read without a call
    get = raw.get if type(raw) is dict else _call_getter(where, raw)
    function = get("function")  # the OpenAI shape nests name and arguments
    inner = get if function is None else _function_getter(where, function)
    name = inner("name")
    if not isinstance(name, str) or not name:
        raise Malformed(f"{where}: expected a tool name, got {kind_of(name)}")
    name = _exact(name)
    call_id = get("id")
    if call_id is None:
        call_id = ""
    elif not isinstance(call_id, str) or not call_id:
        raise Malformed(f"{where}.id: expected text, got {kind_of(call_id)}")
    call_id = _exact(call_id)
    arguments, text, problem = _arguments(where, inner("arguments"))
    return Call(call_id, name, arguments, text, problem)


def _arguments(where: str, raw: object) -> tuple[dict[str, Any] | None, str, str | None]:
    """A call's arguments, the JSON text the conversation records for them, and why they
    cannot be read (None when they can): an object or JSON text, or `Malformed`."""
    if raw is None:
        return {}, "{}", None
    if type(raw) is dict or isinstance(raw, Mapping):
        arguments = dict(raw)
        return arguments, _arguments_text(where, arguments), None
    if not isinstance(raw, str):
        raise Malformed(f"{where}.arguments: expected an object or JSON text, got {kind_of(raw)}")
    text = _exact(raw)
    try:
        parsed = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        return None, text, f"arguments are not valid JSON: {exc}"
    if not isinstance(parsed, dict):
        return None, text, "arguments are not a JSON object"
    return parsed, text, None


def _call_getter(where: str, raw: object) -> Callable[[str], Any]:
    """How to read a call that is not a plain dict: a mapping's get, or an object's attributes."""
    get = _getter(raw)
    if get is None:
        raise Malformed(f"{where}: expected a dict or an object, got {kind_of(raw)}")
    return get


def _function_getter(where: str, function: object) -> Callable[[str], Any]:
    """How to read the ``function`` that holds a call's name and arguments."""
    inner = _getter(function)
    if inner is None:
        raise Malformed(f"{where}.function: expected a dict or an object, got {kind_of(function)}")
    return inner


def _arguments_text(where: str, arguments: Mapping[Any, Any]) -> str:
    """Arguments given as an object, as the JSON text the conversation records for them."""
    try:
        return _dumps(arguments)
    except (TypeError, ValueError, RecursionError) as exc:
        raise Malformed(f"{where}.arguments: not a JSON object: {exc}") from None


def _usage(usage: object, cost: object, model: object) -> Usage:
    """The response's usage (`read_usage`), from a dict or an object; `Malformed` if unreadable."""
    if usage is None and cost is None and model is None:
        return NO_USAGE
    counts = None
    if usage is not None:
        get = _getter(usage)
        if get is None:
            raise Malformed(f"usage: expected a dict or an object, got {kind_of(usage)}")
        details = get("prompt_tokens_details")
        found = None if details is None else _getter(details)
        counts = {key: get(key) for key in _COUNTS}
        counts["prompt_tokens_details"] = {"cached_tokens": found and found("cached_tokens")}
    try:
        return read_usage(counts, cost, model if isinstance(model, str) else None)
    except Unreadable as exc:
        raise Malformed(str(exc)) from None


#: the counts a response's usage is read from, as the OpenAI API names them
_COUNTS: Final = ("prompt_tokens", "completion_tokens", "total_tokens")


_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, default=str)
#: `_ENCODER`'s C encoder, made once: `JSONEncoder.encode` makes one at every call, which
#: costs more than the text. It checks no circle (``markers`` None): one ends in a
#: RecursionError, and `_ENCODER` then says what it is.
_FAST: Final = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, str, encode_basestring, None, ": ", ", ", False, False, True)
)


def _dumps(value: object) -> str:
    """``value`` as JSON text: `_FAST`, and `_ENCODER` to say why when that fails."""
    if _FAST is not None:
        try:
            return "".join(_FAST(value, 0))
        except (TypeError, ValueError, RecursionError):
            pass  # the encoder below raises why, a circle included
    return _ENCODER.encode(value)


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
            type_name = getattr(annotation, "__name__", annotation)
            kind = _JSON_TYPES.get(type_name) if isinstance(type_name, str) else None
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
