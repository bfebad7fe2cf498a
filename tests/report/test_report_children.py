"""The report of a run with sub-agents: their spend charged to it, each child shown once."""

from __future__ import annotations

import re
from typing import Any

from budgetconf._report._page import render
from budgetconf._report._read import parse_events
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel, current_run

from helpers.loops import Echo, answer, budget, call, calls
from helpers.reports import lines, priced


def delegated(**limits: Any) -> tuple[RunResult, list[RunResult]]:
    """A lead that asks two sub-agents ("researcher"), 20 tokens a turn of its own and 60 a
    turn theirs: the second child's spend stops the lead by its token budget at 220."""
    kids: list[RunResult] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert handle is not None
        model = ScriptedModel([priced(calls(1), 60, 0.01), priced(answer("sub done"), 60, 0.0)])
        kid = LoopExecutor(model, {"echo": Echo()}, handle.carve(), name="researcher").run(task)
        kids.append(kid)
        return kid.output

    asked = {"tool_calls": [call("delegate", task="sub")], "usage": {"total_tokens": 20}}
    model = ScriptedModel([asked, asked, answer("all done")])
    fields = budget(max_steps=5, max_tokens=200, max_tool_calls=40, **limits)
    top = LoopExecutor(model, {"delegate": delegate}, fields).run("go")
    return top, kids


def _page(top: RunResult, kids: list[RunResult]) -> str:
    events = [*top.events, *(e for kid in kids for e in kid.events)]
    return render("kids.jsonl", parse_events(lines(events).encode()))


def _chart(page: str, budget: str) -> str:
    found = re.search(rf'<svg class="chart" data-budget="{budget}".*?</svg>', page)
    assert found is not None, budget
    return found.group(0)


def test_the_charts_count_what_the_children_spent_as_the_stop_did() -> None:
    """A lead stopped by max_tokens at 220 (40 its own, 180 its children's) charts 220 of 200,
    its line reaching the limit line, and its tool calls count the children's too."""
    top, kids = delegated()
    assert (top.stop_reason, top.tokens, top.tool_calls_executed) == ("max_tokens", 220, 3)
    page = _page(top, kids)
    lead = page.split('<section class="run"')[1]
    assert "tokens: 220 of 200 (limits.max_tokens)" in lead
    assert "tool calls: 3 of 40 (limits.max_tool_calls)" in lead
    chart = _chart(lead, "max_tokens")
    points = re.search(r'class="used" points="([^"]+)"', chart)
    limit = re.search(r'class="limit" x1="[\d.]+" y1="([\d.]+)"', chart)
    assert points is not None
    assert limit is not None
    last_y = float(points.group(1).split()[-1].split(",")[1])
    assert last_y <= float(limit.group(1))  # at or over the limit, as the run was
    assert "children spent 120 tokens" in lead  # the turn table says whose the tokens were
    assert "children spent 60 tokens" in lead
    rows = re.findall(r'<tr class="[^"]*" data-turn="(\d+)">(.*?)</tr>', lead)
    so_far = [re.findall(r"<td class=num>([^<]*)</td>", row)[4] for _, row in rows]
    assert so_far == ["140", "220"]


def test_each_child_is_shown_once_by_its_name_and_run() -> None:
    """Each child's section names it ("researcher") and links its own run, which names its
    parent; the keys its start and end share (turn, child_run_id) are not listed twice."""
    top, kids = delegated()
    page = _page(top, kids)
    lead = page.split('<section class="run"')[1]
    sections = re.findall(r'<section class="child".*?</section>', lead)
    assert len(sections) == 2
    for n, (section, kid) in enumerate(zip(sections, kids, strict=True), 1):
        found = re.search(r"<h4>(.*?)</h4>", section)
        assert found is not None
        heading = re.sub(r"<[^>]+>", "", found.group(1))
        assert heading.startswith(f"Child {n} · researcher run {n + 1} · ")
        assert f'href="#run-{n + 1}"' in section
        assert f'data-child-run-id="{kid.run_id}"' in section
        assert section.count("<dt>turn</dt>") == 0
        assert section.count("<dt>child_run_id</dt>") == 0
        assert f"ran in turn {n}" in section
    for n, kid in enumerate(kids, 2):
        own = page.split('<section class="run"')[n]
        assert f'data-run-id="{kid.run_id}"' in own
        assert re.search(r'<h2>Run \d · researcher · child of <a href="#run-1">run 1</a>', own)


def test_a_child_whose_own_run_is_not_in_the_file_is_named_by_its_run_id() -> None:
    """The lead's events alone: each child is named by the run id its start gives, unlinked."""
    top, kids = delegated()
    page = render("lead.jsonl", parse_events(lines(top.events).encode()))
    for kid in kids:
        assert f"run {kid.run_id}" in page.replace("<wbr>", "")
        assert f'href="#run-{kid.run_id}"' not in page
