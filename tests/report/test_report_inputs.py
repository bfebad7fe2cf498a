"""The report's faults on odd input: numbers too big to draw, files that hold no run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from budgetconf.cli import main

from conftest import Place

HUGE = 9 * 10**308  # 309 digits: float() of it overflows


def _write(place: Place, name: str, events: list[dict[str, Any]]) -> str:
    path = place.work / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("key", ["limits", "carried_over"])
def test_a_number_too_big_to_draw_is_a_bad_line_not_a_crash(
    key: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 309-digit integer in run_started's limits or carried_over: the line is left out
    with why, the other runs are drawn, and the command exits 1."""
    inner = {"max_tokens": HUGE} if key == "limits" else {"tokens": HUGE}
    limits = {"max_tokens": 100} if key == "carried_over" else {}
    events = [
        {"type": "run_started", "run_id": "a", "time": 1.0, "limits": limits, key: inner},
        {"type": "run_started", "run_id": "b", "time": 1.0, "limits": {"max_tokens": 100}},
        {"type": "model_response", "run_id": "b", "time": 1.1, "turn": 1, "tokens": 5},
    ]
    path = _write(place, "big.jsonl", events)
    assert main(["report", path]) == 1
    captured = capsys.readouterr()
    field = "max_tokens" if key == "limits" else "tokens"
    assert captured.err == (
        f"{path}:1: run_started: {key}: {field}: expected a number to 2**63-1,"
        " got a number of 309 digits\n"
    )
    assert "1 line left out" in captured.out
    page = (place.work / "big.html").read_text(encoding="utf-8")
    assert "tokens: 5 of 100" in page


@pytest.mark.parametrize("content", ["", "\n\n", 'not json\n{"no": "type"}\n'])
def test_a_file_with_no_run_warns_and_exits_1(
    content: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty events file, or one of bad lines only, is no report of a run: a warning
    names the file and the command exits 1 (the page, saying 0 runs, is still written)."""
    path = place.work / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    assert main(["report", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"budgetconf: warning: no runs in {path}"
    assert (place.work / "empty.html").exists()


def _costed(*sources: str | None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "run_started", "run_id": "a", "time": 1.0, "limits": {"max_cost_usd": 1.0}}
    ]
    for turn, source in enumerate(sources, 1):
        response = {"type": "model_response", "run_id": "a", "time": 1.0 + turn, "turn": turn}
        response.update({"tokens": 5, "cost_usd": 0.0})
        if source is not None:
            response["cost_source"] = source
        events.append(response)
    return events


@pytest.mark.parametrize("sources", [("none", "none"), (None, None)])
def test_a_cost_no_response_reported_is_not_reported_not_0(
    sources: tuple[str | None, ...], place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Responses whose cost_source is "none" (or, before it, a cost of 0): the chart, the turn
    table and a child's end say "not reported", and the chart draws no line at 0."""
    events = _costed(*sources)
    events.append({"type": "child_end", "run_id": "a", "turn": 2, "status": "ok", "cost_usd": 0})
    assert main(["report", _write(place, "cost.jsonl", events)]) == 0
    capsys.readouterr()
    page = (place.work / "cost.html").read_text(encoding="utf-8")
    assert "cost: not reported of $1 (max_cost_usd)" in page
    turns = page.split('<table class="turns">')[1]
    assert turns.count("<td class=num>not reported</td>") == 2
    assert "<td>not reported</td>" in page  # the child's cost_usd
    assert '<polyline class="used" points=""/>' in page
    cost = page.split('<section class="cost">')[1].split("</section>")[0]
    assert '<tr data-part="total"><td>total</td>' in cost  # no picodollars: no cost known
    assert cost.endswith("<td class=num>not reported</td></tr></table></div>")


def test_a_cost_reported_as_0_is_0(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A response that reported its cost as 0 (cost_source "reported") shows $0: it was free."""
    assert main(["report", _write(place, "free.jsonl", _costed("reported", "none"))]) == 0
    capsys.readouterr()
    page = (place.work / "free.html").read_text(encoding="utf-8")
    assert "cost: $0 of $1 (max_cost_usd)" in page
    turns = page.split('<table class="turns">')[1]
    assert turns.count("<td class=num>not reported</td>") == 1
    assert '<tr data-part="total" data-picodollars="0">' in page
