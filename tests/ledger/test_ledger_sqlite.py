"""What only the SQLite ledger does: its file, its modes, a database locked by another process."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetconf.cli import main
from budgetconf.ledger import (
    Ledger,
    LedgerConflict,
    LedgerUnavailable,
    Reservation,
    ScopeLimit,
    open_ledger,
    window_bounds,
)
from budgetconf.ledger._address import parse_url
from budgetconf.ledger._sqlite import SQLiteLedger
from budgetconf.loop import LoopExecutor, ScriptedModel

#: holds a write lock on the database named by argv[1] until it is killed
LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""


def test_a_missing_database_is_made_with_its_tables_in_wal_mode(tmp_path: Path) -> None:
    """The file and the ledger's tables are made; the journal is WAL, synchronous NORMAL."""
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as led:
        assert isinstance(led, SQLiteLedger)
        conn = led._connection()
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    assert {name for (name,) in tables} >= {
        "budgetconf_ledger", "ledger_windows", "ledger_reservations", "ledger_scopes", "ledger_runs"
    }  # fmt: skip


def test_a_relative_path_is_relative_to_the_working_directory(tmp_path: Path) -> None:
    """sqlite:///ledgers/x.db opens ./ledgers/x.db of the process, wherever it moves after."""
    (tmp_path / "work" / "ledgers").mkdir()
    with open_ledger("sqlite:///ledgers/x.db") as led:
        os.chdir(tmp_path)
        led.settle(_hold(led), tokens=5, cost_usd=0)
        assert led.status("team-a").spent_tokens == 5
    assert (tmp_path / "work" / "ledgers" / "x.db").is_file()


def test_a_missing_folder_is_not_made(tmp_path: Path) -> None:
    """The ledger's folder must exist: the error says so, and nothing is made."""
    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger(f"sqlite:///{tmp_path}/nowhere/ledger.db")
    assert str(caught.value) == (
        f"ledger sqlite:///{tmp_path}/nowhere/ledger.db is unavailable: its folder"
        f" {tmp_path}/nowhere does not exist (a ledger's folder is not made)"
    )
    assert not (tmp_path / "nowhere").exists()


def test_a_file_that_is_not_a_database_is_not_a_ledger(tmp_path: Path) -> None:
    """Garbage bytes: the ledger is unavailable, the message names it and the cause; no change."""
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 100)
    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger(f"sqlite:///{path}")
    assert str(caught.value) == (
        f"ledger sqlite:///{path} is unavailable: {path} is not a ledger database"
        " (file is not a database)"
    )
    assert path.read_bytes() == b"these are my notes, not a database\n" * 100


def test_a_database_with_other_tables_is_not_a_ledger(tmp_path: Path) -> None:
    """Someone else's SQLite database is left alone, and named in the message."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    with pytest.raises(LedgerUnavailable, match=r"not a ledger: it holds other tables \(users\)"):
        open_ledger(f"sqlite:///{path}")
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    assert [name for (name,) in tables] == ["users"]


def test_a_database_that_is_not_a_ledger_keeps_its_journal_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ledger status, and a run, pointed at an application's database refuse it before they
    change anything in it: its journal stays a rollback journal, no WAL file appears."""
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    url = f"sqlite:///{path}"
    assert main(["ledger", "status", "--set", f"ledger.url={url}"]) == 1
    assert "not a ledger: it holds other tables (users)" in capsys.readouterr().err
    result = LoopExecutor(ScriptedModel([{"content": "x"}]), budget={"ledger.url": url}).run("go")
    assert result.stop_reason == "error"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("app.db")] == ["app.db"]


