"""What every framework bridge shares, without any framework: refusals, warnings and stops."""

from __future__ import annotations

import warnings

import pytest

import budgetconf
from budgetconf.integrations._bridge import AgentModel, bridge_budget, refuse_conflicting
from budgetconf.integrations._frameworks import FRAMEWORKS, framework_named
from budgetconf.integrations._verdicts import verdicts
from budgetconf.loop import Budget

from conftest import Place
from helpers.presetfiles import preset_file

AGENTS = FRAMEWORKS["openai_agents"]


def test_a_framework_is_named_by_its_module_or_its_extra() -> None:
    assert framework_named("openai-agents") is framework_named("openai_agents") is AGENTS
    assert framework_named("pydantic-ai").package == "pydantic-ai-slim"
    with pytest.raises(KeyError, match="unknown framework 'crew': one of openai-agents, "):
        framework_named("crew")
    assert repr(AGENTS) == "Framework('openai_agents')"


def test_a_budget_the_framework_cannot_enforce_is_refused_naming_field_and_framework() -> None:
    """A cost budget for a model with no name, where the framework reports no cost: no price
    can hold it, so it is refused as any budget the framework cannot enforce."""
    env = {"BUDGETCONF_MAX_COST_USD": "2"}
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(AGENTS, None, {"env": env}, through="run")
    assert str(caught.value) == (
        "limits.max_cost_usd = 2.0 from env:BUDGETCONF_MAX_COST_USD cannot be enforced by"
        " openai-agents: it reports no cost, and no price is known for a model with no name"
        " (set prices.input_per_mtok and prices.output_per_mtok); unset it, or pass"
        " unenforced='warn' to run without it"
    )
    with pytest.raises(budgetconf.UsageError, match="cannot be enforced by openai-agents"):
        bridge_budget(AGENTS, None, {"env": env}, through="run", model=AgentModel(""))


def test_warn_runs_without_it_and_says_so_once() -> None:
    env = {"BUDGETCONF_MAX_COST_USD": "2"}
    with pytest.warns(budgetconf.BudgetConfWarning, match="running without it") as caught:
        budget = bridge_budget(AGENTS, None, {"env": env}, through="run", unenforced="warn")
    assert len(caught) == 1
    assert budget.value("max_cost_usd") == 2.0


def test_a_budget_enforced_only_by_the_bridge_is_refused_through_limits() -> None:
    env = {"BUDGETCONF_MAX_TOKENS": "500"}
    assert bridge_budget(AGENTS, None, {"env": env}, through="run").value("max_tokens") == 500
    with pytest.raises(budgetconf.UsageError, match=r"by openai-agents through limits\(\)"):
        bridge_budget(AGENTS, None, {"env": env}, through="limits")


