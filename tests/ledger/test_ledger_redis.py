"""What only the Redis ledger does: its keys, its client, and a server that goes away."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis
from redis.crc import key_slot

from budgetconf.ledger import (
    WINDOWS,
    Ledger,
    LedgerConflict,
    LedgerUnavailable,
    Reservation,
    ScopeLimit,
    iso,
    open_ledger,
    window_bounds,
)
from budgetconf.ledger._address import parse_url
from budgetconf.ledger._redis import RedisLedger

from helpers.redis_server import RedisServer, free_port

SECRET = "s3cret-pa55"


def _hold(led: Ledger, scope: str = "team-a") -> Reservation:
    reservation = led.reserve(scope, tokens=10, cost_usd=0.01, lease_seconds=60)
    assert reservation is not None
    return reservation


def test_every_key_is_under_the_ledgers_hash_tag_and_named_by_its_scope(redis_url: str) -> None:
    """Keys are budgetconf:{ledger}:…, one hash tag for the whole ledger (one cluster slot),
    a scope's under …:scope:SCOPE:…."""
    with open_ledger(redis_url) as led:
        settled = _hold(led, "team-a/x")
        led.settle(settled, tokens=1, cost_usd=0)
        second = _hold(led, "team-a/x")
        led.record_run({"run_id": "r", "scope": "team-a/x"})
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        keys = {str(key) for key in client.keys("*")}
        client.close()
    day = f"day:{iso(settled.window_start)}"
    base = "budgetconf:{ledger}"
    windows = {
        f"{base}:scope:team-a/x:window:{kind}" if kind == "none" else
        f"{base}:scope:team-a/x:window:{kind}:{iso(window_bounds(kind)[0])}"
        for kind in WINDOWS
    }  # fmt: skip
    assert keys == {
        f"{base}:schema",
        f"{base}:scopes",
        f"{base}:scope:team-a/x:runs",
        f"{base}:scope:team-a/x:leases:{day}",
        f"{base}:scope:team-a/x:held:{day}",
        f"{base}:reservation:{settled.id}",
        f"{base}:reservation:{second.id}",
        *windows,  # the run counts in every kind's window it ended in
    }


def test_the_database_number_of_the_url_is_used(redis_server: RedisServer) -> None:
    """redis://host:port/3 keeps the ledger in database 3, and nothing in database 0."""
    redis_server.flush()
    with open_ledger(f"redis://127.0.0.1:{redis_server.port}/3") as led:
        led.settle(_hold(led), tokens=1, cost_usd=0)
    for db, count in ((0, 0), (3, 1)):
        client = redis.Redis(port=redis_server.port, db=db)
        assert len(client.keys("budgetconf:{ledger}:scope:*:window:*")) == count
        client.close()


def test_a_server_that_refuses_makes_the_ledger_unavailable_at_once() -> None:
    """Nothing listening: one line naming the ledger and the refusal, well within the timeout."""
    port = free_port()
    began = time.monotonic()
    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger(f"redis://127.0.0.1:{port}/0")
    assert time.monotonic() - began < 2
    message = str(caught.value)
    assert message.startswith(f"ledger redis://127.0.0.1:{port}/0 is unavailable: ")
    assert "refused" in message
    assert "\n" not in message


def test_the_password_is_in_no_message_and_no_repr(restartable_redis: RedisServer) -> None:
    """A wrong password, a server gone, a working ledger: the password is never shown."""
    assert restartable_redis.command("CONFIG", "SET", "requirepass", SECRET).startswith(b"+OK")
    port = restartable_redis.port
    with pytest.raises(LedgerUnavailable) as wrong:
        open_ledger(f"redis://ops:not-{SECRET}@127.0.0.1:{port}/0")
    assert f"redis://ops:***@127.0.0.1:{port}/0" in str(wrong.value)
    led = open_ledger(f"redis://default:{SECRET}@127.0.0.1:{port}/0")
    led.settle(_hold(led), tokens=1, cost_usd=0)
    assert repr(led) == f"<RedisLedger redis://default:***@127.0.0.1:{port}/0>"
    restartable_redis.stop()
    with pytest.raises(LedgerUnavailable) as gone:
        led.status("team-a")
    for shown in (str(wrong.value), str(gone.value), repr(led), repr(led.address)):
        assert SECRET not in shown
    led.close()


