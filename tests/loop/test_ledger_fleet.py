"""The executor draws on a fleet's nested budgets: its own scope and its parents at once, the
scope that refused named, one window per scope, the fleet's warning once, over SQLite and a
real Redis."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest
import redis

import budgetconf
from budgetconf import BudgetConfWarning
from budgetconf.ledger import open_ledger, window_bounds
from budgetconf.loop import LoopExecutor, ScriptedModel

USER, TEAM, ORG = "user:u-1042", "team:research", "org:acme"


def answer(tokens: int, cost: float, *, tool: bool = True) -> dict[str, Any]:
    calls = [{"id": "c", "name": "t", "arguments": "{}"}] if tool else []
    return {"content": "", "tool_calls": calls, "usage": {"total_tokens": tokens}, "cost_usd": cost}


def fleet(url: str, **values: str) -> dict[str, str]:
    """The variables of a run of `USER` under `TEAM` under `ORG`, and ``values``."""
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": USER,
        "BUDGETCONF_LEDGER_PARENTS": f"{TEAM},{ORG}",
        "BUDGETCONF_LEDGER_RESERVE_COST_USD": "0.05",
    }
    env.update({f"BUDGETCONF_LEDGER_{k.upper()}": v for k, v in values.items()})
    return env


def run(env: dict[str, str], responses: list[dict[str, Any]], **kw: Any) -> Any:
    res = budgetconf.resolve(env=env, **kw)
    return LoopExecutor(ScriptedModel(responses), {"t": lambda: "ok"}, res).run("go")


def test_a_run_draws_on_its_scope_and_each_parent_and_is_recorded_in_each(url: str) -> None:
    env = fleet(url, window_by_scope=f"{TEAM}=month,{ORG}=none")
    result = run(env, [answer(10, 0.01), answer(20, 0.02, tool=False)])
    assert result.status.value == "ok"
    with open_ledger(url) as led:
        for scope, window in ((USER, "day"), (TEAM, "month"), (ORG, "none")):
            status = led.status(scope)
            assert (status.window, status.spent_tokens, status.reserved_tokens) == (window, 30, 0)
            assert status.spent_cost_usd == pytest.approx(0.03)
            (record,) = led.runs(scope)
            assert (record["scope"], record["parents"], record["tokens"]) == (
                USER,
                [TEAM, ORG],
                30,
            )


def test_the_team_cap_stops_the_run_naming_the_team_its_locator_spend_and_reset(
    url: str,
) -> None:
    env = fleet(url, max_cost_usd="10", max_cost_usd_by_scope=f"{TEAM}=0.2,{ORG}=100")
    env["BUDGETCONF_LEDGER_WINDOW_BY_SCOPE"] = f"{TEAM}=week"
    result = run(env, [answer(10, 0.05)])
    assert (result.status.value, result.stop_reason) == ("truncated", "max_cost")
    assert result.turns == 4  # 0.15 spent + 0.05 reserved reaches the team's 0.2: granted
    _, ends = window_bounds("week")
    assert ends is not None
    resets = ends.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert result.message == (
        f"stopped: hit max_cost (0.2): ledger.max_cost_usd_by_scope.{TEAM} = 0.2"
        " from env:BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE;"
        f" scope {TEAM} has spent $0.2 of $0.2 this week (resets {resets});"
        " raise it with BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE or --ledger-max-cost-usd-by-scope"
    )
    limit = result.limit
    assert limit is not None
    assert (limit["field"], limit["ledger_scope"], limit["window_ends"]) == (
        f"ledger.max_cost_usd_by_scope.{TEAM}",
        TEAM,
        resets,
    )
    (refused,) = [e for e in result.events if e["type"] == "ledger_refused"]
    assert (refused["scope"], refused["field"]) == (TEAM, limit["field"])
    with open_ledger(url) as led:  # the refusal held nothing anywhere
        for scope in (USER, TEAM, ORG):
            status = led.status(scope)
            assert (status.reserved_tokens, status.reserved_cost_usd) == (0, 0.0)
            assert status.spent_cost_usd == pytest.approx(0.2)


def test_a_team_cap_the_policy_locks_is_not_raised_by_a_users_settings(
    url: str, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.json"
    rules = {
        "ledger": {
            "parents": {"value": f"{TEAM},{ORG}"},
            "max_cost_usd_by_scope": {"keys": {TEAM: {"value": 0.1}}},
        }
    }
    policy.write_text(json.dumps(rules))
    # the user asks for no parents and a team cap of 1000: the policy's stand
    env = fleet(url, max_cost_usd_by_scope=f"{TEAM}=1000", parents=TEAM)
    result = run(env, [answer(10, 0.05)], policy_file=str(policy))
    assert (result.stop_reason, result.turns) == ("max_cost", 2)
    assert result.message.endswith("only the policy's administrator can raise it")
    assert f"scope {TEAM} has spent $0.1 of $0.1 this day" in result.message
    with open_ledger(url) as led:
        assert led.status(ORG).spent_cost_usd == pytest.approx(0.1)


def test_a_parent_asked_for_under_another_window_fails_the_run_naming_the_setting(
    url: str,
) -> None:
    run(fleet(url, window_by_scope=f"{TEAM}=month"), [answer(10, 0.01, tool=False)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a refusal said in the result, not a warning
        result = run(fleet(url), [answer(10, 0.01, tool=False)])
    assert (result.status.value, result.stop_reason, result.turns) == ("failed", "error", 0)
    assert result.message == (
        f"failed: ledger scope {TEAM} counts in the window 'month', recorded by the first run"
        " that drew on it, not 'day': a scope has one window;"
        f" set ledger.window_by_scope.{TEAM} = 'month' to draw on it (turn 0)"
    )
    with open_ledger(url) as led:  # and it held nothing, in any scope
        assert [led.status(s).reserved_tokens for s in (USER, TEAM, ORG)] == [0, 0, 0]
        assert led.status(TEAM).spent_tokens == 10


def test_the_fleets_warning_fires_once_per_scope_and_window_across_runs(url: str) -> None:
    """Two runs share the team's 100 tokens; the one whose settle first reaches 60 % warns,
    the next run does not, though it runs past it too."""
    env = fleet(url, max_tokens_by_scope=f"{TEAM}=100", reserve_tokens="10")
    env["BUDGETCONF_WARN_AT"] = "0.6"
    with pytest.warns(BudgetConfWarning) as caught:
        first = run(env, [answer(10, 0.0)] * 6 + [answer(10, 0.0, tool=False)])
    said = [str(w.message) for w in caught if "ledger warning" in str(w.message)]
    _, ends = window_bounds("day")
    assert ends is not None
    resets = ends.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert said == [
        f"ledger warning: scope {TEAM} has spent 60 of 100 tokens this day (resets {resets}),"
        " the fleet's first past limits.warn_at = 0.6:"
        f" ledger.max_tokens_by_scope.{TEAM} = 100 from env:BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE"
    ]
    (event,) = [e for e in first.events if e["type"] == "ledger_warning"]
    assert {k: event[k] for k in ("turn", "scope", "budget", "spent", "limit", "window")} == {
        "turn": 6,
        "scope": TEAM,
        "budget": "max_tokens",
        "spent": 60,
        "limit": 100,
        "window": "day",
    }
    assert (event["window_ends"], event["field"]) == (resets, f"ledger.max_tokens_by_scope.{TEAM}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run's own budgets' warnings are not asked about
        second = run(env, [answer(10, 0.0)] * 2 + [answer(10, 0.0, tool=False)])
    assert [e for e in second.events if e["type"] == "ledger_warning"] == []
    with open_ledger(url) as led:
        assert led.status(TEAM).spent_tokens == 100


def test_the_settle_and_the_next_reservation_are_one_step_between_two_turns(url: str) -> None:
    """A turn's settle comes with the next call's reservation, after the turn's tools, and
    the last response settles before the run says it stopped."""
    result = run(fleet(url), [answer(10, 0.01), answer(20, 0.02, tool=False)])
    kinds = [e["type"] for e in result.events if e["type"] != "turn_started"]
    ledger = [k for k in kinds if k.startswith("ledger_") or k in ("tool_executed", "stopped")]
    assert ledger == [
        "ledger_reserve",
        "tool_executed",
        "ledger_settle",
        "ledger_reserve",
        "ledger_settle",
        "stopped",
    ]


def test_a_run_stopped_at_its_own_step_budget_settles_its_last_call(url: str) -> None:
    env = fleet(url)
    env["BUDGETCONF_MAX_STEPS"] = "2"
    result = run(env, [answer(10, 0.01)])
    assert result.stop_reason == "max_steps"
    with open_ledger(url) as led:
        status = led.status(ORG)
        assert (status.spent_tokens, status.reserved_tokens) == (20, 0)


def test_a_scope_counted_by_week_resets_on_monday() -> None:
    start, ends = window_bounds("week", dt.datetime(2026, 12, 6, 23, 59, tzinfo=dt.UTC))
    assert (start, ends) == (
        dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
        dt.datetime(2026, 12, 7, tzinfo=dt.UTC),
    )


def _race(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Another run holds $0.01 of `ORG` now, and its response settles for $0.001 just after the
    run's refusal, before the run reads the scopes back to name the one that refused."""
    from budgetconf.loop import _ledger as drawing

    other = open_ledger(url)
    held = [other.reserve(ORG, tokens=0, cost_usd=0.01, lease_seconds=60, window="month")]
    read = drawing.Draw._status

    def settled_between(draw: Any, budget: Any) -> Any:
        reservation = held.pop() if held else None
        if reservation is not None:
            other.settle(reservation, tokens=0, cost_usd=0.001)
            other.close()
        return read(draw, budget)

    monkeypatch.setattr(drawing.Draw, "_status", settled_between)