def test_a_ledger_of_another_schema_is_not_opened(tmp_path: Path) -> None:
    """A ledger written by another version of the schema is refused, not rewritten."""
    path = tmp_path / "ledger.db"
    open_ledger(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE budgetconf_ledger SET value = '9' WHERE name = 'schema'")
    conn.close()
    with pytest.raises(LedgerUnavailable, match="its schema is '9', not '2'"):
        open_ledger(f"sqlite:///{path}")


def test_a_folder_in_the_files_place_is_not_a_ledger(tmp_path: Path) -> None:
    """A path that names a folder: unavailable, with SQLite's cause."""
    (tmp_path / "ledger.db").mkdir()
    with pytest.raises(LedgerUnavailable, match="unable to open database file"):
        open_ledger(f"sqlite:///{tmp_path}/ledger.db")


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A ledger database that another process holds locked, until the test ends."""
    path = tmp_path / "ledger.db"
    open_ledger(f"sqlite:///{path}").close()
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert locker.stdout is not None
        assert locker.stdout.readline() == "locked\n"
        yield path
    finally:
        locker.kill()
        locker.wait(10)
        assert locker.stdout is not None
        locker.stdout.close()


def test_a_database_locked_past_the_wait_makes_the_ledger_unavailable(locked: Path) -> None:
    """Every change waits busy_seconds for the lock, then says the database stayed locked;
    reading needs no lock (WAL), so status and runs still answer."""
    led = SQLiteLedger(parse_url(f"sqlite:///{locked}"), busy_seconds=0.3)
    reservation = Reservation(
        id="r", scope="team-a", window="none", window_start=None, window_ends=None,
        tokens=1, cost_usd=0,
    )  # fmt: skip
    changes = (
        lambda: _hold(led),
        lambda: led.settle(reservation, tokens=1, cost_usd=0),
        lambda: led.release(reservation),
        lambda: led.record_run({"scope": "team-a"}),
    )
    for call in changes:
        began = time.monotonic()
        with pytest.raises(LedgerUnavailable) as caught:
            call()
        assert 0.25 <= time.monotonic() - began < 3
        assert str(caught.value) == (
            f"ledger sqlite:///{locked} is unavailable:"
            " the database stayed locked by another process for 0.3 s"
        )
    assert led.status("team-a").spent_tokens == 0
    assert led.runs("team-a") == []
    led.close()


def test_the_wait_for_a_locked_database_is_five_seconds(locked: Path) -> None:
    """open_ledger's ledger opens a locked ledger, waits 5 s to change it, not more."""
    with open_ledger(f"sqlite:///{locked}") as led:
        began = time.monotonic()
        with pytest.raises(LedgerUnavailable, match="stayed locked by another process for 5 s"):
            _hold(led)
        assert 4.5 <= time.monotonic() - began < 8


def test_a_ledger_locked_for_a_moment_is_waited_for(tmp_path: Path) -> None:
    """A lock released within the wait costs only the wait: the reservation is made."""
    path = tmp_path / "ledger.db"
    led = SQLiteLedger(parse_url(f"sqlite:///{path}"), busy_seconds=5)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    timer = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    timer.start()
    assert _hold(led) is not None
    timer.join()
    other.close()
    led.close()


def test_a_new_database_another_process_is_writing_is_waited_for_at_open(
    tmp_path: Path,
) -> None:
    """Turning WAL on fails at once, past SQLite's busy handler, while another connection
    holds a write lock on a database still in rollback mode: the open is tried again."""
    path = tmp_path / "ledger.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    timer.start()
    began = time.monotonic()
    led = SQLiteLedger(parse_url(f"sqlite:///{path}"), busy_seconds=5)
    assert time.monotonic() - began >= 0.25  # it waited for the other's commit
    timer.join()
    other.close()
    assert _hold(led) is not None
    assert led._connection().execute("PRAGMA journal_mode").fetchone() == ("wal",)
    led.close()


def test_a_forked_process_opens_its_own_connection(tmp_path: Path) -> None:
    """A connection never crosses a fork: the child's settle counts, and the parent's after it."""
    led = SQLiteLedger(parse_url(f"sqlite:///{tmp_path}/ledger.db"))
    parent = led._connection()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        code = 0
        try:
            assert led._connection() is not parent
            led.settle(_hold(led), tokens=1, cost_usd=0)
            led.close()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    led.settle(_hold(led), tokens=1, cost_usd=0)
    assert led.status("team-a").spent_tokens == 2
    led.close()


def _hold(led: Ledger) -> Reservation:
    reservation = led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60)
    assert reservation is not None
    return reservation


