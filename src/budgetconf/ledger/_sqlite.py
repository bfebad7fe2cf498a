"""The SQLite ledger: one database file shared by every process on one machine.

The standard library's ``sqlite3``, in WAL mode with ``synchronous=NORMAL``:
a committed settle survives the crash of any process (SIGKILL included); a
power loss may take the last transactions with it. Every change is one
``BEGIN IMMEDIATE`` transaction, so two processes never interleave a read of
the counters and the write that depends on it; a database another process
keeps locked is waited for (5 s by default), then the ledger is unavailable.

Within a process, one connection serves every thread, behind a lock: SQLite
serialises the writers of one file anyway, and one connection keeps the
file's handles to one. A process made by ``fork`` opens its own connection at
its first call, since a connection must not cross a fork.

Leases are timed by this machine's clock (``time.time``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

from budgetconf.ledger._base import (
    KEPT_RUNS,
    REMEMBERED_SECONDS,
    WINDOWS,
    Ledger,
    LedgerStatus,
    Reservation,
    counts,
    run_records,
    unavailable,
    window_bounds,
    window_key,
)
from budgetconf.ledger._checks import (
    Asked,
    check_lease,
    check_limit,
    check_reservation,
    check_scope,
    checked_usage,
    from_nano,
    run_record,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Callable, Iterator
    from typing import Any, Final, TypeVar

    from budgetconf.ledger._address import LedgerURL

    T = TypeVar("T")

#: the schema this code writes; a database of another one is not opened
SCHEMA: Final = "1"
#: the pause between two tries at opening a database another process holds
RETRY_SECONDS: Final = 0.01
#: the table that marks a database as a ledger, and holds its schema's version
MARK: Final = "budgetconf_ledger"
TABLES: Final = (
    f"CREATE TABLE {MARK} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # one counter per scope and window (its kind and start: "day:2026-12-01T00:00:00Z")
    "CREATE TABLE ledger_windows (scope TEXT NOT NULL, window TEXT NOT NULL,"
    " spent_tokens INTEGER NOT NULL DEFAULT 0, spent_nano INTEGER NOT NULL DEFAULT 0,"
    " runs INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope, window)) WITHOUT ROWID",
    # a reservation: held until settled or released, counted while it is held and unexpired,
    # and remembered for a while after, so that a second settle counts nothing
    "CREATE TABLE ledger_leases (id TEXT PRIMARY KEY, scope TEXT NOT NULL,"
    " window TEXT NOT NULL, tokens INTEGER NOT NULL, nano INTEGER NOT NULL,"
    " expires REAL NOT NULL, held INTEGER NOT NULL)",
    "CREATE INDEX ledger_leases_live ON ledger_leases (scope, window, held, expires)",
    "CREATE INDEX ledger_leases_expires ON ledger_leases (expires)",
    # a run record, numbered within its scope by the scope's count of runs ever recorded
    "CREATE TABLE ledger_runs (scope TEXT NOT NULL, n INTEGER NOT NULL, record TEXT NOT NULL,"
    " PRIMARY KEY (scope, n)) WITHOUT ROWID",
)
ADD_SPENT: Final = (
    "INSERT INTO ledger_windows (scope, window, spent_tokens, spent_nano) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (scope, window) DO UPDATE SET"
    " spent_tokens = spent_tokens + excluded.spent_tokens,"
    " spent_nano = spent_nano + excluded.spent_nano"
)
ADD_RUN: Final = (
    "INSERT INTO ledger_windows (scope, window, runs) VALUES (?, ?, 1)"
    " ON CONFLICT (scope, window) DO UPDATE SET runs = runs + 1"
)
HELD: Final = (
    "SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(nano), 0) FROM ledger_leases"
    " WHERE scope = ? AND window = ? AND held = 1 AND expires > ?"
)
SPENT: Final = (
    "SELECT spent_tokens, spent_nano, runs FROM ledger_windows WHERE scope = ? AND window = ?"
)


class SQLiteLedger(Ledger):
    """The ledger in the SQLite database at ``url.path`` (relative to the working directory).

    The database and its tables are made when the file is missing; its folder
    is not. ``busy_seconds`` is how long a database locked by another process
    is waited for before the ledger is unavailable.
    """

    def __init__(self, url: LedgerURL, *, busy_seconds: float = 5.0) -> None:
        super().__init__(url)
        assert url.path is not None
        self._path = os.path.abspath(url.path)  # the working directory when it was opened
        self._busy = busy_seconds
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        with self._lock:
            self._connection()

    # ------------------------------------------------------------------ the connection

    def _connection(self) -> sqlite3.Connection:
        """The open connection of this process, opened (and the schema made) when needed."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None
        folder = os.path.dirname(self._path)
        if not os.path.isdir(folder):
            raise unavailable(
                self.url, f"its folder {folder} does not exist (a ledger's folder is not made)"
            )
        with self._errors():
            conn = self._open()
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        """A new connection to a ledger database, its schema made if the file was empty.

        Opening is tried again until the busy timeout has passed: turning on WAL while
        another process holds a write lock on a database still in rollback mode fails at
        once, without SQLite's busy handler (a deadlock it declines to wait on).
        """
        deadline = time.monotonic() + self._busy
        while True:
            conn = sqlite3.connect(
                self._path, timeout=self._busy, isolation_level=None, check_same_thread=False
            )
            try:
                # judged before anything in it changes: another application's database is
                # refused as it was found, its journal mode included
                made = _transaction(conn, _check_schema, write=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                if not made:
                    _transaction(conn, _make_schema)  # made by another process meanwhile?
            except sqlite3.OperationalError as exc:
                conn.close()
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(RETRY_SECONDS)
                continue
            except BaseException:
                conn.close()
                raise
            return conn

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as `LedgerUnavailable`, naming the ledger and the cause."""
        try:
            yield
        except _NotALedger as exc:
            raise unavailable(self.url, exc) from None
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if _busy(exc):
                text = f"the database stayed locked by another process for {self._busy:g} s"
            raise unavailable(self.url, text) from None
        except sqlite3.DatabaseError as exc:
            raise unavailable(self.url, f"{self._path} is not a ledger database ({exc})") from None

    def _run(self, step: Callable[[sqlite3.Connection], T], *, write: bool = True) -> T:
        """``step`` in one transaction (``BEGIN IMMEDIATE`` when it writes)."""
        with self._lock, self._errors():
            return _transaction(self._connection(), step, write=write)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ the operations

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
        a = Asked(
            scope,
            tokens=tokens,
            cost_usd=cost_usd,
            lease_seconds=lease_seconds,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            window=window,
            at=at,
        )

        def step(conn: sqlite3.Connection) -> bool:
            now = time.time()
            row = conn.execute(SPENT, (a.scope, a.key)).fetchone()
            spent_tokens, spent_nano = (row[0], row[1]) if row else (0, 0)
            held_tokens, held_nano = conn.execute(HELD, (a.scope, a.key, now)).fetchone()
            if _past(a.most_tokens, spent_tokens + held_tokens + a.tokens) or _past(
                a.most_nano, spent_nano + held_nano + a.nano
            ):
                return False
            conn.execute(
                "INSERT INTO ledger_leases VALUES (?, ?, ?, ?, ?, ?, 1)",
                (a.rid, a.scope, a.key, a.tokens, a.nano, now + a.lease),
            )
            conn.execute("DELETE FROM ledger_leases WHERE expires < ?", (now - REMEMBERED_SECONDS,))
            return True

        return a.reservation() if self._run(step) else None

    def settle(self, reservation: Reservation, *, tokens: int, cost_usd: float) -> None:
        self._finish(reservation, checked_usage(tokens, cost_usd))

    def release(self, reservation: Reservation) -> None:
        self._finish(reservation, None)

    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        held = check_reservation(reservation)
        lease = check_lease(lease_seconds)

        def step(conn: sqlite3.Connection) -> bool:
            now = time.time()
            found = conn.execute(
                "UPDATE ledger_leases SET expires = ? WHERE id = ? AND held = 1 AND expires > ?",
                (now + lease, held.id, now),
            )
            return found.rowcount == 1

        return self._run(step)

    def _finish(self, reservation: Reservation, used: tuple[int, int] | None) -> None:
        """End ``reservation``: add what it ``used`` to its window, or nothing when released."""
        check_reservation(reservation)
        key = window_key(reservation.window, reservation.window_start)

        def step(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT held FROM ledger_leases WHERE id = ?", (reservation.id,)
            ).fetchone()
            if row is not None and not row[0]:
                return  # settled or released already
            if row is None:  # forgotten long after its lease ended: it counts, and is remembered
                conn.execute(
                    "INSERT INTO ledger_leases VALUES (?, ?, ?, 0, 0, ?, 0)",
                    (reservation.id, reservation.scope, key, time.time()),
                )
            else:
                conn.execute("UPDATE ledger_leases SET held = 0 WHERE id = ?", (reservation.id,))
            if used is not None:
                conn.execute(ADD_SPENT, (reservation.scope, key, *used))

        self._run(step)

    def status(
        self, scope: str, *, window: str = "day", at: _dt.datetime | None = None
    ) -> LedgerStatus:
        scope = check_scope(scope)
        start, ends = window_bounds(window, at)
        key = window_key(window, start)

        def step(conn: sqlite3.Connection) -> tuple[Any, ...]:
            row = conn.execute(SPENT, (scope, key)).fetchone() or (0, 0, 0)
            held = conn.execute(HELD, (scope, key, time.time())).fetchone()
            return (*row, *held)

        found = counts(self.url, "ledger_windows", self._run(step, write=False))
        spent_tokens, spent_nano, runs, held_tokens, held_nano = found
        return LedgerStatus(
            scope=scope,
            window=window,
            window_start=start,
            window_ends=ends,
            spent_tokens=spent_tokens,
            spent_cost_usd=from_nano(spent_nano),
            reserved_tokens=held_tokens,
            reserved_cost_usd=from_nano(held_nano),
            runs=runs,
        )

    def record_run(self, record: dict[str, Any]) -> None:
        scope, text, ended = run_record(record)
        windows = [window_key(kind, window_bounds(kind, ended)[0]) for kind in WINDOWS]

        def step(conn: sqlite3.Connection) -> None:
            for key in windows:
                conn.execute(ADD_RUN, (scope, key))
            (n,) = conn.execute(SPENT, (scope, "none")).fetchone()[2:]
            conn.execute("INSERT INTO ledger_runs VALUES (?, ?, ?)", (scope, n, text))
            conn.execute(
                "DELETE FROM ledger_runs WHERE scope = ? AND n <= ?", (scope, n - KEPT_RUNS)
            )

        self._run(step)

    def runs(self, scope: str, *, limit: int = 20) -> list[dict[str, Any]]:
        scope = check_scope(scope)
        count = check_limit(limit)

        def step(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT record FROM ledger_runs WHERE scope = ? ORDER BY n DESC LIMIT ?",
                (scope, count),
            ).fetchall()

        found = self._run(step, write=False)
        return run_records(self.url, "ledger_runs", (text for (text,) in found))


class _NotALedger(Exception):
    """A database that holds something else, or a ledger of a schema this code does not know."""


def _past(maximum: int | None, total: int) -> bool:
    return maximum is not None and total > maximum


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` says another connection holds the database."""
    text = str(exc)
    return "locked" in text or "busy" in text


def _transaction(
    conn: sqlite3.Connection, step: Callable[[sqlite3.Connection], T], *, write: bool = True
) -> T:
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = step(conn)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _check_schema(conn: sqlite3.Connection) -> bool:
    """Whether the database holds a ledger (False: it is empty); `_NotALedger` if it holds
    anything else."""
    tables = {
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if MARK in tables:
        row = conn.execute(f"SELECT value FROM {MARK} WHERE name = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA:
            found = "no" if row is None else repr(row[0])
            raise _NotALedger(f"its schema is {found}, not {SCHEMA!r}: another budgetconf's?")
        return True
    if tables:
        shown = ", ".join(sorted(tables)[:5])
        raise _NotALedger(f"the database is not a ledger: it holds other tables ({shown})")
    return False


def _make_schema(conn: sqlite3.Connection) -> None:
    """Make the ledger's tables in an empty database (in a write transaction)."""
    if _check_schema(conn):
        return
    for statement in TABLES:
        conn.execute(statement)
    conn.execute(f"INSERT INTO {MARK} VALUES ('schema', ?)", (SCHEMA,))