RACED = {
    "max_tokens_by_scope": f"{USER}=100000",
    "max_cost_usd_by_scope": f"{ORG}=0.02",
    "window_by_scope": f"{ORG}=month,{TEAM}=month",
    "reserve_tokens": "20",
    "reserve_cost_usd": "0.015",
}


def test_a_refusal_whose_scope_has_room_when_read_names_the_scope_nearest_its_maximum(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _race(monkeypatch, url)
    result = run(fleet(url, **RACED), [answer(10, 0.01, tool=False)])
    assert (result.stop_reason, result.turns) == ("max_cost", 0)
    limit = result.limit
    assert limit is not None
    assert (limit["field"], limit["ledger_scope"]) == (f"ledger.max_cost_usd_by_scope.{ORG}", ORG)


def test_a_refusal_the_ledger_cannot_then_say_more_of_still_stops_and_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status read that names the refusing scope fails: the stop names the scope nearest
    its maximum as the run knows it, and the run's record is still written."""
    from budgetconf.errors import LedgerUnavailable
    from budgetconf.ledger._sqlite import SQLiteLedger

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as led:  # the org has spent all but $0.01 of its $0.02
        held = led.reserve(ORG, tokens=0, cost_usd=0.0, lease_seconds=60, window="month")
        assert held is not None
        led.settle(held, tokens=0, cost_usd=0.01)

    def unreachable(self: Any, *args: Any, **kw: Any) -> Any:
        raise LedgerUnavailable("ledger is unavailable: gone")

    monkeypatch.setattr(SQLiteLedger, "status", unreachable)
    result = run(fleet(url, **RACED), [answer(10, 0.01, tool=False)])
    assert (result.stop_reason, result.turns) == ("max_cost", 0)
    assert result.limit is not None
    assert result.limit["ledger_scope"] == ORG
    monkeypatch.undo()
    with open_ledger(url) as led:
        (record,) = led.runs(USER)
    assert record["stop_reason"] == "max_cost"


def _record_window(url: str, scope: str, window: str) -> None:
    """The ledger made to record ``window`` for ``scope``, as another version's migration may."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute("UPDATE ledger_scopes SET window = ? WHERE scope = ?", (window, scope))
        conn.close()
        return
    client = redis.Redis.from_url(url)
    client.hset("budgetconf:{ledger}:scopes", scope, window)
    client.close()


def test_a_window_the_ledger_records_otherwise_mid_run_fails_it_its_last_call_settled(
    url: str,
) -> None:
    calls = [0]

    def model(messages: object, tools: object) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == 1:
            _record_window(url, TEAM, "month")
        return answer(10, 0.01)

    res = budgetconf.resolve(env=fleet(url))
    result = LoopExecutor(model, {"t": lambda: "ok"}, res).run("go")
    assert (result.stop_reason, result.turns) == ("error", 1)
    assert f"set ledger.window_by_scope.{TEAM} = 'month'" in result.message
    settled = [e for e in result.events if e["type"] == "ledger_settle"]
    assert [(e["turn"], e["tokens"]) for e in settled] == [(1, 10)]  # once, not again at its end
    with open_ledger(url) as led:
        assert (led.status(USER).spent_tokens, led.status(USER).reserved_tokens) == (10, 0)
