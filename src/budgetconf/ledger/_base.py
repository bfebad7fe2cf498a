"""What every ledger is: the `Ledger` interface, and what its backends share in reading back
what they wrote (counts, run records) and in saying what went wrong.

The package re-exports `Ledger`; a backend subclasses it through `_backend.Backend`,
so that it never imports the package that opens it.
"""

from __future__ import annotations

import datetime as _dt
import json
from abc import ABC, abstractmethod

from budgetconf._text import clipped
from budgetconf.errors import LedgerConflict, LedgerUnavailable
from budgetconf.ledger._address import LedgerURL
from budgetconf.ledger._records import (
    LedgerStatus,
    Reservation,
    ScopeLimit,
    ScopeWarning,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, Final


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
    "parents",
)
#: how long a ledger remembers a reservation after its lease ends, so that a late settle
#: still counts once (a settle later still counts, and is remembered from then on)
REMEMBERED_SECONDS: Final = 86_400.0


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
    found = _objects(shown_url, where, texts, "run record")
    for record in found:
        record.setdefault("parents", [])  # a record of the previous version's
    return found


def reset_part(shown_url: str, where: str, text: str) -> dict[str, Any]:
    """A window's latest reset (a reset record's ``reset`` part) kept as JSON ``text``."""
    return _objects(shown_url, where, [text], "reset")[0]


def _objects(shown_url: str, where: str, texts: Iterable[str], what: str) -> list[dict[str, Any]]:
    found = []
    for text in texts:
        try:
            record = json.loads(text)
        except (TypeError, ValueError):
            record = None
        if not isinstance(record, dict):
            shown = clipped(str(text), repr)
            raise unavailable(
                shown_url, f"{where} holds a {what} that is not a JSON object ({shown})"
            )
        found.append(record)
    return found


class Ledger(ABC):
    """A ledger, whatever holds it. Every method raises `LedgerUnavailable` when it cannot be used,
    and `LedgerConflict` when it asks a scope for a window other than the one it counts in.

    ``url`` is the ledger's address as shown (its password masked). Every
    backend is a `budgetconf.ledger._backend.Backend`, which checks the
    arguments once for all of them.
    """

    __module__ = "budgetconf.ledger"

    def __init__(self, url: LedgerURL) -> None:
        self.address = url
        self.url = url.shown

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"

    # ------------------------------------------------------------------ reserving and settling

    @abstractmethod
    def reserve(
        self,
        scope: str | None = None,
        *,
        tokens: int,
        cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        scopes: Sequence[ScopeLimit] | None = None,
        at: _dt.datetime | None = None,
    ) -> Reservation | None:
        """Hold ``tokens`` and ``cost_usd`` in ``scope``'s window (``max_tokens``,
        ``max_cost_usd`` and ``window`` its), or in every one of ``scopes`` at once; None when
        one of them has no room, and then nothing is held anywhere.

        A reservation that brings spent + reserved exactly to a maximum is granted.
        """

    @abstractmethod
    def settle(
        self,
        reservation: Reservation,
        *,
        tokens: int,
        cost_usd: float,
        warn_at: float | None = None,
    ) -> tuple[ScopeWarning, ...]:
        """Replace ``reservation`` by what the call used, in each of its scopes' windows
        (twice counts once). With ``warn_at`` (a fraction), the scopes whose settled spend this
        brings to that share of a maximum for the first time in their window, fleet-wide."""

    @abstractmethod
    def release(self, reservation: Reservation) -> None:
        """Give ``reservation`` back unused; releasing or settling twice counts once."""

    @abstractmethod
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
        scopes: Sequence[ScopeLimit] | None = None,
        warn_at: float | None = None,
        at: _dt.datetime | None = None,
    ) -> tuple[Reservation | None, tuple[ScopeWarning, ...]]:
        """`settle` one call's ``reservation`` and `reserve` the next call's (in its scope, or
        in ``scopes``): what a loop does between two turns, in one step where the backend can
        (one transaction in SQLite, one server call in Redis). The settle counts even when the
        reservation is refused; the pair is the reservation (None: refused) and the warnings.
        """

    @abstractmethod
    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        """Hold ``reservation`` for ``lease_seconds`` more from now, by the backend's clock, so
        that a call outliving its lease keeps what it holds. False when it is held no more
        (settled, released, or its lease ended first)."""

    # ------------------------------------------------------------------ reading and operating

    @abstractmethod
    def status(
        self, scope: str, *, window: str | None = None, at: _dt.datetime | None = None
    ) -> LedgerStatus:
        """``scope``'s window (the one holding ``at``, now by default) as it stands: the window
        it counts in when ``window`` is None (``day`` for a scope nothing has drawn on yet)."""

    @abstractmethod
    def window_of(self, scope: str) -> str | None:
        """The window ``scope`` counts in, as the first reservation drawing on it recorded it;
        None while nothing has."""

    @abstractmethod
    def reset(
        self,
        scope: str,
        *,
        why: str,
        window: str | None = None,
        by: str | None = None,
        at: _dt.datetime | None = None,
    ) -> dict[str, Any]:
        """Set ``scope``'s spend in its current window (of ``window``: by default the one it
        counts in) to zero, and keep a record of who (``by``: the user and host by default),
        when and ``why``, with what was spent; that record is returned, and is the latest of
        `runs` (``stop_reason`` ``reset``). What runs hold reserved stays held."""

    @abstractmethod
    def prune(self, before: _dt.datetime) -> int:
        """Remove the run and reset records that ended before ``before`` (an aware datetime),
        in every scope; how many records went. Spend is never removed."""

    @abstractmethod
    def record_run(self, record: dict[str, Any]) -> None:
        """Keep one run's record (the keys `runs` returns) in its scope and in each of its
        ``parents``; the latest `KEPT_RUNS` of each scope stay."""

    @abstractmethod
    def runs(self, scope: str, *, limit: int = 20) -> list[dict[str, Any]]:
        """The latest run records of ``scope`` (its own runs, those that drew on it as a
        parent, and its resets), newest first."""

    @abstractmethod
    def close(self) -> None:
        """Let go of the connection; the ledger's data stays."""

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def keep_latest(
    latest: dict[str, tuple[int, str, str]], scope: str, found: tuple[int, str, str]
) -> None:
    """A migration's choice of the window ``scope`` counts in: ``found`` is (rank, moment,
    window kind), a reservation ranking 1 and a counter with spend 0; the highest stays."""
    if scope not in latest or found > latest[scope]:
        latest[scope] = found


def conflict(scope: str, recorded: str, asked: str) -> LedgerConflict:
    """The error of a scope asked for under ``asked`` when it counts in ``recorded``."""
    return LedgerConflict(
        f"ledger scope {scope} counts in the window {recorded!r}, recorded by the first run"
        f" that drew on it, not {asked!r}: a scope has one window",
        scope=scope,
        window=recorded,
        asked=asked,
    )
