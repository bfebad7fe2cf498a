"""The report's cost section: the price in force, and cost by input, cached input and output.

The events are real runs' (the command line's and the executor's), priced by the price
fields; where a test needs what no run writes (a hostile locator, a price other than the
run's, an older file) it edits a real run's events, and says so.
"""

from __future__ import annotations

import html
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from budgetconf._report._cost import PICO, costs_of, picodollars
from budgetconf._report._page import render
from budgetconf._report._read import parse_events
from budgetconf._text import escape
from budgetconf.cli import main
from budgetconf.loop import LoopExecutor, RunResult, current_run

from conftest import Place
from helpers.loops import Echo, answer, budget
from helpers.reports import PRICES, Named, lines, stopped_run, used

#: the brief's one response: 1,000 tokens in (400 of them cached) and 1,000 out
SCRIPT = {
    "responses": [
        {
            "content": None,
            "tool_calls": [{"id": "a", "name": "echo", "arguments": '{"text": "x"}'}],
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 1000,
                "prompt_tokens_details": {"cached_tokens": 400},
            },
        }
    ]
}


def parts(page: str) -> dict[str, int | None]:
    """The cost section's rows: part -> its picodollars (None: not reported)."""
    section = page.split('<section class="cost">')[1].split("</section>")[0]
    found = re.findall(r'<tr data-part="(\w+)"(?: data-picodollars="(\d+)")?>', section)
    return {part: int(pd) if pd else None for part, pd in found}


def split_sum(found: dict[str, int | None]) -> int:
    return sum(found[part] or 0 for part in ("input", "cached", "output"))


def page_of(*results: RunResult) -> str:
    events = [event for result in results for event in result.events]
    return render("cost.jsonl", parse_events(lines(events).encode()))


