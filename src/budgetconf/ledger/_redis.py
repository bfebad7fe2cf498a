"""The Redis ledger: one budget for every process on every machine that reaches the server.

Each operation is one Lua script run by the server (`_redis_scripts`, registered,
then EVALSHA), so a reservation's check of every scope against spent + reserved
and its writes are one atomic step, whatever other clients do. Leases are timed by
the server's clock (``TIME``), so the machines' clocks need not agree. A settle
and the next turn's reservation are one call (`Ledger.settle_and_reserve`).

Every key shares one hash tag, ``budgetconf:{ledger}:…``, so that one script may
span any scopes: on a Redis Cluster the ledger sits in one slot.

- ``…:scope:SCOPE:window:KIND:START`` (or ``…:window:none``), ``…:leases:…`` and
  ``…:held:…``: a window's counters, leases and holdings (see `_redis_scripts`);
  a window's keys expire a day after it ends;
- ``…:scope:SCOPE:runs``: the latest run and reset records, newest first, as JSON;
- ``…:reservation:ID``: ``held`` or ``done``, kept for a day after the lease, so
  that a second settle or release counts nothing;
- ``…:scopes``: the window each scope counts in; ``…:schema``: the layout's version.

A ledger the previous version wrote (keys ``budgetconf:ledger:{SCOPE}:…``) is moved
to this layout in place, by the first client that opens it (`_migrate`).

The client is the ``redis`` package (extra ``budgetconf[redis]``), imported
by this module alone. Connecting and every call time out after 2 s; a
connection dropped (a restarted server) is tried again once at once.
"""

from __future__ import annotations

import json
import time

