"""Each line of an events file checked: the event it holds, or why it holds none.

An events file is input: any line may be cut short, not JSON, or JSON that
is no event. A value the page draws (a count, a time, a limit) is checked
here, so that the page never meets a string where it draws a number; keys it
does not draw, and events of a type it does not know, are kept as they are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

from budgetconf._text import clipped, escape
from budgetconf.events import BUDGET_WARNING, RUN_STARTED, TOOL_LIMITED

#: the largest count an event may hold, as every count in budgetconf
MAX_COUNT: Final = 2**63 - 1
#: keys an event holds as a count, or as a finite number, or as text (or null), or as an object
_COUNTS: Final = (
    "turn",
    "turns",
    "tokens",
    "tool_calls_executed",
    "calls",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
)
_NUMBERS: Final = ("time", "cost_usd")
_TEXTS: Final = (
    "type",
    "run_id",
    "stop_reason",
    "status",
    "message",
    "finish_reason",
    "cost_source",
    "cost_from",
)
_TEXTS_OR_NULL: Final = ("model",)
_OBJECTS: Final = ("limits", "budgets", "carried_over")
#: the rates of run_started's ``prices``: input and output are its price, cached defaults to input
_RATES: Final = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")
_PRICE_TEXTS: Final = ("model", "source", "locator")
#: the objects whose numbers the charts draw (as floats: a 309-digit integer is none)
_DRAWN_OBJECTS: Final = ("limits", "carried_over")


def event_of(raw: bytes, last: bool) -> dict[str, Any] | str:
    """The event on a line, or why the line holds none; ``last``: the file ends inside it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        cut = " (the file ends inside the line: cut short?)" if last else ""
        return f"not JSON: {exc.msg}, column {exc.colno}{cut}"
    except (ValueError, RecursionError) as exc:  # NaN, a number of 5,000 digits, deep nesting
        return f"not JSON: {str(exc)[:80] or type(exc).__name__}"
    if not isinstance(value, dict):
        return f"not an event: expected a JSON object, got {_kind(value)}"
    return _checked(value)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _checked(event: dict[str, Any]) -> dict[str, Any] | str:
    """The event, when each key the page reads holds what it should; else why not."""
    if not isinstance(event.get("type"), str):
        return 'not an event: no "type" text'
    name = escape(clipped(event["type"], limit=40), keep="")  # one line, whatever it holds
    for keys, fits, expected, shown in (*_RULES, *_TYPED_RULES.get(event["type"], ())):
        for key in keys:
            if key in event and not fits(event[key]):
                return f"{name}: {key}: {expected}, got {shown(event[key])}"
    wrong = _too_big(event)
    if wrong is None and "prices" in event:
        wrong = _price_problem(event["prices"])
    if wrong is None and event["type"] == RUN_STARTED:
        wrong = _tools_problem(event.get("tools", {}))
    return f"{name}: {wrong}" if wrong is not None else event


def _price_problem(prices: object) -> str | None:
    """Why run_started's ``prices`` is no price the page can show and split by; None when
    it is one (null: no price was in force)."""
    if prices is None:
        return None
    if not isinstance(prices, dict):
        return f"prices: expected an object or null, got {_kind(prices)}"
    for key in _RATES[:2]:
        if key not in prices:
            return f"prices: {key}: expected a number from 0, got nothing"
    for key in _RATES:
        rate = prices.get(key)
        if not _is_number(rate) and not (key == _RATES[2] and rate is None):
            return f"prices: {key}: expected a number from 0, got {_shown(rate)}"
    for key in _PRICE_TEXTS:
        if key in prices and not isinstance(prices[key], str):
            return f"prices: {key}: expected text, got {_kind(prices[key])}"
    return None


def _tools_problem(tools: dict[str, Any]) -> str | None:
    """Why run_started's ``tools`` holds a limit the page cannot draw: each tool's limit is
    an object, its ``value`` a number from 0 or text (``***``, a secret's)."""
    for tool, limit in tools.items():
        shown = escape(clipped(tool, limit=40), keep="")
        if not isinstance(limit, dict):
            return f"tools: {shown}: expected an object, got {_kind(limit)}"
        if "value" in limit and not _is_limit(limit["value"]):
            return f"tools: {shown}: value: expected a number from 0 or text, got " + _shown(
                limit["value"]
            )
    return None


def _too_big(event: dict[str, Any]) -> str | None:
    """Why a number the charts draw cannot be one: float() of a 309-digit integer overflows."""
    for key in _DRAWN_OBJECTS:
        for inner, item in event.get(key, {}).items():
            if type(item) is int and abs(item) > MAX_COUNT:
                shown = escape(clipped(inner, limit=40), keep="")
                return f"{key}: {shown}: expected a number to 2**63-1, got {_shown(item)}"
    return None


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_text_or_null(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_list(value: object) -> bool:
    return isinstance(value, list)


def _is_count(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return 0 <= value <= MAX_COUNT
    return math.isfinite(value) and value >= 0


def _is_number_or_null(value: object) -> bool:
    return value is None or _is_number(value)


def _is_limit(value: object) -> bool:
    """A limit's value: a number the page draws, or text it shows (``***``, a secret's)."""
    return isinstance(value, str) or _is_number(value)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true or false"}
    return "null" if value is None else names.get(type(value), "a number")


def _shown(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = str(value)
        return text if len(text) <= 24 else f"a number of {len(text)} digits"
    return _kind(value)


Rule = tuple[tuple[str, ...], Callable[[object], bool], str, Callable[[object], str]]

#: each kind of key: the keys, whether a value fits, what was expected, how the value is named
_RULES: Final[tuple[Rule, ...]] = (
    (_TEXTS, _is_text, "expected text", _kind),
    (_TEXTS_OR_NULL, _is_text_or_null, "expected text or null", _kind),
    (_COUNTS, _is_count, "expected a whole number from 0", _shown),
    (_NUMBERS, _is_number, "expected a number from 0", _shown),
    (_OBJECTS, _is_object, "expected an object", _kind),
)
#: the keys of one type of event that the page draws, which other types use otherwise
_TYPED_RULES: Final[dict[str, tuple[Rule, ...]]] = {
    RUN_STARTED: (
        (("tools",), _is_object, "expected an object", _kind),
        (("warn_at",), _is_number_or_null, "expected a number from 0 or null", _shown),
    ),
    TOOL_LIMITED: (
        (("name",), _is_text, "expected text", _kind),
        (("ids",), _is_list, "expected a list", _kind),
        (("value",), _is_limit, "expected a number from 0 or text", _shown),
    ),
    BUDGET_WARNING: (
        (("budget", "field"), _is_text, "expected text", _kind),
        (("used",), _is_number, "expected a number from 0", _shown),
        (("limit",), _is_limit, "expected a number from 0 or text", _shown),
        (("fraction",), _is_number_or_null, "expected a number from 0 or null", _shown),
    ),
}
