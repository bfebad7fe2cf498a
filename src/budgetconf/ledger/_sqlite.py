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

How a reservation is held in its scopes' counters, ended and swept is
`_sqlite_leases`'s; leases are timed by this machine's clock (``time.time``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time

from budgetconf.errors import LedgerConflict
from budgetconf.ledger._backend import Backend
from budgetconf.ledger._base import (
    KEPT_RUNS,
    counts,
    reset_part,
    run_records,
    unavailable,
)
from budgetconf.ledger._checks import (
    check_lease,
    check_limit,
    check_reservation,
    check_scope,
    check_window,
    from_nano,
    run_record,
)
from budgetconf.ledger._records import WINDOWS, LedgerStatus, window_bounds, window_key
from budgetconf.ledger._sqlite_leases import finish, lapsed_in, reserve, window_of
from budgetconf.ledger._sqlite_schema import SCHEMA, NotALedger, check_schema, make_schema

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Callable, Iterator
    from typing import Any, Final, TypeVar

    from budgetconf.ledger._address import LedgerURL
    from budgetconf.ledger._checks import Asked, Resetting, Settling
    from budgetconf.ledger._records import Reservation

    T = TypeVar("T")

#: the pause between two tries at opening a database another process holds
RETRY_SECONDS: Final = 0.01
#: the oldest SQLite whose statements the ledger writes (``RETURNING``, the JSON functions)
LEAST_SQLITE: Final = (3, 35, 0)
ADD_RUN: Final = (
    "INSERT INTO ledger_windows (scope, window, runs) VALUES (?, ?, 1)"
    " ON CONFLICT (scope, window) DO UPDATE SET runs = runs + 1"
)
SPENT: Final = (
    "SELECT spent_tokens, spent_nano, runs, reserved_tokens, reserved_nano, reset"
    " FROM ledger_windows WHERE scope = ? AND window = ?"
)
KEEP_RUN: Final = (
    "INSERT INTO ledger_runs SELECT ?, COALESCE(MAX(n), 0) + 1, ? FROM ledger_runs WHERE scope = ?"
    " RETURNING n"
)


class SQLiteLedger(Backend):
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
        if sqlite3.sqlite_version_info < LEAST_SQLITE:
            least = ".".join(map(str, LEAST_SQLITE))
            raise unavailable(
                self.url,
                f"it needs SQLite {least} or newer, and this Python's sqlite3 is"
                f" {sqlite3.sqlite_version}",
            )
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
                found = _transaction(conn, check_schema, write=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                if found != SCHEMA:  # made or migrated by another process meanwhile?
                    _transaction(conn, make_schema)
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
        except NotALedger as exc:
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

    def _reserve(self, asked: Asked) -> bool:
        return self._run(lambda conn: reserve(conn, asked, time.time()))

    def _finish(self, settling: Settling) -> list[tuple[int, str, int]]:
        return self._run(lambda conn: finish(conn, settling, time.time()))

    def _finish_and_reserve(
        self, settling: Settling, asked: Asked
    ) -> tuple[bool | LedgerConflict, list[tuple[int, str, int]]]:
        def step(conn: sqlite3.Connection) -> tuple[bool | LedgerConflict, list[Any]]:
            now = time.time()
            crossed = finish(conn, settling, now)
            try:
                return reserve(conn, asked, now), crossed
            except LedgerConflict as exc:  # the settle stands (committed), as a refusal's does
                return exc, crossed

        return self._run(step)

    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        held = check_reservation(reservation)
        lease = check_lease(lease_seconds)

        def step(conn: sqlite3.Connection) -> bool:
            now = time.time()
            found = conn.execute(
                "UPDATE ledger_reservations SET expires = ?"
                " WHERE id = ? AND held = 1 AND expires > ?",
                (now + lease, held.id, now),
            )
            return found.rowcount >= 1

        return self._run(step)

    def status(
        self, scope: str, *, window: str | None = None, at: _dt.datetime | None = None
    ) -> LedgerStatus:
        scope = check_scope(scope)
        asked = None if window is None else check_window(window)

        def step(conn: sqlite3.Connection) -> tuple[str, tuple[Any, ...], tuple[int, int]]:
            kind = window_of(conn, scope, asked) or "day"
            key = window_key(kind, window_bounds(kind, at)[0])
            row = conn.execute(SPENT, (scope, key)).fetchone() or (0, 0, 0, 0, 0, None)
            return kind, row, lapsed_in(conn, scope, key, time.time())

        kind, (*found, reset), lapsed = self._run(step, write=False)
        spent_tokens, spent_nano, runs, held_tokens, held_nano = counts(
            self.url, "ledger_windows", found
        )
        # what leases past their end hold counts no more, though no sweep has taken it out yet
        held_tokens, held_nano = held_tokens - lapsed[0], held_nano - lapsed[1]
        start, ends = window_bounds(kind, at)
        return LedgerStatus(
            scope=scope,
            window=kind,
            window_start=start,
            window_ends=ends,
            spent_tokens=spent_tokens,
            spent_cost_usd=from_nano(spent_nano),
            reserved_tokens=held_tokens,
            reserved_cost_usd=from_nano(held_nano),
            runs=runs,
            reset=None if reset is None else reset_part(self.url, "ledger_windows", reset),
        )

    def _window_of(self, scope: str) -> str | None:
        return self._run(lambda conn: window_of(conn, scope, None), write=False)

    def _reset(self, resetting: Resetting) -> dict[str, Any]:
        def step(conn: sqlite3.Connection) -> dict[str, Any]:
            scope = resetting.scope
            kind = resetting.window or window_of(conn, scope, None) or "day"
            key = window_key(kind, window_bounds(kind, resetting.at)[0])
            row = conn.execute(SPENT, (scope, key)).fetchone() or (0, 0)
            record = resetting.record(kind, *counts(self.url, "ledger_windows", row[:2]))
            conn.execute(
                "INSERT INTO ledger_windows (scope, window, reset) VALUES (?, ?, ?)"
                " ON CONFLICT (scope, window) DO UPDATE SET"
                " spent_tokens = 0, spent_nano = 0, warned = 0, reset = excluded.reset",
                (scope, key, json.dumps(record["reset"])),
            )
            _keep(conn, scope, json.dumps(record))
            return record

        return self._run(step)

    def _prune(self, before: str) -> int:
        def step(conn: sqlite3.Connection) -> int:
            gone = conn.execute(
                # a record that is not JSON stays, as on Redis, rather than failing the prune
                "DELETE FROM ledger_runs WHERE"
                " CASE WHEN json_valid(record) THEN json_extract(record, '$.ended') END < ?",
                (before,),
            )
            return gone.rowcount

        return self._run(step)

    def record_run(self, record: dict[str, Any]) -> None:
        scopes, text, ended = run_record(record)
        windows = [window_key(kind, window_bounds(kind, ended)[0]) for kind in WINDOWS]

        def step(conn: sqlite3.Connection) -> None:
            for scope in scopes:
                for key in windows:
                    conn.execute(ADD_RUN, (scope, key))
                _keep(conn, scope, text)

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


def _keep(conn: sqlite3.Connection, scope: str, text: str) -> None:
    """Keep a record in ``scope``, and let go of those past the latest `KEPT_RUNS`."""
    (n,) = conn.execute(KEEP_RUN, (scope, text, scope)).fetchone()
    conn.execute("DELETE FROM ledger_runs WHERE scope = ? AND n <= ?", (scope, n - KEPT_RUNS))


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
