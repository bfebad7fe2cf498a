"""`budgetconf report` and `run --report`: the page of an events file, read by an HTML parser.

The browser's view of the same pages is in test_report_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from budgetconf._report._charts import MAX_POINTS
from budgetconf._report._page import render
from budgetconf._report._read import parse_events
from budgetconf.cli import main
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel, current_run

from conftest import Place
from helpers.loops import Echo, answer, budget, call, calls
from helpers.reports import (
    Page,
    completed_run,
    lines,
    long_run,
    priced,
    stopped_run,
    write_events,
)


def report(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["report", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_page_shows_the_stop_each_budget_and_every_turn(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run's events: the stop sentence first, a chart per enforced budget, each turn."""
    result = stopped_run()
    events = write_events(place.work / "events.jsonl", result)
    code, out, err = report([str(events)], capsys)
    assert (code, err) == (0, "")
    assert out == f"wrote {place.work / 'events.html'}: 1 run\n"
    page = Page((place.work / "events.html").read_text(encoding="utf-8"))
    assert result.message.startswith("stopped: hit max_steps (6): loop.max_steps = 6 from")
    assert result.message in page.text
    stop = page.text.index(result.message)
    assert stop < page.text.index("Budgets used") < page.text.index("Turns")
    charts = [a["data-budget"] for a in page.with_class("svg", "chart")]
    assert charts == [
        "max_steps",
        "max_tokens",
        "max_cost_usd",
        "max_tool_calls",
        "timeout_seconds",
        "max_tool_calls_per_turn",
    ]
    assert len(page.with_class("line", "limit")) == 6
    assert len(page.with_class("line", "mark-notice")) == 6  # the last-turn notice, on each
    assert len(page.with_class("circle", "mark-rejected")) == 6  # turn 2's response
    rows = [a["data-turn"] for t, a in page.elements if t == "tr" and "data-turn" in a]
    assert rows == [str(n) for n in range(1, result.turns + 1)]
    assert page.with_class("tr", "rejected")[0]["data-turn"] == "2"
    budgets = {a["data-budget"] for a in page.having("tr") if a.get("data-budget")}
    assert budgets == set(charts)
    assert "limits.max_tokens" in page.text
    assert "explicit" in page.text


