"""The shared ledger counts what a run spent at its model's price (docs/prices.md): settled,
reserved at the higher rate, and the fleet stopped at the priced spend, on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.ledger import open_ledger
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel

SCOPE = "team-a"


class Named(ScriptedModel):
    """A model with a name, always asking for the tool ``t``; 1,000 + 1,000 tokens a call."""

    model = "house-model"

    def __init__(self) -> None:
        call = {"id": "c", "name": "t", "arguments": "{}"}
        usage = {"prompt_tokens": 1000, "completion_tokens": 1000}
        super().__init__([{"content": "", "tool_calls": [call], "usage": usage}])


def ledger_run(url: str, **env: str) -> RunResult:
    """A run of `Named` on the ledger ``url`` at $0.15 / $0.60 per Mtok ($0.00075 a call)."""
    values = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": SCOPE,
        "BUDGETCONF_PRICE_INPUT_PER_MTOK": "0.15",
        "BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0.6",
        **env,
    }
    return LoopExecutor(Named(), {"t": lambda: "ok"}, budgetconf.resolve(env=values)).run("go")


def events(result: RunResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == kind]


def test_a_run_with_a_ledger_settles_its_priced_cost_with_no_cost_budget(tmp_path: Path) -> None:
    """No cost budget, a ledger: each response is priced, and the ledger counts that cost."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    result = ledger_run(url, BUDGETCONF_MAX_STEPS="2")
    assert [e["cost_usd"] for e in events(result, "ledger_settle")] == [0.00075, 0.00075]
    with open_ledger(url) as led:
        assert led.status(SCOPE, window="day").spent_cost_usd == 0.0015


def test_a_reservation_left_at_its_default_is_priced_at_the_higher_rate(tmp_path: Path) -> None:
    """4,096 tokens at the output rate, $0.60 per Mtok: $0.0024576, from the price's locator."""
    result = ledger_run(f"sqlite:///{tmp_path / 'ledger.db'}", BUDGETCONF_MAX_STEPS="1")
    (reserve,) = events(result, "ledger_reserve")
    assert (reserve["cost_usd"], reserve["cost_from"]) == (
        0.0024576,
        "env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK",
    )


@pytest.mark.parametrize("set_by", ["env", "none"])
def test_a_reservation_a_source_set_or_with_no_price_holds_reserve_cost_usd(
    tmp_path: Path, set_by: str
) -> None:
    """A reservation set by a source, even to its default, is not priced; with no price, the
    default holds; either way ``cost_from`` names the field."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    if set_by == "env":
        result = ledger_run(
            url, BUDGETCONF_MAX_STEPS="1", BUDGETCONF_LEDGER_RESERVE_COST_USD="0.05"
        )
    else:
        values = {"ledger.url": url, "ledger.scope": SCOPE, "loop.max_steps": 1}
        result = LoopExecutor(Named(), {"t": lambda: "ok"}, {**values, "prices.table": "none"}).run(
            "go"
        )
    (reserve,) = events(result, "ledger_reserve")
    assert (reserve["cost_usd"], reserve["cost_from"]) == (0.05, "ledger.reserve_cost_usd")


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_ledger_s_cost_maximum_stops_the_fleet_at_the_priced_spend(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Two runs share $0.003 at $0.00075 a call, reserving $0.0012: three calls fit, the
    fourth would pass the maximum and the second run stops before it, the scope spent $0.00225.
    """
    url = (
        f"sqlite:///{tmp_path / 'ledger.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("redis_url")
    )
    fleet = {
        "BUDGETCONF_LEDGER_MAX_COST_USD": "0.003",
        "BUDGETCONF_LEDGER_RESERVE_TOKENS": "2000",
        "BUDGETCONF_MAX_STEPS": "2",
    }
    first, second = ledger_run(url, **fleet), ledger_run(url, **fleet)
    assert (first.stop_reason, first.turns) == ("max_steps", 2)
    assert (second.stop_reason, second.turns) == ("max_cost", 1)
    assert second.message.startswith("stopped: hit max_cost (0.003): ledger.max_cost_usd = 0.003")
    assert "; scope team-a has spent $0.00225 of $0.003 this day" in second.message
    with open_ledger(url) as led:
        status = led.status(SCOPE, window="day")
    assert (status.spent_cost_usd, status.reserved_cost_usd) == (0.00225, 0.0)
