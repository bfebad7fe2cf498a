"""The report as a browser shows it: real headless Chromium, read through the DOM.

Each page is opened from disk (``file://``), as a person opens a CI
artifact. Every request the page makes is recorded, and the console's
messages too: the page may ask for nothing but itself, and log no error.

``REPORT_SCREENSHOT=docs/report.png`` makes the first test write
its screenshot there too: that is how the screenshot of docs/report.md is made.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf._text import escape
from budgetconf.cli import main

from conftest import Place
from helpers import DOCS
from helpers.reports import (
    completed_run,
    from_environment,
    limited_run,
    stopped_run,
    watched_run,
    write_events,
)

CHROMIUM = "/usr/bin/chromium"

if not os.path.exists(CHROMIUM):  # pragma: no cover - CI installs it
    pytest.skip(
        f"no {CHROMIUM}: install the Debian package `chromium` to render the report",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="the dev extra's playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield launched
        launched.close()


@dataclass
class Opened:
    """A page opened in the browser, with what it asked for, logged and raised."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def opened(browser: Any, path: Path, width: int = 1100) -> Opened:
    context = browser.new_context(viewport={"width": width, "height": 900})
    seen = Opened(context.new_page())

    def record(route: Any) -> None:
        seen.requests.append(route.request.url)
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            route.abort()  # nothing leaves the file

    context.route("**/*", record)
    seen.page.on("console", lambda m: seen.console.append((m.type, m.text)))
    seen.page.on("pageerror", lambda e: seen.errors.append(str(e)))

    def dialog(d: Any) -> None:
        seen.dialogs.append(d.message)
        d.dismiss()

    seen.page.on("dialog", dialog)
    seen.page.goto(path.as_uri())
    seen.page.wait_for_load_state("load")
    return seen


def report(path: Path) -> int:
    return main(["report", str(path)])


