"""The Redis ledger: one budget for every process on every machine that reaches the server.

Each operation is one Lua script run by the server (`register_script`, then
EVALSHA), so a reservation's check against spent + reserved and its write are
one atomic step, whatever other clients do. Leases are timed by the server's
clock (``TIME``), so the machines' clocks need not agree. A settle and the
next turn's reservation can be one call (`RedisLedger.settle_and_reserve`).

The keys of a scope share one hash tag, ``budgetconf:ledger:{SCOPE}:…``, so a
scope lives in one slot of a cluster:

- ``…:window:KIND:START`` (or ``…:window:none``), a hash: ``st``/``sn`` spent
  tokens and nano-dollars, ``rt``/``rn`` held by live leases, ``runs``;
- ``…:leases:WINDOW``, a sorted set of the live reservations' ids by the
  server time (ms) their lease ends, and ``…:held:WINDOW``, a hash of what each
  holds (``tokens:nano``); a script first moves what has expired out of ``rt``/``rn``;
- ``…:reservation:ID``: ``held`` or ``done``, kept for a day after the lease,
  so that a second settle or release counts nothing;
- ``…:runs``: the latest run records, newest first, as JSON.

The client is the ``redis`` package (extra ``budgetconf[redis]``), imported
by this module alone. Connecting and every call time out after 2 s; a
connection dropped (a restarted server) is tried again once at once.
"""

from __future__ import annotations

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
    from collections.abc import Callable
    from typing import Any, Final, TypeVar

    from budgetconf.ledger._address import LedgerURL

    T = TypeVar("T")

REMEMBERED_MS: Final = int(REMEMBERED_SECONDS * 1000)

#: the functions every script starts with: the server's clock, the sweep of expired leases,
#: a reservation and its end; KEYS come in threes: a window, its leases, its holdings
LIBRARY: Final = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- a count is the text of a whole number, added by the server's HINCRBY as a 64-bit integer;
-- never a Lua number, a double that formats past 2**63 as a wrapped, negative count
local function add(key, field, text)
  if text ~= '0' then redis.call('HINCRBY', key, field, text) end
end

local function take(key, field, text)
  if text ~= '0' then redis.call('HINCRBY', key, field, '-' .. text) end
end

local function amounts(text)
  local _, _, tokens, nano = string.find(text, '^(%d+):(%d+)$')
  return tokens, nano
end

local function sweep(window, leases, held, now)
  local gone = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  if #gone == 0 then return end
  for _, id in ipairs(gone) do
    local what = redis.call('HGET', held, id)
    if what then
      local t, n = amounts(what)
      take(window, 'rt', t)
      take(window, 'rn', n)
      redis.call('HDEL', held, id)
    end
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
end

local function reserve(window, leases, held, state, a, now)
  -- a: id, tokens, nano, lease_ms, max_tokens (-1: none), max_nano (-1: none), remember_ms
  sweep(window, leases, held, now)
  local v = redis.call('HMGET', window, 'st', 'sn', 'rt', 'rn')
  -- compared as Lua numbers (doubles), exact while spent and reserved stay below 2**53
  local tokens, nano = tonumber(a[2]), tonumber(a[3])
  local most_tokens, most_nano = tonumber(a[5]), tonumber(a[6])
  if most_tokens >= 0 and (tonumber(v[1]) or 0) + (tonumber(v[3]) or 0) + tokens > most_tokens then
    return 0
  end
  if most_nano >= 0 and (tonumber(v[2]) or 0) + (tonumber(v[4]) or 0) + nano > most_nano then
    return 0
  end
  add(window, 'rt', a[2])
  add(window, 'rn', a[3])
  redis.call('ZADD', leases, now + tonumber(a[4]), a[1])
  redis.call('HSET', held, a[1], a[2] .. ':' .. a[3])
  redis.call('SET', state, 'held', 'PX', tonumber(a[4]) + tonumber(a[7]))
  return 1
