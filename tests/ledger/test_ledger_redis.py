"""What only the Redis ledger does: its keys, its client, and a server that goes away."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from budgetconf.ledger import Ledger, LedgerUnavailable, Reservation, iso, open_ledger
from budgetconf.ledger._address import parse_url
from budgetconf.ledger._redis import RedisLedger

from helpers.redis_server import RedisServer, free_port

SECRET = "s3cret-pa55"


def _hold(led: Ledger, scope: str = "team-a") -> Reservation:
    reservation = led.reserve(scope, tokens=10, cost_usd=0.01, lease_seconds=60)
    assert reservation is not None
    return reservation


def test_every_key_is_under_the_scopes_name_and_hash_tag(redis_url: str) -> None:
    """Keys are budgetconf:ledger:{SCOPE}:…, one hash tag per scope (one cluster slot)."""
    with open_ledger(redis_url) as led:
        led.settle(_hold(led, "team-a/x"), tokens=1, cost_usd=0)
        _hold(led, "team-a/x")
        led.record_run({"run_id": "r", "scope": "team-a/x"})
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        keys = sorted(str(key) for key in client.keys("*"))
        client.close()
    assert keys
    assert all(key.startswith("budgetconf:ledger:{team-a/x}:") for key in keys), keys


def test_the_database_number_of_the_url_is_used(redis_server: RedisServer) -> None:
    """redis://host:port/3 keeps the ledger in database 3, and nothing in database 0."""
    redis_server.flush()
    with open_ledger(f"redis://127.0.0.1:{redis_server.port}/3") as led:
        led.settle(_hold(led), tokens=1, cost_usd=0)
    for db, count in ((0, 0), (3, 1)):
        client = redis.Redis(port=redis_server.port, db=db)
        assert len(client.keys("budgetconf:ledger:*:window:*")) == count
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
        client.set("budgetconf:ledger:{team-a}:window:none", "not a hash")
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
    but the windows' counters and the run records."""
    with open_ledger(redis_url) as led:
        reservation = led.reserve("team-a", tokens=1, cost_usd=0, lease_seconds=60)
        assert reservation is not None
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        key = f"budgetconf:ledger:{{team-a}}:reservation:{reservation.id}"
        assert 86_455_000 < client.pttl(key) <= 86_460_000
        led.settle(reservation, tokens=1, cost_usd=0)
        assert 86_395_000 < client.pttl(key) <= 86_400_000
        lasting = {k for k in client.keys("*") if client.pttl(k) == -1}
        client.close()
    assert lasting == {f"budgetconf:ledger:{{team-a}}:window:day:{iso(reservation.window_start)}"}


def test_keys_that_hold_what_no_ledger_wrote_make_it_unavailable(redis_url: str) -> None:
    """A count that is not a number, a run record that is not JSON: one line naming the key."""
    with open_ledger(redis_url) as led:
        client = redis.Redis.from_url(redis_url)
        client.hset("budgetconf:ledger:{team-a}:window:none", "st", "lots")
        client.hset("budgetconf:ledger:{team-a}:window:hour:2026-03-14T15:00:00Z", "rt", "x" * 500)
        client.lpush("budgetconf:ledger:{team-a}:runs", "not json", '["a list"]')
        client.close()
        with pytest.raises(LedgerUnavailable) as count:
            led.status("team-a", window="none")
        assert str(count.value) == (
            f"ledger {redis_url} is unavailable: budgetconf:ledger:{{team-a}}:window:none"
            " holds a count that is not a whole number ('lots')"
        )
        with pytest.raises(
            LedgerUnavailable, match=r"number \('x{80}…' \(500 characters, 420 not shown\)\)$"
        ):
            led.status("team-a", window="hour", at=dt.datetime(2026, 3, 14, 15, tzinfo=dt.UTC))
        with pytest.raises(LedgerUnavailable) as record:
            led.runs("team-a")
        assert str(record.value) == (
            f"ledger {redis_url} is unavailable: budgetconf:ledger:{{team-a}}:runs"
            " holds a run record that is not a JSON object ('[\"a list\"]')"
        )