def test_a_server_stopped_and_started_again_is_used_again(restartable_redis: RedisServer) -> None:
    """Stopped: each call is unavailable; started again, the same ledger works on (its scripts
    loaded again), with only what the new server holds."""
    led = open_ledger(restartable_redis.url)
    led.settle(_hold(led), tokens=5, cost_usd=0)
    restartable_redis.stop()
    for call in (lambda: _hold(led), lambda: led.status("team-a"), lambda: led.runs("team-a")):
        with pytest.raises(LedgerUnavailable, match=r"is unavailable: .*refused"):
            call()
    restartable_redis.start()
    reservation = _hold(led)  # the server kept nothing (--save ''): a fresh budget
    led.settle(reservation, tokens=7, cost_usd=0)
    assert led.status("team-a").spent_tokens == 7
    led.close()


def test_a_server_that_does_not_answer_times_out(restartable_redis: RedisServer) -> None:
    """A server that stopped answering (SIGSTOP) costs the timeout, then the ledger is
    unavailable, saying it did not answer."""
    led = RedisLedger(parse_url(restartable_redis.url), timeout_seconds=0.3)
    assert restartable_redis.process is not None
    pid = restartable_redis.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        with pytest.raises(LedgerUnavailable, match=r"no answer within 0\.3 s"):
            _hold(led)
        assert time.monotonic() - began < 3
    finally:
        os.kill(pid, signal.SIGCONT)
    led.settle(_hold(led), tokens=1, cost_usd=0)  # and it answers again
    led.close()


def test_an_error_of_the_server_makes_the_ledger_unavailable(redis_url: str) -> None:
    """A key of another type where the ledger's should be: the server's error, on one line."""
    with open_ledger(redis_url) as led:
        client = redis.Redis.from_url(redis_url)
        client.set("budgetconf:{ledger}:scope:team-a:window:none", "not a hash")
        client.close()
        with pytest.raises(LedgerUnavailable, match="WRONGTYPE"):
            led.status("team-a", window="none")


def test_without_the_redis_package_the_error_says_how_to_install_it(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No redis package: LedgerUnavailable naming the extra to install, not an ImportError."""
    monkeypatch.setitem(sys.modules, "redis", None)  # what importing a missing package does
    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger(redis_url)
    assert str(caught.value) == (
        f"ledger {redis_url} is unavailable: the redis package is not installed:"
        " pip install 'budgetconf[redis]' (from a checkout: pip install -e '.[redis]')"
    )


def test_importing_the_ledger_imports_neither_client() -> None:
    """import budgetconf.ledger loads neither redis nor sqlite3: opening a ledger does."""
    code = (
        "import sys, budgetconf.ledger\n"
        "print(sorted(m for m in ('redis', 'sqlite3') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


def test_a_rediss_url_asks_for_tls(restartable_redis: RedisServer) -> None:
    """rediss:// connects with TLS: a plain server's refusal to speak it is the cause shown."""
    port = restartable_redis.port
    with pytest.raises(LedgerUnavailable) as caught:
        RedisLedger(parse_url(f"rediss://127.0.0.1:{port}/0"), timeout_seconds=0.5)
    assert str(caught.value).startswith(f"ledger rediss://127.0.0.1:{port}/0 ")


def test_a_reservation_is_remembered_for_a_day_after_its_lease_then_forgotten(
    redis_url: str,
) -> None:
    """Its key lives for the lease and a day; settled, a day from then; nothing is kept for ever
    but the scopes' windows, the layout's version and a window that never ends."""
    with open_ledger(redis_url) as led:
        reservation = led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60)
        assert reservation is not None
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        key = f"budgetconf:{{ledger}}:reservation:{reservation.id}"
        assert 86_455_000 < client.pttl(key) <= 86_460_000
        led.settle(reservation, tokens=1, cost_usd=0)
        assert 86_395_000 < client.pttl(key) <= 86_400_000
        lasting = {k for k in client.keys("*") if client.pttl(k) == -1}
        client.close()
    assert lasting == {"budgetconf:{ledger}:scopes", "budgetconf:{ledger}:schema"}