def test_a_priced_command_line_run_shows_its_price_and_its_split(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """budgetconf run with the price fields, then budgetconf report: the price with its rates,
    source and locator, and the split, to the picodollar: 600 uncached at $0.15, 400 cached
    at $0.075 and 1,000 out at $0.60 a turn, two turns, $0.00144 in all."""
    script = place.work / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    events = place.work / "ev.jsonl"
    flags = ["--price-input-per-mtok", "0.15", "--price-output-per-mtok", "0.6"]
    flags += ["--price-cached-input-per-mtok", "0.075"]
    args = ["run", "--model", str(script), "--max-cost-usd", "0.001", *flags]
    assert main([*args, "--events", str(events), "hi"]) == 2
    capsys.readouterr()
    assert main(["report", str(events)]) == 0
    capsys.readouterr()
    page = (place.work / "ev.html").read_text(encoding="utf-8")
    stopped = json.loads(events.read_text().splitlines()[-1])
    assert stopped["cost_usd"] == 0.00144
    found = parts(page)
    assert found == {
        "input": 2 * 600 * 150_000,
        "cached": 2 * 400 * 75_000,
        "output": 2 * 1000 * 600_000,
        "total": picodollars(stopped["cost_usd"]),
    }
    assert split_sum(found) == found["total"]
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert (
        "Price in force: any model at --price-input-per-mtok, --price-output-per-mtok,"
        " --price-cached-input-per-mtok: $0.15 / $0.60 (cached $0.075) per Mtok"
        " (source: fields)." in text
    )
    assert "input, not cached1,200$0.15$0.00018" in text
    assert "cached input800$0.075$0.00006" in text
    assert "output2,000$0.60$0.0012" in text
    assert "total–$0.00144" in text
    assert page.count('0.00072 <span class="source">priced</span>') == 2  # each turn's


def test_the_split_adds_up_to_the_runs_cost_to_the_picodollar() -> None:
    """Fifty responses of odd sizes at rates of seven decimals (a fraction of a picodollar a
    token): the three parts sum to the run's cost exactly, as the loop summed it."""
    rng = random.Random(7)
    responses = []
    for _ in range(50):
        inputs = rng.randrange(1, 200_000)
        responses.append(used(inputs, rng.randrange(0, 9_000), rng.randrange(0, inputs)))
    fields = {
        **budget(max_steps=50, max_cost_usd=1000.0),
        "prices.input_per_mtok": 1.2345671,
        "prices.output_per_mtok": 9.8765437,
        "prices.cached_input_per_mtok": 0.3333333,
    }
    result = LoopExecutor(Named("gpt-odd", responses), {"echo": Echo()}, fields).run("go")
    assert (result.stop_reason, result.usage.cost_source) == ("max_steps", "priced")
    page = page_of(result)
    found = parts(page)
    assert set(found) == {"input", "cached", "output", "total"}
    assert split_sum(found) == found["total"] == picodollars(result.cost_usd)
    assert result.cost_usd == round(result.cost_usd, 12)  # the loop's picodollars
    assert 'Price in force: <span class="model">gpt-odd</span> at explicit:' in page
    costs = costs_of(parse_events(lines(result.events).encode()).runs[0])
    usage = result.usage
    assert costs.tokens == {
        "input": usage.input_tokens - usage.cached_input_tokens,
        "cached": usage.cached_input_tokens,
        "output": usage.output_tokens,
    }
    # each part within a picodollar of its exact amount
    exact = {
        "input": costs.tokens["input"] * 1.2345671e6,
        "cached": costs.tokens["cached"] * 0.3333333e6,
        "output": costs.tokens["output"] * 9.8765437e6,
    }
    for part, amount in exact.items():
        assert abs(costs.split[part] - amount) <= 2 + amount * 1e-12, part


def test_a_reported_cost_is_shown_whole_beside_the_priced_ones() -> None:
    """Responses that report their cost and responses priced, in one run: the reported ones are
    one row, not split, and say so; the turn table says of each cost how it is known."""
    responses = [used(1000, 500, 200), used(1000, 500, 0, cost_usd=0.25), used(2000, 100, 1000)]
    fields = {**budget(max_steps=3, max_cost_usd=10.0), **PRICES}
    result = LoopExecutor(Named("gpt-4o-mini", responses), {"echo": Echo()}, fields).run("go")
    assert result.usage.cost_source == "reported"  # a run with any reported cost
    page = page_of(result)
    found = parts(page)
    assert found["reported"] == picodollars(0.25)
    assert split_sum(found) + (found["reported"] or 0) == found["total"]
    assert found["total"] == picodollars(result.cost_usd)
    assert "reported by the responses, not split (1 response)" in page
    assert "it cannot be split by input, cached and output, and is shown as reported" in page
    cells = re.findall(r'<td class=num>([\d.]+) <span class="source">(\w+)</span></td>', page)
    assert [source for _, source in cells] == ["priced", "reported", "priced"]


def test_a_run_that_priced_nothing_shows_its_turns_as_before() -> None:
    """Reported costs only (no price in force): the turn table's costs are bare numbers, as
    they were, and the cost section says no price was in force."""
    result = stopped_run()
    page = page_of(result)
    assert '<span class="source">' not in page
    assert "No price in force: a cost counts only where a response reported it." in page
    found = parts(page)
    assert found["reported"] == found["total"] == picodollars(result.cost_usd)
    assert "input" not in found


def test_an_older_events_file_without_the_price_keys_still_draws(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run's events with the keys this version added taken out (prices, the split
    counts, cost_source, model, cost_from): every line an event, the costs reported as
    version 2 said them, and the page says the events name no price."""
    run = stopped_run()
    added = {"prices", "input_tokens", "cached_input_tokens", "output_tokens", "model"}
    held = [
        {k: v for k, v in event.items() if k not in added | {"cost_source", "cost_from"}}
        for event in run.events
    ]
    path = place.work / "old.jsonl"
    path.write_text(lines(held), encoding="utf-8")
    assert main(["report", str(path)]) == 0
    assert capsys.readouterr().err == ""
    page = (place.work / "old.html").read_text(encoding="utf-8")
    assert "No price named: these events are from before a run named its price" in page
    found = parts(page)
    assert found["reported"] == found["total"] == picodollars(run.cost_usd)
    assert f"cost: ${run.cost_usd} of $1 (limits.max_cost_usd)" in page


def _priced_events(name: str = "gpt-4o-mini") -> list[dict[str, Any]]:
    responses = [used(1000, 1000, 400), used(3000, 10, 0), answer()]
    fields = {**budget(max_steps=5, max_cost_usd=10.0), **PRICES}
    result = LoopExecutor(Named(name, responses), {"echo": Echo()}, fields).run("go")
    return [dict(event) for event in result.events]


def test_a_response_priced_at_another_price_is_shown_whole() -> None:
    """A real run's second response edited to cost what another model's price makes of it (the
    loop prices a response naming another model by that model's price): its cost is not the
    run's rates' and is shown whole, naming the model; the total is still the run's."""
    events = _priced_events()
    second = [e for e in events if e["type"] == "model_response"][1]
    second.update(model="claude-other", cost_usd=0.0123)
    stopped = events[-1]
    assert stopped["type"] == "stopped"
    stopped["cost_usd"] = round(stopped["cost_usd"] - 0.00045 - 0.000006 + 0.0123, 12)
    page = render("other.jsonl", parse_events(lines(events).encode()))
    found = parts(page)
    assert found["otherwise"] == picodollars(0.0123)
    assert found["input"] == 600 * 150_000
    assert split_sum(found) + picodollars(0.0123) == found["total"]
    assert found["total"] == picodollars(stopped["cost_usd"])
    assert "priced at another price, not split (1 response)" in page
    assert "is shown whole (they name claude-other)." in page
    assert "stopped event counts" not in page


def test_a_hostile_model_name_and_locator_are_text(place: Place) -> None:
    """A model named with markup (a real run's), and a locator edited to hold markup, controls
    and a bidirectional override: escaped wherever the page shows them, nothing left to run."""
    hostile = "<script>window.pwned=1</script>\x1b[2J\u202e"
    events = _priced_events(hostile)
    started = events[0]
    assert started["prices"]["model"] == hostile  # the run named its price by the model
    started["prices"]["locator"] = '"><img src=x onerror=alert(1)>/etc/prices.toml:3'
    second = [e for e in events if e["type"] == "model_response"][1]
    second.update(model=hostile, cost_usd=0.5)  # shown whole, naming its model
    page = render("hostile.jsonl", parse_events(lines(events).encode()))
    assert "<script" not in page
    assert "<img" not in page
    shown = html.escape(escape(hostile, keep=""), quote=True)
    assert f'<span class="model">{shown}</span>' in page
    assert f"(they name {shown})" in page
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;/<wbr>etc/<wbr>prices.<wbr>toml:3" in page


@pytest.mark.parametrize(
    ("prices", "why"),
    [
        ([0.15, 0.6], "prices: expected an object or null, got a list"),
        ("genai-prices", "prices: expected an object or null, got text"),
        ({"output_per_mtok": 0.6}, "prices: input_per_mtok: expected a number from 0, got nothing"),
        ({"input_per_mtok": 1}, "prices: output_per_mtok: expected a number from 0, got nothing"),
        (
            {"input_per_mtok": "0.15", "output_per_mtok": 0.6},
            "prices: input_per_mtok: expected a number from 0, got text",
        ),
        (
            {"input_per_mtok": 0.15, "output_per_mtok": -1},
            "prices: output_per_mtok: expected a number from 0, got -1",
        ),
        (
            {"input_per_mtok": 0.15, "output_per_mtok": 9 * 10**308},
            "prices: output_per_mtok: expected a number from 0, got a number of 309 digits",
        ),
        (
            {"input_per_mtok": 0.15, "output_per_mtok": 0.6, "cached_input_per_mtok": True},
            "prices: cached_input_per_mtok: expected a number from 0, got true or false",
        ),
        (
            {"input_per_mtok": 0.1, "output_per_mtok": 0.6, "model": 4},
            "prices: model: expected text, got a number",
        ),
        (
            {"input_per_mtok": 0.1, "output_per_mtok": 0.6, "locator": ["a"]},
            "prices: locator: expected text, got a list",
        ),
    ],
)
def test_a_bad_prices_value_is_a_bad_line_with_why(
    prices: object, why: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """run_started's prices of the wrong kind: the line is left out, said why, and the file's
    other run is still drawn with its price."""
    bad, good = _priced_events(), _priced_events()
    bad[0]["prices"] = prices
    path = place.work / "bad.jsonl"
    path.write_text(lines(bad + good), encoding="utf-8")
    assert main(["report", str(path)]) == 1
    assert capsys.readouterr().err == f"{path}:1: run_started: {why}\n"
    page = (place.work / "bad.html").read_text(encoding="utf-8")
    assert page.count("Price in force: ") == 1  # the good run's
    assert "The events name no budget (no run_started event)." in page  # the bad run's


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("model", 4, "model_response: model: expected text or null, got a number"),
        ("cost_source", None, "model_response: cost_source: expected text, got null"),
        (
            "input_tokens",
            -3,
            "model_response: input_tokens: expected a whole number from 0, got -3",
        ),
        ("cached_input_tokens", 1.5, "model_response: cached_input_tokens: expected a whole"),
        ("output_tokens", "9", "model_response: output_tokens: expected a whole number from 0"),
    ],
)
def test_a_response_with_a_bad_split_or_source_is_a_bad_line(
    key: str, value: object, why: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A response's split counts, cost_source or model of the wrong kind: a bad line, why."""
    events = _priced_events()
    response = next(e for e in events if e["type"] == "model_response")
    response[key] = value
    path = place.work / "bad.jsonl"
    path.write_text(lines(events), encoding="utf-8")
    assert main(["report", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3: {why}")
    assert len(err.splitlines()) == 1


def test_a_price_cached_like_its_input_and_a_null_price_draw(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A price without a cached rate (or null for it) prices cached tokens at the input's; a
    prices of null says no price was in force."""
    events = _priced_events()
    events[0]["prices"].pop("cached_input_per_mtok")
    run = parse_events(lines(events).encode()).runs[0]
    assert run.prices is not None
    events[0]["prices"]["cached_input_per_mtok"] = None
    page = render("c.jsonl", parse_events(lines(events).encode()))
    assert "$0.15 / $0.60 per Mtok" in page  # no cached rate of its own
    # the run was priced at $0.075 for cached tokens: at $0.15 its first response is not its
    # cost, and is shown whole
    assert parts(page)["otherwise"] == picodollars(0.00072)
    events[0]["prices"] = None
    assert "No price in force" in render("n.jsonl", parse_events(lines(events).encode()))


def test_a_parents_cost_counts_its_childrens_beside_its_own_split() -> None:
    """A priced lead whose tool runs a priced sub-agent: the lead's split is its own responses',
    its children's spend one row, and the total the lead's cost as its run counted it; the
    child's own run shows its own split."""
    kids: list[RunResult] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert handle is not None
        model = Named("gpt-4o-mini", [used(500, 100, 100), answer("sub done")])
        kid = LoopExecutor(model, {"echo": Echo()}, handle.carve()).run(task)
        kids.append(kid)
        return kid.output

    asked = {
        "tool_calls": [{"name": "delegate", "arguments": {"task": "sub"}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 50},
    }
    fields = {**budget(max_steps=4, max_cost_usd=5.0), **PRICES}
    top = LoopExecutor(Named("gpt-4o-mini", [asked, answer()]), {"delegate": delegate}, fields)
    lead = top.run("go")
    (kid,) = kids
    assert kid.cost_usd > 0
    page = page_of(lead, kid)
    own, child = page.split('<section class="run"')[1:]
    found = parts(own)
    assert found["children"] == picodollars(kid.cost_usd)
    assert split_sum(found) + picodollars(kid.cost_usd) == found["total"]
    assert found["total"] == picodollars(lead.cost_usd)
    theirs = parts(child)
    assert split_sum(theirs) == theirs["total"] == picodollars(kid.cost_usd)


def test_a_carried_over_cost_is_a_row_of_its_own() -> None:
    """A resumed run starts from what it carried over (edited into a real run's run_started,
    as a resumed run writes it): its own row, and in the total."""
    events = _priced_events()
    events[0]["carried_over"] = {**events[0]["carried_over"], "cost_usd": 0.5}
    events[-1]["cost_usd"] = round(events[-1]["cost_usd"] + 0.5, 12)
    found = parts(render("r.jsonl", parse_events(lines(events).encode())))
    assert found["carried"] == picodollars(0.5)
    assert split_sum(found) + picodollars(0.5) == found["total"]


def test_a_stop_counting_more_than_the_events_hold_says_so() -> None:
    """A response line left out (here: taken out): the stopped event's cost is more than the
    events account for, and the page says by how much rather than hide it."""
    events = _priced_events()
    events.remove(next(e for e in events if e["type"] == "model_response"))
    page = render("gap.jsonl", parse_events(lines(events).encode()))
    assert "The run's stopped event counts $0.001176: the events above account for" in page
    assert "$0.000456" in page


def test_the_ledgers_reservation_says_where_its_cost_came_from(tmp_path: Path) -> None:
    """A real run on a sqlite ledger, its reservation priced at the model's price: the ledger
    table shows ledger_reserve's cost_from, the price's locator."""
    fields = {
        **budget(max_steps=2, max_cost_usd=10.0),
        **PRICES,
        "ledger.url": f"sqlite:///{tmp_path / 'ledger.db'}",
    }
    result = LoopExecutor(Named("gpt-4o-mini", [used(10, 10), answer()]), None, fields).run("go")
    reserve = next(e for e in result.events if e["type"] == "ledger_reserve")
    assert reserve["cost_from"] == "explicit"
    assert reserve["cost_usd"] == round(4096 * 0.6e-6, 12)
    page = page_of(result)
    ledger = page.split('<section class="ledger">')[1]
    assert "<dt>cost_<wbr>from</dt><dd>explicit</dd>" in ledger
    assert picodollars(result.cost_usd) == parts(page)["total"]
    assert result.cost_usd * PICO == pytest.approx(parts(page)["total"])
