"""A ledger operation's arguments, checked before anything is written, and put in the units
a backend writes: tokens as they are, costs in whole billionths of a dollar.

Every backend checks through these, so each refuses the same arguments with the same
`UsageError`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from fractions import Fraction

from budgetconf._record import Record, set_field
from budgetconf._usage import MOST_COST_USD, MOST_TOKENS
from budgetconf.errors import UsageError
from budgetconf.ledger._address import is_scope
from budgetconf.ledger._base import KEPT_RUNS, RUN_KEYS
from budgetconf.ledger._records import (
    WINDOWS,
    HeldScope,
    Reservation,
    ScopeLimit,
    ScopeWarning,
    iso,
    window_bounds,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final

#: costs are counted in whole billionths of a dollar: sums are exact and in any order
#: the same, and "exactly to the maximum" means what it says
NANO: Final = 1_000_000_000


def check_scope(scope: object) -> str:
    """``scope`` if it is 1 to 128 ASCII letters, digits and ``-_.:/``; `UsageError` if not."""
    if not is_scope(scope):
        raise UsageError(f"ledger scope {scope!r} is not 1 to 128 ASCII letters, digits and -_.:/")
    return scope


def check_tokens(value: object, what: str) -> int:
    """``value``, a whole number of tokens ≥ 0; `UsageError` if not."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} must be a whole number ≥ 0, not {value!r}")
    return value


def check_used(tokens: object, cost_usd: object) -> tuple[int, int]:
    """What one call holds or used: at most `MOST_TOKENS` tokens and `MOST_COST_USD` dollars,
    as tokens and billionths of a dollar, the whole numbers every backend adds exactly."""
    counted = check_tokens(tokens, "tokens")
    nano = to_nano(cost_usd, "cost_usd")
    if counted > MOST_TOKENS:
        raise UsageError(f"tokens must be at most {MOST_TOKENS} (2**40), not {counted!r}")
    if nano > MOST_COST_USD * NANO:
        raise UsageError(f"cost_usd must be at most {MOST_COST_USD}, not {cost_usd!r}")
    return counted, nano


def to_nano(value: object, what: str) -> int:
    """A cost in dollars ≥ 0 as whole billionths of a dollar; `UsageError` if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{what} must be a number ≥ 0, not {value!r}")
    if not math.isfinite(value) or value < 0 or value * NANO >= 2**53:
        raise UsageError(f"{what} must be a finite number ≥ 0 (under 9 million), not {value!r}")
    return round(value * NANO)


def from_nano(value: int) -> float:
    """Whole billionths of a dollar, as dollars."""
    return value / NANO


def check_lease(value: object) -> float:
    """``lease_seconds``, a finite number > 0; `UsageError` if not."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"lease_seconds must be a number > 0, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"lease_seconds must be a finite number > 0, not {value!r}")
    return float(value)


def check_maximum_tokens(value: object) -> int | None:
    """``max_tokens``: None (no maximum) or a whole number ≥ 0."""
    return None if value is None else check_tokens(value, "max_tokens")


def check_maximum_cost(value: object) -> int | None:
    """``max_cost_usd`` in billionths: None (no maximum) or a number ≥ 0."""
    return None if value is None else to_nano(value, "max_cost_usd")


def check_reservation(value: object) -> Reservation:
    """``value`` if it is a `Reservation`; `UsageError` if not."""
    if not isinstance(value, Reservation):
        raise UsageError(f"not a Reservation: {type(value).__name__}")
    return value


def check_limit(value: object) -> int:
    """``limit`` of `Ledger.runs`: a whole number ≥ 0, at most `KEPT_RUNS`."""
    return min(check_tokens(value, "limit"), KEPT_RUNS)


