"""The executor draws on the shared ledger: reserve before each call, settle after, stop at its
maximum, ``on_unavailable`` both ways, one record per run, against a real SQLite ledger."""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf import BudgetConfWarning
from budgetconf.ledger import open_ledger
from budgetconf.loop import Budget, LoopExecutor, ScriptedModel
from budgetconf.loop import _ledger as ledger_part
from budgetconf.loop._budget import LedgerSettings

from helpers.redis_server import RedisServer

SRC = Path(budgetconf.__file__).parent.parent


def url_of(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def answer(tokens: int, cost: float, *, tool: bool = True) -> dict[str, Any]:
    """A response that reports ``tokens`` and ``cost``, calling the tool ``t`` unless not."""
    calls = [{"id": "c", "name": "t", "arguments": "{}"}] if tool else []
    return {"content": "", "tool_calls": calls, "usage": {"total_tokens": tokens}, "cost_usd": cost}


def executor(env: dict[str, str], responses: list[dict[str, Any]], **kw: Any) -> LoopExecutor:
    res = budgetconf.resolve(env=env, **kw)
    return LoopExecutor(ScriptedModel(responses), {"t": lambda: "ok"}, res)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_a_run_reserves_before_each_call_and_settles_what_the_response_reported(
    tmp_path: Path,
) -> None:
    url = url_of(tmp_path)
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_SCOPE": "team-a"}
    result = executor(env, [answer(10, 0.01), answer(20, 0.02, tool=False)]).run("hi")
    assert result.status.value == "ok"
    kinds = types(result.events)
    assert kinds.count("ledger_reserve") == kinds.count("ledger_settle") == 2
    # the reservation comes before the call's turn, the settle after its response
    assert kinds.index("ledger_reserve") < kinds.index("turn_started")
    assert kinds.index("model_response") < kinds.index("ledger_settle")
    reserve = next(e for e in result.events if e["type"] == "ledger_reserve")
    assert (reserve["scope"], reserve["tokens"], reserve["cost_usd"]) == ("team-a", 4096, 0.05)
    settle = [e for e in result.events if e["type"] == "ledger_settle"]
    assert [(e["tokens"], e["cost_usd"], e["released"]) for e in settle] == [
        (10, 0.01, False),
        (20, 0.02, False),
    ]
    with open_ledger(url) as led:
        status = led.status("team-a", window="day")
        (record,) = led.runs("team-a")
    assert status.spent_tokens == 30
    assert status.spent_cost_usd == pytest.approx(0.03)
    assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (0, 0.0, 1)
    assert record["turns"] == 2
    assert record["tokens"] == 30
    assert record["cost_usd"] == pytest.approx(0.03)
    assert record["stop_reason"] == "completed"
    assert set(record) == {
        "run_id",
        "scope",
        "host",
        "pid",
        "started",
        "ended",
        "turns",
        "tokens",
        "cost_usd",
        "stop_reason",
        "parents",
    }
    assert record["parents"] == []
    assert record["started"].endswith("Z")
    assert record["ended"] >= record["started"]


def test_the_stop_at_the_scope_s_maximum_names_the_field_the_scope_and_the_window(
    tmp_path: Path,
) -> None:
    """Refused before the call: max_cost, truncated, the limit and message of the contract."""
    project = tmp_path / "settings.toml"
    project.write_text(
        f'[ledger]\nurl = "{url_of(tmp_path)}"\nscope = "team-a"\nmax_cost_usd = 0.2\n'
    )
    model = ScriptedModel([answer(10, 0.05)])
    res = budgetconf.resolve(env={}, project_file=str(project))
    result = LoopExecutor(model, {"t": lambda: "ok"}, res).run("hi")
    assert (result.status.value, result.stop_reason) == ("truncated", "max_cost")
    assert model.calls == 4  # 0.15 spent + 0.05 reserved reaches 0.2 exactly: granted
    _, ends = budgetconf.ledger.window_bounds("day")
    assert ends is not None
    resets = ends.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert result.message == (
        f"stopped: hit max_cost (0.2): ledger.max_cost_usd = 0.2 from {project}:4;"
        f" scope team-a has spent $0.2 of $0.2 this day (resets {resets});"
        " raise it with BUDGETCONF_LEDGER_MAX_COST_USD or --ledger-max-cost-usd"
    )
    assert result.limit == {
        "field": "ledger.max_cost_usd",
        "value": 0.2,
        "source": "project",
        "locator": f"{project}:4",
        "raise_with": ["BUDGETCONF_LEDGER_MAX_COST_USD", "--ledger-max-cost-usd"],
        "scope": "ledger",
        "ledger_scope": "team-a",
        "spent": pytest.approx(0.2),
        "reserved": 0.0,
        "window_ends": resets,
    }
    # the last call settles in the step that asks for the next one's reservation
    assert types(result.events)[-5:] == [
        "tool_executed",
        "ledger_settle",
        "ledger_refused",
        "budget_exhausted",
        "stopped",
    ]


def test_a_token_maximum_stops_with_max_tokens_and_a_window_of_none_names_no_reset(
    tmp_path: Path,
) -> None:
    env = {
        "BUDGETCONF_LEDGER_URL": url_of(tmp_path),
        "BUDGETCONF_LEDGER_MAX_TOKENS": "100",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "40",
        "BUDGETCONF_LEDGER_WINDOW": "none",
    }
    result = executor(env, [answer(30, 0.0)]).run("hi")
    assert (result.status.value, result.stop_reason) == ("truncated", "max_tokens")
    assert result.message == (
        "stopped: hit max_tokens (100): ledger.max_tokens = 100 from"
        " env:BUDGETCONF_LEDGER_MAX_TOKENS; scope default has spent 90 of 100 tokens;"
        " raise it with BUDGETCONF_LEDGER_MAX_TOKENS or --ledger-max-tokens"
    )
    assert result.limit is not None
    assert "window_ends" not in result.limit
    assert (result.limit["spent"], result.limit["reserved"]) == (90, 0)


def test_a_model_call_that_raises_releases_its_reservation_at_once(tmp_path: Path) -> None:
    url = url_of(tmp_path)

    def model(messages: object, tools: object) -> Any:
        raise RuntimeError("the provider is down")

    res = budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url})
    result = LoopExecutor(model, budget=res).run("hi")
    assert result.status.value == "failed"
    settle = [e for e in result.events if e["type"] == "ledger_settle"]
    assert [(e["tokens"], e["released"]) for e in settle] == [(0, True)]
    with open_ledger(url) as led:
        status = led.status("default", window="day")
    assert (status.reserved_tokens, status.spent_tokens, status.runs) == (0, 0, 1)


