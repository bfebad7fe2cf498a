"""A cost budget on a model that reports no cost: its responses priced, or the run refused.

The executor's rules of docs/prices.md, through both drivers; the table
sources (a file, genai-prices) have tests of their own in tests/prices.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import budgetconf
from budgetconf import BudgetConfWarning, ConfigError, UsageError
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel, current_run

from helpers.loops import Driver, Echo, answer, call

#: the fields' price: $0.15 / $0.60 per million tokens, cached input $0.075
PRICE = {"prices.input_per_mtok": 0.15, "prices.output_per_mtok": 0.6}


class Named(ScriptedModel):
    """A scripted model with a name, as `OpenAIModel` has: the run looks up its price (an
    attribute of its own, which the async driver's wrapper copies)."""

    def __init__(self, responses: list[dict[str, Any]]) -> None:
        super().__init__(responses)
        self.model = "house-model"


def turn(
    prompt: int = 1000, completion: int = 1000, *, cached: int = 0, **extra: Any
) -> dict[str, Any]:
    """A response calling echo, reporting ``prompt`` + ``completion`` tokens and no cost."""
    counts: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cached:
        counts["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"tool_calls": [call()], "usage": counts, **extra}


def run(drive: Driver, model: ScriptedModel, values: dict[str, Any]) -> RunResult:
    budget = {"loop.max_steps": 10, **values}
    return drive.run(drive.executor(model, {"echo": Echo()}, budget), "go")


def responses(result: RunResult) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == "model_response"]


def test_a_priced_cost_budget_stops_the_run_after_the_call_that_crosses_it(
    drive: Driver,
) -> None:
    """$0.00075 a call against $0.002: the third call crosses it, and the run stops there."""
    model = Named([turn()])
    result = run(drive, model, {"limits.max_cost_usd": 0.002, **PRICE})
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_cost", 3)
    assert len(model.received) == 3
    assert result.cost_usd == pytest.approx(0.00225, abs=1e-12)
    assert [e["cost_source"] for e in responses(result)] == ["priced"] * 3
    assert [e["cost_usd"] for e in responses(result)] == [0.00075] * 3
    assert result.usage.to_dict() == {
        "input_tokens": 3000,
        "cached_input_tokens": 0,
        "output_tokens": 3000,
        "total_tokens": 6000,
        "cost_usd": 0.00225,
        "cost_source": "priced",
    }
    assert result.message == (
        "stopped: hit max_cost_usd (0.002): limits.max_cost_usd = 0.002 from explicit; raise it"
        " where it is set; spent $0.00225 at house-model's price (explicit: $0.15 / $0.60 per Mtok)"
    )


def test_the_run_names_the_price_in_force_as_it_starts(drive: Driver) -> None:
    """run_started's ``prices``: the model, its three rates, their source and locator."""
    result = run(drive, Named([answer()]), {"limits.max_cost_usd": 1, **PRICE})
    assert result.events[0]["prices"] == {
        "model": "house-model",
        "input_per_mtok": 0.15,
        "output_per_mtok": 0.6,
        "cached_input_per_mtok": 0.15,
        "source": "fields",
        "locator": "explicit",
    }


def test_the_fields_locators_are_each_where_the_field_was_set(place: Any) -> None:
    """A price set in a file and a variable: both locators, joined by a comma."""
    place.write("settings.toml", "[prices]\ninput_per_mtok = 0.15\n")
    res = budgetconf.resolve(
        env={"BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0.6", "BUDGETCONF_MAX_COST_USD": "1"}
    )
    result = LoopExecutor(Named([answer()]), {}, res).run("go")
    located = result.events[0]["prices"]["locator"]
    assert located == f"{place.work / 'settings.toml'}:2, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK"


def test_cached_input_tokens_are_priced_at_the_cached_rate(drive: Driver) -> None:
    """(1000 - 400) x 0.15 + 400 x 0.075 + 500 x 0.60, per million: $0.00042."""
    values = {"limits.max_cost_usd": 1, **PRICE, "prices.cached_input_per_mtok": 0.075}
    result = run(drive, Named([turn(1000, 500, cached=400), answer()]), values)
    assert responses(result)[0]["cost_usd"] == 0.00042
    assert result.usage.cached_input_tokens == 400


def test_cached_input_tokens_cost_the_input_rate_when_no_cached_rate_is_set(
    drive: Driver,
) -> None:
    """With no cached rate, a cached token costs what an input token costs."""
    result = run(
        drive, Named([turn(1000, 500, cached=400), answer()]), {"limits.max_cost_usd": 1, **PRICE}
    )
    assert responses(result)[0]["cost_usd"] == 0.00045


def test_a_reported_cost_is_used_as_it_is(drive: Driver) -> None:
    """A response reporting usage and cost is not priced: its cost counts, ``reported``."""
    model = Named([turn(cost_usd=0.5), turn()])
    result = run(drive, model, {"limits.max_cost_usd": 0.501, **PRICE})
    assert [(e["cost_usd"], e["cost_source"]) for e in responses(result)] == [
        (0.5, "reported"),
        (0.00075, "priced"),
        (0.00075, "priced"),
    ]
    assert result.message.endswith(
        "; spent $0.50150 as its responses reported it and at house-model's price"
        " (explicit: $0.15 / $0.60 per Mtok)"
    )
    assert result.usage.cost_source == "reported"  # a run with any reported cost says so


def test_a_response_with_neither_usage_nor_cost_counts_nothing(drive: Driver) -> None:
    """No usage, no cost: 0, and ``none``, under a priced cost budget."""
    result = run(
        drive, Named([{"tool_calls": [call()]}, answer()]), {"limits.max_cost_usd": 1, **PRICE}
    )
    assert [(e["cost_usd"], e["cost_source"]) for e in responses(result)] == [
        (0.0, "none"),
        (0.0, "none"),
    ]
    assert result.usage.cost_source == "none"


def test_a_model_with_no_name_is_not_refused_and_counts_what_it_reports(
    drive: Driver,
) -> None:
    """A scripted model has no name: no price is looked up, and a reported cost counts."""
    model = ScriptedModel([turn(cost_usd=0.25)])
    result = run(drive, model, {"limits.max_cost_usd": 0.5})
    assert (result.stop_reason, result.turns) == ("max_cost", 2)
    assert result.events[0]["prices"] is None
    assert result.message.endswith("; spent $0.50000 as its responses reported it")


def test_the_price_fields_price_a_model_with_no_name(drive: Driver) -> None:
    """The fields are any model's price, a nameless one's too."""
    result = run(drive, ScriptedModel([turn()]), {"limits.max_cost_usd": 0.001, **PRICE})
    assert (result.stop_reason, result.turns, result.cost_usd) == ("max_cost", 2, 0.0015)
    assert result.message.endswith(
        "; spent $0.00150 at the price (explicit: $0.15 / $0.60 per Mtok)"
    )


@pytest.mark.parametrize(
    "values",
    [{"limits.max_cost_usd": 0.01}, {"ledger.max_cost_usd": 5}],
    ids=["limits", "ledger"],
)
def test_a_named_model_with_no_price_is_refused_before_its_first_call(
    drive: Driver, values: dict[str, Any], tmp_path: Any
) -> None:
    """No price and a cost budget: a UsageError naming the model, the budget, its locator and
    the ways to give a price; the model is never called."""
    if "ledger.max_cost_usd" in values:
        values = {**values, "ledger.url": f"sqlite:///{tmp_path / 'ledger.db'}"}
    model = Named([turn()])
    values = {**values, "prices.table": "none"}
    with pytest.raises(UsageError) as caught:
        run(drive, model, values)
    field = next(iter(values))
    amount = f"${values[field]}"
    assert str(caught.value) == (
        f"no price for the model 'house-model', and {field} = {amount} from explicit is a cost"
        " budget: set prices.input_per_mtok and prices.output_per_mtok, name a table file in"
        " prices.table, or pip install 'budgetconf[prices]'"
    )
    assert model.received == []


def test_an_unknown_model_under_warn_warns_once_and_counts_reported_cost(
    drive: Driver,
) -> None:
    """``prices.unknown = warn``: one warning naming the model and the budget; the run goes on
    and only what the responses report counts."""
    model = Named([turn(), turn(cost_usd=0.75)])
    values = {"limits.max_cost_usd": 0.5, "prices.table": "none", "prices.unknown": "warn"}
    with pytest.warns(BudgetConfWarning) as caught:
        result = run(drive, model, values)
    assert len(caught) == 1
    assert "'house-model'" in str(caught[0].message)
    assert "limits.max_cost_usd = $0.5" in str(caught[0].message)
    assert (result.stop_reason, result.turns, result.cost_usd) == ("max_cost", 2, 0.75)
    assert [e["cost_source"] for e in responses(result)] == ["none", "reported"]


def test_no_cost_budget_and_no_ledger_prices_nothing(drive: Driver) -> None:
    """Without a cost budget or a ledger, a named model's responses are not priced."""
    result = run(drive, Named([turn(), answer()]), {"prices.table": "none"})
    assert [e["cost_source"] for e in responses(result)] == ["none", "none"]
    assert result.events[0]["prices"] is None


def test_a_response_naming_another_model_is_priced_at_the_configured_one_when_unknown(
    drive: Driver, place: Any
) -> None:
    """A response's own model is priced by its own price when known, else by the run's."""
    table = place.write(
        "prices.json",
        '{"models": {"house-model": {"input_per_mtok": 1, "output_per_mtok": 2},'
        ' "big-model": {"input_per_mtok": 10, "output_per_mtok": 20}}}',
    )
    model = Named([turn(model="big-model"), turn(model="house-model-2024"), answer()])
    result = run(drive, model, {"limits.max_cost_usd": 1, "prices.table": str(table)})
    assert [e["cost_usd"] for e in responses(result)][:2] == [0.03, 0.003]
    assert [e["model"] for e in responses(result)][:2] == ["big-model", "house-model-2024"]


def test_a_price_set_by_half_is_a_configuration_error() -> None:
    """An input price without an output price names both."""
    with pytest.raises(ConfigError, match=r"prices.input_per_mtok and prices.output_per_mtok"):
        LoopExecutor(Named([answer()]), {}, {"prices.input_per_mtok": 1})
    with pytest.raises(ConfigError, match=r"^prices.cached_input_per_mtok = 1.0 from explicit"):
        LoopExecutor(Named([answer()]), {}, {"prices.cached_input_per_mtok": 1})


def test_a_run_with_no_cost_budget_never_imports_genai_prices() -> None:
    """A named model, no cost budget, no ledger: genai-prices stays unloaded."""
    code = (
        "import sys\n"
        "from budgetconf.loop import LoopExecutor, ScriptedModel\n"
        "class M(ScriptedModel):\n"
        "    model = 'gpt-4o-mini'\n"
        "m = M([{'content': 'hi', 'usage': {'prompt_tokens': 9, 'completion_tokens': 1}}])\n"
        "result = LoopExecutor(m, {}, {'loop.max_steps': 2}).run('go')\n"
        "assert result.status == 'ok', result\n"
        "print('genai_prices' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout == "False\n"


def test_a_carved_child_prices_its_own_model_within_its_parent_remainder() -> None:
    """A sub-agent's named model is priced too, and its spend counts in its parent's."""

    def delegate(text: str) -> str:
        handle = current_run()
        assert handle is not None
        child = LoopExecutor(Named([turn()]), {"echo": Echo()}, handle.carve(max_steps=5))
        return child.run("sub").message

    parent = Named([{"tool_calls": [call("delegate")]}, answer()])
    values = {"loop.max_steps": 5, "limits.max_cost_usd": 0.002, **PRICE}
    result = LoopExecutor(parent, {"delegate": delegate}, values).run("go")
    child_end = next(e for e in result.events if e["type"] == "child_end")
    assert child_end["stop_reason"] == "max_cost"
    assert result.cost_usd >= 0.002


def test_cached_tokens_over_reported_are_priced_as_input_at_most(drive: Driver) -> None:
    """More cached than input tokens is a response's slip: no token is priced below nothing."""
    values = {"limits.max_cost_usd": 1, **PRICE, "prices.cached_input_per_mtok": 0.075}
    result = run(drive, Named([turn(1000, 0, cached=5000), answer()]), values)
    assert responses(result)[0]["cost_usd"] == 0.000075


def test_a_secret_cost_budget_stays_masked_in_the_refusal(place: Any) -> None:
    """A named model with no price under a secret cost budget: the refusal shows ***."""
    import pathlib

    preset = pathlib.Path(budgetconf.__file__).parent / "_presets" / "budgetconf.toml"
    text = preset.read_text().replace(
        '[fields."limits.max_cost_usd"]', '[fields."limits.max_cost_usd"]\nsecret = true'
    )
    vault = place.write("secret-cost.toml", text.replace('name = "budgetconf"', 'name = "vault"'))
    res = budgetconf.resolve(
        str(vault), env={}, explicit={"limits.max_cost_usd": 0.5, "prices.table": "none"}
    )
    with pytest.raises(UsageError) as caught:
        LoopExecutor(Named([answer()]), {}, res).run("go")
    assert "limits.max_cost_usd = *** from explicit is a cost budget" in str(caught.value)
    assert "0.5" not in str(caught.value)
