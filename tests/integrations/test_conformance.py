"""One meaning everywhere: every bridge, through its framework's standard OpenAI client and
one loopback server, makes the executor's requests, runs its tool calls and ends as it
does, in every scenario (tests/helpers/conformance.py); under a cost budget, on responses
that report usage and no cost, it prices them as the executor does and stops on the same
request."""

from __future__ import annotations

import re
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from budgetconf.errors import BudgetConfWarning

from helpers import DOCS
from helpers.chat_server import serving
from helpers.conformance import (
    CACHED,
    DIFFERENCES,
    DRIVERS,
    PRICED,
    PRICES_ITSELF,
    REFUSALS,
    SCENARIOS,
    STREAMS,
    UNCACHED,
    Adder,
    Outcome,
    Scenario,
    executor,
    outcome,
    register_every_driver,
)

register_every_driver()
if find_spec("agents") is not None:  # its runs leave a loop and tracing to put back
    from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)

#: what the executor does in each scenario: the baseline, pinned
EXPECTED = {
    "a tool once, then an answer": Outcome(2, 1, "ok", "completed", None),
    "always a tool": Outcome(3, 2, "truncated", "max_steps", "loop.max_steps"),
    "three calls a response, two allowed": Outcome(
        3, 0, "truncated", "max_steps", "loop.max_steps"
    ),
    "three calls a response, four in all": Outcome(
        2, 3, "truncated", "max_tool_calls", "limits.max_tool_calls"
    ),
    "one server error, retried": Outcome(4, 2, "truncated", "max_steps", "loop.max_steps"),
    "server errors from the second": Outcome(4, 1, "failed", "error", None),
    "100 tokens a reply": Outcome(3, 2, "truncated", "max_tokens", "limits.max_tokens"),
    "100 tokens a reply, a ledger's maximum": Outcome(
        2, 2, "truncated", "max_tokens", "ledger.max_tokens"
    ),
    "2 s a reply": Outcome(2, 1, "truncated", "timeout", "limits.timeout_seconds"),
    "one call id in every response": Outcome(
        3, 2, "truncated", "max_tool_calls", "limits.max_tool_calls"
    ),
    "add three times allowed, the model asks six times": Outcome(4, 3, "ok", "completed", None),
    "the same failing call every turn under max_repeats = 3": Outcome(
        3, 3, "truncated", "no_progress", "loop.max_repeats"
    ),
    "the same call, the same answer every turn under max_repeats = 3": Outcome(
        3, 3, "truncated", "no_progress", "loop.max_repeats"
    ),
    "a limit for a tool the run does not have": Outcome(
        2,
        1,
        "ok",
        "completed",
        None,
        (
            "tools.max_calls.serach = 2 from env:BUDGETCONF_TOOLS_MAX_CALLS: the run has no"
            " tool named 'serach' (its tools: add)",
        ),
    ),
    "warned at 60 % of the steps, and told": Outcome(
        4,
        3,
        "ok",
        "completed",
        None,
        ("budget warning: 3 of 5 turns used: loop.max_steps = 5 from env:BUDGETCONF_MAX_STEPS",),
    ),
}