def test_a_model_call_past_the_deadline_releases_its_reservation(tmp_path: Path) -> None:
    url = url_of(tmp_path)

    def model(messages: object, tools: object) -> Any:
        time.sleep(2)
        return answer(1, 0.0)

    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_TIMEOUT_SECONDS": "0.2"}
    result = LoopExecutor(model, budget=budgetconf.resolve(env=env)).run("hi")
    assert result.stop_reason == "timeout"
    with open_ledger(url) as led:
        assert led.status("default", window="day").reserved_tokens == 0


def test_a_resumed_run_writes_a_record_of_its_own_totals(tmp_path: Path) -> None:
    url = url_of(tmp_path)
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_MAX_STEPS": "2"}
    ex = executor(env, [answer(10, 0.0)])
    first = ex.run("hi")
    second = ex.resume(first, extra_steps=1)
    assert (first.turns, second.turns) == (2, 3)
    with open_ledger(url) as led:
        records = led.runs("default")
        status = led.status("default", window="day")
    assert [(r["turns"], r["tokens"]) for r in records] == [(1, 10), (2, 20)]  # newest first
    assert status.spent_tokens == 30


def test_without_a_ledger_url_the_run_never_loads_the_ledger() -> None:
    script = (
        "import sys; from budgetconf.loop import LoopExecutor\n"
        "LoopExecutor(lambda m, t: {'content': 'x'}, budget={}).run('hi')\n"
        "print(sorted(m for m in sys.modules if 'ledger' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    # the address rules the schema reads with, not the ledger's records or any backend
    assert out.strip() == "['budgetconf.ledger', 'budgetconf.ledger._address']"


def test_a_budget_made_in_code_has_no_ledger_unless_given(tmp_path: Path) -> None:
    plain = Budget.from_resolution(budgetconf.resolve(env={}))
    assert plain.ledger is None
    given = budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": "redis://u:hunter2@h:1/0"})
    settings = Budget.from_resolution(given).ledger
    assert settings is not None
    assert settings.url == "redis://u:hunter2@h:1/0"
    assert (settings.source, settings.locator) == ("env", "env:BUDGETCONF_LEDGER_URL")
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in repr(Budget.from_resolution(given))
    assert "redis://u:***@h:1/0" in repr(settings)


# --- the ledger unavailable ------------------------------------------------------------


def test_a_file_that_is_not_a_database_fails_the_run_in_one_line_under_stop(
    tmp_path: Path,
) -> None:
    (tmp_path / "ledger.db").write_text("not a database\n" * 100)
    env = {"BUDGETCONF_LEDGER_URL": url_of(tmp_path)}
    model = ScriptedModel([answer(1, 0.0)])
    result = LoopExecutor(model, budget=budgetconf.resolve(env=env)).run("hi")
    assert (result.status.value, result.stop_reason) == ("failed", "error")
    assert model.calls == 0
    assert "\n" not in result.message
    assert "Traceback" not in result.message
    assert result.message.startswith(f"failed: ledger {url_of(tmp_path)}")
    assert result.message.endswith("(turn 0)")
    (event,) = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert (event["on_unavailable"], event["url"]) == ("stop", url_of(tmp_path))


def test_under_continue_the_run_goes_on_warns_and_tries_again_at_each_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "ledger.db").write_text("not a database\n")
    env = {
        "BUDGETCONF_LEDGER_URL": url_of(tmp_path),
        "BUDGETCONF_LEDGER_ON_UNAVAILABLE": "continue",
    }
    with pytest.warns(BudgetConfWarning, match="the run goes on without it") as caught:
        result = executor(env, [answer(1, 0.0), answer(1, 0.0, tool=False)]).run("hi")
    assert result.status.value == "ok"
    assert result.turns == 2
    unavailable = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert [e["turn"] for e in unavailable] == [1, 2]  # tried again at the next call
    assert len(caught) == 2
    assert "ledger_settle" not in types(result.events)


