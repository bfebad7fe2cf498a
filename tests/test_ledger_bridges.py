"""A set ``ledger.url`` in a framework bridge: none reserves before each model call, so each
refuses it like any budget it cannot enforce; explain --for says so."""

from __future__ import annotations

import importlib

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.integrations._bridge import bridge_budget
from budgetconf.integrations._frameworks import FRAMEWORKS

URL = "redis://agent:pw-SECRET@127.0.0.1:6379/0"
ENV = {"BUDGETCONF_LEDGER_URL": URL}


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
@pytest.mark.parametrize("through", ["run", "limits"])
def test_every_bridge_refuses_a_ledger_naming_it_without_its_password(
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


def test_warn_runs_a_bridge_without_the_ledger_after_one_warning() -> None:
    with pytest.warns(budgetconf.BudgetConfWarning, match="ledger.url = .* running without it"):
        budget = bridge_budget(
            FRAMEWORKS["smolagents"], None, {"env": ENV}, through="run", unenforced="warn"
        )
    assert budget.ledger is not None


@pytest.mark.parametrize("module", ["smolagents", "langgraph", "openai_agents"])
def test_the_real_bridges_limits_refuse_it(module: str) -> None:
    pytest.importorskip(module.replace("openai_agents", "agents"))
    bridge = importlib.import_module(f"budgetconf.integrations.{module}")
    with pytest.raises(budgetconf.UsageError, match=r"ledger.url = redis://agent:\*\*\*@"):
        bridge.limits(env=ENV)


def test_explain_for_lists_the_ledger_as_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", URL)
    main(["explain", "ledger.url", "--for", "langgraph"])
    out = capsys.readouterr().out
    assert (
        "  refused           ledger.url = redis://agent:***@127.0.0.1:6379/0 from"
        " env:BUDGETCONF_LEDGER_URL: langgraph cannot enforce it; run() refuses it\n"
    ) in out
    assert "SECRET" not in out
