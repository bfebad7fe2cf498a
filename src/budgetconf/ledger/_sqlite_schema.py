"""The SQLite ledger's tables: made in an empty database, judged in one that is not, and a
ledger of the previous schema brought to this one in place.
"""

from __future__ import annotations

import sqlite3
import time

from budgetconf.ledger._base import keep_latest
from budgetconf.ledger._records import WINDOWS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

#: the schema this code writes; a ledger of schema 1 (the previous version's) is migrated in
#: place when it is opened, and a database of any other one is not opened
SCHEMA: Final = "2"
#: the table that marks a database as a ledger, and holds its schema's version
MARK: Final = "budgetconf_ledger"
RESERVATIONS: Final = (
    # one row per reservation: what it holds in each of its scopes' ``windows`` (a JSON list of
    # [scope, counter]), which each counter's reserved columns count while ``held`` is 1; past
    # its lease a sweep takes it back out of them (``held`` 2), settling or releasing ends it
    # (0), and it is remembered for a day after its lease or its settle, whichever is later, so
    # that a second settle counts nothing. Named apart from schema 1's ``ledger_leases``: a
    # process of the previous version still running finds no table to settle in, rather than
    # ending a lease without giving back what it holds
    "CREATE TABLE ledger_reservations (id TEXT PRIMARY KEY, tokens INTEGER NOT NULL,"
    " nano INTEGER NOT NULL, expires REAL NOT NULL, held INTEGER NOT NULL,"
    " windows TEXT NOT NULL) WITHOUT ROWID",
    "CREATE INDEX ledger_reservations_live ON ledger_reservations (expires) WHERE held = 1",
    "CREATE INDEX ledger_reservations_expires ON ledger_reservations (expires)",
)
# the window each scope counts in, recorded by the first reservation that draws on it
SCOPES: Final = (
    "CREATE TABLE ledger_scopes (scope TEXT PRIMARY KEY, window TEXT NOT NULL) WITHOUT ROWID"
)
TABLES: Final = (
    f"CREATE TABLE {MARK} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # one counter per scope and window (its kind and start: "day:2026-12-01T00:00:00Z"): what
    # was spent and what live leases hold in it; warned once a settle has crossed the fleet's
    # warning share, reset the window's latest reset
    "CREATE TABLE ledger_windows (scope TEXT NOT NULL, window TEXT NOT NULL,"
    " spent_tokens INTEGER NOT NULL DEFAULT 0, spent_nano INTEGER NOT NULL DEFAULT 0,"
    " runs INTEGER NOT NULL DEFAULT 0, warned INTEGER NOT NULL DEFAULT 0, reset TEXT,"
    " reserved_tokens INTEGER NOT NULL DEFAULT 0, reserved_nano INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (scope, window)) WITHOUT ROWID",
    *RESERVATIONS,
    SCOPES,
    # a run or reset record, numbered within each scope it is kept in, newest highest
    "CREATE TABLE ledger_runs (scope TEXT NOT NULL, n INTEGER NOT NULL, record TEXT NOT NULL,"
    " PRIMARY KEY (scope, n)) WITHOUT ROWID",
)
#: the columns schema 2 adds to each counter of schema 1
ADDED_COLUMNS: Final = (
    "warned INTEGER NOT NULL DEFAULT 0",
    "reset TEXT",
    "reserved_tokens INTEGER NOT NULL DEFAULT 0",
    "reserved_nano INTEGER NOT NULL DEFAULT 0",
)


class NotALedger(Exception):
    """A database that holds something else, or a ledger of a schema this code does not know."""


def check_schema(conn: sqlite3.Connection) -> str | None:
    """The schema of the ledger the database holds (None: it is empty); `NotALedger` if it
    holds anything else, or a ledger of a schema this code does not know."""
    tables = {
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if MARK in tables:
        row = conn.execute(f"SELECT value FROM {MARK} WHERE name = 'schema'").fetchone()
        if row is None or row[0] not in (SCHEMA, "1"):
            found = "no" if row is None else repr(row[0])
            raise NotALedger(f"its schema is {found}, not {SCHEMA!r}: another budgetconf's?")
        return str(row[0])
    if tables:
        shown = ", ".join(sorted(tables)[:5])
        raise NotALedger(f"the database is not a ledger: it holds other tables ({shown})")
    return None


def make_schema(conn: sqlite3.Connection) -> None:
    """Make the ledger's tables in an empty database, or bring a ledger of the previous schema
    to this one (in a write transaction)."""
    found = check_schema(conn)
    if found == SCHEMA:
        return
    if found == "1":
        _migrate(conn)
        return
    for statement in TABLES:
        conn.execute(statement)
    conn.execute(f"INSERT INTO {MARK} VALUES ('schema', ?)", (SCHEMA,))


def _migrate(conn: sqlite3.Connection) -> None:
    """A ledger of schema 1 brought to schema 2, in place: each window's warning, reset and
    what live leases hold in it, a lease per reservation, and the window each scope counts in.

    Under schema 1 each window kind was a counter of its own; a scope drawn on under several
    keeps the window of its latest reservation (a reservation is remembered for a day after its
    lease), else of its latest counter with spend, and `Ledger.reset` reaches the others.
    """
    now = time.time()
    for column in ADDED_COLUMNS:
        conn.execute(f"ALTER TABLE ledger_windows ADD COLUMN {column}")
    for statement in RESERVATIONS:
        conn.execute(statement)
    # a lease held past its end counts no more: it is swept already
    conn.execute(
        "INSERT INTO ledger_reservations SELECT id, tokens, nano, expires,"
        " CASE WHEN held = 1 AND expires <= ? THEN 2 ELSE held END,"
        " json_array(json_array(scope, window)) FROM ledger_leases",
        (now,),
    )
    conn.execute(
        "INSERT INTO ledger_windows (scope, window, reserved_tokens, reserved_nano)"
        " SELECT scope, window, SUM(tokens), SUM(nano) FROM ledger_leases"
        " WHERE held = 1 AND expires > ? GROUP BY scope, window"
        " ON CONFLICT (scope, window) DO UPDATE SET reserved_tokens = excluded.reserved_tokens,"
        " reserved_nano = excluded.reserved_nano",
        (now,),
    )
    conn.execute(SCOPES)
    latest: dict[str, tuple[int, str, str]] = {}  # scope: (rank, moment, window kind)
    for scope, key, moment in conn.execute(
        "SELECT scope, window, MAX(expires) FROM ledger_leases GROUP BY scope, window"
    ):
        keep_latest(latest, scope, (1, f"{moment:020.3f}", key.partition(":")[0]))
    conn.execute("DROP TABLE ledger_leases")  # and its indexes
    for scope, key in conn.execute(
        "SELECT scope, window FROM ledger_windows WHERE spent_tokens > 0 OR spent_nano > 0"
    ):
        kind, _, start = key.partition(":")
        keep_latest(latest, scope, (0, start, kind))
    conn.executemany(
        "INSERT INTO ledger_scopes VALUES (?, ?)",
        ((scope, kind) for scope, (_, _, kind) in latest.items() if kind in WINDOWS),
    )
    conn.execute(f"UPDATE {MARK} SET value = ? WHERE name = 'schema'", (SCHEMA,))