def test_a_database_locked_past_the_wait_makes_the_ledger_unavailable(tmp_path: Path) -> None:
    url = url_of(tmp_path)
    with open_ledger(url) as led:
        led.status("default", window="day")  # the database exists, with its tables
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                db = sqlite3.connect({str(tmp_path / "ledger.db")!r}, isolation_level=None)
                db.execute("BEGIN EXCLUSIVE")
                print("locked", flush=True)
                time.sleep(30)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        model = ScriptedModel([answer(1, 0.0)])
        env = {"BUDGETCONF_LEDGER_URL": url}
        result = LoopExecutor(model, budget=budgetconf.resolve(env=env)).run("hi")
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
    assert (result.status.value, model.calls) == ("failed", 0)
    assert "locked" in result.message
    assert "\n" not in result.message
    assert 4.5 <= waited < 15


def test_a_window_boundary_crossed_during_a_run_counts_each_call_in_its_own_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call is reserved in one hour and the second in the next: each window keeps
    its own spend, and a settle after the boundary counts in the reservation's window."""
    url = url_of(tmp_path)
    moments = iter(
        [
            dt.datetime(2026, 12, 1, 10, 59, 59, tzinfo=dt.UTC),  # the run starts
            dt.datetime(2026, 12, 1, 10, 59, 59, tzinfo=dt.UTC),  # the first reservation
            dt.datetime(2026, 12, 1, 11, 0, 1, tzinfo=dt.UTC),  # the second, an hour on
        ]
    )
    last = [dt.datetime(2026, 12, 1, 11, 0, 2, tzinfo=dt.UTC)]
    monkeypatch.setattr(ledger_part, "now", lambda: next(moments, last[0]))
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_WINDOW": "hour",
        "BUDGETCONF_LEDGER_MAX_TOKENS": "5000",
    }
    result = executor(env, [answer(700, 0.0), answer(900, 0.0, tool=False)]).run("hi")
    assert result.status.value == "ok"
    with open_ledger(url) as led:
        ten = led.status(
            "default", window="hour", at=dt.datetime(2026, 12, 1, 10, 30, tzinfo=dt.UTC)
        )
        eleven = led.status(
            "default", window="hour", at=dt.datetime(2026, 12, 1, 11, 30, tzinfo=dt.UTC)
        )
    assert (ten.spent_tokens, eleven.spent_tokens) == (700, 900)
    assert ten.reserved_tokens == eleven.reserved_tokens == 0