def test_a_budget_left_at_its_default_is_not_refused() -> None:
    """The default per-response cap of 10 binds nothing a user set: praisonai's table lists it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        budget = bridge_budget(FRAMEWORKS["praisonai"], None, {"env": {}}, through="limits")
    assert budget.limits["max_tool_calls_per_turn"].source == "default"


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_budget_none_resolves_the_default_preset_or_the_one_named(name: str) -> None:
    """Every bridge, PraisonAI's too, resolves the default preset for budget=None, and the
    preset a `preset=` keyword names, as `budgetconf.resolve` does."""
    framework = FRAMEWORKS[name]
    default = bridge_budget(framework, None, {"env": {}}, through="run")
    named = bridge_budget(framework, None, {"env": {}, "preset": "praisonai"}, through="run")
    assert (default.preset, default.value("max_steps")) == ("budgetconf", 40)
    assert (named.preset, named.value("max_steps")) == ("praisonai", 20)


def test_resolve_keywords_go_with_budget_none_only() -> None:
    with pytest.raises(budgetconf.UsageError, match="resolve keywords are for budget=None"):
        bridge_budget(AGENTS, {"loop.max_steps": 3}, {"env": {}}, through="run")
    with pytest.raises(budgetconf.UsageError, match="unenforced"):
        bridge_budget(AGENTS, None, {}, through="run", unenforced="ignore")  # type: ignore[arg-type]


def test_a_framework_keyword_that_sets_a_limit_is_refused() -> None:
    with pytest.raises(budgetconf.UsageError) as caught:
        refuse_conflicting(AGENTS, {"max_turns": 50, "context": None})
    assert str(caught.value) == (
        "max_turns= would set openai-agents's own limit: set the budget through budgetconf"
        " instead (explicit=, --set or its variable)"
    )
    refuse_conflicting(AGENTS, {"context": None})


def test_no_framework_is_imported_to_describe_them() -> None:
    import subprocess
    import sys

    code = (
        "import sys, budgetconf.integrations._verdicts, budgetconf.integrations._bridge;"
        "print(sorted(m for m in ('agents','langgraph','smolagents','pydantic_ai',"
        "'praisonaiagents') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


#: a cost budget and the price fields: $0.15 / $0.60 per million tokens, for any model
PRICED = {"BUDGETCONF_MAX_COST_USD": "2", "BUDGETCONF_PRICE_INPUT_PER_MTOK": "0.15",
          "BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0.6"}  # fmt: skip
#: a cost budget and no price anywhere: no fields, and no table to look a model up in
UNPRICED = {"BUDGETCONF_MAX_COST_USD": "2", "BUDGETCONF_PRICE_TABLE": "none"}


def _cost(framework: str, env: dict[str, str], model: str | None = None) -> dict[str, object]:
    budget = Budget.from_resolution(budgetconf.resolve(env=env))
    found = verdicts(FRAMEWORKS[framework], budget, "run", model)
    (cost,) = [v for v in found if v["field"] == "limits.max_cost_usd"]
    return cost


@pytest.mark.parametrize("name", sorted(set(FRAMEWORKS) - {"pydantic_ai"}))
@pytest.mark.parametrize("model", [None, "house-model"])
def test_a_cost_budget_is_the_bridges_at_a_known_price(name: str, model: str | None) -> None:
    """The price fields price any model, named or not: every bridge enforces the budget at
    that price, and names it (its rates and the fields that set them)."""
    cost = _cost(name, PRICED, model)
    assert cost["enforced_by"] == "bridge"
    whose = "the price" if model is None else f"{model}'s price"
    locators = "env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK"
    assert f"priced at {whose} ({locators}: $0.15 / $0.60 per Mtok)" in str(cost["how"])
    assert cost["price"] == {
        "model": model or "",
        "input_per_mtok": 0.15,
        "output_per_mtok": 0.6,
        "cached_input_per_mtok": 0.15,
        "source": "fields",
        "locator": locators,
    }
    assert (
        bridge_budget(FRAMEWORKS[name], None, {"env": PRICED}, through="run").value("max_cost_usd")
        == 2.0
    )


def test_a_named_model_with_no_price_is_refused_whatever_unenforced_says() -> None:
    """prices.unknown = refuse (the default): the Meter's own refusal, before the run, which
    unenforced="warn" does not turn into a warning."""
    for unenforced in ("error", "warn"):
        with pytest.raises(budgetconf.UsageError) as caught:
            bridge_budget(
                AGENTS,
                None,
                {"env": UNPRICED},
                through="run",
                unenforced=unenforced,
                model=AgentModel("house-model", "openai"),
            )
        assert str(caught.value) == (
            "no price for the model 'house-model', and limits.max_cost_usd = $2 from"
            " env:BUDGETCONF_MAX_COST_USD is a cost budget: set prices.input_per_mtok and"
            " prices.output_per_mtok, name a table file in prices.table, or pip install"
            " 'budgetconf[prices]'"
        )
    assert _cost("openai_agents", UNPRICED, "house-model")["unpriced"] is True


def test_under_warn_a_named_model_with_no_price_is_left_to_the_meters_one_warning() -> None:
    """prices.unknown = warn: the verdict says so, and the bridge itself warns nothing (the
    run's Meter warns once, as the executor's does)."""
    env = {**UNPRICED, "BUDGETCONF_PRICE_UNKNOWN": "warn"}
    cost = _cost("langgraph", env, "house-model")
    assert cost["enforced_by"] == "warned"
    assert str(cost["why"]).endswith("; only the cost its responses report counts")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        budget = bridge_budget(
            FRAMEWORKS["langgraph"], None, {"env": env}, through="run", model=AgentModel("m")
        )
    assert budget.value("max_cost_usd") == 2.0


def test_a_framework_that_prices_its_own_responses_holds_a_cost_budget_for_any_model() -> None:
    """pydantic-ai reports cost: a model with no name (its test doubles) is held to the cost
    reported; a named one is priced where pydantic-ai reports none, or refused without a
    price, as every bridge refuses it."""
    pydantic = FRAMEWORKS["pydantic_ai"]
    cost = _cost("pydantic_ai", UNPRICED)
    assert (cost["enforced_by"], cost["price"]) == ("framework", None)
    assert cost["how"] == (
        "UsageLimits(cost_limit=…); run(): the Meter, from the cost pydantic-ai prices each"
        " response at"
    )
    priced = _cost("pydantic_ai", PRICED, "house-model")
    assert str(priced["how"]).endswith(
        "prices each response at, else its usage priced at house-model's price"
        " (env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK:"
        " $0.15 / $0.60 per Mtok)"
    )
    with pytest.raises(budgetconf.UsageError, match="no price for the model 'house-model'"):
        bridge_budget(pydantic, None, {"env": UNPRICED}, through="run",
                      model=AgentModel("house-model"))  # fmt: skip


def test_a_cost_budget_at_its_default_or_the_policys_is_left_or_refused_as_any_budget(
    place: Place,
) -> None:
    """With no price: a preset's own default cost budget is left unenforced without a word;
    the policy's is never run without, warn or not."""
    path = preset_file(
        place.work,
        fields={
            "agent.turns": {"type": "int", "default": 3},
            "agent.cost": {"type": "number", "default": 1.5},
        },
        loop={"max_steps": "agent.turns", "max_cost_usd": "agent.cost"},
    )
    default = Budget.from_resolution(budgetconf.resolve(str(path)))
    (cost,) = [v for v in verdicts(AGENTS, default, "run") if v["budget"] == "max_cost_usd"]
    assert (cost["enforced_by"], cost["price"]) == ("default", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bridge_budget(AGENTS, default, {}, through="run").value("max_cost_usd") == 1.5
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{"limits": {"max_cost_usd": {"max": 0.5}}}', encoding="utf-8")
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(
            AGENTS, None, {"env": {"BUDGETCONF_MAX_COST_USD": "3"}}, through="run",
            unenforced="warn",
        )  # fmt: skip
    assert str(caught.value).startswith(
        f"limits.max_cost_usd = 0.5 from the policy {place.policy}:1 cannot be enforced by"
        " openai-agents: it reports no cost"
    )
    assert str(caught.value).endswith("; a budget the policy sets is never run without")


def test_limits_refuses_a_cost_budget_and_says_run_enforces_it() -> None:
    """No framework but pydantic-ai has a cost keyword: limits() refuses the budget, and
    points to run(), which enforces it at the model's price."""
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(AGENTS, None, {"env": UNPRICED}, through="limits")
    assert str(caught.value) == (
        "limits.max_cost_usd = 2.0 from env:BUDGETCONF_MAX_COST_USD cannot be enforced by"
        " openai-agents through limits(); unset it, or run the agent through run(), which"
        " enforces it"
    )


def test_a_model_named_later_leaves_its_cost_budget_to_run() -> None:
    """LangGraph's middleware() is made before the graph, so before its model is known: the
    cost budget is judged by run(); every other budget as ever."""
    budget = bridge_budget(
        FRAMEWORKS["langgraph"], None, {"env": UNPRICED}, through="run", priced_later=True
    )
    assert budget.value("max_cost_usd") == 2.0
    env = {**UNPRICED, "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "3"}
    with pytest.raises(budgetconf.UsageError, match="max_tool_calls_per_turn") as caught:
        bridge_budget(FRAMEWORKS["praisonai"], None, {"env": env}, through="limits",
                      priced_later=True)  # fmt: skip
    assert "max_cost_usd" in str(caught.value)  # limits() has no price to wait for


def test_the_model_names_its_provider_only_when_genai_prices_is_asked() -> None:
    """A provider is looked up for a genai-prices lookup only: the fields, another table, or a
    run that prices nothing need none (and import nothing for it)."""
    model = AgentModel("gpt-4o-mini", "openai", "http://127.0.0.1:9/v1")
    assert repr(model) == (
        "AgentModel('gpt-4o-mini', provider='openai', url='http://127.0.0.1:9/v1')"
    )
    for env in (PRICED, UNPRICED, {}):
        budget = Budget.from_resolution(budgetconf.resolve(env=env))
        assert model.provider_for(budget) is None
    assert AgentModel(" ", 3, "").name is None
    assert (AgentModel(" ", 3, "").provider, AgentModel(" ", 3, "").url) == (None, None)
