"""A ledger operation's arguments, checked before anything is written, and put in the units
a backend writes: tokens as they are, costs in whole billionths of a dollar.

Every backend checks through these, so each refuses the same arguments with the same
`UsageError`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math

from budgetconf._record import Record, set_field
from budgetconf._usage import MOST_COST_USD, MOST_TOKENS
from budgetconf.errors import UsageError
from budgetconf.ledger._address import is_scope
from budgetconf.ledger._base import KEPT_RUNS, RUN_KEYS, Reservation, iso, window_bounds, window_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

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
    cost and the cost maximum in billionths (``nano``, ``most_nano``), the window's counter
    (``key``) and a new reservation id (``rid``)."""

    __slots__ = (
        "ends",
        "key",
        "lease",
        "most_nano",
        "most_tokens",
        "nano",
        "rid",
        "scope",
        "start",
        "tokens",
        "window",
    )

    scope: str
    tokens: int
    nano: int
    lease: float
    most_tokens: int | None
    most_nano: int | None
    window: str
    start: _dt.datetime | None
    ends: _dt.datetime | None
    key: str
    rid: str

    def __init__(
        self,
        scope: object,
        *,
        tokens: object,
        cost_usd: object,
        lease_seconds: object,
        max_tokens: object,
        max_cost_usd: object,
        window: str,
        at: _dt.datetime | None,
    ) -> None:
        import uuid

        set_field(self, "scope", check_scope(scope))
        held, nano = check_used(tokens, cost_usd)
        set_field(self, "tokens", held)
        set_field(self, "nano", nano)
        set_field(self, "lease", check_lease(lease_seconds))
        set_field(self, "most_tokens", check_maximum_tokens(max_tokens))
        set_field(self, "most_nano", check_maximum_cost(max_cost_usd))
        start, ends = window_bounds(window, at)
        set_field(self, "window", window)
        set_field(self, "start", start)
        set_field(self, "ends", ends)
        set_field(self, "key", window_key(window, start))
        set_field(self, "rid", uuid.uuid4().hex)

    def reservation(self) -> Reservation:
        """The reservation this one makes, once the backend has granted it."""
        return Reservation(
            id=self.rid,
            scope=self.scope,
            window=self.window,
            window_start=self.start,
            window_ends=self.ends,
            tokens=self.tokens,
            cost_usd=from_nano(self.nano),
        )


def checked_usage(tokens: object, cost_usd: object) -> tuple[int, int]:
    """What a call used, checked, as a settle writes it: tokens, and billionths of a dollar."""
    return check_used(tokens, cost_usd)


def run_record(record: object) -> tuple[str, str, _dt.datetime]:
    """A run record as a ledger keeps it: its scope, its JSON text, and when it ended.

    The record is `RUN_KEYS` in their order (a missing key is None, another is
    refused); a time may be given as an aware datetime, and is kept as ISO
    8601 UTC with ``Z``. A record with no ``ended`` ended now.
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
    for key in ("started", "ended"):
        moment = kept[key]
        if isinstance(moment, _dt.datetime):
            kept[key] = iso(_aware(moment, key))
    try:
        text = json.dumps(kept, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a run record must be plain JSON values: {exc}") from None
    return scope, text, _ended(kept["ended"])


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
