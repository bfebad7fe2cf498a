"""What one model response may report it used: the bounds every run, bridge and ledger reads by.

A leaf. A response reporting more than `MOST_TOKENS` tokens, or a cost above
`MOST_COST_USD`, is unreadable: no model answers with more, and below these
bounds every total a run or a ledger keeps stays an exact integer (tokens, and
costs in billionths of a dollar, below 2**53), however many responses it adds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from budgetconf._record import ReadOnly

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

#: the most tokens one response may report: 2**40
MOST_TOKENS: Final = 2**40
#: the most one response may report as its cost, in US dollars
MOST_COST_USD: Final = 10**6


class Unreadable(ValueError):
    """A count or a cost no response can report; the message names it and where it was read."""


def reported_tokens(value: object, where: str) -> int:
    """A count of tokens one response reports: a whole number from 0 to `MOST_TOKENS`."""
    if type(value) is int and 0 <= value <= MOST_TOKENS:
        return value
    if type(value) is int and value > MOST_TOKENS:
        raise Unreadable(f"{where}: more tokens than one response can use ({kind_of(value)})")
    raise Unreadable(f"{where}: expected a count, got {kind_of(value)}")


def reported_cost(value: object, where: str) -> float:
    """A cost in US dollars one response reports: a number from 0 to `MOST_COST_USD`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unreadable(f"{where}: expected a non-negative number, got {kind_of(value)}")
    try:  # the number itself: a subclass's __float__ and comparisons are its own
        number = float.__float__(value) if isinstance(value, float) else float(int.__index__(value))
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise Unreadable(f"{where}: expected a non-negative number, got {kind_of(value)}")
    if number > MOST_COST_USD:
        raise Unreadable(f"{where}: more than one response can cost ({kind_of(value)} USD)")
    return number


def picodollars(usd: float) -> float:
    """``usd`` to the picodollar, as ``round(usd, 12)`` gives it, in a fraction of its time:
    what sums of costs are kept at, so that three at 0.1 reach a limit of 0.3 exactly."""
    return round(usd * 1e12) / 1e12


def kind_of(value: object) -> str:
    """``value`` named for a message: a number or a short text as it is, anything else by its
    type."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"  # repr() stops at 4,300 digits
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:40]) + "…"
    return type(value).__name__


#: how a response's cost is known: it reported it, budgetconf priced it, or neither
COST_SOURCES: Final = ("reported", "priced", "none")


class Usage(ReadOnly):
    """What model calls used, as their responses reported it, in the names of PRICES.md.

    ``input_tokens`` counts cached input tokens too (``cached_input_tokens`` of them),
    ``output_tokens`` reasoning tokens too; ``total_tokens`` is the responses' own total
    (input plus output unless they said otherwise). ``cost_source`` says how ``cost_usd`` is
    known. A response's usage names its ``model`` when the response did; a run's (the sum of
    its responses') names none.
    """

    __module__ = "budgetconf.loop"
    __slots__ = (
        "cached_input_tokens",
        "cost_source",
        "cost_usd",
        "input_tokens",
        "model",
        "output_tokens",
        "total_tokens",
    )

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: float
    cost_source: str
    model: str | None

    def __init__(
        self,
        input_tokens: int = 0,
        cached_input_tokens: int = 0,
        output_tokens: int = 0,
        total_tokens: int | None = None,
        cost_usd: float = 0.0,
        cost_source: str = "none",
        model: str | None = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "input_tokens", input_tokens)
        setattr_(self, "cached_input_tokens", cached_input_tokens)
        setattr_(self, "output_tokens", output_tokens)
        total = input_tokens + output_tokens if total_tokens is None else total_tokens
        setattr_(self, "total_tokens", total)
        setattr_(self, "cost_usd", cost_usd)
        setattr_(self, "cost_source", cost_source)
        setattr_(self, "model", model)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _ORDER)
        return f"Usage({shown})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Usage:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _ORDER)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in _ORDER))

    def to_dict(self) -> dict[str, Any]:
        """``{"input_tokens", "cached_input_tokens", "output_tokens", "total_tokens",
        "cost_usd", "cost_source"}``: a run's usage as its result and events give it."""
        return {name: getattr(self, name) for name in _ORDER[:-1]}


#: the fields of a `Usage` in the order every rendering gives them
_ORDER: Final = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "cost_source",
    "model",
)

#: a response that reported nothing: the one every such response shares
NO_USAGE: Final = Usage()


def read_usage(usage: Mapping[str, Any] | None, cost: object, model: object) -> Usage:
    """A response's usage from the OpenAI names, each count checked (`Unreadable`).

    ``prompt_tokens``, ``prompt_tokens_details.cached_tokens``, ``completion_tokens`` and
    ``total_tokens`` (a total alone is a total of unknown parts); ``cost`` is the cost the
    response reports, if any, and ``model`` the model it names.
    """
    if usage is None and cost is None and model is None:
        return NO_USAGE
    given = usage or {}
    prompt = given.get("prompt_tokens")
    completion = given.get("completion_tokens")
    total = given.get("total_tokens")
    inputs = 0 if prompt is None else reported_tokens(prompt, "usage.prompt_tokens")
    outputs = 0 if completion is None else reported_tokens(completion, "usage.completion_tokens")
    if total is None:
        total = reported_tokens(inputs + outputs, "usage.prompt_tokens + usage.completion_tokens")
    else:
        total = reported_tokens(total, "usage.total_tokens")
    cached = _cached(given.get("prompt_tokens_details"))
    shown = model if isinstance(model, str) and model else None
    if cost is None:
        return Usage(inputs, cached, outputs, total, 0.0, "none", shown)
    return Usage(inputs, cached, outputs, total, reported_cost(cost, "cost_usd"), "reported", shown)


def _cached(details: object) -> int:
    """``prompt_tokens_details.cached_tokens``, where a response gives it."""
    found = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if found is None:
        return 0
    return reported_tokens(found, "usage.prompt_tokens_details.cached_tokens")