def test_the_page_in_a_browser_shows_the_stop_the_charts_and_the_turns(
    browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DOM holds the stop sentence, a drawn chart per budget and a row per turn; a clean
    console, no request but the file itself, and a screenshot."""
    result = stopped_run(from_environment())
    assert "raise it with BUDGETCONF_MAX_STEPS or --max-steps" in result.message
    events = write_events(place.work / "events.jsonl", result, completed_run())
    assert report(events) == 0
    capsys.readouterr()
    seen = opened(browser, place.work / "events.html")
    page = seen.page
    first = page.locator("section.run").first
    assert first.locator(".stop .message").inner_text() == result.message
    assert first.locator(".stop .status").inner_text().lower() == "truncated"
    charts = first.locator("svg.chart")
    assert charts.count() == 6
    for i in range(charts.count()):
        chart = charts.nth(i)
        box = chart.bounding_box()
        assert box is not None
        assert box["width"] > 300
        assert box["height"] > 100
        assert chart.locator("polyline.used, g.bars").count() == 1
        assert chart.locator("line.limit").count() == 1
    assert first.locator("table.turns tr[data-turn]").count() == result.turns
    assert first.locator("tr.rejected td").first.inner_text() == "2"
    assert page.locator("nav.runs a").count() == 2
    assert page.locator("section.run").count() == 2
    shot = place.work / "report.png"
    page.screenshot(path=str(shot), full_page=False)
    assert shot.read_bytes().startswith(b"\x89PNG")
    wanted = os.environ.get("REPORT_SCREENSHOT")
    if wanted:  # pragma: no cover - run by hand to remake docs/report.png
        shutil.copyfile(shot, wanted)
    assert seen.requests == [(place.work / "events.html").as_uri()]
    assert [m for m in seen.console if m[0] in ("error", "warning")] == []
    assert seen.errors == []


def test_the_docs_screenshot_is_a_real_small_png() -> None:
    """docs/report.png, made by the test above: a PNG under 300 KB, as docs/report.md shows."""
    png = (DOCS / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) < 300_000
    assert "(report.png)" in (DOCS / "report.md").read_text(encoding="utf-8")


HOSTILE = [
    "<script>window.pwned = 1; alert('pwned')</script>",
    '"><img src=x onerror="window.pwned=2;alert(2)">',
    "</title></svg></table><script>window.pwned=3</script>",
    "<svg onload=\"window.pwned=4\"></svg><iframe src='https://example.invalid/'></iframe>",
    "\x1b[31mred\x07\x00\u202eevil\ud800",
    "<style>body{display:none}</style><link rel=stylesheet href=https://example.invalid/x.css>",
]


def _hostile_lines(good_run: Any) -> str:
    import json

    evil = iter(HOSTILE * 4)
    events = []
    for event in good_run.events:
        event = dict(event)
        for key in ("content", "message", "preset", "finish_reason", "stop_reason", "status"):
            if key in event:
                event[key] = next(evil)
        if event["type"] == "model_response":
            event["tool_calls"] = [{"id": "x", "name": next(evil)}]
            event["tokens"] = 2**63 - 1  # huge, and still a count
        if event["type"] == "run_started":
            event["limits"] = {next(evil): next(evil), "max_tokens": 1e300}
            event["budgets"] = {"max_tokens": {"field": next(evil), "locator": "x" * 100_000}}
            event["tools"] = {h: {"field": h, "value": 2, "source": h} for h in HOSTILE}
        events.append(json.dumps(event))
        if event["type"] == "model_response":  # a warning and a tool's calls past its limit
            stamp = {"run_id": event["run_id"], "time": event["time"], "turn": event["turn"]}
            for h in HOSTILE:
                events.append(json.dumps({"type": "budget_warning", **stamp, "field": h}))
                events.append(json.dumps({"type": "tool_limited", **stamp, "name": h, "ids": [h]}))
    return "\n".join(events) + "\n"


def test_a_hostile_events_file_executes_nothing_and_breaks_nothing(
    browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Markup, scripts, controls, huge values, a non-JSON and a cut line: nothing runs, the page
    holds, each bad line is one line on stderr, and the good runs are still shown."""
    good = completed_run()
    hostile = completed_run()
    held = _hostile_lines(hostile)
    text = (
        held
        + "<script>window.pwned=5</script>\n"
        + write_events(place.work / "good.jsonl", good).read_text()
        + '{"type": "model_response", "turn": 1, "content": "<script>window.pwned=6</scr'
    )
    events = place.work / "hostile.jsonl"
    events.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert report(events) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"{events}:{held.count(chr(10)) + 1}: not JSON: ")
    assert err[1].endswith("(the file ends inside the line: cut short?)")
    seen = opened(browser, place.work / "hostile.html")
    page = seen.page
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert seen.dialogs == []
    assert page.locator("script, iframe, img, link, object, embed").count() == 0
    assert page.locator("style").count() == 1  # the page's own
    assert page.evaluate("document.querySelectorAll('[onerror],[onload]').length") == 0
    runs = page.locator("section.run")
    assert runs.count() == 2
    assert runs.nth(1).get_attribute("data-run-id") == good.run_id
    assert runs.nth(1).locator(".stop .message").inner_text() == good.message
    shown = runs.first.locator(".stop .message").inner_text()
    assert shown in [escape(h, keep="") for h in HOSTILE]  # as text, controls visible
    assert page.locator("body").is_visible()
    assert runs.first.locator("svg.chart.tool").count() == len(HOSTILE)
    responses = [e for e in hostile.events if e["type"] == "model_response"]
    warned = runs.first.locator("table.warnings tr[data-field]")
    assert warned.count() == len(HOSTILE) * len(responses)
    assert page.locator("section.problems li").count() == 2
    assert seen.requests == [(place.work / "hostile.html").as_uri()]
    assert seen.errors == []
    assert [m for m in seen.console if m[0] == "error"] == []
    page.screenshot(path=str(place.work / "hostile.png"))


