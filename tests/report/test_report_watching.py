"""The report of what a run watches besides its budgets' totals: each tool's own limit, the
warnings before a limit, and the stop of a run that makes no progress (docs/report.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from budgetconf._report._page import render
from budgetconf._report._read import parse_events
from budgetconf.cli import main
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel, current_run

from conftest import Place
from helpers.loops import Echo, answer, budget, call
from helpers.reports import Page, limited_run, lines, search, watched_run, write_events


def page_of(*results: RunResult, extra: list[dict[str, Any]] | None = None) -> Page:
    events = [e for r in results for e in r.events] + (extra or [])
    return Page(render("run.jsonl", parse_events(lines(events).encode())))


def _bars(page: Page, tool: str) -> dict[str, dict[str, str | None]]:
    """The executed and limited bars and the limit line of a tool's chart, by their class."""
    found: dict[str, dict[str, str | None]] = {}
    inside = False
    for tag, attrs in page.elements:
        if tag == "svg":
            inside = attrs.get("data-tool") == tool
        elif inside and attrs.get("class") in ("bar", "bar-limited", "limit"):
            found[attrs["class"] or ""] = attrs
    return found


def _rows(page: Page, budget: str) -> list[dict[str, str | None]]:
    return [a for a in page.having("tr") if a.get("data-budget") == budget]


def test_each_tool_with_a_limit_is_a_bar_of_its_calls_and_of_those_past_it() -> None:
    """web_search (3 allowed, 3 more asked for past it) and fetch (3 of 5): a bar each, in
    run_started's order (by name), the part past the limit after what ran, the limit's line
    where the calls that ran end; echo, with no limit of its own, has none."""
    result = limited_run()
    page = page_of(result)
    tools = [a["data-tool"] for a in page.with_class("svg", "tool")]
    assert tools == ["fetch", "web_search"]
    assert {a["data-budget"] for a in page.with_class("svg", "tool")} == {"max_calls_by_tool"}
    text = page.text
    assert "web_search: 3 of 3 calls ran, 3 not executed past it (tools.max_calls.web_search)" in (
        text
    )
    assert "fetch: 3 of 5 calls ran (tools.max_calls.fetch)" in text
    searched = _bars(page, "web_search")
    ran, past, limit = searched["bar"], searched["bar-limited"], searched["limit"]
    end = float(ran["x"] or 0) + float(ran["width"] or 0)
    assert float(past["x"] or 0) == pytest.approx(end, abs=0.15)
    assert float(past["width"] or 0) == pytest.approx(float(ran["width"] or 0), abs=0.15)
    assert float(limit["x1"] or 0) == pytest.approx(end, abs=0.15)
    fetched = _bars(page, "fetch")
    assert "bar-limited" not in fetched
    assert float(fetched["limit"]["x1"] or 0) > float(fetched["bar"]["x"] or 0) + float(
        fetched["bar"]["width"] or 0
    )


def test_a_tools_limit_is_in_the_budgets_table_and_each_turn_says_what_it_answered() -> None:
    """The budgets table has a row per tool limit (field, value, source); a turn's "not run"
    counts the calls past it, and its notes name the tool and the setting."""
    result = limited_run()
    page = page_of(result)
    rows = [a.get("data-tool") for a in _rows(page, "max_calls_by_tool")]
    assert rows == ["fetch", "web_search"]
    assert "calls of web_search" in page.text
    assert "web_search: 1 not executed past its limit (tools.max_calls.web_search = 3)" in (
        page.text
    )
    assert "web_search: 2 not executed past its limit (tools.max_calls.web_search = 3)" in (
        page.text
    )
    markup = render("run.jsonl", parse_events(lines(result.events).encode()))
    third = re.search(r'<tr class="" data-turn="3">(.*?)</tr>', markup)
    assert third is not None
    cells = [Page(c).text for c in re.findall(r"<td[^>]*>(.*?)</td>", third.group(1))]
    assert cells[3:5] == ["1", "2"]  # fetch ran; web_search's two calls were answered


