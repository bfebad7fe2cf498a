"""What one model response may report it used: the bounds every run, bridge and ledger reads by.

A leaf. A response reporting more than `MOST_TOKENS` tokens, or a cost above
`MOST_COST_USD`, is unreadable: no model answers with more, and below these
bounds every total a run or a ledger keeps stays an exact integer (tokens, and
costs in billionths of a dollar, below 2**53), however many responses it adds.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "MOST_COST_USD",
    "MOST_TOKENS",
    "Unreadable",
    "kind_of",
    "reported_cost",
    "reported_tokens",
]

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
