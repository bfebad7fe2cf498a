"""What every framework bridge shares, without any framework: refusals, warnings and stops."""

from __future__ import annotations

import warnings

import pytest

import budgetconf
from budgetconf.integrations._bridge import bridge_budget, refuse_conflicting
from budgetconf.integrations._frameworks import FRAMEWORKS, framework_named

AGENTS = FRAMEWORKS["openai_agents"]


def test_a_framework_is_named_by_its_module_or_its_extra() -> None:
    assert framework_named("openai-agents") is framework_named("openai_agents") is AGENTS
    assert framework_named("pydantic-ai").package == "pydantic-ai-slim"
    with pytest.raises(KeyError, match="unknown framework 'crew': one of openai-agents, "):
        framework_named("crew")
    assert repr(AGENTS) == "Framework('openai_agents')"


def test_a_budget_the_framework_cannot_enforce_is_refused_naming_field_and_framework() -> None:
    env = {"BUDGETCONF_MAX_COST_USD": "2"}
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(AGENTS, None, {"env": env}, through="run")
    assert str(caught.value) == (
        "limits.max_cost_usd = 2.0 from env:BUDGETCONF_MAX_COST_USD cannot be enforced by"
        " openai-agents; unset it, or pass unenforced='warn' to run without it"
    )


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
        "import sys, budgetconf.integrations._frameworks, budgetconf.integrations._bridge;"
        "print(sorted(m for m in ('agents','langgraph','smolagents','pydantic_ai',"
        "'praisonaiagents') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