def test_the_ledger_s_events_and_messages_never_show_the_url_s_password(tmp_path: Path) -> None:
    """A Redis URL with a password, nothing listening: the run fails, and says so without it."""
    url = "redis://agent:hunter2-SECRET@127.0.0.1:9/0"
    model = ScriptedModel([answer(1, 0.0)])
    budget = budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = LoopExecutor(model, budget=budget).run("hi")
    assert result.status.value == "failed"
    assert model.calls == 0
    shown = repr(result) + result.message + repr(result.events) + repr(budget)
    assert "hunter2" not in shown
    assert "SECRET" not in shown
    assert "redis://agent:***@127.0.0.1:9/0" in result.message


# --- Redis stopped in the middle of a run ----------------------------------------------


def _stopping(server: RedisServer, at: int, *, restart_at: int | None = None) -> Any:
    """A model that stops the server on call ``at`` (and starts it again on ``restart_at``)."""
    calls = [0]

    def model(messages: object, tools: object) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == at:
            server.stop()
        if calls[0] == restart_at:
            server.start()
        return answer(10, 0.001, tool=calls[0] < 5)

    return model


def test_redis_stopped_mid_run_ends_it_failed_under_stop_without_a_traceback(
    restartable_redis: RedisServer,
) -> None:
    env = {"BUDGETCONF_LEDGER_URL": restartable_redis.url, "BUDGETCONF_LEDGER_SCOPE": "r"}
    model = _stopping(restartable_redis, at=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stop says it in the result, not in a warning
        result = LoopExecutor(model, {"t": lambda: "ok"}, budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, result.stop_reason, result.turns) == ("failed", "error", 2)
    assert result.message.startswith(f"failed: ledger {restartable_redis.url}")
    assert "\n" not in result.message
    assert "Traceback" not in result.message
    (event,) = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert (event["during"], event["on_unavailable"]) == ("settle", "stop")


def test_redis_stopped_mid_run_lets_it_go_on_under_continue_and_is_drawn_on_when_back(
    restartable_redis: RedisServer,
) -> None:
    env = {
        "BUDGETCONF_LEDGER_URL": restartable_redis.url,
        "BUDGETCONF_LEDGER_SCOPE": "r",
        "BUDGETCONF_LEDGER_ON_UNAVAILABLE": "continue",
    }
    model = _stopping(restartable_redis, at=2, restart_at=3)
    with pytest.warns(BudgetConfWarning) as caught:
        result = LoopExecutor(model, {"t": lambda: "ok"}, budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, result.turns) == ("ok", 5)
    unavailable = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert [(e["turn"], e["during"]) for e in unavailable] == [(2, "settle"), (3, "reserve")]
    assert len(caught) == 2
    with open_ledger(restartable_redis.url) as led:  # a fresh server: what came after it
        status = led.status("r", window="day")
        (record,) = led.runs("r")
    assert (status.spent_tokens, status.reserved_tokens) == (20, 0)  # turns 4 and 5
    assert (record["turns"], record["tokens"]) == (5, 50)  # the run's own totals


def test_a_response_past_its_reservation_overshoots_by_no_more_than_its_excess(
    tmp_path: Path,
) -> None:
    """The guarantee's bound: settled <= max + what the calls in flight used past what they
    reserved; one run has one call in flight, so at most one response's excess."""
    url = url_of(tmp_path)
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_MAX_TOKENS": "150",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "10",
    }
    result = executor(env, [answer(100, 0.0)]).run("hi")
    assert result.stop_reason == "max_tokens"
    with open_ledger(url) as led:
        spent = led.status("default", window="day").spent_tokens
    assert spent == 200  # 100 + 10 <= 150 was granted, then the response used 100
    assert spent - 150 <= 100 - 10