class Asked(Record):
    """A reservation asked for, every argument checked, in the units a backend writes: the
    cost in billionths (``nano``), each scope's share (``held``, the first the run's own) with
    its maxima in those units (``most``: tokens and billionths, None for none), and a new
    reservation id (``rid``)."""

    __slots__ = ("held", "lease", "most", "nano", "rid", "tokens")

    tokens: int
    nano: int
    lease: float
    held: tuple[HeldScope, ...]
    most: tuple[tuple[int | None, int | None], ...]
    rid: str

    def __init__(
        self,
        scopes: Sequence[ScopeLimit],
        *,
        tokens: object,
        cost_usd: object,
        lease_seconds: object,
        at: _dt.datetime | None,
    ) -> None:
        import uuid

        held, nano = check_used(tokens, cost_usd)
        set_field(self, "tokens", held)
        set_field(self, "nano", nano)
        set_field(self, "lease", check_lease(lease_seconds))
        shares, most = [], []
        at = _dt.datetime.now(_dt.UTC) if at is None else at  # one moment for every scope
        for limit in scopes:
            start, ends = window_bounds(limit.window, at)
            most_tokens = check_maximum_tokens(limit.max_tokens)
            most_nano = check_maximum_cost(limit.max_cost_usd)
            shares.append(
                HeldScope(
                    scope=limit.scope,
                    window=limit.window,
                    window_start=start,
                    window_ends=ends,
                    max_tokens=most_tokens,
                    max_cost_usd=None if most_nano is None else from_nano(most_nano),
                )
            )
            most.append((most_tokens, most_nano))
        set_field(self, "held", tuple(shares))
        set_field(self, "most", tuple(most))
        set_field(self, "rid", uuid.uuid4().hex)

    @classmethod
    def of(
        cls,
        scope: object,
        scopes: object,
        *,
        tokens: object,
        cost_usd: object,
        lease_seconds: object,
        max_tokens: object,
        max_cost_usd: object,
        window: object,
        at: _dt.datetime | None,
    ) -> Asked:
        """What `Ledger.reserve` asks: one ``scope`` with its maxima and window, or ``scopes``."""
        if scopes is None:
            if scope is None:
                raise UsageError("reserve() takes a scope, or scopes=[ScopeLimit, ...]")
            limits: list[ScopeLimit] = [
                ScopeLimit(check_scope(scope), check_window(window), max_tokens, max_cost_usd)  # type: ignore[arg-type]
            ]
        else:
            given = max_tokens is not None or max_cost_usd is not None or window != "day"
            if scope is not None or given:
                raise UsageError(
                    "reserve() takes either a scope with its maxima and window, or scopes="
                )
            limits = check_scopes(scopes)
        return cls(limits, tokens=tokens, cost_usd=cost_usd, lease_seconds=lease_seconds, at=at)

    def reservation(self) -> Reservation:
        """The reservation this one makes, once the backend has granted it."""
        first = self.held[0]
        return Reservation(
            id=self.rid,
            scope=first.scope,
            window=first.window,
            window_start=first.window_start,
            window_ends=first.window_ends,
            tokens=self.tokens,
            cost_usd=from_nano(self.nano),
            scopes=self.held,
        )


def check_window(value: object) -> str:
    """``value`` if it is a window kind; `UsageError` if not."""
    if not isinstance(value, str) or value not in WINDOWS:
        raise UsageError(f"unknown ledger window {value!r} (one of {', '.join(WINDOWS)})")
    return value


def check_scopes(value: object) -> list[ScopeLimit]:
    """``scopes=``: one or more `ScopeLimit`, each scope once, each checked."""
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise UsageError(f"scopes= takes a non-empty list of ScopeLimit, not {value!r}")
    found: dict[str, ScopeLimit] = {}
    for limit in value:
        if not isinstance(limit, ScopeLimit):
            raise UsageError(f"scopes= holds ScopeLimit records, not {type(limit).__name__}")
        scope = check_scope(limit.scope)
        check_window(limit.window)
        if scope in found:
            raise UsageError(f"scopes= names the scope {scope} twice")
        found[scope] = limit
    return list(found.values())


def check_moment(value: object, what: str) -> _dt.datetime:
    """``value``, an aware datetime; `UsageError` if not."""
    if not isinstance(value, _dt.datetime):
        raise UsageError(f"{what} must be an aware datetime (UTC), not {value!r}")
    return _aware(value, what)


class Settling(Record):
    """A reservation ending: what it ``used`` (tokens and billionths; None: released), and
    for each of its scopes the spend at which a settle warns (``warn``: tokens and billionths,
    None for none), when ``warn_at`` is given."""

    __slots__ = ("reservation", "used", "warn")

    reservation: Reservation
    used: tuple[int, int] | None
    warn: tuple[tuple[int | None, int | None], ...]

    def __init__(
        self, reservation: object, tokens: object, cost_usd: object, warn_at: object
    ) -> None:
        held = check_reservation(reservation)
        set_field(self, "reservation", held)
        set_field(self, "used", None if tokens is None else check_used(tokens, cost_usd))
        share = check_share(warn_at)
        set_field(
            self,
            "warn",
            tuple(
                (_reached(share, part.max_tokens), _cost_reached(share, part))
                for part in held.scopes
            ),
        )

    def warnings(self, crossed: Sequence[tuple[int, str, int]]) -> tuple[ScopeWarning, ...]:
        """The warnings a backend found crossed, each (scope index, ``tokens``/``nano``, spent)."""
        found = []
        for index, unit, spent in crossed:
            part = self.reservation.scopes[index]
            tokens = unit == "tokens"
            maximum = part.max_tokens if tokens else part.max_cost_usd
            assert maximum is not None, "a warning is of a maximum"
            found.append(
                ScopeWarning(
                    scope=part.scope,
                    window=part.window,
                    window_ends=part.window_ends,
                    budget="max_tokens" if tokens else "max_cost_usd",
                    spent=spent if tokens else from_nano(spent),
                    maximum=maximum,
                )
            )
        return tuple(found)


def check_share(value: object) -> Fraction | None:
    """``warn_at``: None, or a fraction of a maximum between 0 and 1 (exactly, as a fraction of
    the decimal it is written as: 0.8 is 4/5, not the double just above it)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise UsageError(f"warn_at must be a number between 0 and 1, not {value!r}")
    return Fraction(repr(value))


def _cost_reached(share: Fraction | None, part: HeldScope) -> int | None:
    """`_reached` of ``part``'s cost maximum, in billionths."""
    if share is None or part.max_cost_usd is None:
        return None
    return _reached(share, to_nano(part.max_cost_usd, "max_cost_usd"))