def test_the_stop_names_the_limit_a_budget_stop_reports(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The limit's keys (field, value, source, locator, raise_with) are under the stop."""
    result = stopped_run(**{"limits.max_tokens": 700})
    assert result.limit is not None
    events = write_events(place.work / "tokens.jsonl", result)
    report([str(events)], capsys)
    page = Page((place.work / "tokens.html").read_text(encoding="utf-8"))
    stop = page.with_class("section", "stop")
    assert stop == [{"class": "stop truncated"}]
    assert result.stop_reason == "max_tokens"
    text = page.text
    for key in ("field", "value", "source", "locator"):
        assert f"{key}{result.limit[key]:,}" in text if key == "value" else key in text
    assert "limits.max_tokens" in text
    assert "tokens: 800 of 700 (limits.max_tokens)" in text


def test_several_runs_in_one_file_are_listed_and_each_shown(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Appended runs: an index links to each, and each has its section, told apart by run_id."""
    runs = [stopped_run(), completed_run(), stopped_run()]
    events = write_events(place.work / "runs.jsonl", *runs)
    code, out, _ = report([str(events), "-o", str(place.work / "page.html")], capsys)
    assert code == 0
    assert out.endswith(": 3 runs\n")
    page = Page((place.work / "page.html").read_text(encoding="utf-8"))
    sections = page.with_class("section", "run")
    assert [s["data-run-id"] for s in sections] == [r.run_id for r in runs]
    links = [a["href"] for a in page.having("a")]
    assert links == ["#run-1", "#run-2", "#run-3"]
    assert [s["id"] for s in sections] == ["run-1", "run-2", "run-3"]
    assert "completed in 2 turns" in page.text


def test_events_without_a_run_id_are_split_at_each_run_started(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file written before events carried their run's id still shows each of its runs."""
    stripped = [
        {k: v for k, v in event.items() if k not in ("run_id", "time")}
        for run in (completed_run(), completed_run())
        for event in run.events
    ]
    (place.work / "old.jsonl").write_text(lines(stripped), encoding="utf-8")
    code, out, _ = report([str(place.work / "old.jsonl")], capsys)
    assert (code, out.endswith(": 2 runs\n")) == (0, True)


def test_bad_lines_are_told_on_stderr_and_the_good_runs_still_shown(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad line is one line `FILE:LINE: why`; the page is written from the rest; exit 1."""
    good = completed_run()
    bad = (
        "this is not JSON\n"
        "[1, 2]\n"
        '{"no_type": 1}\n'
        '{"type": "model_response", "turn": "three"}\n'
        '{"type": "model_response", "turn": 1, "tokens": NaN}\n'
        '{"type": "model_response", "turn": 1, "cost_usd": -1}\n'
        '{"type": "stopped", "turns": ' + "9" * 30 + "}\n"
        '{"type": "turn_started", "tu'
    )
    events = write_events(place.work / "mixed.jsonl", good, extra=bad)
    code, out, err = report([str(events)], capsys)
    assert code == 1
    first = len(good.events) + 1
    said = err.splitlines()
    assert said == [
        f"{events}:{first}: not JSON: Expecting value, column 1",
        f"{events}:{first + 1}: not an event: expected a JSON object, got a list",
        f'{events}:{first + 2}: not an event: no "type" text',
        f"{events}:{first + 3}: model_response: turn: expected a whole number from 0, got text",
        f"{events}:{first + 4}: not JSON: NaN is not a number JSON allows",
        f"{events}:{first + 5}: model_response: cost_usd: expected a number from 0, got -1",
        f"{events}:{first + 6}: stopped: turns: expected a whole number from 0, got a number"
        " of 30 digits",
        f"{events}:{first + 7}: not JSON: Unterminated string starting at, column 26"
        " (the file ends inside the line: cut short?)",
    ]
    assert out.endswith(": 1 run, 8 lines left out\n")
    page = Page((place.work / "mixed.html").read_text(encoding="utf-8"))
    assert [s["data-run-id"] for s in page.with_class("section", "run")] == [good.run_id]
    assert "Lines that are not events" in page.text
    assert f"line {first + 1}: not an event" in page.text


def test_an_events_file_that_cannot_be_read_is_one_line_and_exit_1(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing file, a folder: `budgetconf: error: FILE: why`, and no page."""
    missing = place.work / "missing.jsonl"
    assert report([str(missing)], capsys) == (
        1,
        "",
        f"budgetconf: error: {missing}: cannot read: No such file or directory\n",
    )
    assert not (place.work / "missing.html").exists()
    code, _, err = report([str(place.work)], capsys)
    assert (code, err) == (1, f"budgetconf: error: {place.work}: is a directory, not a file\n")


def test_a_page_that_cannot_be_written_is_refused_before_reading(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o into a folder, a missing folder or onto the events file itself: a usage error."""
    events = write_events(place.work / "e.jsonl", completed_run())
    for target, why in (
        (place.work, "is a directory"),
        (place.work / "no" / "p.html", f"no folder {place.work / 'no'}"),
        (events, "is the events file itself"),
    ):
        code, _, err = report([str(events), "-o", str(target)], capsys)
        assert (code, err) == (64, f"budgetconf: usage error: -o {target}: {why}\n")
    assert report([str(events), "-o", str(events), "--", "x"], capsys)[0] == 64


def test_a_write_that_fails_leaves_no_partial_page(place: Place) -> None:
    """A page that cannot take its place: what went wrong, and no temporary file left behind."""
    from budgetconf.cli._report import write_page

    taken = place.work / "taken"
    taken.mkdir()
    (taken / "inside").write_text("x")  # a folder that is not empty: no file replaces it
    failed = write_page(str(taken), "<!DOCTYPE html>")
    assert failed is not None
    assert failed.startswith(f"cannot write {taken}: ")
    assert sorted(p.name for p in place.work.iterdir()) == ["taken"]


def test_the_default_page_is_the_events_name_with_html(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """events.jsonl -> events.html; a name without an extension gains one; never the file."""
    from budgetconf.cli._report import default_page

    assert default_page("a/events.jsonl") == "a/events.html"
    assert default_page("events") == "events.html"
    assert default_page("page.html") == "page.html.html"
    write_events(place.work / "plain", completed_run())
    os.chdir(place.work)
    assert report(["plain"], capsys)[1] == "wrote plain.html: 1 run\n"


def test_o_dash_writes_the_page_to_standard_output(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o -: the page on stdout, and nothing else there."""
    events = write_events(place.work / "e.jsonl", completed_run())
    code, out, _ = report([str(events), "-o", "-"], capsys)
    assert code == 0
    assert out.startswith("<!DOCTYPE html>")
    assert out.endswith("</html>\n")


def test_run_report_writes_the_page_of_its_run(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --report FILE: the page of that run, its stop message the one run printed."""
    script = place.work / "loop.json"
    script.write_text(json.dumps({"responses": [{"tool_calls": [{"name": "echo"}]}]}))
    page_path = place.work / "run.html"
    args = ["run", "--model", str(script), "--max-steps", "2", "--report", str(page_path)]
    code = main([*args, "--output", "json", "go"])
    document = json.loads(capsys.readouterr().out)
    assert code == 2
    page = Page(page_path.read_text(encoding="utf-8"))
    assert document["message"] in page.text
    run_id = document["events"][0]["run_id"]
    assert [s["data-run-id"] for s in page.with_class("section", "run")] == [run_id]


def test_run_report_into_no_folder_is_a_usage_error_before_the_run(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--report where no page can be written: exit 64, and the run never starts."""
    script = place.work / "loop.json"
    script.write_text(json.dumps({"responses": [{"content": "hi"}]}))
    events = place.work / "events.jsonl"
    target = place.work / "none" / "r.html"
    code = main(
        ["run", "--model", str(script), "--events", str(events), "--report", str(target), "go"]
    )
    assert code == 64
    assert (
        capsys.readouterr().err
        == f"budgetconf: usage error: --report {target}: no folder {place.work / 'none'}\n"
    )
    assert not events.exists()


def test_run_report_that_cannot_be_written_fails_the_command(
    place: Place, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page that fails to write once the run is over: one line, exit 1."""
    script = place.work / "loop.json"
    script.write_text(json.dumps({"responses": [{"content": "hi"}]}))
    target = place.work / "r.html"
    (place.work / f"r.html.{os.getpid()}.tmp").mkdir()  # the page's temporary name is taken
    code = main(["run", "--model", str(script), "--report", str(target), "go"])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "hi\n")
    assert err.startswith(f"budgetconf: error: --report cannot write {target}: ")
    assert not target.exists()


def test_a_long_run_is_drawn_at_a_bounded_number_of_points() -> None:
    """10,000 turns: each line at most MAX_POINTS points, marks one per pixel column."""
    result = long_run(10_000)
    markup = render("long.jsonl", parse_events(lines(result.events).encode()))
    page = Page(markup)
    lines_drawn = page.with_class("polyline", "used")
    assert lines_drawn
    for polyline in lines_drawn:
        points = (polyline["points"] or "").split()
        assert 2 <= len(points) <= MAX_POINTS
    assert len(page.with_class("rect", "bar")) <= MAX_POINTS
    assert len([a for t, a in page.elements if t == "tr" and "data-turn" in a]) == 10_000
    assert len(markup.encode()) < 5_000_000
    assert page.having("details")  # a long run's turns are folded


def test_the_chart_of_a_spike_keeps_it_when_sampled() -> None:
    """Bars sampled down keep the largest of each stretch: one big response is never lost."""
    from budgetconf._report._charts import sampled

    values = [1.0] * 10_000
    values[4321] = 50.0
    assert 4321 in sampled(len(values), values, bars=True)
    assert len(sampled(len(values), values, bars=False)) == MAX_POINTS
    assert sampled(5, values[:5], bars=True) == [0, 1, 2, 3, 4]


def _started(limits: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "run_started", "run_id": "p", "time": 1.0, "limits": limits, **extra}


def test_children_are_nested_sections_under_their_run() -> None:
    """child_start and child_end (written by hand): each child a section with its limits and end."""
    events = [
        _started({"max_steps": 5, "max_tokens": 900}),
        {"type": "turn_started", "run_id": "p", "time": 1.1, "turn": 1},
        {"type": "child_start", "run_id": "p", "time": 1.2, "limits": {"max_tokens": 400}},
        {
            "type": "child_end",
            "run_id": "p",
            "time": 1.3,
            "status": "truncated",
            "stop_reason": "max_tokens",
            "turns": 3,
            "tokens": 410,
            "cost_usd": 0.25,
            "tool_calls_executed": 2,
        },
        {"type": "child_start", "run_id": "p", "time": 1.4, "limits": {"max_steps": 2}},
        {"type": "stopped", "run_id": "p", "time": 1.5, "status": "ok", "stop_reason": "completed"},
    ]
    page = Page(render("kids.jsonl", parse_events(lines(events).encode())))
    children = page.with_class("section", "child")
    assert len(children) == 2
    text = page.text
    assert "Child 1 · unnamed · truncated · max_tokens" in text
    assert "Child 2 · unnamed · no end recorded" in text
    assert "max_tokens400" in text  # the child's limit, as its dl shows it
    assert "410" in text
    assert "0.25" in text


def test_a_policy_or_ledger_limit_says_whose_it_is() -> None:
    """A stop by the policy says only its administrator can raise it; a ledger's says the spend."""
    policy = {"field": "loop.max_steps", "value": 200, "source": "policy", "locator": "/p:4"}
    ledger = {
        "field": "ledger.max_cost_usd",
        "value": 50,
        "source": "policy",
        "locator": "/p:7",
        "raise_with": [],
        "scope": "ledger",
        "spent": 49.97,
        "reserved": 0.02,
        "window_ends": "2026-12-02T00:00:00Z",
    }
    for limit, said in (
        (policy, "This limit is the policy's: only its administrator can raise it."),
        (
            ledger,
            "its scope has spent $49.97 with $0.02 reserved; the window ends 2026-12-02T00:00:00Z",
        ),
        (
            {**ledger, "field": "ledger.max_tokens", "spent": 812, "reserved": 0},
            "its scope has spent 812 tokens with 0 tokens reserved;",
        ),
    ):
        events = [
            _started({"max_steps": 200}),
            {"type": "ledger_reserve", "run_id": "p", "time": 1.1, "scope": "team-a"},
            {"type": "budget_exhausted", "run_id": "p", "time": 1.2, "turn": 1, **limit},
            {"type": "stopped", "run_id": "p", "time": 1.3, "status": "truncated"},
        ]
        page = Page(render("p.jsonl", parse_events(lines(events).encode())))
        assert said in page.text
        assert page.with_class("section", "ledger")
        assert "team-a" in page.text


def test_the_command_runs_as_a_process(place: Place) -> None:
    """python -m budgetconf report: the page written, the bad line on stderr, exit 1."""
    run = completed_run()
    events = write_events(place.work / "e.jsonl", run, extra="{oops\n")
    done = subprocess.run(
        [sys.executable, "-m", "budgetconf", "report", str(events)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 1
    bad = len(run.events) + 1
    assert done.stderr.startswith(f"{events}:{bad}: not JSON: Expecting property name")
    assert len(done.stderr.splitlines()) == 1
    assert (place.work / "e.html").stat().st_size > 1000


def test_the_report_page_shows_what_the_commands_print(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/report.md's sessions give the output the page shows, and the pages they name."""
    from helpers.pages import Session

    os.chdir(place.work)
    Session(place, monkeypatch, capsys).run_page("report.md")
    page = Page((place.work / "events.html").read_text(encoding="utf-8"))
    assert len(page.with_class("section", "run")) == 2
    assert (place.work / "broken.html").exists()
    # the cost section's sentence and table, as the page's "Cost" section gives them
    from helpers import DOCS

    doc = (DOCS / "report.md").read_text(encoding="utf-8").split("## Cost, by input")[1]
    said = re.search(r"reads \*(.*?)\*, and its table", doc, flags=re.DOTALL)
    assert said is not None
    priced = (place.work / "priced.html").read_text(encoding="utf-8")
    cost = priced.split('<section class="cost">')[1].split("</section>")[0]
    shown = Page(cost)
    assert " ".join(said.group(1).split()) in shown.text
    rows = [line for line in doc.split("\n\n| part")[1].splitlines() if line.startswith("|")]
    table = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]
    cells = re.findall(r"<tr data-part[^>]*>(.*?)</tr>", cost)
    drawn = [[Page(c).text for c in re.findall(r"<td[^>]*>(.*?)</td>", row)] for row in cells]
    assert drawn == table
    # the tool's bar and the no-progress stop, as "A tool's own limit" quotes them
    watched = (DOCS / "report.md").read_text(encoding="utf-8").split("## A tool's own limit")[1]
    quoted = re.findall(r"\*([^*]+)\*", watched.split("## ")[0].split("```")[-1])
    assert len(quoted) == 2
    page = Page((place.work / "watched.html").read_text(encoding="utf-8"))
    for said in quoted:
        assert " ".join(said.split()) in page.text


def test_the_report_knows_the_loop_only_by_its_events() -> None:
    """Drawing a page imports nothing of the loop: only the events are read."""
    code = (
        "import sys, budgetconf._report, budgetconf.cli._report;"
        "print(sorted(m for m in sys.modules if m.startswith('budgetconf.loop')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.stdout == "[]\n"


def test_a_bad_line_is_told_in_one_short_line_whatever_it_holds(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A type with newlines and controls, 10,000 characters long: one line, escaped and cut."""
    kind = "evil\nsecond line\x1b[2J" + "x" * 10_000
    path = place.work / "odd\nname.jsonl"
    path.write_text(json.dumps({"type": kind, "turn": -1}) + "\n", encoding="utf-8")
    code, _, err = report([str(path), "-o", str(place.work / "p.html")], capsys)
    assert code == 1
    line, warning = err.splitlines()  # the file's one line was bad: it holds no run
    assert warning.startswith("budgetconf: warning: no runs in ")
    assert line.startswith(str(path).replace("\n", "\\n") + ":1: evil\\nsecond line\\x1b[2J")
    assert line.endswith(": turn: expected a whole number from 0, got -1")
    assert len(line) < 300


def test_values_of_the_wrong_kind_inside_an_event_draw_as_nothing() -> None:
    """carried_over, limits and budgets holding text or lists: the page is drawn all the same."""
    events = [
        _started(
            {"max_steps": "many", "max_tokens": [1], "max_cost_usd": 1e308},
            budgets={"max_steps": "not an object", "max_tokens": {"raise_with": "--x"}},
            carried_over={"tokens": "abc", "turns": [1], "cost_usd": -5, "tool_calls_executed": 2},
        ),
        {"type": "model_response", "run_id": "p", "time": 2.0, "turn": 1, "tool_calls": "x"},
        {"type": "batch_rejected", "run_id": "p", "time": 2.1, "turn": 1, "calls": 3, "cap": {}},
        {"type": "stopped", "run_id": "p", "time": 3.0, "status": "ok", "turns": 1},
    ]
    page = Page(render("odd.jsonl", parse_events(lines(events).encode())))
    assert [a["data-budget"] for a in page.with_class("svg", "chart")] == [
        "max_steps",
        "max_tokens",
        "max_cost_usd",
    ]
    assert len(page.with_class("line", "limit")) == 1  # only the cost's limit is a number
    assert "turns: 1 (limit many) (loop.max_steps)" not in page.text
    assert "turns: 1 (limit many) (max_steps)" in page.text
    assert "rejected: 3 calls, cap {}" in page.text


def test_a_truncated_response_and_a_refused_call_are_marked(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """over_cap = truncate: the response's turn is marked truncated; an unknown tool not run."""
    from budgetconf.loop import LoopExecutor, ScriptedModel

    from helpers.loops import Echo, answer, budget, calls

    wide = {"tool_calls": [*calls(9)["tool_calls"], {"name": "nope", "arguments": {}}]}
    model = ScriptedModel([wide, answer()])
    fields = budget(max_steps=4, max_tool_calls_per_turn=12, over_cap="truncate")
    first = LoopExecutor(model, {"echo": Echo()}, fields).run("go")
    model = ScriptedModel([calls(3), answer()])
    fields = budget(max_steps=4, max_tool_calls_per_turn=2, over_cap="truncate")
    second = LoopExecutor(model, {"echo": Echo()}, fields).run("go")
    events = write_events(place.work / "t.jsonl", first, second)
    assert report([str(events)], capsys)[0] == 0
    page = Page((place.work / "t.html").read_text(encoding="utf-8"))
    assert "10: echo, echo, echo, echo, echo, echo, echo, echo … and 2 more" in page.text
    assert [a["data-turn"] for a in page.with_class("tr", "truncated")] == ["1"]
    assert len(page.with_class("circle", "mark-truncated")) == 2  # turns and per-response
    assert "truncated: 3 calls, cap 2" in page.text


def test_odd_but_readable_events_still_draw_a_page(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """No run_started, no stopped, a child with no start, far times, text where none is wanted."""
    odd: list[dict[str, Any]] = [
        {"type": "turn_started", "run_id": "q"},  # no turn: nothing to gather
        {"type": "child_end", "run_id": "q", "status": "ok", "stop_reason": "completed"},
        {
            "type": "run_started",
            "run_id": "r",
            "limits": {"timeout_seconds": 5, "max_steps": 9},
            "budgets": {"max_steps": {"raise_with": {"a": 1}}},
        },
        {"type": "model_response", "run_id": "r", "turn": 1, "time": 3.0},
        {"type": "child_start", "run_id": "r", "child_run_id": "c", "limits": {"max_steps": 2}},
        {"type": "child_end", "run_id": "r", "child_run_id": "c", "status": "ok", "turns": 1},
        {"type": "child_start", "run_id": "r", "limits": {}},
        {"type": "child_end", "run_id": "r", "status": "failed", "stop_reason": "error"},
        {"type": "an_event_of_a_later_version", "run_id": "r", "turn": 1},
        {"type": "batch_rejected", "run_id": "r", "turn": 2, "calls": 3, "cap": 2},
        {"type": "batch_rejected", "run_id": "r", "turn": 3, "calls": 3, "cap": 2},
        {"type": "turn_started", "run_id": "r", "turn": 50_000},
        # a stop at a turn the run's events do not hold: drawn nowhere
        {"type": "budget_exhausted", "run_id": "r", "turn": 60_000, "scope": "parent"},
        {"type": "stopped", "run_id": "r", "status": "truncated", "stop_reason": "max_steps"},
        {"type": "run_started", "run_id": "c", "time": 1e20, "limits": {"max_steps": True}},
    ]
    bad = [
        b'{"type": "x", "run_id": 7}',
        b'{"type": "x", "limits": [1]}',
        b'{"type": "x", "time": "noon"}',
        b'{"type": "x", "content": "\xff"}',
    ]
    data = lines(odd).encode() + b"\n".join(bad) + b"\n"
    (place.work / "odd.jsonl").write_bytes(data)
    code, _, err = report([str(place.work / "odd.jsonl")], capsys)
    assert code == 1
    assert [line.split(": ", 1)[1] for line in err.splitlines()] == [
        "x: run_id: expected text, got a number",
        "x: limits: expected an object, got a list",
        "x: time: expected a number from 0, got text",
        "not UTF-8 text: byte 0xff at column 27",
    ]
    page = Page((place.work / "odd.html").read_text(encoding="utf-8"))
    text = page.text
    assert "The events end before the run did: no stopped event." in text
    assert "The events name no budget (no run_started event)." in text
    assert "Child 1 · unnamed · ok · completed" in text  # its start is not in the file
    assert "Child 2 · unnamed · failed · error" in text
    assert "The parent run's remainder ran out: the limit is the parent's." in text
    assert "1e+20" in text  # a time no calendar holds, shown as the number it is
    assert "true" in text
    assert '<a href="#run-3" title="c">run 3</a>' in (place.work / "odd.html").read_text()
    # turns 2 and 3 of 50,000 share a pixel column: one mark on each of the two charts
    assert len(page.with_class("circle", "mark-rejected")) == 2
    assert "a1" in text  # raise_with as an object, shown as its keys
    assert not page.with_class("line", "mark-stop")


def test_a_report_command_that_cannot_write_its_page_is_one_line(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's temporary name is taken: one line naming the page, exit 1."""
    events = write_events(place.work / "e.jsonl", completed_run())
    (place.work / f"e.html.{os.getpid()}.tmp").mkdir()
    code, out, err = report([str(events)], capsys)
    assert (code, out) == (1, "")
    assert err == f"budgetconf: error: cannot write {place.work / 'e.html'}: File exists\n"


def test_a_real_sub_agent_is_nested_under_its_parent_and_links_to_its_own_run() -> None:
    """A tool that runs a child on a carved budget: the parent's page shows the child's end
    and limits, and links to the child's own run, from the events both runs recorded."""
    kids: list[RunResult] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert handle is not None
        model = ScriptedModel([priced(calls(1), 40, 0.01), priced(answer("sub done"), 10, 0.0)])
        kid = LoopExecutor(model, {"echo": Echo()}, handle.carve(max_tokens=300)).run(task)
        kids.append(kid)
        return kid.output

    model = ScriptedModel([{"tool_calls": [call("delegate", task="sub")]}, answer("all done")])
    top = LoopExecutor(model, {"delegate": delegate}, budget(max_steps=5, max_tokens=1000)).run(
        "go"
    )
    (kid,) = kids
    assert top.tokens == 50  # the child's spend, charged to its parent
    page = Page(render("kids.jsonl", parse_events(lines([*top.events, *kid.events]).encode())))
    assert len(page.with_class("section", "child")) == 1
    assert "Child 1 · budgetconf run 2 · ok · completed" in page.text
    assert "max_tokens300" in page.text
    (own,) = [a["id"] for t, a in page.elements if a.get("data-run-id") == kid.run_id]
    assert f"#{own}" in [a.get("href") for t, a in page.elements if t == "a"]
