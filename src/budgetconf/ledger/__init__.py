"""A budget shared by many runs, processes and machines: the ledger.

A ledger keeps, for each scope (``user:u-1042``, ``team:research``) and its UTC
window (an hour, a day, an ISO week, a month, or none), what the runs drawing
on it have spent and what they hold reserved. A run reserves before each model
call, in its own scope and its parents at once, and settles after: a
reservation that would take spent and reserved past any one scope's maximum
is refused before the call is made, and nothing is held anywhere; a
reservation not settled within its lease expires, so a worker that dies frees
what it held.

`open_ledger` opens one by its address: ``sqlite:///path.db`` on one machine
(the standard library's ``sqlite3``), ``redis://host:port/db`` across many
(the ``redis`` client, extra ``budgetconf[redis]``). Every backend is a
`Ledger`, and behaves the same; `_address` holds the table of them.

The package loads its records when one is first asked for: reading an
address (every resolution with a ``ledger-url`` field does) needs none.
"""

from __future__ import annotations

from budgetconf.errors import LedgerConflict, LedgerUnavailable, UsageError
from budgetconf.ledger._address import SCHEMES, LedgerURL, parse_url, shown_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    from budgetconf.ledger._base import KEPT_RUNS, Ledger
    from budgetconf.ledger._records import (
        WINDOWS,
        HeldScope,
        LedgerStatus,
        Reservation,
        ScopeLimit,
        ScopeWarning,
        iso,
        window_bounds,
    )

__all__ = [
    "KEPT_RUNS",
    "WINDOWS",
    "HeldScope",
    "Ledger",
    "LedgerConflict",
    "LedgerStatus",
    "LedgerURL",
    "LedgerUnavailable",
    "Reservation",
    "ScopeLimit",
    "ScopeWarning",
    "iso",
    "open_ledger",
    "parse_url",
    "window_bounds",
]

#: the names `_base` and `_records` give the package, loaded when first asked for
_BASE: Final = frozenset(
    {
        "KEPT_RUNS",
        "WINDOWS",
        "HeldScope",
        "Ledger",
        "LedgerStatus",
        "Reservation",
        "ScopeLimit",
        "ScopeWarning",
        "iso",
        "window_bounds",
    }
)


def open_ledger(url: str | LedgerURL) -> Ledger:
    """The ledger at ``url``: its text, or an address `parse_url` has read.

    `UsageError` for an address that is not a ledger's, `LedgerUnavailable` when
    it cannot be reached.
    """
    if isinstance(url, LedgerURL):
        address = url
    elif isinstance(url, str):
        try:
            address = parse_url(url)
        except ValueError as exc:
            raise UsageError(f"ledger URL {shown_url(url)!r} {exc}") from None
    else:
        raise UsageError(f"open_ledger() takes a URL string, not {type(url).__name__}")
    row = SCHEMES[address.scheme]  # its backend, imported now
    # __import__, not importlib.import_module: the importlib package would cost its own import
    module = __import__(f"budgetconf.ledger._{row.backend}", fromlist=[row.ledger])
    ledger: Ledger = getattr(module, row.ledger)(address)
    return ledger


def __getattr__(name: str) -> object:
    # datetime and json, which the records need, cost `import budgetconf` a few milliseconds
    if name in _BASE:
        from budgetconf.ledger import _base, _records

        return getattr(_records if hasattr(_records, name) else _base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