end

local function finish(window, leases, held, state, a, now)
  -- a: id, tokens, nano, settling (1) or releasing (0), remember_ms
  if redis.call('GET', state) == 'done' then return 0 end
  sweep(window, leases, held, now)
  if redis.call('ZREM', leases, a[1]) == 1 then
    local t, n = amounts(redis.call('HGET', held, a[1]))
    redis.call('HDEL', held, a[1])
    take(window, 'rt', t)
    take(window, 'rn', n)
  end
  redis.call('SET', state, 'done', 'PX', a[5])
  if a[4] == '1' then
    add(window, 'st', a[2])
    add(window, 'sn', a[3])
  end
  return 1
end
"""
RESERVE: Final = LIBRARY + "return reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, now_ms())"
# ARGV: id, lease_ms, remember_ms; a lease that has ended (swept here) is renewed no more
RENEW: Final = (
    LIBRARY
    + """
local now = now_ms()
sweep(KEYS[1], KEYS[2], KEYS[3], now)
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1])
redis.call('SET', KEYS[4], 'held', 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
return 1
"""
)
FINISH: Final = LIBRARY + "return finish(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, now_ms())"
# the settle's arguments, then the reservation's
SETTLE_AND_RESERVE: Final = (
    LIBRARY
    + """
local now = now_ms()
finish(KEYS[1], KEYS[2], KEYS[3], KEYS[4], {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]}, now)
return reserve(KEYS[5], KEYS[6], KEYS[7], KEYS[8],
  {ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]}, now)
"""
)
STATUS: Final = (
    LIBRARY
    + """
