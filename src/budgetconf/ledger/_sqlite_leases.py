"""The SQLite ledger's reservations: the statements of the transactions that hold a
reservation in its scopes' counters, end it, and take back what a lease that ended unsettled
holds, each run in a transaction the ledger has begun.

Each counter (a scope's window, a row of ``ledger_windows``) holds both what was spent in it
and what live reservations hold in it; a reservation is one row of ``ledger_reservations``
naming its counters. A reservation or settle is the same few statements however many scopes
it draws on: each reads or writes them all. A lease that ends unsettled is taken out of its
counters by the first reservation after its end; a status, which only reads, leaves it out
meanwhile.
"""

from __future__ import annotations

import functools
import json

from budgetconf.ledger._base import REMEMBERED_SECONDS, conflict

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3

    from budgetconf.ledger._checks import Asked, Settling


def window_of(conn: sqlite3.Connection, scope: str, asked: str | None) -> str | None:
    """The window ``scope`` counts in (None: none is recorded yet); `LedgerConflict` when
    ``asked`` is another."""
    row = conn.execute("SELECT window FROM ledger_scopes WHERE scope = ?", (scope,)).fetchone()
    return _recorded(scope, None if row is None else str(row[0]), asked)


def _recorded(scope: str, found: str | None, asked: str | None) -> str | None:
    """The window ``scope`` counts in: the one ``found`` recorded, else the one ``asked``;
    `LedgerConflict` when both are given and differ."""
    if found is None:
        return asked
    if asked is not None and found != asked:
        raise conflict(scope, found, asked)
    return found


def reserve(conn: sqlite3.Connection, a: Asked, now: float) -> bool:
    """Hold ``a`` in each of its scopes, in the transaction of ``conn``; False (and nothing
    held) when one of them has no room; `LedgerConflict` (nothing held) when one counts in
    another window, whether or not the others have room."""
    _sweep(conn, now)
    found = {
        scope: (window, tokens or 0, nano or 0)
        for scope, window, tokens, nano in conn.execute(
            _reading(len(a.held)), [value for part in a.held for value in (part.scope, part.key)]
        )
    }
    for part in a.held:
        _recorded(part.scope, found[part.scope][0], part.window)
    if not _room(a, found):
        return False
    windows = [[part.scope, part.key] for part in a.held]
    conn.execute(
        "INSERT INTO ledger_reservations VALUES (?, ?, ?, ?, 1, ?)",
        (a.rid, a.tokens, a.nano, now + a.lease, json.dumps(windows)),
    )
    conn.execute(_adding(len(windows)), [v for w in windows for v in (*w, 0, 0, a.tokens, a.nano)])
    new = [(part.scope, part.window) for part in a.held if found[part.scope][0] is None]
    if new:
        conn.executemany("INSERT INTO ledger_scopes VALUES (?, ?)", new)
    conn.execute("DELETE FROM ledger_reservations WHERE expires < ?", (now - REMEMBERED_SECONDS,))
    return True


def _room(a: Asked, found: dict[str, tuple[str | None, int, int]]) -> bool:
    """Whether each of ``a``'s scopes has room for it under its maxima: spent + held + asked
    (``found``: each scope's recorded window, and what its counter has spent and holds)."""
    for part, (most_tokens, most_nano) in zip(a.held, a.most, strict=True):
        _, tokens, nano = found[part.scope]
        if _past(most_tokens, tokens + a.tokens) or _past(most_nano, nano + a.nano):
            return False
    return True


def _sweep(conn: sqlite3.Connection, now: float) -> None:
    """Take what each lease past its end holds out of its counters, in the transaction of
    ``conn``: the next reservation after a lease's end does (a status, which only reads, leaves
    it out by `lapsed_in`)."""
    ended = _lapsed(conn, now)
    if not ended:
        return
    swept = [(i,) for i, *_ in ended]
    conn.executemany("UPDATE ledger_reservations SET held = 2 WHERE id = ?", swept)
    conn.executemany(
        _adding(1),
        [
            (scope, key, 0, 0, -tokens, -nano)
            for _, tokens, nano, windows in ended
            for scope, key in json.loads(windows)
        ],
    )


def lapsed_in(conn: sqlite3.Connection, scope: str, key: str, now: float) -> tuple[int, int]:
    """What leases past their end, not yet swept, still hold in one counter: tokens and
    billionths."""
    found = [
        (tokens, nano)
        for _, tokens, nano, windows in _lapsed(conn, now)
        if [scope, key] in json.loads(windows)
    ]
    return sum(tokens for tokens, _ in found), sum(nano for _, nano in found)


def _lapsed(conn: sqlite3.Connection, now: float) -> list[tuple[str, int, int, str]]:
    """The leases still counted in their counters though they have ended: id, tokens,
    billionths, and the windows they hold them in (JSON)."""
    return conn.execute(
        # by the index of live leases alone: the other would walk a day of ended ones
        "SELECT id, tokens, nano, windows FROM ledger_reservations"
        " INDEXED BY ledger_reservations_live WHERE held = 1 AND expires <= ?",
        (now,),
    ).fetchall()