from budgetconf.errors import LedgerConflict
from budgetconf.ledger._backend import Backend
from budgetconf.ledger._base import (
    KEPT_RUNS,
    REMEMBERED_SECONDS,
    conflict,
    counts,
    keep_latest,
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
from budgetconf.ledger._redis_scripts import (
    FINISH,
    PRUNE,
    RECORD_RUN,
    RENEW,
    RESERVE,
    SETTLE_AND_RESERVE,
    STATUS,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Callable, Sequence
    from typing import Any, Final, TypeVar

    from budgetconf.ledger._address import LedgerURL
    from budgetconf.ledger._checks import Asked, Resetting, Settling
    from budgetconf.ledger._records import HeldScope, Reservation

    T = TypeVar("T")

REMEMBERED_MS: Final = int(REMEMBERED_SECONDS * 1000)
#: how long a window's keys outlive it
KEPT_MS: Final = 86_400_000
#: every key's beginning: one hash tag for the whole ledger
BASE: Final = "budgetconf:{ledger}"
SCOPES_KEY: Final = f"{BASE}:scopes"
SCHEMA_KEY: Final = f"{BASE}:schema"
#: the layout this code writes
SCHEMA: Final = "2"
#: how long the first client may take to migrate a ledger of the previous layout
MIGRATING_SECONDS: Final = 30.0


class RedisLedger(Backend):
    """The ledger on the Redis server at ``url`` (its database ``url.db``).

    ``timeout_seconds`` bounds connecting and each call; the server is asked
    for a PING when the ledger is opened.
    """

    def __init__(self, url: LedgerURL, *, timeout_seconds: float = 2.0) -> None:
        super().__init__(url)
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:  # the hint in place: importing the integrations would import the loop
            hint = "pip install 'budgetconf[redis]' (from a checkout: pip install -e '.[redis]')"
            raise unavailable(self.url, f"the redis package is not installed: {hint}") from None
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self._timeout = timeout_seconds
        self._client = redis.Redis(
            host=url.host or "localhost",
            port=url.port or 6379,
            db=url.db,
            username=url.username,
            password=url.password,
            ssl=url.tls,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
            decode_responses=True,
        )
        register = self._client.register_script
        self._reserve_script, self._finish_script = register(RESERVE), register(FINISH)
        self._settle_and_reserve = register(SETTLE_AND_RESERVE)
        self._renew = register(RENEW)
        self._status, self._record_run = register(STATUS), register(RECORD_RUN)
        self._prune_script = register(PRUNE)
        self._call(self._ready)

    def _call(self, step: Callable[[], T]) -> T:
        """``step``, with the client's errors as `LedgerUnavailable` naming the ledger and cause."""
        try:
            return step()
        except self._errors as exc:
            text = " ".join(str(exc).split()) or type(exc).__name__
            if "imeout" in type(exc).__name__ or "imeout" in text:
                text = f"no answer within {self._timeout:g} s ({text})"
            raise unavailable(self.url, self.address.conceal(text)) from None

    def _ready(self) -> None:
        """The ledger in this layout: a new one marked, one of the previous layout migrated."""
        client = self._client
        if client.get(SCHEMA_KEY) == SCHEMA:
            return
        if next(iter(client.scan_iter(match="budgetconf:ledger:{*", count=1000)), None) is None:
            client.set(SCHEMA_KEY, SCHEMA, nx=True)  # a new ledger, or one moved meanwhile
            return
        lock = f"{BASE}:migrating"
        deadline = time.monotonic() + MIGRATING_SECONDS
        while not client.set(lock, "1", nx=True, px=int(MIGRATING_SECONDS * 1000)):
            if client.get(SCHEMA_KEY) == SCHEMA:
                return  # another client has migrated it
            if time.monotonic() > deadline:
                raise unavailable(self.url, "another client is migrating the ledger")
            time.sleep(0.05)
        try:
            if client.get(SCHEMA_KEY) != SCHEMA:
                _migrate(client)
                client.set(SCHEMA_KEY, SCHEMA)
        finally:
            client.delete(lock)

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------ the keys

    @staticmethod
    def _keys(scope: str, key: str) -> list[str]:
        """A window's hash, its leases and its holdings."""
        base = f"{BASE}:scope:{scope}"
        return [f"{base}:window:{key}", f"{base}:leases:{key}", f"{base}:held:{key}"]

    @staticmethod
    def _state(rid: str) -> str:
        return f"{BASE}:reservation:{rid}"

    @staticmethod
    def _runs(scope: str) -> str:
        return f"{BASE}:scope:{scope}:runs"

    @staticmethod
    def _expiry(ends: _dt.datetime | None) -> int:
        """When a window's keys go: a day after it ends, or after now for a window written
        after its end (a late settle, a back-fill); -1: never."""
        if ends is None:
            return -1
        return int(max(ends.timestamp(), time.time()) * 1000) + KEPT_MS

    def _holding(self, parts: Sequence[HeldScope]) -> list[str]:
        return [key for part in parts for key in self._keys(part.scope, part.key)]

    # ------------------------------------------------------------------ the scripts' arguments

    def _reserving(self, a: Asked) -> tuple[list[str], list[Any]]:
        keys = [SCOPES_KEY, self._state(a.rid), *self._holding(a.held)]
        args: list[Any] = [a.rid, a.tokens, a.nano, max(1, round(a.lease * 1000)), REMEMBERED_MS]
        for part, (most_tokens, most_nano) in zip(a.held, a.most, strict=True):
            args += [
                part.scope,
                part.window,
                -1 if most_tokens is None else most_tokens,
                -1 if most_nano is None else most_nano,
                self._expiry(part.window_ends),
            ]
        return keys, args

    def _ending(self, s: Settling) -> tuple[list[str], list[Any]]:
        r = s.reservation
        keys = [self._state(r.id), *self._holding(r.scopes)]
        tokens, nano = s.used or (0, 0)
        args: list[Any] = [r.id, tokens, nano, 0 if s.used is None else 1, REMEMBERED_MS]
        for part, (warn_tokens, warn_nano) in zip(r.scopes, s.warn, strict=True):
            args += [
                self._expiry(part.window_ends),
                -1 if warn_tokens is None else warn_tokens,
                -1 if warn_nano is None else warn_nano,
            ]
        return keys, args

    @staticmethod
    def _granted(a: Asked, answer: Any) -> bool | LedgerConflict:
        """The reserve script's answer: granted, refused, or the scope that counts otherwise."""
        if answer[0] == -1:
            part = a.held[int(answer[1]) - 1]
            return conflict(part.scope, str(answer[2]), part.window)
        return bool(answer[0] == 1)

    # ------------------------------------------------------------------ the operations

    def _reserve(self, asked: Asked) -> bool:
        keys, args = self._reserving(asked)
        granted = self._granted(
            asked, self._call(lambda: self._reserve_script(keys=keys, args=args))
        )
        if isinstance(granted, LedgerConflict):
            raise granted
        return granted

    def _finish(self, settling: Settling) -> list[tuple[int, str, int]]:
        keys, args = self._ending(settling)
        return _crossed(self._call(lambda: self._finish_script(keys=keys, args=args)))

    def _finish_and_reserve(
        self, settling: Settling, asked: Asked
    ) -> tuple[bool | LedgerConflict, list[tuple[int, str, int]]]:
        """One script: the settle, then the reservation."""
        keys, args = self._ending(settling)
        more_keys, more_args = self._reserving(asked)
        both_keys = [*keys, *more_keys]
        both_args = [len(keys), len(args), *args, *more_args]
        crossed, answer = self._call(
            lambda: self._settle_and_reserve(keys=both_keys, args=both_args)
        )
        return self._granted(asked, answer), _crossed(crossed)

    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        r = check_reservation(reservation)
        keys = [self._state(r.id), *self._holding(r.scopes)]
        lease_ms = max(1, round(check_lease(lease_seconds) * 1000))
        args: list[Any] = [r.id, lease_ms, REMEMBERED_MS]
        return bool(self._call(lambda: self._renew(keys=keys, args=args)) == 1)

    def status(
        self, scope: str, *, window: str | None = None, at: _dt.datetime | None = None
    ) -> LedgerStatus:
        scope = check_scope(scope)
        kind = window
        if kind is None:
            kind = self._window_of(scope) or "day"
        check_window(kind)
        start, ends = window_bounds(kind, at)
        keys = [SCOPES_KEY, *self._keys(scope, window_key(kind, start))]
        asked = window or ""  # none asked: what the ledger records stands, read just before
        found = self._call(lambda: self._status(keys=keys, args=[scope, asked]))
        if found[0] == -1:
            raise conflict(scope, str(found[1]), kind)
        spent_tokens, spent_nano, held_tokens, held_nano, runs = counts(
            self.url, keys[1], found[1:6]
        )
        reset = found[6]
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
            reset=None if reset is None else reset_part(self.url, keys[1], reset),
        )

    def _window_of(self, scope: str) -> str | None:
        found = self._call(lambda: self._client.hget(SCOPES_KEY, scope))
        return None if found is None else str(found)

    def _reset(self, resetting: Resetting) -> dict[str, Any]:
        import redis

        scope = resetting.scope
        kind = resetting.window or self._window_of(scope) or "day"
        start, ends = window_bounds(kind, resetting.at)
        window = self._keys(scope, window_key(kind, start))[0]
        made: dict[str, Any] = {}

        def step(pipe: redis.client.Pipeline) -> None:  # watched: tried again if it changed
            found = counts(self.url, window, pipe.hmget(window, "st", "sn"))
            made.update(resetting.record(kind, *found))
            pipe.multi()
            pipe.hset(window, mapping={"st": 0, "sn": 0, "reset": json.dumps(made["reset"])})
            pipe.hdel(window, "w")
            if ends is not None:
                pipe.pexpireat(window, self._expiry(ends))
            pipe.lpush(self._runs(scope), json.dumps(made))
            pipe.ltrim(self._runs(scope), 0, KEPT_RUNS - 1)

        self._call(lambda: self._client.transaction(step, window))
        return made

    def _prune(self, before: str) -> int:
        def step() -> int:
            lists = self._client.scan_iter(match=f"{BASE}:scope:*:runs", count=1000)
            return sum(int(self._prune_script(keys=[key], args=[before])) for key in lists)

        return self._call(step)

    def record_run(self, record: dict[str, Any]) -> None:
        scopes, text, ended = run_record(record)
        bounds = [window_bounds(kind, ended) for kind in WINDOWS]
        windows, expiries = [], []
        for scope in scopes:
            for kind, (start, ends) in zip(WINDOWS, bounds, strict=True):
                windows.append(self._keys(scope, window_key(kind, start))[0])
                expiries.append(self._expiry(ends))
        keys = [*(self._runs(scope) for scope in scopes), *windows]
        args: list[Any] = [text, KEPT_RUNS, len(scopes), *expiries]
        self._call(lambda: self._record_run(keys=keys, args=args))

    def runs(self, scope: str, *, limit: int = 20) -> list[dict[str, Any]]:
        scope = check_scope(scope)
        count = check_limit(limit)
        if count == 0:
            return []
        key = self._runs(scope)
        found: list[str] = self._call(lambda: self._client.lrange(key, 0, count - 1))  # type: ignore[arg-type, return-value]
        return run_records(self.url, key, found)


def _crossed(flat: Sequence[Any]) -> list[tuple[int, str, int]]:
    """A script's warnings, flat (scope index from 1, unit, spend), as (index, unit, spend)."""
    items = list(flat)
    return [
        (int(items[i]) - 1, str(items[i + 1]), int(items[i + 2])) for i in range(0, len(items), 3)
    ]


def _migrate(client: Any) -> None:
    """The previous layout's keys (``budgetconf:ledger:{SCOPE}:…``, a window counter per kind)
    moved to this one: each scope keeps the window of its latest reservation, else of its
    latest counter with spend, and a window's keys expire a day after it ends."""
    latest: dict[str, tuple[int, str, str]] = {}  # scope: (rank, moment, window kind)
    for old in list(client.scan_iter(match="budgetconf:ledger:{*", count=1000)):
        scope, _, rest = old[len("budgetconf:ledger:{") :].partition("}:")
        what, _, key = rest.partition(":")
        if what == "reservation":
            client.rename(old, f"{BASE}:reservation:{key}")
            continue
        if what == "runs":
            client.rename(old, f"{BASE}:scope:{scope}:runs")
            continue
        if what not in ("window", "leases", "held"):
            continue  # not the ledger's
        kind, _, start = key.partition(":")
        if kind not in WINDOWS:
            continue
        if what == "leases":
            last = client.zrange(old, -1, -1, withscores=True)
            if last:
                keep_latest(latest, scope, (1, f"{last[0][1]:020.0f}", kind))
        elif what == "window":
            spent = client.hmget(old, "st", "sn")
            if any(value not in (None, "0") for value in spent):
                keep_latest(latest, scope, (0, start, kind))
        new = f"{BASE}:scope:{scope}:{what}:{key}"
        client.rename(old, new)
        if start:
            import datetime as _dt

            ends = window_bounds(kind, _dt.datetime.fromisoformat(start))[1]
            client.pexpireat(new, RedisLedger._expiry(ends))
    for scope, (_, _, kind) in latest.items():
        client.hsetnx(SCOPES_KEY, scope, kind)