def test_keys_that_hold_what_no_ledger_wrote_make_it_unavailable(redis_url: str) -> None:
    """A count that is not a number, a run record that is not JSON: one line naming the key."""
    with open_ledger(redis_url) as led:
        client = redis.Redis.from_url(redis_url)
        client.hset("budgetconf:{ledger}:scope:team-a:window:none", "st", "lots")
        client.hset(
            "budgetconf:{ledger}:scope:team-b:window:hour:2026-03-14T15:00:00Z", "rt", "x" * 500
        )
        client.lpush("budgetconf:{ledger}:scope:team-a:runs", "not json", '["a list"]')
        client.close()
        with pytest.raises(LedgerUnavailable) as count:
            led.status("team-a", window="none")
        assert str(count.value) == (
            f"ledger {redis_url} is unavailable: budgetconf:{{ledger}}:scope:team-a:window:none"
            " holds a count that is not a whole number ('lots')"
        )
        with pytest.raises(
            LedgerUnavailable, match=r"number \('x{80}…' \(500 characters, 420 not shown\)\)$"
        ):
            led.status("team-b", window="hour", at=dt.datetime(2026, 3, 14, 15, tzinfo=dt.UTC))
        with pytest.raises(LedgerUnavailable) as record:
            led.runs("team-a")
        assert str(record.value) == (
            f"ledger {redis_url} is unavailable: budgetconf:{{ledger}}:scope:team-a:runs"
            " holds a run record that is not a JSON object ('[\"a list\"]')"
        )


# ---------------------------------------------------------------------- the layout

DAY = dt.datetime(2026, 3, 14, 15, 9, 26, tzinfo=dt.UTC)
DAY_KEY, HOUR_KEY = "day:2026-03-14T00:00:00Z", "hour:2026-03-14T15:00:00Z"
MONTH_KEY = "month:2026-03-01T00:00:00Z"
KEPT_MS = 86_400_000
THREE = [
    ScopeLimit("user:u-1", "hour", max_tokens=100),
    ScopeLimit("team:t", "day", max_cost_usd=1.0),
    ScopeLimit("org:o", "none", max_tokens=1000),
]


