"""What every ledger backend is: the `Ledger` interface, its records and the windows.

The package re-exports these; a backend module subclasses `Ledger` from here,
so that it never imports the package that opens it.
"""

from __future__ import annotations

import datetime as _dt
import json
from abc import ABC, abstractmethod

from budgetconf._record import Record, set_field
from budgetconf._text import clipped
from budgetconf.errors import LedgerUnavailable, UsageError
from budgetconf.ledger._address import LedgerURL

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final

#: the window kinds; each is its own counter: what is spent under ``day`` is not seen under ``hour``
WINDOWS: Final = ("none", "hour", "day", "month")
#: the run records a ledger keeps at least, per scope
KEPT_RUNS: Final = 10_000
#: the keys of a run record, in the order `Ledger.runs` gives them
RUN_KEYS: Final = (
    "run_id",
    "scope",
    "host",
    "pid",
    "started",
    "ended",
    "turns",
    "tokens",
    "cost_usd",
    "stop_reason",
)
#: how long a ledger remembers a reservation after its lease ends, so that a late settle
#: still counts once (a settle later still counts, and is remembered from then on)
REMEMBERED_SECONDS: Final = 86_400.0


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
    return moment.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unavailable(shown_url: str, cause: object) -> LedgerUnavailable:
    """``ledger URL is unavailable: CAUSE``, on one line; ``shown_url`` is already masked."""
    text = " ".join(str(cause).split()) or type(cause).__name__
    return LedgerUnavailable(f"ledger {shown_url} is unavailable: {text}")


def counts(shown_url: str, where: str, values: Iterable[object]) -> list[int]:
    """``values`` read back from the ledger (None: 0) as whole numbers; `LedgerUnavailable`
    naming ``where`` for one that no ledger wrote."""
    found = []
    for value in values:
        try:
            number = int(value or 0) if isinstance(value, int | str | bytes | None) else None
        except ValueError:
            number = None
        if number is None:
            shown = clipped(str(value), repr)
            raise unavailable(
                shown_url, f"{where} holds a count that is not a whole number ({shown})"
            )
        found.append(number)
    return found


def run_records(shown_url: str, where: str, texts: Iterable[str]) -> list[dict[str, Any]]:
    """The run records kept as JSON ``texts``; `LedgerUnavailable` naming ``where`` for one
    that no ledger wrote."""
    found = []
    for text in texts:
        try:
            record = json.loads(text)
        except (TypeError, ValueError):
            record = None
        if not isinstance(record, dict):
            shown = clipped(str(text), repr)
            raise unavailable(
                shown_url, f"{where} holds a run record that is not a JSON object ({shown})"
            )
        found.append(record)
    return found


def window_key(window: str, start: _dt.datetime | None) -> str:
    """The name of a window's counter: ``day:2026-12-01T00:00:00Z``, or ``none``."""
    return window if start is None else f"{window}:{iso(start)}"


class Reservation(Record):
    """What one model call holds: ``tokens`` and ``cost_usd`` in ``scope``'s window.

    ``id`` is unique in the ledger; ``window_start``/``window_ends`` are the
    window's bounds (None for ``none``). Settle it with `Ledger.settle` or
    give it back with `Ledger.release`; settling or releasing twice counts once.
    """

    __slots__ = ("cost_usd", "id", "scope", "tokens", "window", "window_ends", "window_start")
    __module__ = "budgetconf.ledger"

    id: str
    scope: str
    window: str
    window_start: _dt.datetime | None
    window_ends: _dt.datetime | None
    tokens: int
    cost_usd: float

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
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "scope", scope)
        set_field(self, "window", window)
        set_field(self, "window_start", window_start)
        set_field(self, "window_ends", window_ends)
        set_field(self, "tokens", tokens)
        set_field(self, "cost_usd", cost_usd)


class LedgerStatus(Record):
    """A scope's window as it stands: spent, reserved by live leases, and the runs recorded."""

    __slots__ = (
        "reserved_cost_usd",
        "reserved_tokens",
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

    def to_dict(self) -> dict[str, Any]:
        """The ``ledger status --format json`` document, without its ``max``."""
        return {
            "scope": self.scope,
            "window": self.window,
            "window_start": iso(self.window_start),
            "window_ends": iso(self.window_ends),
            "spent": {"tokens": self.spent_tokens, "cost_usd": self.spent_cost_usd},
            "reserved": {"tokens": self.reserved_tokens, "cost_usd": self.reserved_cost_usd},
            "runs": self.runs,
        }


class Ledger(ABC):
    """A ledger, whatever holds it. Every method raises `LedgerUnavailable` when it cannot be used.

    ``url`` is the ledger's address as shown (its password masked).
    """

    __module__ = "budgetconf.ledger"

    def __init__(self, url: LedgerURL) -> None:
        self.address = url
        self.url = url.shown

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"

    @abstractmethod
    def reserve(
        self,
        scope: str,
        *,
        tokens: int,
        cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        at: _dt.datetime | None = None,
    ) -> Reservation | None:
        """Hold ``tokens`` and ``cost_usd`` in ``scope``'s window, or None past a maximum.

        A reservation that brings spent + reserved exactly to a maximum is granted.
        """

    @abstractmethod
    def settle(self, reservation: Reservation, *, tokens: int, cost_usd: float) -> None:
        """Replace ``reservation`` by what the call used, in its window (twice counts once)."""

    @abstractmethod
    def release(self, reservation: Reservation) -> None:
        """Give ``reservation`` back unused; releasing or settling twice counts once."""

    @abstractmethod
    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        """Hold ``reservation`` for ``lease_seconds`` more from now, by the backend's clock, so
        that a call outliving its lease keeps what it holds. False when it is held no more
        (settled, released, or its lease ended first)."""

    def settle_and_reserve(
        self,
        reservation: Reservation,
        *,
        tokens: int,
        cost_usd: float,
        reserve_tokens: int,
        reserve_cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        at: _dt.datetime | None = None,
    ) -> Reservation | None:
        """`settle` one call's ``reservation`` and `reserve` the next call's, in ``reservation``'s
        scope: what a loop does between two turns. A backend may do both in one step (Redis:
        one server call); the settle counts even when the reservation is refused.
        """
        self.settle(reservation, tokens=tokens, cost_usd=cost_usd)
        return self.reserve(
            reservation.scope,
            tokens=reserve_tokens,
            cost_usd=reserve_cost_usd,
            lease_seconds=lease_seconds,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            window=window,
            at=at,
        )

    @abstractmethod
    def status(
        self, scope: str, *, window: str = "day", at: _dt.datetime | None = None
    ) -> LedgerStatus:
        """``scope``'s window (the one holding ``at``, now by default) as it stands."""

    @abstractmethod
    def record_run(self, record: dict[str, Any]) -> None:
        """Keep one run's record (the keys `runs` returns); the latest `KEPT_RUNS` per scope stay"""

    @abstractmethod
    def runs(self, scope: str, *, limit: int = 20) -> list[dict[str, Any]]:
        """The latest run records of ``scope``, newest first."""

    @abstractmethod
    def close(self) -> None:
        """Let go of the connection; the ledger's data stays."""

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
