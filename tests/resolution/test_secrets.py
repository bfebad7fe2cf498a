"""Fields marked secret are masked in every rendering, error and warning."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file

# the values set below; the choices of a secret enum are schema, and public
SECRETS = ("31.5", "12.75", "1_000", "1000", "sk-secret-bbbc", "98.25")


def _preset(place: Place) -> Path:
    """Two secret fields: a number, and an enum whose choices look like keys."""
    return preset_file(
        place.work,
        name="vault",
        file="vault.toml",
        sources=["default", {"kind": "env", "invalid": "fallback"}, "yaml", "explicit"],
        fields={
            "limits.budget": {
                "type": "number",
                "gt": 0,
                "default": 31.5,
                "secret": True,
                "env": ["VAULT_BUDGET"],
            },
            "limits.mode": {
                "type": "enum",
                "choices": ["sk-secret-aaaa", "sk-secret-bbbb"],
                "default": "sk-secret-aaaa",
                "secret": True,
                "env": ["VAULT_MODE"],
            },
        },
    )


def _assert_masked(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_values_are_usable_in_code_but_masked_in_the_document(place: Place) -> None:
    """res[...] is the real value; to_dict(), repr() and the traces show ***."""
    res = budgetconf.resolve(_preset(place), env={"VAULT_BUDGET": "12.75"})
    assert res["limits.budget"] == 12.75
    _assert_masked(json.dumps(res.to_dict()))
    _assert_masked(repr(res))
    _assert_masked(repr(res.trace("limits.budget")))
    _assert_masked(repr(res.traces()))


def test_rejected_values_are_masked_in_warnings_and_traces(place: Place) -> None:
    """A rejected secret is not quoted, and no suggestion hints at how close it was."""
    env = {"VAULT_BUDGET": "98.25x", "VAULT_MODE": "sk-secret-bbbc"}
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(_preset(place), env=env)
    assert [str(w.message) for w in caught] == [
        "limits.budget from env:VAULT_BUDGET: not a number: ***; ignored, using *** from "
        "built-in default",
        "limits.mode from env:VAULT_MODE: not one of sk-secret-aaaa, sk-secret-bbbb: ***; "
        "ignored, using *** from built-in default",
    ]
    _assert_masked(repr(res.trace("limits.budget")))
    _assert_masked(json.dumps(res.to_dict()["fields"]["limits.budget"]))


def test_errors_do_not_spell_out_the_value(place: Place) -> None:
    """An ambiguous YAML secret is refused without its two readings, which would reveal it."""
    workflow = place.write("wf.yaml", "limits:\n  budget: 1_000\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_preset(place), env={}, workflow=workflow)
    assert str(caught.value) == f"limits.budget from {workflow}:2 (yaml): ambiguous in YAML: ***"
    assert caught.value.raw == "***"
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_preset(place), env={}, explicit={"limits.budget": -12.75})
    _assert_masked(str(caught.value))
    assert caught.value.raw == "***"


@pytest.mark.parametrize("fmt", ["table", "json", "toml"])
def test_every_explain_format_masks_secrets(
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    """The table, the JSON document and the TOML output, and stderr, never show a secret."""
    monkeypatch.setenv("VAULT_BUDGET", "12.75")
    monkeypatch.setenv("VAULT_MODE", "sk-secret-bbbc")
    workflow = place.write("wf.yaml", "limits:\n  budget: -98.25\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the command reports; it does not warn through Python
        code = main(
            [
                "explain",
                "--preset",
                str(_preset(place)),
                "--workflow",
                str(workflow),
                "--format",
                fmt,
            ]
        )
    out, err = capsys.readouterr()
    assert code == 1
    _assert_masked(out)
    _assert_masked(err)
    assert "***" in out + err


def test_the_toml_output_leaves_a_secret_out_and_says_how_to_set_it(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each secret is a comment line that names the variable that sets it, not a value."""
    monkeypatch.setenv("VAULT_BUDGET", "12.75")
    assert main(["explain", "--preset", str(_preset(place)), "--format", "toml"]) == 0
    out = capsys.readouterr().out
    _assert_masked(out)
    assert out == (
        "# Resolved by budgetconf explain, preset vault.\n"
        "# limits.budget is secret and left out; set it with VAULT_BUDGET.\n"
        "# limits.mode is secret and left out; set it with VAULT_MODE.\n\n"
    )


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_secret_budget_that_stops_a_run_is_masked_in_its_result_events_and_output(
    place: Place, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    """The stop message, the limit, every event and both run outputs show *** for it."""
    preset = Path(budgetconf.__file__).parent / "_presets" / "budgetconf.toml"
    text = preset.read_text().replace(
        '[fields."limits.max_cost_usd"]', '[fields."limits.max_cost_usd"]\nsecret = true'
    )
    vault = place.write("secret-cost.toml", text.replace('name = "budgetconf"', 'name = "vault"'))
    model = place.write(
        "model.json",
        json.dumps({"responses": [{"tool_calls": [{"name": "echo"}], "cost_usd": 0.01}]}),
    )
    events = place.work / "events.jsonl"
    code = main(
        [
            "run",
            "--preset",
            str(vault),
            "--set",
            "limits.max_cost_usd=0.0137",
            "--model",
            str(model),
            "--output",
            output,
            "--events",
            str(events),
            "go",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2
    for shown in (out, err, events.read_text()):
        assert "0.0137" not in shown
    assert "***" in out + err


# --- what a preset may not do with a secret ---------------------------------------------


@pytest.mark.parametrize("names", ["env", "flags"])
def test_a_variable_or_flag_shared_with_a_secret_field_is_refused(place: Place, names: str) -> None:
    """Read by a secret field and by one that is not, its text would be shown by the other."""
    shared = ["VAULT_KEY"] if names == "env" else ["--key"]
    path = preset_file(
        place.work,
        fields={
            "limits.key": {"type": "number", "default": 1, "secret": True, names: shared},
            "loop.max_steps": {"type": "int", "default": 5, names: shared},
        },
    )
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path, env={})
    assert str(caught.value) == (
        f'preset {path}: fields."loop.max_steps".{names}: {shared[0]} is also read by limits.key,'
        " which is secret; a field that shares a secret's variable or flag must be secret too"
    )


def test_secret_fields_may_share_a_variable(place: Place) -> None:
    """Two secret fields that read one variable keep it masked in both traces."""
    path = preset_file(
        place.work,
        sources=["default", {"kind": "env", "invalid": "fallback"}],
        fields={
            "limits.key": {"type": "number", "default": 1, "secret": True, "env": ["VAULT_KEY"]},
            "loop.max_steps": {"type": "int", "default": 5, "secret": True, "env": ["VAULT_KEY"]},
        },
    )
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"VAULT_KEY": "98.25"})
    assert res["limits.key"] == 98.25
    assert [str(w.message) for w in caught] == [
        "loop.max_steps from env:VAULT_KEY: not an integer: ***; ignored, using *** from "
        "built-in default"
    ]