def _ms_left(client: redis.Redis, moment: dt.datetime) -> int:
    """The milliseconds from the server's now to ``moment``."""
    seconds, micros = client.time()
    return int(moment.timestamp() * 1000) - (seconds * 1000 + micros // 1000)


def test_a_windows_keys_expire_a_day_after_it_ends_and_nones_never(redis_url: str) -> None:
    """Each scope's window hash, leases and holdings expire a day after the window ends; a
    window written after it ended (a late settle, a back-fill), a day after now; the keys of
    the window that never ends, never."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    with open_ledger(redis_url) as led:
        r = led.reserve(scopes=THREE, tokens=5, cost_usd=0.05, lease_seconds=60)
        assert r is not None
        led.record_run({"scope": "user:u-1", "parents": ["team:t", "org:o"]})
        for part in r.scopes:
            for what in ("window", "leases", "held"):
                key = f"budgetconf:{{ledger}}:scope:{part.scope}:{what}:{part.key}"
                if part.window_ends is None:
                    assert client.pttl(key) == -1, key
                else:
                    expected = _ms_left(client, part.window_ends) + KEPT_MS
                    assert abs(client.pttl(key) - expected) < 5_000, key
        start, ends = window_bounds("week")  # a run counts in every kind's window, with its TTL
        assert ends is not None
        key = f"budgetconf:{{ledger}}:scope:org:o:window:week:{iso(start)}"
        assert abs(client.pttl(key) - (_ms_left(client, ends) + KEPT_MS)) < 5_000
        late = led.reserve(scopes=THREE[:2], tokens=1, cost_usd=0, lease_seconds=60, at=DAY)
        assert late is not None
        led.settle(late, tokens=1, cost_usd=0)
        for part in late.scopes:
            key = f"budgetconf:{{ledger}}:scope:{part.scope}:window:{part.key}"
            assert KEPT_MS - 5_000 < client.pttl(key) <= KEPT_MS, key
        assert client.pttl("budgetconf:{ledger}:scope:user:u-1:runs") == -1
    client.close()


def test_every_key_of_a_three_scope_reservation_is_in_one_cluster_slot(redis_url: str) -> None:
    """Reserving, settling, renewing, recording a run with parents, resetting: every key the
    ledger writes hashes to the slot of its tag, so one script may span them on a cluster."""
    with open_ledger(redis_url) as led:
        r = led.reserve(scopes=THREE, tokens=5, cost_usd=0.05, lease_seconds=60)
        assert r is not None
        assert led.renew(r, lease_seconds=60)
        led.settle(r, tokens=5, cost_usd=0.05, warn_at=0.5)
        following, _ = led.settle_and_reserve(
            r, tokens=0, cost_usd=0, reserve_tokens=1, reserve_cost_usd=0, lease_seconds=60,
            scopes=THREE,
        )  # fmt: skip
        assert following is not None
        led.record_run({"scope": "user:u-1", "parents": ["team:t", "org:o"]})
        led.reset("team:t", why="slot")
        client = redis.Redis.from_url(redis_url)
        keys: list[bytes] = client.keys("*")  # type: ignore[assignment]
        client.close()
    assert len(keys) > 20
    assert {key_slot(key) for key in keys} == {key_slot(b"ledger")}
    assert all(key.startswith(b"budgetconf:{ledger}:") for key in keys)


def _previous_layout(client: redis.Redis) -> None:
    """A ledger as the previous version laid it out: team-a spent under day and under hour
    (the later window), its latest reservation a live one under day; team-b spent under
    month; two run records; a reservation settled before."""
    now_s, now_us = client.time()
    now_ms = now_s * 1000 + now_us // 1000
    a, b = "budgetconf:ledger:{team-a}", "budgetconf:ledger:{team-b}"
    client.hset(f"{a}:window:{DAY_KEY}", mapping={"st": 500, "sn": 5 * 10**9, "rt": 7,
                                                  "rn": 7 * 10**7, "runs": 2})  # fmt: skip
    client.zadd(f"{a}:leases:{DAY_KEY}", {"live-day": now_ms + 300_000})
    client.hset(f"{a}:held:{DAY_KEY}", "live-day", "7:70000000")
    client.set(f"{a}:reservation:live-day", "held", px=300_000 + KEPT_MS)
    client.hset(f"{a}:window:{HOUR_KEY}", mapping={"st": 50, "sn": 5 * 10**8, "runs": 1})
    client.set(f"{a}:reservation:old-hour", "done", px=KEPT_MS - 3_600_000)
    client.hset(f"{a}:window:none", mapping={"st": 550, "sn": 55 * 10**8, "runs": 2})
    client.hset(f"{b}:window:{MONTH_KEY}", mapping={"st": 9, "sn": 9 * 10**7})
    for record in OLD_RUNS:
        client.lpush(f"{a}:runs", json.dumps(record))
    client.set("other:app:key", "not the ledger's")
    for key in LEFT:  # under the old prefix, but nothing the previous version wrote
        client.set(key, "left as it is")


#: keys under the previous prefix that are not the ledger's: a migration leaves them alone
LEFT = ["budgetconf:ledger:{team-a}:notes", "budgetconf:ledger:{team-a}:window:fortnight:x"]

#: run records as the previous version wrote them: no parents
OLD_RUNS = [
    {"run_id": f"r-{n}", "scope": "team-a", "host": "w-1", "pid": 9, "started": None,
     "ended": f"2026-03-14T1{n}:00:00Z", "turns": 1, "tokens": 10 * n, "cost_usd": 0.1 * n,
     "stop_reason": "completed"}
    for n in (1, 2)
]  # fmt: skip


def _reservation(rid: str, window: str, tokens: int, cost_usd: float) -> Reservation:
    start, ends = window_bounds(window, DAY)
    return Reservation(
        id=rid, scope="team-a", window=window, window_start=start, window_ends=ends,
        tokens=tokens, cost_usd=cost_usd,
    )  # fmt: skip


def test_a_ledger_of_the_previous_layout_is_moved_to_this_one_when_opened(
    redis_url: str,
) -> None:
    """Opened, the previous layout's keys are under the ledger's tag: spend, the live lease,
    reservations and run records survive; a scope counts in the window of its latest
    reservation; a reset with window= reaches the other kind's counter; a window's keys
    expire a day after it ends (here: a day from now), the window that never ends never."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _previous_layout(client)
    with open_ledger(redis_url) as led:
        assert sorted(client.keys("budgetconf:ledger:*")) == sorted(LEFT)
        assert client.get("budgetconf:{ledger}:schema") == "2"
        assert client.hgetall("budgetconf:{ledger}:scopes") == {"team-a": "day", "team-b": "month"}
        assert client.get("other:app:key") == "not the ledger's"
        status = led.status("team-a", at=DAY)
        assert (status.window, status.spent_tokens, status.spent_cost_usd) == ("day", 500, 5.0)
        assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (7, 0.07, 2)
        assert led.status("team-b", at=DAY).spent_tokens == 9
        assert led.runs("team-a") == [record | {"parents": []} for record in reversed(OLD_RUNS)]
        base = "budgetconf:{ledger}:scope:team-a"
        for key in (f"{base}:window:{DAY_KEY}", f"{base}:leases:{DAY_KEY}",
                    f"{base}:window:{HOUR_KEY}", f"budgetconf:{{ledger}}:scope:team-b:window:"
                    f"{MONTH_KEY}"):  # fmt: skip
            assert KEPT_MS - 10_000 < client.pttl(key) <= KEPT_MS, key
        assert client.pttl(f"{base}:window:none") == -1
        assert 0 < client.pttl("budgetconf:{ledger}:reservation:live-day") <= 300_000 + KEPT_MS
        for _ in range(2):  # the live lease settles once; the settled one counts no more
            led.settle(_reservation("live-day", "day", 7, 0.07), tokens=6, cost_usd=0.06)
        led.settle(_reservation("old-hour", "hour", 10, 0.1), tokens=10, cost_usd=0.1)
        status = led.status("team-a", at=DAY)
        assert (status.spent_tokens, status.spent_cost_usd) == (506, 5.06)
        assert (status.reserved_tokens, status.reserved_cost_usd) == (0, 0.0)
        with pytest.raises(LedgerConflict, match=r"counts in the window 'day'.* not 'hour'"):
            led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60, window="hour", at=DAY)
        record = led.reset("team-a", why="old counter", window="hour", at=DAY)
        assert record["reset"]["spent"] == {"tokens": 50, "cost_usd": 0.5}
        assert led.reset("team-a", why="again", window="none")["reset"]["spent"] == {
            "tokens": 550,
            "cost_usd": 5.5,
        }
        assert led.status("team-a", at=DAY).spent_tokens == 506
    with open_ledger(redis_url) as led:  # opened again: nothing more to move
        assert led.status("team-a", at=DAY).spent_tokens == 506
    client.close()


def test_a_migration_another_client_holds_is_waited_for_and_finished_once_it_lapses(
    redis_url: str,
) -> None:
    """Another client took the migration's lock and died: the next one waits for the lock to
    lapse, then moves the ledger itself."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _previous_layout(client)
    client.set("budgetconf:{ledger}:migrating", "1", px=300)
    with open_ledger(redis_url) as led:
        assert client.get("budgetconf:{ledger}:schema") == "2"
        assert led.status("team-a", at=DAY).spent_tokens == 500
    assert client.get("budgetconf:{ledger}:migrating") is None
    client.close()