def test_a_bridged_run_with_a_sub_agent_is_drawn_like_the_executors(
    browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An openai-agents run through the bridge, its events in a file: the page shows its stop,
    its charts and turns, and the sub-agent its wrapped tool ran, linked to its own run."""
    from agents import Agent, function_tool, set_tracing_disabled

    from budgetconf.events import EventsFile
    from budgetconf.integrations import openai_agents
    from budgetconf.loop import LoopExecutor, ScriptedModel, current_run

    from helpers.agents_double import Scripted, call

    set_tracing_disabled(True)

    @function_tool
    def research(topic: str) -> str:
        """Ask a sub-agent."""
        handle = current_run()
        assert handle is not None
        notes = ScriptedModel([{"content": f"notes on {topic}"}])
        child = LoopExecutor(notes, budget=handle.carve(), on_event=sinks[0], name="notes")
        return child.run(topic).output

    asks = [[call(f"c{n}", name="research")] for n in range(3)]
    for item in asks:
        item[0].arguments = '{"topic": "budgets"}'
    agent = Agent(name="lead", model=Scripted(asks), tools=[research])
    path = place.work / "bridged.jsonl"
    env = {"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOKENS": "1000"}
    ran: list[Any] = []
    sinks: list[EventsFile] = []

    def bridged() -> None:  # on a thread of its own: the browser's event loop runs on this one
        with EventsFile(str(path)) as sink:
            sinks.append(sink)  # the sub-agents' events go to the same file
            ran.append(openai_agents.run(agent, "go", budgetconf.resolve(env=env), on_event=sink))
        # Runner.run_sync leaves the loop it made this thread's: closed before the thread ends
        asyncio.get_event_loop_policy().get_event_loop().close()

    worker = threading.Thread(target=bridged)
    worker.start()
    worker.join()
    (result,) = ran
    assert (result.stop_reason, result.turns) == ("max_steps", 3), result.message
    assert report(path) == 0
    capsys.readouterr()
    seen = opened(browser, place.work / "bridged.html")
    page = seen.page
    lead = page.locator("section.run").first
    assert lead.locator(".stop .message").inner_text() == result.message
    assert lead.locator("table.turns tr[data-turn]").count() == 3
    assert lead.locator("svg.chart").count() >= 2  # steps and tokens at least
    assert lead.locator("section.child").count() == 2  # the last turn's call did not run
    assert page.locator("section.run").count() == 3  # the lead and its two children's own
    assert seen.errors == []


def _small_runs() -> list[Any]:
    """A one-turn run and a two-turn one, with small numbers: 2 tokens of 3, 1 call of 2."""
    from budgetconf.loop import LoopExecutor, ScriptedModel

    from helpers.loops import Echo, budget, calls

    fields = budget(max_tokens=3, max_tool_calls_per_turn=2, max_tool_calls=5, max_cost_usd=1.0)
    found = []
    for steps in (1, 2):
        model = ScriptedModel([{**calls(1), "usage": {"total_tokens": 1}}], record=False)
        found.append(LoopExecutor(model, {"echo": Echo()}, {**fields, **budget(max_steps=steps)}))
    return [executor.run("go") for executor in found]


_GEOMETRY = """svg => {
  const box = e => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: e.textContent}; };
  const ticks = [...svg.querySelectorAll('text.tick')].map(box);
  const turns = [...svg.querySelectorAll('text.turn')].map(box);
  const bars = [...svg.querySelectorAll('rect.bar')].map(b => {
    const r = b.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + Math.max(r.height / 2, 1);
    return {x: x, seen: document.elementFromPoint(x, y) === b}; });
  const first = svg.querySelector('polyline.used');
  const point = first && first.points.numberOfItems ? first.points.getItem(0) : null;
  const m = svg.getScreenCTM();
  return {ticks, turns, bars, point: point ? point.x * m.a + m.e : null,
          left: svg.getBoundingClientRect().left};
}"""


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return not (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_a_small_runs_axes_are_legible_and_alike_in_every_chart(
    width: int, browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """At a laptop's and a phone's width, for runs of one turn and two: no two labels of a
    chart overlap, each tick and each turn is labelled once, every bar shows at its centre
    (no mark drawn over it), and a turn sits at the same x in every chart of its run."""
    events = write_events(place.work / "small.jsonl", *_small_runs())
    assert report(events) == 0
    capsys.readouterr()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((place.work / "small.html").as_uri())
    for r, turns in enumerate((1, 2)):
        charts = page.locator("section.run").nth(r).locator("svg.chart")
        assert charts.count() == 5  # every budget but time, which is not set
        where: list[float] = []
        for i in range(charts.count()):
            chart = charts.nth(i)
            chart.scroll_into_view_if_needed()
            seen = chart.evaluate(_GEOMETRY)
            labels = seen["ticks"]
            texts = [label["text"] for label in labels]
            assert len(texts) == len(set(texts)), texts
            for a in range(len(labels)):
                for b in range(a + 1, len(labels)):
                    assert not _overlap(labels[a], labels[b]), (labels[a], labels[b])
            assert [t["text"] for t in seen["turns"]] == [f"turn {n}" for n in range(1, turns + 1)]
            assert all(bar["seen"] for bar in seen["bars"]), seen["bars"]
            first = seen["turns"][0]
            centre = (first["left"] + first["right"]) / 2 - seen["left"]
            where.append(centre)
            if seen["point"] is not None:  # the line's first point is turn 1's label's x
                assert abs(seen["point"] - seen["left"] - centre) < 2
            if seen["bars"]:
                assert abs(seen["bars"][0]["x"] - seen["left"] - centre) < 2
        assert max(where) - min(where) < 2, where
    if os.environ.get("REPORT_SHOTS"):  # pragma: no cover - to look at by hand
        page.screenshot(path=f"{os.environ['REPORT_SHOTS']}/small-{width}.png", full_page=True)
    context.close()


_BREAKS = """() => {
  // every place a cell's text goes on to a new line: the characters either side of it
  const found = [];
  for (const cell of document.querySelectorAll('td, th, dt, dd, figcaption')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let last = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        const ch = node.data[i];
        if (last && rect.top > last.top + 2) found.push(last.ch + ch);
        last = {top: rect.top, ch: ch};
      }
    }
  }
  return {breaks: found, wide: document.documentElement.scrollWidth, view: innerWidth};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_names_in_tables_break_only_between_words_or_their_parts(
    width: int, browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """At a laptop's and a phone's width, a cell's text goes on to a new line only at a space
    or after a name's ``_``, ``.`` or ``/`` (max_tool_calls_per_ / turn, never ..._t / urn),
    and the page is no wider than the window: a table too wide for it scrolls on its own."""
    import json

    events = write_events(place.work / "names.jsonl", stopped_run(from_environment()))
    held = [json.loads(line) for line in events.read_text().splitlines()]
    deep = "/home/ada/" + "/".join(["a-project-with-a-long-name"] * 5) + "/settings.toml:12"
    for budget in held[0]["budgets"].values():  # a locator as long as a real project's
        budget["locator"] = deep
    events.write_text("".join(json.dumps(e) + "\n" for e in held))
    assert report(events) == 0
    capsys.readouterr()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((place.work / "names.html").as_uri())
    seen = page.evaluate(_BREAKS)
    mid_word = [pair for pair in seen["breaks"] if not (pair[0] in " _./-" or pair[1] == " ")]
    assert mid_word == []
    if width == 390:
        assert seen["breaks"]  # the phone's width does wrap: the check saw breaks
    assert seen["wide"] <= seen["view"]
    if os.environ.get("REPORT_SHOTS"):  # pragma: no cover - to look at by hand
        page.screenshot(path=f"{os.environ['REPORT_SHOTS']}/names-{width}.png", full_page=True)
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_priced_runs_cost_section_fits_and_runs_nothing(
    width: int, browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run priced by a model named with markup, its price's locator (edited) a deep path:
    at a laptop's and a phone's width the cost table shows its split, no cell breaks mid-word,
    the page is no wider than the window, and the name is text that runs nothing."""
    import json

    from budgetconf.loop import LoopExecutor

    from helpers.loops import Echo, answer, budget
    from helpers.reports import PRICES, Named, used

    name = '<img src=x onerror="window.pwned=1">gpt-4o-mini'
    fields = {**budget(max_steps=4, max_cost_usd=1.0), **PRICES}
    responses = [used(1000, 1000, 400), used(1000, 1000, 400, cost_usd=0.01), answer()]
    result = LoopExecutor(Named(name, responses), {"echo": Echo()}, fields).run("go")
    events = write_events(place.work / "priced.jsonl", result)
    held = [json.loads(line) for line in events.read_text().splitlines()]
    held[0]["prices"]["locator"] = "/home/ada/" + "/".join(["a-long-project-name"] * 6) + ".toml:3"
    events.write_text("".join(json.dumps(e) + "\n" for e in held))
    assert report(events) == 0
    capsys.readouterr()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((place.work / "priced.html").as_uri())
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("img").count() == 0
    cost = page.locator("section.cost")
    assert cost.locator(".price .model").inner_text() == name
    parts = [cost.locator(f"tr[data-part={p}] td").nth(3).inner_text() for p in ("input", "total")]
    assert parts == ["$0.00009", "$0.01072"]
    assert cost.locator("table.cost").is_visible()
    seen = page.evaluate(_BREAKS)
    mid_word = [pair for pair in seen["breaks"] if not (pair[0] in " _./-" or pair[1] == " ")]
    assert mid_word == []
    assert seen["wide"] <= seen["view"]
    if os.environ.get("REPORT_SHOTS"):  # pragma: no cover - to look at by hand
        page.screenshot(path=f"{os.environ['REPORT_SHOTS']}/priced-{width}.png", full_page=True)
    context.close()


_TOOL_GEOMETRY = """svg => {
  const box = e => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; };
  const seen = e => { const r = e.getBoundingClientRect();
    return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === e; };
  const ran = svg.querySelector('rect.bar'), past = svg.querySelector('rect.bar-limited');
  const limit = svg.querySelector('line.limit');
  return {svg: box(svg), ran: ran && {...box(ran), seen: seen(ran)},
          past: past && {...box(past), seen: seen(past)},
          limit: limit && box(limit),
          label: [...svg.querySelectorAll('text')].map(t => t.textContent)};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_watched_run_shows_its_tool_bars_warnings_and_no_progress_stop(
    width: int, browser: Any, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with a tool's own limit, warnings at half of each limit and a no-progress stop,
    at a laptop's and a phone's width: the stop names loop.max_repeats, each tool's bar shows
    what ran and what was answered past the limit side by side, neither hidden, the limit's
    line where they meet; every timeline chart draws the warnings and the stop; no cell
    breaks mid-word, the page is no wider than the window, and it asks for nothing."""
    watched, limited = watched_run(), limited_run()
    events = write_events(place.work / "watched.jsonl", watched, limited)
    assert report(events) == 0
    capsys.readouterr()
    seen = opened(browser, place.work / "watched.html", width)
    page = seen.page
    first = page.locator("section.run").first
    assert first.locator(".stop .message").inner_text() == watched.message
    note = first.locator(".stop .no-progress")
    assert note.is_visible()
    assert note.inner_text().startswith("No progress (loop.max_repeats = 3): ")
    timelines = first.locator("svg.chart:not(.tool)")
    assert timelines.count() == 3  # turns, tokens, calls per response
    for i in range(timelines.count()):
        chart = timelines.nth(i)
        assert chart.locator("line.mark-warning").count() == 2  # turns 1 and 4
        assert chart.locator("line.mark-stop").count() == 1
        titles = chart.locator("line.mark-warning title").all_text_contents()
        assert titles[0] == "turn 1: budget warning: tools.max_calls.web_search: 1 of 2 used (50%)"
    assert first.locator("table.warnings tr[data-field]").count() == 3
    second = page.locator("section.run").nth(1)
    for run, tool, shown in ((first, "web_search", 2), (second, "web_search", 3)):
        chart = run.locator(f'svg.chart.tool[data-tool="{tool}"]')
        chart.scroll_into_view_if_needed()
        box = chart.evaluate(_TOOL_GEOMETRY)
        assert box["svg"]["width"] > min(300, width - 60)
        assert box["ran"]["seen"]
        assert box["past"]["seen"]
        assert abs(box["past"]["left"] - box["ran"]["right"]) < 1
        assert abs(box["limit"]["left"] + box["limit"]["width"] / 2 - box["ran"]["right"]) < 2
        assert f"limit {shown}" in box["label"]
    caption = second.locator("figure.tool figcaption").nth(1).inner_text()
    assert (
        caption
        == "web_search: 3 of 3 calls ran, 3 not executed past it (tools.max_calls.web_search)"
    )
    fetch = second.locator('svg.chart.tool[data-tool="fetch"]').evaluate(_TOOL_GEOMETRY)
    assert fetch["past"] is None
    assert fetch["limit"]["left"] > fetch["ran"]["right"] + 10  # 3 of 5: room left
    breaks = page.evaluate(_BREAKS)
    mid_word = [pair for pair in breaks["breaks"] if not (pair[0] in " _./-" or pair[1] == " ")]
    assert mid_word == []
    assert breaks["wide"] <= breaks["view"]
    assert seen.requests == [(place.work / "watched.html").as_uri()]
    assert [m for m in seen.console if m[0] in ("error", "warning")] == []
    assert seen.errors == []
    if os.environ.get("REPORT_SHOTS"):  # pragma: no cover - to look at by hand
        page.screenshot(path=f"{os.environ['REPORT_SHOTS']}/watched-{width}.png", full_page=True)