def test_a_childs_calls_count_against_its_parents_tool_limit() -> None:
    """A sub-agent that searches once: the lead's bar counts its call, as the loop does."""
    kids: list[RunResult] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert handle is not None
        model = ScriptedModel([{"tool_calls": [call("web_search", q=task)]}, answer("found")])
        kids.append(LoopExecutor(model, {"web_search": search}, handle.carve()).run(task))
        return kids[-1].output

    asked = {"tool_calls": [call("web_search", q="a"), call("delegate", task="b")]}
    model = ScriptedModel([asked, answer("all done")])
    fields = {**budget(max_steps=4), "tools.max_calls": {"web_search": 3}}
    tools: dict[str, Callable[..., Any]] = {"web_search": search, "delegate": delegate}
    lead = LoopExecutor(model, tools, fields).run("go")
    page = page_of(lead, *kids)
    assert "web_search: 2 of 3 calls ran (1 by its children) (tools.max_calls.web_search)" in (
        page.text
    )


def test_budget_warnings_are_marks_on_the_timeline_and_a_table_of_their_own() -> None:
    """Each warning is a dotted line on every chart at its turn's point (one per turn,
    naming each budget it warned of), a row of the warnings table, and a note of its turn."""
    result = watched_run()
    page = page_of(result)
    charts = page.with_class("svg", "chart")
    timelines = [a for a in charts if a.get("data-tool") is None]
    marks = page.with_class("line", "mark-warning")
    assert len(marks) == 2 * len(timelines)  # turn 1's and turn 4's
    text = page.text
    assert "turn 1: budget warning: tools.max_calls.web_search: 1 of 2 used (50%)" in text
    assert (
        "turn 4: budget warning: loop.max_steps: 4 of 8 used (50%);"
        " limits.max_tokens: 600 of 1,000 used (60%)"
    ) in text
    rows = [a["data-field"] for a in page.having("tr") if "data-field" in a]
    assert rows == ["tools.max_calls.web_search", "loop.max_steps", "limits.max_tokens"]
    assert "Each budget is warned of once, when its use first reaches 50% of its limit" in text
    assert "budget warning: limits.max_tokens: 600 of 1,000 used (60%)" in text


def test_a_no_progress_stop_names_its_setting_and_is_drawn_as_a_stop() -> None:
    """Stopped by loop.max_repeats: the stop explains no progress by its setting, every chart
    draws the stop at its turn, and the budgets table has the setting's row."""
    result = watched_run()
    assert (result.stop_reason, result.status.value) == ("no_progress", "truncated")
    page = page_of(result)
    (note,) = [a for t, a in page.elements if "no-progress" in (a.get("class") or "")]
    assert note["class"] == "note no-progress"
    text = page.text
    assert result.message in text
    assert "No progress (loop.max_repeats = 3): the same tool call" in text
    timelines = [a for a in page.with_class("svg", "chart") if a.get("data-tool") is None]
    assert len(page.with_class("line", "mark-stop")) == len(timelines)
    assert "turn 4: stopped by no_progress (loop.max_repeats = 3)" in text
    assert _rows(page, "max_repeats")


def test_a_stop_of_another_budget_says_nothing_of_progress() -> None:
    result = limited_run()
    assert "No progress" not in page_of(result).text


