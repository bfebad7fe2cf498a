"""A set ``ledger.url`` in a framework bridge: every bridge reserves before each model call,
so each draws on it in run() (openai-agents, smolagents, LangGraph with its middleware,
pydantic-ai through its wrapped model, PraisonAI through its lent client); every limits()
refuses it like any budget it cannot enforce; explain --for says which. A ledger's cost
maximum is drawn on at the price of the agent's model: every bridge stops at the priced
spend, and the scope records it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.integrations._bridge import bridge_budget
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.ledger import open_ledger

from helpers import (  # noqa: F401  (each registers its drivers)
    conformance_langgraph,
    conformance_openai_agents,
    conformance_praisonai,
    conformance_pydantic_ai,
    conformance_smolagents,
)
from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)
from helpers.chat_server import serving
from helpers.conformance import DRIVERS, PRICED, Adder, executor

URL = "redis://agent:pw-SECRET@127.0.0.1:6379/0"
ENV = {"BUDGETCONF_LEDGER_URL": URL}


DRAWING = sorted(name for name, f in FRAMEWORKS.items() if f.ledger is not None)
REFUSING = sorted(name for name, f in FRAMEWORKS.items() if f.ledger is None)


def test_the_bridges_that_see_each_model_call_draw() -> None:
    assert DRAWING == [
        "agno",
        "crewai",
        "langgraph",
        "openai_agents",
        "praisonai",
        "pydantic_ai",
        "smolagents",
    ]
    assert REFUSING == []


@pytest.mark.parametrize(
    ("name", "through"),
    [(name, "run") for name in REFUSING] + [(name, "limits") for name in sorted(FRAMEWORKS)],
)
def test_a_bridge_that_cannot_draw_refuses_a_ledger_naming_it_without_its_password(
    name: str, through: str
) -> None:
    framework = FRAMEWORKS[name]
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(framework, None, {"env": ENV}, through=through)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith(
        "ledger.url = redis://agent:***@127.0.0.1:6379/0 from env:BUDGETCONF_LEDGER_URL"
        f" cannot be drawn on by {framework.package}"
    )
    assert "SECRET" not in message


@pytest.mark.parametrize("name", DRAWING)
def test_a_bridge_that_draws_takes_the_ledger_in_run(name: str) -> None:
    budget = bridge_budget(FRAMEWORKS[name], None, {"env": ENV}, through="run")
    assert budget.ledger is not None
    assert budget.ledger.shown == "redis://agent:***@127.0.0.1:6379/0"


def test_warn_runs_a_bridge_without_a_ledger_maximum_it_cannot_count_after_one_warning() -> None:
    """run() with unenforced="warn": PraisonAI reports no cost, so the ledger's cost maximum is
    run without, once said; limits(), which takes no such keyword, always refuses."""
    env = {**ENV, "BUDGETCONF_LEDGER_MAX_COST_USD": "5"}
    framework = FRAMEWORKS["praisonai"]
    with pytest.warns(budgetconf.BudgetConfWarning, match="ledger.max_cost_usd = .* without it"):
        budget = bridge_budget(framework, None, {"env": env}, through="run", unenforced="warn")
    assert budget.ledger is not None
    with pytest.raises(budgetconf.UsageError, match="through limits\\(\\): the shared ledger"):
        bridge_budget(framework, None, {"env": env}, through="limits", unenforced="warn")


#: each bridge module and the package its framework imports as
IMPORTS = {
    "smolagents": "smolagents",
    "langgraph": "langgraph",
    "openai_agents": "agents",
    "pydantic_ai": "pydantic_ai",
    "praisonai": "praisonaiagents",
}


@pytest.mark.parametrize("module", list(IMPORTS))
def test_the_real_bridges_limits_refuse_it(module: str) -> None:
    pytest.importorskip(IMPORTS[module])
    bridge = importlib.import_module(f"budgetconf.integrations.{module}")
    with pytest.raises(budgetconf.UsageError, match=r"ledger.url = redis://agent:\*\*\*@"):
        bridge.limits(budgetconf.resolve(env=ENV))  # praisonai's own preset reads no env


def test_explain_for_lists_praisonais_ledger_as_drawn_on_and_a_cost_maximum_as_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    monkeypatch.setenv("BUDGETCONF_LEDGER_MAX_COST_USD", "5")
    assert main(["explain", "ledger.url", "--for", "praisonai"]) == 1
    out = capsys.readouterr().out
    assert (
        "  run() enforces    ledger.url = redis://agent:***@127.0.0.1:6379/0, by the bridge: its"
        " OpenAI client, lent for the run, reserves before each model request"
    ) in out
    assert (
        "  run() refuses     ledger.max_cost_usd = 5.0 from env:BUDGETCONF_LEDGER_MAX_COST_USD"
        " cannot be drawn on by praisonaiagents: it reports no cost to settle with, and no price"
        " is known for a model with no name (set prices.input_per_mtok and"
        " prices.output_per_mtok)\n"
    ) in out
    assert (
        "  limits() refuses  ledger.url = redis://agent:***@127.0.0.1:6379/0 from"
        " env:BUDGETCONF_LEDGER_URL cannot be drawn on by praisonaiagents through limits()"
    ) in out
    assert "SECRET" not in out


def test_explain_for_lists_the_ledger_as_drawn_on_by_a_bridge_that_draws(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    assert main(["explain", "ledger.url", "--for", "openai-agents"]) == 0
    out = capsys.readouterr().out
    assert (
        "  run() enforces    ledger.url = redis://agent:***@127.0.0.1:6379/0, by the bridge:"
        " RunConfig.call_model_input_filter reserves before each model call"
    ) in out
    assert "SECRET" not in out


def test_explain_for_takes_a_ledger_cost_maximum_where_the_framework_prices(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic-ai prices each response, so its bridge settles a cost as well as tokens, for a
    model with no name too: a set ledger.max_cost_usd is drawn on, not refused."""
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    monkeypatch.setenv("BUDGETCONF_LEDGER_MAX_COST_USD", "5")
    assert main(["explain", "ledger.url", "--for", "pydantic-ai", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    ledger = [b for b in document["framework"]["budgets"] if b["budget"] == "ledger"]
    assert [(b["field"], b["enforced_by"], b.get("price")) for b in ledger] == [
        ("ledger.url", "bridge", None),
        ("ledger.max_cost_usd", "bridge", None),
    ]
    assert ledger[1]["how"] == (
        "drawn on per model call: the cost pydantic-ai prices each response at"
    )


def test_explain_for_draws_a_ledger_cost_maximum_at_the_models_price(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A framework that reports no cost settles the ledger's cost at the model's price: with
    the price fields (any model's) the cost maximum is drawn on, and says at which price."""
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    monkeypatch.setenv("BUDGETCONF_LEDGER_MAX_COST_USD", "5")
    monkeypatch.setenv("BUDGETCONF_PRICE_INPUT_PER_MTOK", "0.15")
    monkeypatch.setenv("BUDGETCONF_PRICE_OUTPUT_PER_MTOK", "0.6")
    args = ["explain", "ledger.url", "--for", "praisonai", "--model-name", "house-model"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert (
        "  run() enforces    ledger.max_cost_usd = 5.0, by the bridge: drawn on per model call:"
        " each response's usage priced at house-model's price"
        " (env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK:"
        " $0.15 / $0.60 per Mtok)\n"
    ) in out


def test_explain_for_refuses_a_ledger_cost_maximum_a_bridge_cannot_settle(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    monkeypatch.setenv("BUDGETCONF_LEDGER_MAX_COST_USD", "5")
    assert main(["explain", "ledger.url", "--for", "openai_agents", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    ledger = [b for b in document["framework"]["budgets"] if b["budget"] == "ledger"]
    assert [(b["field"], b["enforced_by"]) for b in ledger] == [
        ("ledger.url", "bridge"),
        ("ledger.max_cost_usd", "refused"),
    ]


#: the bridges that draw on the ledger through the conformance suite's drivers (LangGraph's
#: through its middleware: a graph without it refuses a ledger)
LEDGER_DRIVERS = sorted(set(DRIVERS) - {"langgraph", "langgraph, streamed"})


@pytest.mark.parametrize("name", ["executor", *LEDGER_DRIVERS])
def test_a_ledger_cost_maximum_stops_every_bridge_at_the_priced_spend(
    name: str, tmp_path: Path
) -> None:
    """A SQLite ledger with ledger.max_cost_usd = $0.002 and responses that report 1,000 +
    1,000 tokens and no cost: each call is reserved at the price ($0.0006 for 1,000 tokens at
    the higher rate) and settled at it ($0.00075), so the third call is refused before it is
    made, and the scope has spent what the two responses cost."""
    scenario = next(s for s in PRICED if s.ledger)
    drive = executor if name == "executor" else DRIVERS[name]
    with serving(scenario.respond) as chat:
        result = drive(chat.url, scenario.budget(tmp_path), Adder(), scenario.model)
        requests = len(chat.received)
    assert (requests, result.stop_reason, result.limit["field"]) == (
        2,
        "max_cost",
        "ledger.max_cost_usd",
    )
    assert (result.limit["spent"], result.limit["reserved"]) == (0.0015, 0.0)
    assert result.message.startswith(
        "stopped: hit max_cost (0.002): ledger.max_cost_usd = 0.002 from"
        " env:BUDGETCONF_LEDGER_MAX_COST_USD; scope default has spent $0.0015 of $0.002"
    )
    reserved = [e for e in result.events if e["type"] == "ledger_reserve"]
    fields = "env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK"
    assert [(e["cost_usd"], e["cost_from"]) for e in reserved] == [(0.0006, fields)] * 2
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as led:
        status, runs = led.status("default", window="day"), led.runs("default")
    assert (status.spent_cost_usd, status.spent_tokens, status.reserved_cost_usd) == (
        0.0015,
        4000,
        0.0,
    )
    assert [(r["turns"], r["cost_usd"], r["stop_reason"]) for r in runs] == [
        (2, 0.0015, "max_cost")
    ]