def _reached(share: Fraction | None, maximum: int | None) -> int | None:
    """The least spend that is ``share`` of ``maximum`` or more, in its whole units."""
    if share is None or maximum is None:
        return None
    return math.ceil(share * maximum)


class Resetting(Record):
    """A reset asked for: the scope, the window asked (None: the one it counts in), when, and
    the record it leaves, made by `record` from what the window had spent."""

    __slots__ = ("at", "by", "host", "pid", "scope", "why", "window")

    scope: str
    window: str | None
    why: str
    by: str
    host: str
    pid: int
    at: _dt.datetime

    def __init__(
        self,
        scope: object,
        *,
        why: object,
        window: object,
        by: object,
        at: _dt.datetime | None,
    ) -> None:
        import os
        import socket

        set_field(self, "scope", check_scope(scope))
        set_field(self, "window", None if window is None else check_window(window))
        if not isinstance(why, str) or not why.strip():
            raise UsageError("a reset says why: why= must be a non-empty text")
        set_field(self, "why", " ".join(why.split()))
        host = socket.gethostname()
        if by is None:
            import getpass

            try:
                user = getpass.getuser()
            except (KeyError, OSError):  # no name for this user id
                user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"
            by = f"{user}@{host}"
        if not isinstance(by, str) or not by.strip():
            raise UsageError(f"by= must be a non-empty text, not {by!r}")
        set_field(self, "by", by)
        set_field(self, "host", host)
        set_field(self, "pid", os.getpid())
        now = _dt.datetime.now(_dt.UTC) if at is None else check_moment(at, "at")
        set_field(self, "at", now)

    def record(self, window: str, spent_tokens: int, spent_nano: int) -> dict[str, Any]:
        """The reset's record, in ``window`` (the one reset), with what it had spent: the
        latest of the scope's `Ledger.runs`, its ``reset`` part what `LedgerStatus.reset` shows
        (with ``at``)."""
        start, _ = window_bounds(window, self.at)
        moment = iso(self.at)
        return {
            "run_id": None,
            "scope": self.scope,
            "host": self.host,
            "pid": self.pid,
            "started": moment,
            "ended": moment,
            "turns": 0,
            "tokens": 0,
            "cost_usd": 0.0,
            "stop_reason": "reset",
            "parents": [],
            "reset": {
                "by": self.by,
                "window": window,
                "window_start": iso(start),
                "why": self.why,
                "spent": {"tokens": spent_tokens, "cost_usd": from_nano(spent_nano)},
                "at": moment,
            },
        }


def run_record(record: object) -> tuple[list[str], str, _dt.datetime]:
    """A run record as a ledger keeps it: the scopes it is kept in (its own, then its
    ``parents``), its JSON text, and when it ended.

    The record is `RUN_KEYS` in their order (a missing key is None, another is
    refused; ``parents`` a list of scopes, empty by default); a time may be given
    as an aware datetime, and is kept as ISO 8601 UTC with ``Z``. A record with
    no ``ended`` ended now.
    """
    if not isinstance(record, dict):
        raise UsageError(f"a run record is a dict, not {type(record).__name__}")
    unknown = sorted(str(key) for key in record if key not in RUN_KEYS)
    if unknown:
        raise UsageError(
            f"a run record has no key {unknown[0]!r} (its keys: {', '.join(RUN_KEYS)})"
        )
    kept = {key: record.get(key) for key in RUN_KEYS}
    scope = check_scope(kept["scope"])
    parents = kept["parents"] or []
    if not isinstance(parents, list | tuple):
        raise UsageError(f"a run record's parents are a list of scopes, not {parents!r}")
    kept["parents"] = parents = [check_scope(parent) for parent in parents]
    for key in ("started", "ended"):
        moment = kept[key]
        if isinstance(moment, _dt.datetime):
            kept[key] = iso(_aware(moment, key))
    ended = _ended(kept["ended"])
    kept["ended"] = iso(ended)
    try:
        text = json.dumps(kept, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a run record must be plain JSON values: {exc}") from None
    return list(dict.fromkeys([scope, *parents])), text, ended


def _aware(moment: _dt.datetime, what: str) -> _dt.datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise UsageError(f"{what} must be an aware datetime (UTC)")
    return moment


def _ended(value: object) -> _dt.datetime:
    if isinstance(value, str):
        try:
            moment = _dt.datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(f"ended {value!r} is not an ISO 8601 time") from None
        if moment.tzinfo is not None and moment.utcoffset() is not None:
            return moment
        raise UsageError(f"ended {value!r} has no time zone (use ISO 8601 UTC with Z)")
    if value is None:
        return _dt.datetime.now(_dt.UTC)
    raise UsageError(f"ended must be an ISO 8601 time, not {value!r}")
