"""One round trip to Redis a turn: what the executor's run sends the server, command by command.

A separate connection watches the server (MONITOR) while the run goes: each command a
client sent is one line (a script's own commands are lines of their own, marked ``lua``,
and left out here), so the count is of the round trips the run made. SQLite's one write
transaction a turn is not observable from outside the process, and is not counted here.
"""

from __future__ import annotations

import functools
import hashlib
import re
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

import budgetconf
import budgetconf.ledger
from budgetconf.errors import LedgerConflict
from budgetconf.ledger import Ledger, LedgerURL
from budgetconf.ledger._redis import RedisLedger
from budgetconf.ledger._redis_scripts import FINISH, RECORD_RUN, RESERVE, SETTLE_AND_RESERVE
from budgetconf.loop import LoopExecutor, ScriptedModel

from helpers.redis_server import RedisServer

if TYPE_CHECKING:
    from budgetconf.ledger._checks import Asked, Settling

#: each script by the SHA1 its EVALSHA names
SCRIPTS = {
    hashlib.sha1(text.encode()).hexdigest(): name
    for name, text in [
        ("reserve", RESERVE),
        ("settle_and_reserve", SETTLE_AND_RESERVE),
        ("finish", FINISH),
        ("record_run", RECORD_RUN),
    ]
}
LINE = re.compile(r"^\+[0-9.]+ \[[0-9]+ ([^\]]+)\] (.*)$")
WORD = re.compile(r'"((?:[^"\\]|\\.)*)"')
END = "budgetconf-round-trips-end"


def watched(server: RedisServer, act: Callable[[], object]) -> list[str]:
    """The commands clients sent ``server`` while ``act()`` ran, in order: each command's name
    in lower case, an EVALSHA as its script's name."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(b"MONITOR\r\n")
        seen = b""
        while b"\r\n" not in seen:
            seen += conn.recv(4096)
        assert seen.startswith(b"+OK"), seen
        seen = seen.partition(b"\r\n")[2]
        act()
        assert server.command("ECHO", END).startswith(b"$")  # the last line this watch reads
        while END.encode() not in seen:
            more = conn.recv(65536)
            assert more, "the server closed the watch"
            seen += more
    found = []
    for text in seen.decode().split("\r\n"):
        line = LINE.match(text)
        if line is None or line.group(1) == "lua":  # a script's own command: no round trip
            continue
        words = WORD.findall(line.group(2))
        if words == ["ECHO", END]:
            break
        name = words[0].lower()
        found.append(SCRIPTS.get(words[1], "unknown script") if name == "evalsha" else name)
    return found


def run(url: str, turns: int) -> None:
    """An executor's run of ``turns`` turns drawing on a user, its team and its org at once."""
    tool = {"content": "", "usage": {"total_tokens": 10}, "cost_usd": 0.001}
    responses: list[dict[str, Any]] = [
        {**tool, "tool_calls": [{"id": f"c{n}", "name": "t", "arguments": {"n": n}}]}
        for n in range(turns - 1)
    ]
    responses.append({**tool, "content": "done"})
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": "user:a",
        "BUDGETCONF_LEDGER_PARENTS": "team:t,org:o",
        "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE": "user:a=100000,team:t=500000",
        "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "org:o=50",
        "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "team:t=week,org:o=month",
        "BUDGETCONF_LEDGER_LEASE_SECONDS": "300",  # no renewal within the run
    }
    model = ScriptedModel(responses, record=False)
    result = LoopExecutor(model, {"t": lambda n: "ok"}, budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, result.turns) == ("ok", turns), result.message


@pytest.fixture
def server(redis_server: RedisServer, redis_url: str) -> RedisServer:
    """The session's redis-server, emptied, with the ledger's scripts loaded by a first run
    (a script is sent once per server, then named by its SHA1)."""
    run(redis_url, 2)
    return redis_server


def split(commands: list[str]) -> tuple[list[str], list[str]]:
    """The script calls, and every other command (the connection's opening)."""
    scripts = [c for c in commands if c in SCRIPTS.values() or c == "unknown script"]
    return scripts, [c for c in commands if c not in scripts]


def test_each_turn_after_the_first_is_one_script_call(server: RedisServer) -> None:
    """A run of N turns: one reservation, then for each later turn one call that settles the
    last response and reserves the next call, then the last settle and the record; besides
    them only the connection's opening, the same whatever N."""
    openings = []
    for turns in (3, 12):
        scripts, rest = split(watched(server, functools.partial(run, server.url, turns)))
        assert scripts == [
            "reserve",
            *["settle_and_reserve"] * (turns - 1),
            "finish",
            "record_run",
        ]
        openings.append(rest)
    assert openings[0] == openings[1]
    assert "get" in openings[0]  # the ledger's layout is checked as it opens
    assert len(openings[0]) <= 3, openings[0]  # the layout's check and the client's hello


class TwoStep(RedisLedger):
    """A Redis ledger that settles and reserves in two calls: its base class's way, for a
    backend without a combined step."""

    def _finish_and_reserve(
        self, settling: Settling, asked: Asked
    ) -> tuple[bool | LedgerConflict, list[tuple[int, str, int]]]:
        return super(RedisLedger, self)._finish_and_reserve(settling, asked)


def test_a_ledger_settling_and_reserving_apart_costs_two_calls_a_turn(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same watch sees the second round trip where the settle and the reservation are two
    steps: the one-call turn is the backend's, not the watch's reading."""

    def two_step(url: str | LedgerURL) -> Ledger:
        return TwoStep(url if isinstance(url, LedgerURL) else budgetconf.ledger.parse_url(url))

    monkeypatch.setattr(budgetconf.ledger, "open_ledger", two_step)
    scripts, _ = split(watched(server, lambda: run(server.url, 5)))
    assert scripts == ["reserve", *["finish", "reserve"] * 4, "finish", "record_run"]