def run(scenario: Scenario, name: str, tmp_path: Path) -> tuple[Any, Outcome]:
    """The run's result, and its outcome, by the driver ``name``; a driver whose framework
    streams each request (`STREAMS`) streamed every one."""
    adder = Adder()
    drive = executor if name == "executor" else DRIVERS[name]
    with (
        serving(scenario.respond, delay=scenario.delay) as chat,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", BudgetConfWarning)
        budget = scenario.budget(tmp_path)
        result = drive(chat.url, budget, adder, scenario.model)
        requests = len(chat.received)
    if name in STREAMS:
        streamed = [r.body.get("stream") for r in chat.received]
        assert all(s is True for s in streamed), streamed
    warned = tuple(str(w.message) for w in caught if issubclass(w.category, BudgetConfWarning))
    return result, outcome(result, requests, adder, warned)


def play(scenario: Scenario, name: str, tmp_path: Path) -> Outcome:
    return run(scenario, name, tmp_path)[1]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_executor_does_what_the_suite_expects(scenario: Scenario, tmp_path: Path) -> None:
    assert play(scenario, "executor", tmp_path) == EXPECTED[scenario.name]


@pytest.mark.parametrize("name", sorted(DRIVERS))
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_bridge_does_what_the_executor_does(
    name: str, scenario: Scenario, tmp_path: Path
) -> None:
    refused = REFUSALS[name].get(scenario.name)
    if refused is not None:
        import budgetconf

        with pytest.raises(budgetconf.UsageError, match=refused):
            play(scenario, name, tmp_path)
        return
    expected = DIFFERENCES[name].get(scenario.name, (EXPECTED[scenario.name], ""))[0]
    assert play(scenario, name, tmp_path) == expected


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_where_a_framework_does_otherwise_the_docs_say_why(name: str) -> None:
    """Each difference is the framework's own, stays within the budget, and is in the docs."""
    docs = " ".join((DOCS / "frameworks.md").read_text(encoding="utf-8").split())
    for scenario, (outcome_, reason) in DIFFERENCES[name].items():
        assert reason in docs, (name, scenario)
        baseline = EXPECTED[scenario]
        assert outcome_.tool_runs <= baseline.tool_runs
        assert outcome_.requests <= baseline.requests


#: what the executor does in each priced scenario: the outcome, and the run's usage
COSTS = {
    "priced": Outcome(3, 2, "truncated", "max_cost", "limits.max_cost_usd"),
    "ledger": Outcome(2, 2, "truncated", "max_cost", "ledger.max_cost_usd"),
}


def usage(responses: int, cost: float, cached: int = 0) -> dict[str, Any]:
    """The usage of ``responses`` priced responses of 1,000 + 1,000 tokens, ``cached`` each."""
    return {
        "input_tokens": 1000 * responses,
        "cached_input_tokens": cached * responses,
        "output_tokens": 1000 * responses,
        "total_tokens": 2000 * responses,
        "cost_usd": cost,
        "cost_source": "priced",
    }


PRICED_EXPECTED = {
    "$0.00075 a reply at the fields' price": (COSTS["priced"], usage(3, 0.00225)),
    "$0.00069 a reply at the fields' price, 800 tokens cached": (
        COSTS["priced"],
        usage(3, 0.00207, CACHED),
    ),
    "gpt-4o-mini at genai-prices' price": (COSTS["priced"], usage(3, 0.00225)),
    "gpt-4o-mini at genai-prices' price, 800 tokens cached": (
        COSTS["priced"],
        usage(3, 0.00207, CACHED),
    ),
    "a ledger's cost maximum at the fields' price": (COSTS["ledger"], usage(2, 0.0015)),
}


def priced_play(scenario: Scenario, name: str, tmp_path: Path) -> tuple[Outcome, Any]:
    if scenario.model == "gpt-4o-mini":
        pytest.importorskip("genai_prices")
    result, found = run(scenario, name, tmp_path)
    return found, result.usage.to_dict()


@pytest.mark.parametrize("scenario", PRICED, ids=lambda s: s.name)
def test_the_executor_prices_each_response_and_stops_after_the_one_that_crosses(
    scenario: Scenario, tmp_path: Path
) -> None:
    assert priced_play(scenario, "executor", tmp_path) == PRICED_EXPECTED[scenario.name]


@pytest.mark.parametrize("name", sorted(DRIVERS))
@pytest.mark.parametrize("scenario", PRICED, ids=lambda s: s.name)
def test_every_bridge_prices_as_the_executor_does_and_stops_on_the_same_request(
    name: str, scenario: Scenario, tmp_path: Path
) -> None:
    """The same requests, tool runs and stop, and the same usage: tokens, cached tokens,
    cost and how it was known. A framework that reports no cached tokens prices them all at
    the input rate, and still stops on the same request (docs/frameworks.md names it); one
    that prices its own responses by genai-prices (pydantic-ai) reports the same cost."""
    refused = REFUSALS[name].get(scenario.name)
    if refused is not None:
        import budgetconf

        with pytest.raises(budgetconf.UsageError, match=refused):
            priced_play(scenario, name, tmp_path)
        return
    expected, spent = PRICED_EXPECTED[scenario.name]
    cached = spent["cached_input_tokens"]
    if cached and name in UNCACHED:
        responses = spent["input_tokens"] // 1000
        spent = usage(responses, round(0.00075 * responses, 12))
    if name in PRICES_ITSELF and scenario.model == "gpt-4o-mini":
        spent = {**spent, "cost_source": "reported"}  # genai-prices' price, as it reports it
    assert priced_play(scenario, name, tmp_path) == (expected, spent)


def test_the_docs_name_the_bridges_whose_framework_reports_no_cached_tokens() -> None:
    docs = " ".join((DOCS / "frameworks.md").read_text(encoding="utf-8").split())
    found = re.search(r"reports no cached input tokens: ([^.]*)\.", docs)
    assert found is not None
    listed = set(re.findall(r"`([^`]+)`", found.group(1)))
    # this environment's drivers: those the docs name, and no other (noxfile.py plays the rest)
    assert set(UNCACHED) <= listed
    assert not listed & (set(DRIVERS) - UNCACHED)
