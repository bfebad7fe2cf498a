"""A budget shared by many runs, processes and machines: the ledger.

A ledger keeps, for each scope (``team-a``) and UTC window (an hour, a day, a
month, or none), what the runs drawing on it have spent and what they hold
reserved. A run reserves before each model call and settles after: a
reservation that would take spent and reserved past the scope's maximum is
refused before the call is made, and a reservation not settled within its
lease expires, so a worker that dies frees what it held.

`open_ledger` opens one by its address: ``sqlite:///path.db`` on one machine
(the standard library's ``sqlite3``), ``redis://host:port/db`` across many
(the ``redis`` client, extra ``budgetconf[redis]``). Every backend is a
`Ledger`, and behaves the same.
"""

from __future__ import annotations

from budgetconf._ledger_url import parse_url
from budgetconf.errors import LedgerUnavailable, UsageError
from budgetconf.ledger._base import (
    KEPT_RUNS,
    WINDOWS,
    Ledger,
    LedgerStatus,
    Reservation,
    iso,
    window_bounds,
)

__all__ = [
    "KEPT_RUNS",
    "WINDOWS",
    "Ledger",
    "LedgerStatus",
    "LedgerUnavailable",
    "Reservation",
    "iso",
    "open_ledger",
    "window_bounds",
]


def open_ledger(url: str) -> Ledger:
    """The ledger at ``url``.

    `UsageError` for an address that is not a ledger's, `LedgerUnavailable` when
    it cannot be reached.
    """
    if not isinstance(url, str):
        raise UsageError(f"open_ledger() takes a URL string, not {type(url).__name__}")
    try:
        address = parse_url(url)
    except ValueError as exc:
        from budgetconf._ledger_url import shown_url

        raise UsageError(f"ledger URL {shown_url(url)!r} {exc}") from None
    if address.backend == "sqlite":
        from budgetconf.ledger._sqlite import SQLiteLedger

        return SQLiteLedger(address)
    from budgetconf.ledger._redis import RedisLedger

    return RedisLedger(address)
