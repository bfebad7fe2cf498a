"""The events carry what a report of the run needs: its id, the time, usage and provenance."""

from __future__ import annotations

import time
from pathlib import Path

from budgetconf import resolve
from budgetconf.loop import ScriptedModel

from helpers.loops import ECHO, Driver, Echo, answer, budget, usage
from helpers.presetfiles import preset_file


def test_every_event_carries_the_run_id_and_the_time(drive: Driver) -> None:
    """One id per run, on every event and on the result; times in order, within the run."""
    before = time.time()
    ex = drive.executor(ScriptedModel([ECHO, answer()]), {"echo": Echo()}, budget(max_steps=5))
    first, second = drive.run(ex, "go"), drive.run(ex, "go")
    after = time.time()
    for result in (first, second):
        assert len(result.run_id) == 32
        assert int(result.run_id, 16) >= 0
        assert {event["run_id"] for event in result.events} == {result.run_id}
        times = [event["time"] for event in result.events]
        assert all(isinstance(t, float) for t in times)
        assert times == sorted(times)
        assert before <= times[0]
        assert times[-1] <= after
    assert first.run_id != second.run_id


def test_run_started_gives_each_limit_with_its_provenance(drive: Driver) -> None:
    """budgets: each enforced budget's field, value, source, locator and what raises it."""
    ex = drive.executor(ScriptedModel([answer()]), {}, budget(max_steps=4, max_tokens=90))
    started = drive.run(ex, "go").events[0]
    assert started["limits"] == {"max_steps": 4, "max_tool_calls_per_turn": 10, "max_tokens": 90}
    assert started["budgets"]["max_tokens"] == {
        "field": "limits.max_tokens",
        "value": 90,
        "source": "explicit",
        "locator": "explicit",
        "raise_with": [],
    }
    default = started["budgets"]["max_tool_calls_per_turn"]
    assert (default["source"], default["locator"]) == ("default", "built-in default")
    assert "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN" in default["raise_with"]
    assert started["carried_over"] == {
        "turns": 0,
        "tool_calls_executed": 0,
        "tokens": 0,
        "cost_usd": 0.0,
    }


def test_a_resumed_run_says_what_it_carries_over_and_has_its_own_id(drive: Driver) -> None:
    """carried_over holds the totals the continuation starts from; stopped, the new totals."""
    model = ScriptedModel([{**ECHO, **usage(10), "cost_usd": 0.5}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2))
    first = drive.run(ex, "go")
    more = drive.resume(ex, first, extra_steps=1)
    started, stopped = more.events[0], more.events[-1]
    assert started["carried_over"] == {
        "turns": 2,
        "tool_calls_executed": first.tool_calls_executed,
        "tokens": 20,
        "cost_usd": 1.0,
    }
    assert (stopped["turns"], stopped["tokens"], stopped["cost_usd"]) == (3, 30, 1.5)
    assert more.run_id != first.run_id


def test_a_secret_limit_stays_masked_in_the_provenance(drive: Driver, tmp_path: Path) -> None:
    """A secret field's value is *** in budgets as in limits."""
    path = preset_file(
        tmp_path,
        fields={"loop.max_steps": {"type": "int", "default": 3, "secret": True}},
        loop={"max_steps": "loop.max_steps"},
    )
    ex = drive.executor(ScriptedModel([answer()]), {}, resolve(path))
    started = drive.run(ex, "go").events[0]
    assert started["limits"] == {"max_steps": "***"}
    assert started["budgets"]["max_steps"]["value"] == "***"