def finish(conn: sqlite3.Connection, settling: Settling, now: float) -> list[tuple[int, str, int]]:
    """End a reservation in the transaction of ``conn``: take what it holds out of the counters
    its lease row names, and add what it used to its scopes' (nothing when released, or when it
    has ended before); the warnings crossed."""
    r, used = settling.reservation, settling.used
    lease = conn.execute(
        "SELECT tokens, nano, held, windows FROM ledger_reservations WHERE id = ?", (r.id,)
    ).fetchone()
    if lease is None:  # forgotten long after its lease ended: it counts, and is remembered
        conn.execute("INSERT INTO ledger_reservations VALUES (?, 0, 0, ?, 0, '[]')", (r.id, now))
        lease = (0, 0, 2, "[]")
    elif lease[2] == 0:
        return []  # settled or released already
    else:
        conn.execute(  # remembered for a day from now, though its lease ended long ago
            "UPDATE ledger_reservations SET held = 0, expires = MAX(expires, ?) WHERE id = ?",
            (now, r.id),
        )
    change = _changes(settling, lease)
    if not change:
        return []
    values = [value for (scope, key), counts in change.items() for value in (scope, key, *counts)]
    if used is None or all(warn == (None, None) for warn in settling.warn):
        conn.execute(_adding(len(change)), values)
        return []
    after = {
        (scope, key): (tokens, nano, warned)
        for scope, key, tokens, nano, warned in conn.execute(
            _adding(len(change)) + " RETURNING scope, window, spent_tokens, spent_nano, warned",
            values,
        )
    }
    crossed = [_crossed(settling, index, after) for index in range(len(r.scopes))]
    warnings = [warning for warning in crossed if warning is not None]
    conn.executemany(
        "UPDATE ledger_windows SET warned = 1 WHERE scope = ? AND window = ?",
        [(r.scopes[index].scope, r.scopes[index].key) for index, _, _ in warnings],
    )
    return warnings


def _changes(
    settling: Settling, lease: tuple[int, int, int, str]
) -> dict[tuple[str, str], list[int]]:
    """What a settle changes in each counter (spent tokens and billionths, reserved tokens and
    billionths): what was used, in each of the reservation's scopes; what the lease holds taken
    out of the counters its row names, unless a sweep has (``held`` 2) or nothing is held."""
    change: dict[tuple[str, str], list[int]] = {}
    if settling.used is not None:
        for part in settling.reservation.scopes:
            change[part.scope, part.key] = [*settling.used, 0, 0]
    tokens, nano, held, windows = lease
    if held == 1:
        for scope, key in json.loads(windows):
            change.setdefault((scope, key), [0, 0, 0, 0])[2:] = [-tokens, -nano]
    return change


def _crossed(
    settling: Settling, index: int, after: dict[tuple[str, str], tuple[int, int, int]]
) -> tuple[int, str, int] | None:
    """The warning a settle crosses first in the fleet in the window of the reservation's scope
    ``index`` (``after``: each window's spend after it, and whether it warned before), if any:
    cost before tokens."""
    part = settling.reservation.scopes[index]
    spent_tokens, spent_nano, warned = after[part.scope, part.key]
    warn_tokens, warn_nano = settling.warn[index]
    if warned:
        return None
    if warn_nano is not None and spent_nano >= warn_nano:
        return (index, "nano", spent_nano)
    if warn_tokens is not None and spent_tokens >= warn_tokens:
        return (index, "tokens", spent_tokens)
    return None


@functools.cache
def _reading(count: int) -> str:
    """The read of ``count`` scopes' windows recorded and counters asked (each two values:
    scope, window): each scope's recorded window (None: none yet), and its counter's spent and
    held tokens and billionths (None: no counter yet), in one statement by primary keys."""
    rows = ", ".join(["(?, ?)"] * count)
    return (
        f"WITH asked (scope, window) AS (VALUES {rows}) SELECT asked.scope, s.window,"
        " w.spent_tokens + w.reserved_tokens, w.spent_nano + w.reserved_nano FROM asked"
        " LEFT JOIN ledger_scopes AS s ON s.scope = asked.scope"
        " LEFT JOIN ledger_windows AS w ON w.scope = asked.scope AND w.window = asked.window"
    )


@functools.cache
def _adding(count: int) -> str:
    """The upsert that adds to ``count`` counters, each six values: scope, window, spent tokens
    and billionths, reserved tokens and billionths."""
    rows = ", ".join(["(?, ?, ?, ?, ?, ?)"] * count)
    return (
        "INSERT INTO ledger_windows (scope, window, spent_tokens, spent_nano, reserved_tokens,"
        f" reserved_nano) VALUES {rows} ON CONFLICT (scope, window) DO UPDATE SET"
        " spent_tokens = spent_tokens + excluded.spent_tokens,"
        " spent_nano = spent_nano + excluded.spent_nano,"
        " reserved_tokens = reserved_tokens + excluded.reserved_tokens,"
        " reserved_nano = reserved_nano + excluded.reserved_nano"
    )


def _past(maximum: int | None, total: int) -> bool:
    return maximum is not None and total > maximum