def test_a_release_the_ledger_cannot_take_is_a_warning_and_the_run_s_own_failure_stands(
    restartable_redis: RedisServer,
) -> None:
    def model(messages: object, tools: object) -> Any:
        restartable_redis.stop()
        raise RuntimeError("the provider is down")

    env = {"BUDGETCONF_LEDGER_URL": restartable_redis.url}
    with pytest.warns(BudgetConfWarning, match="its release is lost"):
        result = LoopExecutor(model, budget=budgetconf.resolve(env=env)).run("go")
    assert result.message == "failed: the model raised RuntimeError: the provider is down (turn 1)"
    (event,) = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert event["during"] == "release"


def test_a_record_the_ledger_cannot_take_is_a_warning(restartable_redis: RedisServer) -> None:
    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "stopped":  # the run is over; its record is written next
            restartable_redis.stop()

    env = {"BUDGETCONF_LEDGER_URL": restartable_redis.url}
    model = ScriptedModel([answer(5, 0.0, tool=False)])
    executor = LoopExecutor(model, budget=budgetconf.resolve(env=env), on_event=on_event)
    with pytest.warns(BudgetConfWarning, match="its record is lost"):
        result = executor.run("go")
    assert result.status.value == "ok"
    assert types(result.events)[-2:] == ["stopped", "ledger_unavailable"]


def test_a_budget_made_in_code_with_a_bad_address_fails_its_run_in_one_line() -> None:
    """Resolution checks ledger.url; a Budget built in code is checked when the run opens it."""
    base = Budget.from_resolution(budgetconf.resolve(env={}))
    budget = dataclasses.replace(base, ledger=LedgerSettings("mysql://u:pw-SECRET@h/x"))
    model = ScriptedModel([answer(1, 0.0)])
    result = LoopExecutor(model, budget=budget).run("go")
    assert (result.status.value, model.calls) == ("failed", 0)
    assert result.message.startswith("failed: ledger mysql://u:***@h/x: reserve failed: ")
    assert "SECRET" not in result.message