def test_a_reservation_is_forgotten_a_day_after_its_lease(tmp_path: Path) -> None:
    """The next reservation deletes those whose lease ended more than a day ago."""
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as led:
        old, recent = _hold(led), _hold(led)
        led.settle(recent, tokens=1, cost_usd=0)
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE ledger_reservations SET expires = ? WHERE id = ?",
                (time.time() - 86_401, old.id),
            )
        conn.close()
        _hold(led)
        with sqlite3.connect(path) as conn:
            ids = {i for (i,) in conn.execute("SELECT id FROM ledger_reservations")}
        conn.close()
    assert old.id not in ids
    assert recent.id in ids


def test_what_a_reservation_holds_is_counted_in_each_counter_and_swept_once_it_ends(
    tmp_path: Path,
) -> None:
    """One lease row per reservation, whatever its scopes; each scope's counter counts what it
    holds. Past its lease, status leaves it out at once and the next reservation takes it out
    of the counters, once; settled after that, it adds its use and takes nothing out again."""
    path = tmp_path / "ledger.db"
    scopes = [ScopeLimit("user:u-1", "day"), ScopeLimit("team:t", "week")]

    def counters() -> list[tuple[str, int, int, int]]:
        with sqlite3.connect(path) as conn:
            found = conn.execute(
                "SELECT scope, spent_tokens, reserved_tokens, reserved_nano FROM ledger_windows"
                " ORDER BY scope"
            ).fetchall()
        conn.close()
        return found

    def leases() -> list[tuple[str, int]]:
        with sqlite3.connect(path) as conn:
            found = conn.execute("SELECT id, held FROM ledger_reservations ORDER BY id").fetchall()
        conn.close()
        return found

    with open_ledger(f"sqlite:///{path}") as led:
        late = led.reserve(scopes=scopes, tokens=70, cost_usd=0.07, lease_seconds=0.3)
        dropped = led.reserve(scopes=scopes, tokens=3, cost_usd=0, lease_seconds=0.3)
        kept = led.reserve(scopes=scopes, tokens=5, cost_usd=0, lease_seconds=60)
        assert late is not None
        assert dropped is not None
        assert kept is not None
        assert counters() == [("team:t", 0, 78, 70_000_000), ("user:u-1", 0, 78, 70_000_000)]
        assert [held for _, held in leases()] == [1, 1, 1]
        time.sleep(0.5)
        assert led.status("team:t", window="week").reserved_tokens == 5  # read: nothing swept
        assert counters()[0][2] == 78
        assert led.reserve(scopes=scopes, tokens=1, cost_usd=0, lease_seconds=60) is not None
        assert counters() == [("team:t", 0, 6, 0), ("user:u-1", 0, 6, 0)]
        assert dict(leases())[late.id] == 2  # swept: held past its lease
        led.release(dropped)  # swept already: its release takes nothing out again
        assert counters() == [("team:t", 0, 6, 0), ("user:u-1", 0, 6, 0)]
        assert dict(leases())[dropped.id] == 0
        for _ in range(2):
            led.settle(late, tokens=60, cost_usd=0.06)
        assert counters() == [("team:t", 60, 6, 0), ("user:u-1", 60, 6, 0)]
        assert dict(leases())[late.id] == 0


def test_a_settle_gives_back_what_the_lease_holds_in_every_scope_it_was_granted_in(
    tmp_path: Path,
) -> None:
    """The lease row, not the Reservation handed back, says which counters hold it: one rebuilt
    with its first scope alone still gives back what it held in the team's counter too."""
    path = tmp_path / "ledger.db"
    scopes = [ScopeLimit("user:u-1", "none"), ScopeLimit("team:t", "none", max_tokens=100)]
    with open_ledger(f"sqlite:///{path}") as led:
        granted = led.reserve(scopes=scopes, tokens=80, cost_usd=0, lease_seconds=60)
        assert granted is not None
        rebuilt = Reservation(
            id=granted.id, scope="user:u-1", window="none", window_start=None,
            window_ends=None, tokens=80, cost_usd=0,
        )  # fmt: skip
        led.settle(rebuilt, tokens=30, cost_usd=0)
        team = led.status("team:t", window="none")
        assert (team.spent_tokens, team.reserved_tokens) == (0, 0)
        assert led.status("user:u-1", window="none").spent_tokens == 30
        assert led.reserve(scopes=scopes, tokens=100, cost_usd=0, lease_seconds=60) is not None


