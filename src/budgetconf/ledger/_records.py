"""The ledger's windows and the records its operations give: a scope's window, what a
reservation holds in each scope, a warning, a status.

A leaf: the package re-exports them, and loads them when first asked for.
"""

from __future__ import annotations

import datetime as _dt

from budgetconf._record import Record, set_field
from budgetconf.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

#: the window kinds; a scope counts in one, recorded by the first reservation that draws on it
WINDOWS: Final = ("none", "hour", "day", "week", "month")


def window_bounds(
    window: str, at: _dt.datetime | None = None
) -> tuple[_dt.datetime | None, _dt.datetime | None]:
    """The UTC start and end of the ``window`` holding ``at`` (now by default).

    Both are None for ``none``.
    """
    if window not in WINDOWS:
        raise UsageError(f"unknown ledger window {window!r} (one of {', '.join(WINDOWS)})")
    if window == "none":
        return None, None
    if at is None:
        at = _dt.datetime.now(_dt.UTC)
    elif at.tzinfo is None or at.utcoffset() is None:
        raise UsageError("at= must be an aware datetime (UTC)")
    at = at.astimezone(_dt.UTC)
    if window == "hour":
        start = at.replace(minute=0, second=0, microsecond=0)
        return start, start + _dt.timedelta(hours=1)
    start = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if window == "day":
        return start, start + _dt.timedelta(days=1)
    if window == "week":  # the ISO week: from Monday 00:00
        start -= _dt.timedelta(days=start.weekday())
        return start, start + _dt.timedelta(days=7)
    start = start.replace(day=1)
    ends = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, ends


def iso(moment: _dt.datetime | None) -> str | None:
    """``moment`` as ISO 8601 UTC with ``Z``, to the second: ``2026-12-02T00:00:00Z``."""
    if moment is None:
        return None
    m = moment.astimezone(_dt.UTC)  # not strftime: its %Y leaves years before 1000 unpadded
    return f"{m.year:04}-{m.month:02}-{m.day:02}T{m.hour:02}:{m.minute:02}:{m.second:02}Z"


def window_key(window: str, start: _dt.datetime | None) -> str:
    """The name of a window's counter: ``day:2026-12-01T00:00:00Z``, or ``none``."""
    return window if start is None else f"{window}:{iso(start)}"


class ScopeLimit(Record):
    """One scope a reservation draws on: the window it counts in and its maxima (None: none).

    A scope has one window, recorded by the first reservation that draws on it: a
    reservation or status asking another is refused (`LedgerConflict`).
    """

    __slots__ = ("max_cost_usd", "max_tokens", "scope", "window")
    __module__ = "budgetconf.ledger"

    scope: str
    window: str
    max_tokens: int | None
    max_cost_usd: float | None

    def __init__(
        self,
        scope: str,
        window: str = "day",
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
    ) -> None:
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "max_cost_usd", max_cost_usd)


class HeldScope(Record):
    """A reservation's share in one scope: the scope, its window's bounds (None for ``none``)
    and counter (``key``: ``day:2026-12-01T00:00:00Z``), and the maxima it was granted under,
    which its settle's warnings are judged against."""

    __slots__ = (
        "key",
        "max_cost_usd",
        "max_tokens",
        "scope",
        "window",
        "window_ends",
        "window_start",
    )
    __module__ = "budgetconf.ledger"

    scope: str
    window: str
    window_start: _dt.datetime | None
    window_ends: _dt.datetime | None
    max_tokens: int | None
    max_cost_usd: float | None
    key: str

    def __init__(
        self,
        *,
        scope: str,
        window: str,
        window_start: _dt.datetime | None,
        window_ends: _dt.datetime | None,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
    ) -> None:
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "window_start", window_start)
        set_field(self, "window_ends", window_ends)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "max_cost_usd", max_cost_usd)
        # the name of its window's counter, which every operation on it names
        set_field(self, "key", window_key(window, window_start))


