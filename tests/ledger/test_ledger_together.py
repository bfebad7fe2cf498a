"""The shared ledger with the other parts that meet it in a run: an administrator's policy
that sets the scope's maximum, sub-agents on carved budgets, and the report of the events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import budgetconf
from budgetconf._report._page import render
from budgetconf._report._read import parse_events
from budgetconf.ledger import open_ledger, window_bounds
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel, current_run

from conftest import Place


def answer(tokens: int, cost: float, *, tool: str | None = "t") -> dict[str, Any]:
    calls = [{"id": "c", "name": tool, "arguments": "{}"}] if tool else []
    return {"content": "", "tool_calls": calls, "usage": {"total_tokens": tokens}, "cost_usd": cost}


def resets() -> str:
    _, ends = window_bounds("day")
    assert ends is not None
    return ends.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_ledger_maximum_the_policy_sets_says_so_and_offers_no_way_to_raise_it(
    place: Place,
) -> None:
    """The stop is the policy's form, then the scope's spend; raise_with is empty."""
    url = f"sqlite:///{place.work / 'ledger.db'}"
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{\n  "ledger": {\n    "max_cost_usd": {"max": 0.2}\n  }\n}\n')
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": "team-a",
        "BUDGETCONF_LEDGER_MAX_COST_USD": "50",
    }
    res = budgetconf.resolve(env=env)
    model = ScriptedModel([answer(10, 0.05)])
    result = LoopExecutor(model, {"t": lambda: "ok"}, res).run("hi")
    assert (result.status.value, result.stop_reason) == ("truncated", "max_cost")
    assert model.calls == 4  # 0.15 spent and 0.05 reserved reach the ceiling: granted
    assert result.message == (
        f"stopped: hit max_cost (0.2): ledger.max_cost_usd = 0.2 from the policy"
        f" {place.policy}:3 (ceiling; env:BUDGETCONF_LEDGER_MAX_COST_USD asked for 50.0);"
        f" scope team-a has spent $0.2 of $0.2 this day (resets {resets()});"
        " only the policy's administrator can raise it"
    )
    assert result.limit is not None
    assert (result.limit["source"], result.limit["raise_with"]) == ("policy", [])
    assert result.limit["scope"] == "ledger"


def _parent_with_a_child(url: str, kids: list[RunResult]) -> RunResult:
    def delegate() -> str:
        handle = current_run()
        assert handle is not None
        model = ScriptedModel([answer(30, 0.03), answer(5, 0.0, tool=None)])
        kid = LoopExecutor(model, {"t": lambda: "ok"}, handle.carve(max_tokens=500)).run("sub")
        kids.append(kid)
        return "sub done"

    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_SCOPE": "team-a"}
    res = budgetconf.resolve(env=env, explicit={"limits.max_tokens": 1000})
    model = ScriptedModel([answer(10, 0.01, tool="delegate"), answer(20, 0.02, tool=None)])
    return LoopExecutor(model, {"delegate": delegate}, res).run("go")


def test_a_sub_agent_draws_on_the_ledger_itself_and_nothing_is_counted_twice(
    tmp_path: Path,
) -> None:
    """The child reserves and settles its own calls and writes its own record; its spend is in
    its parent's totals, but the ledger holds each call once."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    kids: list[RunResult] = []
    top = _parent_with_a_child(url, kids)
    (kid,) = kids
    assert top.status.value == kid.status.value == "ok"
    assert (kid.tokens, top.tokens) == (35, 65)  # the parent's totals include the child's
    settled = [e for e in kid.events if e["type"] == "ledger_settle"]
    assert [e["tokens"] for e in settled] == [30, 5]
    with open_ledger(url) as led:
        status = led.status("team-a", window="day")
        records = led.runs("team-a")
    assert status.spent_tokens == 65  # 10 + 20 by the parent, 30 + 5 by the child: once each
    assert status.reserved_tokens == 0
    assert {r["run_id"]: r["tokens"] for r in records} == {kid.run_id: 35, top.run_id: 30}


def test_the_report_shows_a_run_s_ledger_events_and_its_child(tmp_path: Path) -> None:
    """The page of real events from a run on a ledger, with a sub-agent: both runs, the
    ledger's reservations and settles, and the child nested under its parent."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    kids: list[RunResult] = []
    top = _parent_with_a_child(url, kids)
    lines = "".join(json.dumps(e) + "\n" for e in [*top.events, *kids[0].events])
    page = render("events.jsonl", parse_events(lines.encode()))
    page = page.replace("<wbr>", "")  # where a name may break: its text reads whole
    assert page.count('class="run"') == 2
    assert "ledger_reserve" in page
    assert "ledger_settle" in page
    assert 'class="child"' in page
    assert "team-a" in page


def test_a_report_of_a_run_whose_ledger_was_down_never_shows_its_password() -> None:
    url = "redis://agent:pw-SECRET@127.0.0.1:1/0"  # nothing listens on port 1
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_ON_UNAVAILABLE": "stop"}
    res = budgetconf.resolve(env=env)
    result = LoopExecutor(ScriptedModel([answer(1, 0.0, tool=None)]), {}, res).run("hi")
    assert result.status.value == "failed"
    lines = "".join(json.dumps(e) + "\n" for e in result.events)
    page = render("events.jsonl", parse_events(lines.encode()))
    for shown in (lines, page, result.message):
        assert "SECRET" not in shown
    assert "redis://agent:***@127.0.0.1:1/0" in page