def test_a_refusal_names_the_maximum_the_ledger_refused_on_even_at_an_exact_cost(
    tmp_path: Path,
) -> None:
    """0.01 spent and 0.05 asked reach a cost maximum of 0.06 exactly (granted), so the token
    maximum is the one refused: the stop says max_tokens, though 0.01 + 0.05 > 0.06 in floats."""
    env = {
        "BUDGETCONF_LEDGER_URL": url_of(tmp_path),
        "BUDGETCONF_LEDGER_MAX_COST_USD": "0.06",
        "BUDGETCONF_LEDGER_MAX_TOKENS": "150",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "100",
    }
    result = executor(env, [answer(100, 0.01)]).run("hi")
    assert (result.stop_reason, result.turns) == ("max_tokens", 1)
    assert result.limit is not None
    assert (result.limit["field"], result.limit["spent"]) == ("ledger.max_tokens", 100)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_response_reporting_a_count_near_2_63_fails_its_run_and_spends_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A count no response can report ends the run error, its reservation given back: the
    scope's spend stays whole, and a reservation past the maximum is still refused."""
    url = url_of(tmp_path) if backend == "sqlite" else request.getfixturevalue("redis_url")
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_MAX_TOKENS": "1000"}
    env["BUDGETCONF_LEDGER_RESERVE_TOKENS"] = "100"
    result = executor(env, [answer(2**63 - 1, 0.0)]).run("hi")
    assert (result.status.value, result.stop_reason, result.turns) == ("failed", "error", 1)
    assert "more tokens than one response can use" in result.message
    with open_ledger(url) as led:
        status = led.status("default", window="day")
        assert (status.spent_tokens, status.reserved_tokens) == (0, 0)
        refused = led.reserve(
            "default", tokens=10**6, cost_usd=0, lease_seconds=60, max_tokens=1000
        )
    assert refused is None


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_call_that_outlives_its_lease_keeps_it_and_the_scope_is_not_overspent(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The reservation is renewed at half its lease while the call runs: another run asking for
    the whole maximum meanwhile is refused, and 200 settle under a maximum of 200, not 400."""
    url = url_of(tmp_path) if backend == "sqlite" else request.getfixturevalue("redis_url")
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_MAX_TOKENS": "200"}
    env.update(BUDGETCONF_LEDGER_RESERVE_TOKENS="200", BUDGETCONF_LEDGER_LEASE_SECONDS="0.3")
    probes: list[bool] = []

    def slow(messages: object, tools: object) -> dict[str, Any]:
        time.sleep(0.9)  # three leases
        with open_ledger(url) as led:  # another run, asking for the scope's whole maximum
            other = led.reserve("default", tokens=200, cost_usd=0, lease_seconds=60, max_tokens=200)
            probes.append(other is not None)
            if other is not None:
                led.settle(other, tokens=200, cost_usd=0)
        return answer(200, 0.0, tool=False)

    result = LoopExecutor(slow, budget=budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, probes) == ("ok", [False])
    assert "ledger_unavailable" not in types(result.events)
    with open_ledger(url) as led:
        status = led.status("default", window="day")
    assert (status.spent_tokens, status.reserved_tokens) == (200, 0)


def _stopped_in_the_call(server: RedisServer) -> Any:
    """A model whose first call stops the server for two half-leases (a renewal fails), then
    starts it again and answers with a tool call; the next answers."""
    calls = [0]

    def model(messages: object, tools: object) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == 1:
            server.stop()
            time.sleep(0.5)
            server.start()
        return answer(10, 0.0, tool=calls[0] == 1)

    return model


def test_a_failed_renewal_is_the_ledger_unavailable_and_stop_ends_the_run(
    restartable_redis: RedisServer,
) -> None:
    env = {"BUDGETCONF_LEDGER_URL": restartable_redis.url, "BUDGETCONF_LEDGER_LEASE_SECONDS": "0.3"}
    model = _stopped_in_the_call(restartable_redis)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stop says it in the result, not in a warning
        result = LoopExecutor(model, {"t": lambda: "ok"}, budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, result.stop_reason, result.turns) == ("failed", "error", 1)
    assert result.message.startswith(f"failed: ledger {restartable_redis.url}")
    events = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert [(e["during"], e["on_unavailable"]) for e in events] == [("renew", "stop")]


def test_a_failed_renewal_under_continue_warns_and_the_run_goes_on(
    restartable_redis: RedisServer,
) -> None:
    env = {
        "BUDGETCONF_LEDGER_URL": restartable_redis.url,
        "BUDGETCONF_LEDGER_LEASE_SECONDS": "0.3",
        "BUDGETCONF_LEDGER_ON_UNAVAILABLE": "continue",
    }
    model = _stopped_in_the_call(restartable_redis)
    with pytest.warns(BudgetConfWarning, match="may have expired before it settled"):
        result = LoopExecutor(model, {"t": lambda: "ok"}, budgetconf.resolve(env=env)).run("go")
    assert (result.status.value, result.turns) == ("ok", 2)
    events = [e for e in result.events if e["type"] == "ledger_unavailable"]
    assert [e["during"] for e in events] == ["renew"]


def test_a_renewal_says_what_it_met_a_lease_that_ended_or_a_backends_fault(
    tmp_path: Path,
) -> None:
    """`Renewal._renew` of a reservation settled already: the lease ended; of something the
    backend cannot take: its fault, in one line naming the ledger."""
    from budgetconf.loop._renewal import Renewal

    url = url_of(tmp_path)
    settings = LedgerSettings(url, lease_seconds=60.0)
    with open_ledger(url) as led:
        held = led.reserve("team-a", tokens=1, cost_usd=0.0, lease_seconds=60)
        assert held is not None
        led.release(held)
        renewal = Renewal(led, settings)
        try:
            ended = renewal._renew(held)
            fault = renewal._renew("not a reservation")  # type: ignore[arg-type]
        finally:
            renewal.close()
    assert ended is not None
    assert str(ended).endswith("the reservation's lease ended before it was renewed")
    assert fault is not None
    assert str(fault).startswith(f"ledger {url}: renew failed: ")