sweep(KEYS[1], KEYS[2], KEYS[3], now_ms())
return redis.call('HMGET', KEYS[1], 'st', 'sn', 'rt', 'rn', 'runs')
"""
)
# KEYS: the runs list, then each window the run ended in; ARGV: the record, how many to keep
RECORD_RUN: Final = """
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
for i = 2, #KEYS do redis.call('HINCRBY', KEYS[i], 'runs', 1) end
return 1
"""


class RedisLedger(Ledger):
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
        self._reserve, self._finish = register(RESERVE), register(FINISH)
        self._settle_and_reserve = register(SETTLE_AND_RESERVE)
        self._renew = register(RENEW)
        self._status, self._record_run = register(STATUS), register(RECORD_RUN)
        self._call(self._client.ping)

    def _call(self, step: Callable[[], T]) -> T:
        """``step``, with the client's errors as `LedgerUnavailable` naming the ledger and cause."""
        try:
            return step()
        except self._errors as exc:
            text = " ".join(str(exc).split()) or type(exc).__name__
            if "imeout" in type(exc).__name__ or "imeout" in text:
                text = f"no answer within {self._timeout:g} s ({text})"
            raise unavailable(self.url, self.address.conceal(text)) from None

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------ the keys

    @staticmethod
    def _keys(scope: str, window: str) -> list[str]:
        """A window's hash, its leases and its holdings."""
        base = f"budgetconf:ledger:{{{scope}}}"
        return [f"{base}:window:{window}", f"{base}:leases:{window}", f"{base}:held:{window}"]

    @staticmethod
    def _state(scope: str, rid: str) -> str:
        return f"budgetconf:ledger:{{{scope}}}:reservation:{rid}"

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
        keys, args, made = self._reservation(
            scope, tokens, cost_usd, lease_seconds, max_tokens, max_cost_usd, window, at
        )
        granted = self._call(lambda: self._reserve(keys=keys, args=args))
        return made if granted == 1 else None

    def _reservation(
        self,
        scope: str,
        tokens: int,
        cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None,
        max_cost_usd: float | None,
        window: str,
        at: _dt.datetime | None,
    ) -> tuple[list[str], list[Any], Reservation]:
        """The keys and arguments of the reserve script, and the reservation it would make."""
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
        keys = [*self._keys(a.scope, a.key), self._state(a.scope, a.rid)]
        args = [
            a.rid,
            a.tokens,
            a.nano,
            max(1, round(a.lease * 1000)),
            -1 if a.most_tokens is None else a.most_tokens,
            -1 if a.most_nano is None else a.most_nano,
            REMEMBERED_MS,
        ]
        return keys, args, a.reservation()

    def _ending(
        self, reservation: Reservation, used: tuple[int, int] | None
    ) -> tuple[list[str], list[Any]]:
        """The keys and arguments of the finish script for ``reservation``."""
        keys = self._holding(reservation)
        tokens, nano = used or (0, 0)
        return keys, [reservation.id, tokens, nano, 0 if used is None else 1, REMEMBERED_MS]

    def _holding(self, reservation: Reservation) -> list[str]:
        """The keys of ``reservation``'s window, its leases and holdings, and its state."""
        scope, rid = check_reservation(reservation).scope, reservation.id
        key = window_key(reservation.window, reservation.window_start)
        return [*self._keys(scope, key), self._state(scope, rid)]

    def renew(self, reservation: Reservation, *, lease_seconds: float) -> bool:
        keys = self._holding(reservation)
        lease_ms = max(1, round(check_lease(lease_seconds) * 1000))
        args: list[Any] = [reservation.id, lease_ms, REMEMBERED_MS]
        return bool(self._call(lambda: self._renew(keys=keys, args=args)) == 1)

    def settle(self, reservation: Reservation, *, tokens: int, cost_usd: float) -> None:
        used = checked_usage(tokens, cost_usd)
        keys, args = self._ending(reservation, used)
        self._call(lambda: self._finish(keys=keys, args=args))

    def release(self, reservation: Reservation) -> None:
        keys, args = self._ending(reservation, None)
        self._call(lambda: self._finish(keys=keys, args=args))

    def settle_and_reserve(
        self,
        reservation: Reservation,
        *,
        tokens: int,
        cost_usd: float,
        reserve_tokens: int,
        reserve_cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        at: _dt.datetime | None = None,
    ) -> Reservation | None:
        """`settle` and `reserve` in one script: one call to the server between two turns."""
        used = checked_usage(tokens, cost_usd)
        keys, args = self._ending(reservation, used)
        more_keys, more_args, made = self._reservation(
            reservation.scope,
            reserve_tokens,
            reserve_cost_usd,
            lease_seconds,
            max_tokens,
            max_cost_usd,
            window,
            at,
        )
        both_keys, both_args = [*keys, *more_keys], [*args, *more_args]
        granted = self._call(lambda: self._settle_and_reserve(keys=both_keys, args=both_args))
        return made if granted == 1 else None

    def status(
        self, scope: str, *, window: str = "day", at: _dt.datetime | None = None
    ) -> LedgerStatus:
        scope = check_scope(scope)
        start, ends = window_bounds(window, at)
        keys = self._keys(scope, window_key(window, start))
        found = self._call(lambda: self._status(keys=keys))
        spent_tokens, spent_nano, held_tokens, held_nano, runs = counts(self.url, keys[0], found)
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
        windows = [
            self._keys(scope, window_key(kind, window_bounds(kind, ended)[0]))[0]
            for kind in WINDOWS
        ]
        keys = [f"budgetconf:ledger:{{{scope}}}:runs", *windows]
        self._call(lambda: self._record_run(keys=keys, args=[text, KEPT_RUNS]))

    def runs(self, scope: str, *, limit: int = 20) -> list[dict[str, Any]]:
        scope = check_scope(scope)
        count = check_limit(limit)
        if count == 0:
            return []
        key = f"budgetconf:ledger:{{{scope}}}:runs"
        found: list[str] = self._call(lambda: self._client.lrange(key, 0, count - 1))  # type: ignore[arg-type, return-value]
        return run_records(self.url, key, found)
