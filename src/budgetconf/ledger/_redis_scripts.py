"""The Lua scripts the Redis ledger runs on the server, each one atomic step.

The keys of a scope's window come in threes, in this order: the window's hash
(``st``/``sn`` spent tokens and nano-dollars, ``rt``/``rn`` held by live leases,
``runs``, ``w`` once the fleet's warning has fired, ``reset``), its leases (a
sorted set of reservation ids by the server time, in ms, their lease ends) and
its holdings (a hash of what each id holds, ``tokens:nano``). A script first
moves what has expired out of ``rt``/``rn`` (`sweep`).

A scope's arguments come in fives for a reservation (scope, window kind, most
tokens, most nano-dollars, when its keys expire) and in threes for a settle
(when its keys expire, the spent tokens and nano-dollars that warn); ``-1``
stands for none, and an expiry of ``-1`` for a window that never ends.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

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

local function expire(key, at)
  if at ~= '-1' then redis.call('PEXPIREAT', key, at) end
end

local function slice(t, from, to)
  local part = {}
  for i = from, to do part[#part + 1] = t[i] end
  return part
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

-- K: the scopes' windows hash, the reservation's state, then each scope's three keys
-- A: id, tokens, nano, lease_ms, remember_ms, then each scope's five arguments
-- {1}: granted; {0, i}: scope i has no room; {-1, i, window}: scope i counts in another window
local function reserve(K, A, now)
  local n = (#K - 2) / 3
  for i = 1, n do
    local recorded = redis.call('HGET', K[1], A[6 + 5 * (i - 1)])
    if recorded and recorded ~= A[7 + 5 * (i - 1)] then return {-1, i, recorded} end
  end
  local tokens, nano = tonumber(A[2]), tonumber(A[3])
  for i = 1, n do
    local w, a = 3 + 3 * (i - 1), 6 + 5 * (i - 1)
    sweep(K[w], K[w + 1], K[w + 2], now)
    local most_tokens, most_nano = tonumber(A[a + 2]), tonumber(A[a + 3])
    if most_tokens >= 0 or most_nano >= 0 then
      local v = redis.call('HMGET', K[w], 'st', 'sn', 'rt', 'rn')
      -- compared as Lua numbers (doubles), exact while spent and reserved stay below 2**53
      local spent_tokens = (tonumber(v[1]) or 0) + (tonumber(v[3]) or 0)
      local spent_nano = (tonumber(v[2]) or 0) + (tonumber(v[4]) or 0)
      if most_tokens >= 0 and spent_tokens + tokens > most_tokens then return {0, i} end
      if most_nano >= 0 and spent_nano + nano > most_nano then return {0, i} end
    end
  end
  for i = 1, n do
    local w, a = 3 + 3 * (i - 1), 6 + 5 * (i - 1)
    add(K[w], 'rt', A[2])
    add(K[w], 'rn', A[3])
    redis.call('ZADD', K[w + 1], now + tonumber(A[4]), A[1])
    redis.call('HSET', K[w + 2], A[1], A[2] .. ':' .. A[3])
    for k = w, w + 2 do expire(K[k], A[a + 4]) end
    redis.call('HSETNX', K[1], A[a], A[a + 1])
  end
  redis.call('SET', K[2], 'held', 'PX', tonumber(A[4]) + tonumber(A[5]))
  return {1}
end

-- K: the reservation's state, then each scope's three keys
-- A: id, tokens, nano, settling (1) or releasing (0), remember_ms, then each scope's three
-- the warnings the settle crossed, flat: scope i, 'tokens' or 'nano', the spend; {} if done
local function finish(K, A, now)
  if redis.call('GET', K[1]) == 'done' then return {} end
  local crossed = {}
  for i = 1, (#K - 1) / 3 do
    local w, a = 2 + 3 * (i - 1), 6 + 3 * (i - 1)
    sweep(K[w], K[w + 1], K[w + 2], now)
    if redis.call('ZREM', K[w + 1], A[1]) == 1 then
      local t, n = amounts(redis.call('HGET', K[w + 2], A[1]))
      redis.call('HDEL', K[w + 2], A[1])
      take(K[w], 'rt', t)
      take(K[w], 'rn', n)
    end
    if A[4] == '1' then
      add(K[w], 'st', A[2])
      add(K[w], 'sn', A[3])
      expire(K[w], A[a])
      if A[a + 1] ~= '-1' or A[a + 2] ~= '-1' then
        local v = redis.call('HMGET', K[w], 'st', 'sn', 'w')
        local unit, spent = nil, nil
        if v[3] then
        elseif A[a + 2] ~= '-1' and (tonumber(v[2]) or 0) >= tonumber(A[a + 2]) then
          unit, spent = 'nano', v[2]
        elseif A[a + 1] ~= '-1' and (tonumber(v[1]) or 0) >= tonumber(A[a + 1]) then
          unit, spent = 'tokens', v[1]
        end
        if unit then
          redis.call('HSET', K[w], 'w', '1')
          crossed[#crossed + 1] = i
          crossed[#crossed + 1] = unit
          crossed[#crossed + 1] = spent
        end
      end
    end
  end
  redis.call('SET', K[1], 'done', 'PX', A[5])
  return crossed
end
"""
RESERVE: Final = LIBRARY + "return reserve(KEYS, ARGV, now_ms())"
FINISH: Final = LIBRARY + "return finish(KEYS, ARGV, now_ms())"
# ARGV[1], ARGV[2]: how many keys and arguments the settle takes; then the settle's, then the
# reservation's. The settle's warnings, then the reservation's answer
SETTLE_AND_RESERVE: Final = (
    LIBRARY
    + """
local now = now_ms()
local k, a = tonumber(ARGV[1]), tonumber(ARGV[2])
local crossed = finish(slice(KEYS, 1, k), slice(ARGV, 3, a + 2), now)
local granted = reserve(slice(KEYS, k + 1, #KEYS), slice(ARGV, a + 3, #ARGV), now)
return {crossed, granted}
"""
)
# KEYS: the state, then each scope's three; ARGV: id, lease_ms, remember_ms. A lease that has
# ended (swept here) is renewed no more
RENEW: Final = (
    LIBRARY
    + """
local now = now_ms()
for i = 1, (#KEYS - 1) / 3 do
  local w = 2 + 3 * (i - 1)
  sweep(KEYS[w], KEYS[w + 1], KEYS[w + 2], now)
  if not redis.call('ZSCORE', KEYS[w + 1], ARGV[1]) then return 0 end
end
for i = 1, (#KEYS - 1) / 3 do
  redis.call('ZADD', KEYS[3 + 3 * (i - 1)], 'XX', now + tonumber(ARGV[2]), ARGV[1])
end
redis.call('SET', KEYS[1], 'held', 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
return 1
"""
)
# KEYS: the scopes' windows hash, the window's three keys; ARGV: the scope, the window asked
# ('' for the one recorded). {recorded window or '', st, sn, rt, rn, runs, reset}
STATUS: Final = (
    LIBRARY
    + """
local recorded = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if ARGV[2] ~= '' and recorded ~= '' and recorded ~= ARGV[2] then return {-1, recorded} end
sweep(KEYS[2], KEYS[3], KEYS[4], now_ms())
local v = redis.call('HMGET', KEYS[2], 'st', 'sn', 'rt', 'rn', 'runs', 'reset')
return {recorded, v[1], v[2], v[3], v[4], v[5], v[6]}
"""
)
# KEYS: each scope's runs list (ARGV[3] of them), then each window the run ended in;
# ARGV: the record, how many to keep, how many lists, then each window's expiry
RECORD_RUN: Final = (
    LIBRARY
    + """
local lists = tonumber(ARGV[3])
for i = 1, lists do
  redis.call('LPUSH', KEYS[i], ARGV[1])
  redis.call('LTRIM', KEYS[i], 0, tonumber(ARGV[2]) - 1)
end
for i = lists + 1, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'runs', 1)
  expire(KEYS[i], ARGV[3 + i - lists])
end
return 1
"""
)
# KEYS: a runs list; ARGV: the moment (ISO 8601 UTC) before which a record is removed. The
# list is newest first by when a record was kept, not by when it ended (a back-filled run, a
# reset at= another time): every record is judged, and the list is written again if one went
PRUNE: Final = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local kept = {}
for _, item in ipairs(items) do
  -- the record's own "ended", read as JSON: not a look for its text, which a value may hold
  local ok, record = pcall(cjson.decode, item)
  local ended = ok and type(record) == 'table' and record['ended']
  if type(ended) ~= 'string' or ended >= ARGV[1] then kept[#kept + 1] = item end
end
local gone = #items - #kept
if gone == 0 then return 0 end
redis.call('DEL', KEYS[1])
for i = 1, #kept, 1000 do
  redis.call('RPUSH', KEYS[1], unpack(kept, i, math.min(i + 999, #kept)))
end
return gone
"""