class Reservation(Record):
    """What one model call holds: ``tokens`` and ``cost_usd`` in each of its ``scopes``.

    ``id`` is unique in the ledger. ``scope``, ``window``, ``window_start`` and
    ``window_ends`` are those of its first scope (the run's own); ``scopes``
    holds every one, each a `HeldScope` (made of the first alone when not given).
    Settle it with `Ledger.settle` or give it back with `Ledger.release`;
    settling or releasing twice counts once, in every scope.
    """

    __slots__ = (
        "cost_usd",
        "id",
        "scope",
        "scopes",
        "tokens",
        "window",
        "window_ends",
        "window_start",
    )
    __module__ = "budgetconf.ledger"

    id: str
    scope: str
    window: str
    window_start: _dt.datetime | None
    window_ends: _dt.datetime | None
    tokens: int
    cost_usd: float
    scopes: tuple[HeldScope, ...]

    def __init__(
        self,
        *,
        id: str,
        scope: str,
        window: str,
        window_start: _dt.datetime | None,
        window_ends: _dt.datetime | None,
        tokens: int,
        cost_usd: float,
        scopes: tuple[HeldScope, ...] | None = None,
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "window_start", window_start)
        set_field(self, "window_ends", window_ends)
        set_field(self, "tokens", tokens)
        set_field(self, "cost_usd", cost_usd)
        if scopes is None:
            one = HeldScope(
                scope=scope, window=window, window_start=window_start, window_ends=window_ends
            )
            scopes = (one,)
        set_field(self, "scopes", scopes)


class ScopeWarning(Record):
    """A scope's settled spend has reached ``warn_at`` of one of its maxima, for the first time
    in its window across the whole fleet: the settle that crossed it reports it, once.

    ``budget`` is ``max_tokens`` or ``max_cost_usd``; ``spent`` and ``maximum`` are in its
    units (tokens, US dollars).
    """

    __slots__ = ("budget", "maximum", "scope", "spent", "window", "window_ends")
    __module__ = "budgetconf.ledger"

    scope: str
    window: str
    window_ends: _dt.datetime | None
    budget: str
    spent: int | float
    maximum: int | float

    def __init__(
        self,
        *,
        scope: str,
        window: str,
        window_ends: _dt.datetime | None,
        budget: str,
        spent: int | float,
        maximum: int | float,
    ) -> None:
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "window_ends", window_ends)
        set_field(self, "budget", budget)
        set_field(self, "spent", spent)
        set_field(self, "maximum", maximum)


class LedgerStatus(Record):
    """A scope's window as it stands: spent, reserved by live leases, the runs recorded, and
    the latest reset of the window (its record's ``reset`` part, with when), if any."""

    __slots__ = (
        "reserved_cost_usd",
        "reserved_tokens",
        "reset",
        "runs",
        "scope",
        "spent_cost_usd",
        "spent_tokens",
        "window",
        "window_ends",
        "window_start",
    )
    __module__ = "budgetconf.ledger"

    scope: str
    window: str
    window_start: _dt.datetime | None
    window_ends: _dt.datetime | None
    spent_tokens: int
    spent_cost_usd: float
    reserved_tokens: int
    reserved_cost_usd: float
    runs: int
    reset: dict[str, Any] | None

    def __init__(
        self,
        *,
        scope: str,
        window: str,
        window_start: _dt.datetime | None,
        window_ends: _dt.datetime | None,
        spent_tokens: int,
        spent_cost_usd: float,
        reserved_tokens: int,
        reserved_cost_usd: float,
        runs: int,
        reset: dict[str, Any] | None = None,
    ) -> None:
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "window_start", window_start)
        set_field(self, "window_ends", window_ends)
        set_field(self, "spent_tokens", spent_tokens)
        set_field(self, "spent_cost_usd", spent_cost_usd)
        set_field(self, "reserved_tokens", reserved_tokens)
        set_field(self, "reserved_cost_usd", reserved_cost_usd)
        set_field(self, "runs", runs)
        set_field(self, "reset", reset)

    def to_dict(self) -> dict[str, Any]:
        """One scope's ``ledger status --format json`` document, without its ``max``."""
        return {
            "scope": self.scope,
            "window": self.window,
            "window_start": iso(self.window_start),
            "window_ends": iso(self.window_ends),
            "spent": {"tokens": self.spent_tokens, "cost_usd": self.spent_cost_usd},
            "reserved": {"tokens": self.reserved_tokens, "cost_usd": self.reserved_cost_usd},
            "runs": self.runs,
            "reset": self.reset,
        }