def test_hand_written_events_of_a_secret_limit_and_a_warning_before_turn_1() -> None:
    """A tool limit that is secret (***) draws no line and says so; a tool a tool_limited
    event alone names is drawn from its limit; a warning of turn 0 is a mark before turn 1."""
    events = [
        {
            "type": "run_started",
            "run_id": "s",
            "time": 1.0,
            "limits": {"max_steps": 3, "timeout_seconds": 9},
            "tools": {"lookup": {"field": "agent.lookups", "value": "***", "source": "default"}},
            "warn_at": 0.1,
        },
        {"type": "budget_warning", "run_id": "s", "time": 1.1, "turn": 0, "budget": "timeout"},
        {"type": "turn_started", "run_id": "s", "time": 1.2, "turn": 1},
        {"type": "tool_executed", "run_id": "s", "time": 1.3, "turn": 1, "name": "lookup"},
        {"type": "tool_executed", "run_id": "s", "time": 1.3, "turn": 1, "name": ["odd"]},
        {
            "type": "tool_limited",
            "run_id": "s",
            "time": 1.4,
            "turn": 1,
            "name": "fetch",
            "ids": ["a", "b"],
            "field": "tools.max_calls.fetch",
            "value": 2,
        },
        {"type": "stopped", "run_id": "s", "time": 2.0, "status": "ok", "turns": 1},
    ]
    page = Page(render("s.jsonl", parse_events(lines(events).encode())))
    assert [a["data-tool"] for a in page.with_class("svg", "tool")] == ["lookup", "fetch"]
    assert _bars(page, "lookup").keys() == {"bar"}  # no line for a secret's limit
    text = page.text
    assert "lookup: 1 call ran (limit ***) (agent.lookups)" in text
    assert "fetch: 0 of 2 calls ran, 2 not executed past it (tools.max_calls.fetch)" in text
    assert "before turn 1: budget warning: timeout: ? of ? used" in text
    warned = page.with_class("line", "mark-warning")  # on both charts, at turn 1's start
    assert [a["x1"] for a in warned] == ["70.0", "70.0"]


@pytest.mark.parametrize(
    ("event", "why"),
    [
        (
            {"type": "run_started", "tools": []},
            "run_started: tools: expected an object, got a list",
        ),
        (
            {"type": "run_started", "tools": {"web\nsearch": 3}},
            "run_started: tools: web\\nsearch: expected an object, got a number",
        ),
        (
            {"type": "run_started", "tools": {"x": {"value": 10**400}}},
            "run_started: tools: x: value: expected a number from 0 or text,"
            " got a number of 401 digits",
        ),
        (
            {"type": "run_started", "warn_at": "half"},
            "run_started: warn_at: expected a number from 0 or null, got text",
        ),
        ({"type": "tool_limited", "ids": "a"}, "tool_limited: ids: expected a list, got text"),
        ({"type": "tool_limited", "name": 3}, "tool_limited: name: expected text, got a number"),
        (
            {"type": "budget_warning", "used": "most"},
            "budget_warning: used: expected a number from 0, got text",
        ),
        (
            {"type": "budget_warning", "fraction": -1},
            "budget_warning: fraction: expected a number from 0 or null, got -1",
        ),
        (
            {"type": "budget_warning", "limit": None},
            "budget_warning: limit: expected a number from 0 or text, got null",
        ),
    ],
)
def test_a_watch_event_the_page_cannot_draw_is_a_bad_line(
    event: dict[str, Any], why: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The keys of the new events the page draws are checked as the others are: the line is
    left out with why, the run is drawn from the rest, and the command exits 1."""
    good = limited_run()
    path = write_events(place.work / "w.jsonl", good, extra=lines([{**event, "run_id": "x"}]))
    assert main(["report", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{path}:{len(good.events) + 1}: {why}\n"
    assert "web_search: 3 of 3 calls ran" in (place.work / "w.html").read_text(encoding="utf-8")


def test_a_run_without_watches_draws_none(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """No tool limit, no warn_at: no tool bar, no warning mark, no warnings section."""
    model = ScriptedModel([{"tool_calls": [call()]}, answer()])
    result = LoopExecutor(model, {"echo": Echo()}, budget(max_steps=3)).run("go")
    page = page_of(result)
    assert page.with_class("svg", "tool") == []
    assert page.with_class("line", "mark-warning") == []
    assert page.with_class("section", "warnings") == []
    assert "warned of" not in page.text