def test_a_late_settle_is_remembered_for_a_day_from_the_settle(tmp_path: Path) -> None:
    """A settle long after its lease ended is remembered a day from then, not from the lease's
    end: the next reservation, which forgets what ended over a day ago, keeps it, and a second
    settle counts nothing."""
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as led:
        late = _hold(led)
        with sqlite3.connect(path) as conn:  # its lease ended a day and a minute ago
            conn.execute(
                "UPDATE ledger_reservations SET expires = ? WHERE id = ?",
                (time.time() - 86_460, late.id),
            )
        conn.close()
        led.settle(late, tokens=10, cost_usd=0)
        _hold(led)
        led.settle(late, tokens=10, cost_usd=0)
        assert led.status("team-a").spent_tokens == 10


def test_a_run_record_that_is_not_json_is_kept_by_a_prune(tmp_path: Path) -> None:
    """prune() judges the records it can read and keeps one it cannot, as the Redis ledger
    does, rather than failing on it."""
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as led:
        led.record_run({"run_id": "old", "scope": "team-a", "ended": "2026-03-01T00:00:00Z"})
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO ledger_runs VALUES ('team-a', 99, 'not json')")
        conn.close()
        assert led.prune(dt.datetime(2026, 3, 10, tzinfo=dt.UTC)) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT record FROM ledger_runs").fetchall() == [("not json",)]
    conn.close()


def test_a_sqlite_older_than_the_ledgers_statements_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SQLite before 3.35 (no RETURNING) makes the ledger unavailable at once, naming the
    version needed and the one found, rather than failing on a statement mid-run."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.34.1")
    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    assert str(caught.value).endswith(
        "is unavailable: it needs SQLite 3.35.0 or newer, and this Python's sqlite3 is 3.34.1"
    )
    assert not (tmp_path / "ledger.db").exists()


def test_rows_that_hold_what_no_ledger_wrote_make_it_unavailable(tmp_path: Path) -> None:
    """A count that is not a number, a run record that is not JSON: one line naming the table."""
    path = tmp_path / "ledger.db"
    url = f"sqlite:///{path}"
    with open_ledger(url) as led:
        led.record_run({"run_id": "r", "scope": "team-a"})
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE ledger_runs SET record = 'not json'")
            conn.execute("UPDATE ledger_windows SET spent_tokens = 'lots'")
        conn.close()
        with pytest.raises(LedgerUnavailable) as count:
            led.status("team-a", window="none")
        assert str(count.value) == (
            f"ledger {url} is unavailable: ledger_windows holds a count that is not a whole"
            " number ('lots')"
        )
        with pytest.raises(LedgerUnavailable) as record:
            led.runs("team-a")
        assert str(record.value) == (
            f"ledger {url} is unavailable: ledger_runs holds a run record that is not a JSON"
            " object ('not json')"
        )


# ---------------------------------------------------------------------- schema 1, migrated

#: the tables of schema 1, as the previous version made them
SCHEMA_1 = (
    "CREATE TABLE budgetconf_ledger (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ledger_windows (scope TEXT NOT NULL, window TEXT NOT NULL,"
    " spent_tokens INTEGER NOT NULL DEFAULT 0, spent_nano INTEGER NOT NULL DEFAULT 0,"
    " runs INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope, window)) WITHOUT ROWID",
    "CREATE TABLE ledger_leases (id TEXT PRIMARY KEY, scope TEXT NOT NULL,"
    " window TEXT NOT NULL, tokens INTEGER NOT NULL, nano INTEGER NOT NULL,"
    " expires REAL NOT NULL, held INTEGER NOT NULL)",
    "CREATE INDEX ledger_leases_live ON ledger_leases (scope, window, held, expires)",
    "CREATE INDEX ledger_leases_expires ON ledger_leases (expires)",
    "CREATE TABLE ledger_runs (scope TEXT NOT NULL, n INTEGER NOT NULL, record TEXT NOT NULL,"
    " PRIMARY KEY (scope, n)) WITHOUT ROWID",
)
DAY = dt.datetime(2026, 3, 14, 15, 9, 26, tzinfo=dt.UTC)
DAY_KEY, HOUR_KEY = "day:2026-03-14T00:00:00Z", "hour:2026-03-14T15:00:00Z"
#: run records as the previous version wrote them: no parents
OLD_RUNS = [
    {"run_id": f"r-{n}", "scope": "team-a", "host": "w-1", "pid": 9, "started": None,
     "ended": f"2026-03-14T1{n}:00:00Z", "turns": 1, "tokens": 10 * n, "cost_usd": 0.1 * n,
     "stop_reason": "completed"}
    for n in (1, 2)
]  # fmt: skip