def test_a_behaviour_of_the_loop_cannot_be_secret(place: Place) -> None:
    """The run's events and what it does would say which word a secret behaviour is."""
    path = preset_file(
        place.work,
        fields={
            "loop.max_steps": {"type": "int", "default": 5},
            "loop.last_turn": {
                "type": "enum",
                "choices": ["warn", "wrap_up", "none"],
                "default": "warn",
                "secret": True,
            },
        },
        loop={"max_steps": "loop.max_steps", "last_turn": "loop.last_turn"},
    )
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path, env={})
    assert str(caught.value) == (
        f"preset {path}: loop.last_turn: loop.last_turn is secret; a behaviour cannot be"
    )


# --- records that hold values before a field judges them -------------------------------


def test_records_of_raw_values_show_no_value() -> None:
    """An offer, a problem and a request hold values of unknown secrecy: their reprs hide them."""
    from budgetconf.sources import Offer, Problem, Request

    offer = Offer("limits.budget", "sk-secret-cccc", "env:VAULT_BUDGET", text=True)
    problem = Problem("not a table", "wf.yaml:1", "limits.budget", raw=["sk-secret-cccc"])
    request = Request({"VAULT_BUDGET": "sk-secret-cccc"}, explicit={"x.y": "sk-secret-cccc"})
    assert repr(offer) == (
        "Offer(empty=False, entry=None, field='limits.budget', key=None,"
        " locator='env:VAULT_BUDGET', refused=None, text=True, value=***)"
    )
    assert repr(problem) == (
        "Problem(field='limits.budget', locator='wf.yaml:1', message='not a table', raw=***)"
    )
    assert repr(request) == "Request(arguments=['explicit'], env=***, explicit_is_text=False)"


def test_a_limit_and_a_budget_show_a_secret_value_masked(place: Place) -> None:
    """repr() and str() of Limit and Budget show *** for a secret cap; its value stays usable."""
    from budgetconf.loop import Budget

    preset = Path(budgetconf.__file__).parent / "_presets" / "budgetconf.toml"
    text = preset.read_text().replace(
        '[fields."limits.max_cost_usd"]', '[fields."limits.max_cost_usd"]\nsecret = true'
    )
    vault = place.write("secret-cost.toml", text)
    budget = Budget.from_resolution(
        budgetconf.resolve(vault, env={}, explicit={"limits.max_cost_usd": 0.0137})
    )
    limit = budget.limits["max_cost_usd"]
    assert limit.value == 0.0137
    for shown in (repr(limit), str(limit), repr(budget), str(budget)):
        assert "0.0137" not in shown
    assert "value='***'" in repr(limit)
    assert "value=40," in repr(budget.limits["max_steps"])  # a plain limit is shown as it is