def _schema_1_ledger(path: Path) -> None:
    """A ledger of schema 1: team-a spent under day and under hour (the later window), its
    latest reservation a live one under day, beside one whose lease has ended; team-b spent
    under month; two run records."""
    now = time.time()
    conn = sqlite3.connect(path)
    for statement in SCHEMA_1:
        conn.execute(statement)
    conn.execute("INSERT INTO budgetconf_ledger VALUES ('schema', '1')")
    conn.executemany(
        "INSERT INTO ledger_windows VALUES (?, ?, ?, ?, ?)",
        [
            ("team-a", DAY_KEY, 500, 5_000_000_000, 2),
            ("team-a", HOUR_KEY, 50, 500_000_000, 1),
            ("team-a", "none", 550, 5_500_000_000, 2),
            ("team-a", "month:2026-03-01T00:00:00Z", 0, 0, 2),
            ("team-b", "month:2026-03-01T00:00:00Z", 9, 90_000_000, 0),
        ],
    )
    conn.executemany(
        "INSERT INTO ledger_leases VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            ("old-hour", "team-a", HOUR_KEY, 10, 100_000_000, now - 3600, 0),
            ("live-day", "team-a", DAY_KEY, 7, 70_000_000, now + 300, 1),
            ("lapsed-day", "team-a", DAY_KEY, 9, 90_000_000, now - 60, 1),
        ],
    )
    conn.executemany(
        "INSERT INTO ledger_runs VALUES ('team-a', ?, ?)",
        [(n, json.dumps(record)) for n, record in enumerate(OLD_RUNS, 1)],
    )
    conn.commit()
    conn.close()


def _reservation(rid: str, window: str, tokens: int, cost_usd: float) -> Reservation:
    start, ends = window_bounds(window, DAY)
    return Reservation(
        id=rid, scope="team-a", window=window, window_start=start, window_ends=ends,
        tokens=tokens, cost_usd=cost_usd,
    )  # fmt: skip


def test_a_schema_1_ledger_is_migrated_in_place_and_keeps_what_it_held(tmp_path: Path) -> None:
    """Opened, a ledger of the previous version is schema 2: its spend, live lease and run
    records are all there; a scope counts in the window of its latest reservation (not of its
    latest counter), and a reset with window= reaches the counter of the other kind."""
    path = tmp_path / "ledger.db"
    _schema_1_ledger(path)
    with open_ledger(f"sqlite:///{path}") as led:
        assert (led.window_of("team-a"), led.window_of("team-b")) == ("day", "month")
        status = led.status("team-a", at=DAY)
        assert (status.window, status.spent_tokens, status.spent_cost_usd) == ("day", 500, 5.0)
        assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (7, 0.07, 2)
        assert (status.reset, led.status("team-b", at=DAY).spent_tokens) == (None, 9)
        assert led.runs("team-a") == [record | {"parents": []} for record in reversed(OLD_RUNS)]
        # the live lease settles once; the one settled before the migration counts no more
        for _ in range(2):
            led.settle(_reservation("live-day", "day", 7, 0.07), tokens=6, cost_usd=0.06)
        led.settle(_reservation("old-hour", "hour", 10, 0.1), tokens=10, cost_usd=0.1)
        # the ended one is counted no more: settled late, it takes nothing back out
        led.settle(_reservation("lapsed-day", "day", 9, 0.09), tokens=0, cost_usd=0.0)
        status = led.status("team-a", at=DAY)
        assert (status.spent_tokens, status.spent_cost_usd) == (506, 5.06)
        assert (status.reserved_tokens, status.reserved_cost_usd) == (0, 0.0)
        with pytest.raises(LedgerConflict, match=r"counts in the window 'day'.* not 'hour'"):
            led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60, window="hour", at=DAY)
        assert led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60, max_tokens=506,
                           at=DAY) is None  # fmt: skip
        # the hour counter, left from schema 1, is reached by reset(window=)
        record = led.reset("team-a", why="old counter", window="hour", at=DAY)
        assert record["reset"]["spent"] == {"tokens": 50, "cost_usd": 0.5}
        again = led.reset("team-a", why="old counter", window="hour", at=DAY)
        assert again["reset"]["spent"] == {"tokens": 0, "cost_usd": 0.0}
        assert led.status("team-a", at=DAY).spent_tokens == 506
        led.record_run({"run_id": "r-3", "scope": "team-a", "ended": DAY})
        assert [r["run_id"] for r in led.runs("team-a")] == ["r-3", None, None, "r-2", "r-1"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM budgetconf_ledger").fetchall() == [("2",)]
    assert conn.execute("SELECT * FROM ledger_scopes ORDER BY scope").fetchall() == [
        ("team-a", "day"),
        ("team-b", "month"),
    ]
    found = conn.execute("SELECT id, held, windows FROM ledger_reservations ORDER BY id")
    assert found.fetchall() == [
        ("lapsed-day", 0, f'[["team-a","{DAY_KEY}"]]'),
        ("live-day", 0, f'[["team-a","{DAY_KEY}"]]'),
        ("old-hour", 0, f'[["team-a","{HOUR_KEY}"]]'),
    ]
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert {"ledger_reservations_live", "ledger_reservations_expires"} <= tables
    assert not any(name.startswith("ledger_leases") for name in tables)  # schema 1's: gone
    conn.close()
    with open_ledger(f"sqlite:///{path}") as led:  # opened again: nothing more to migrate
        assert led.status("team-a", at=DAY).spent_tokens == 506


#: the first statement of the previous version's settle, as it ran it
SCHEMA_1_SETTLE = "SELECT held FROM ledger_leases WHERE id = ?"


def test_a_process_of_the_previous_version_cannot_settle_in_a_migrated_ledger(
    tmp_path: Path,
) -> None:
    """After the migration, a settle as the previous version makes it finds no table of
    leases: such a process's ledger is unavailable, rather than ending a lease without giving
    back what it holds, which would then stay reserved for good."""
    path = tmp_path / "ledger.db"
    _schema_1_ledger(path)
    with open_ledger(f"sqlite:///{path}") as led:
        assert led.status("team-a", at=DAY).reserved_tokens == 7
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="no such table: ledger_leases"):
        conn.execute(SCHEMA_1_SETTLE, ("live-day",))
    conn.execute("ROLLBACK")
    conn.close()
    with open_ledger(f"sqlite:///{path}") as led:
        assert led.status("team-a", at=DAY).reserved_tokens == 7  # held until settled or ended


def test_a_schema_1_scope_with_spend_but_no_reservation_takes_its_latest_counter(
    tmp_path: Path,
) -> None:
    """With no reservation remembered, a scope counts in the kind of its latest counter with
    spend; one with no spend at all records no window."""
    path = tmp_path / "ledger.db"
    conn = sqlite3.connect(path)
    for statement in SCHEMA_1:
        conn.execute(statement)
    conn.execute("INSERT INTO budgetconf_ledger VALUES ('schema', '1')")
    conn.executemany(
        "INSERT INTO ledger_windows VALUES (?, ?, ?, ?, 0)",
        [
            ("team-a", "none", 5, 0),
            ("team-a", "month:2026-03-01T00:00:00Z", 5, 0),
            ("team-a", HOUR_KEY, 0, 30),
            ("team-a", "day:2026-03-13T00:00:00Z", 1, 0),
            ("team-c", DAY_KEY, 0, 0),
        ],
    )
    conn.commit()
    conn.close()
    with open_ledger(f"sqlite:///{path}") as led:
        assert (led.window_of("team-a"), led.window_of("team-c")) == ("hour", None)
        assert led.status("team-a", at=DAY).spent_cost_usd == 0.00000003
