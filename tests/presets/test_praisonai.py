"""The praisonai preset, sentence by sentence from its seed, through resolve() and explain.

Tests that take ``explained`` run twice, once through ``budgetconf.resolve`` and
once through ``budgetconf explain --format json`` (``explicit`` as ``--set``).

`ExecutionConfig(max_steps=50)` is ``explicit={"execution.max_steps": 50}``; an
agents YAML is the ``workflow``, of which only ``execution:`` is read.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.cli import main

from conftest import Explain, Place
from helpers.seeds import AGENTS, SEED_WARNING, WRAP_UP


def agents(place: Place, execution: str) -> Path:
    """An agents YAML whose execution: section is ``execution`` (lines of `key: value`)."""
    body = "".join(f"  {line}\n" for line in execution.splitlines())
    return place.write("agents.yaml", AGENTS.replace("  max_steps: 5\n", body))


def resolve(**options: Any) -> budgetconf.Resolution:
    """resolve() with the praisonai preset, where any warning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return budgetconf.resolve("praisonai", **options)


def explain(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["explain", "--preset", "praisonai", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- Configuration options --------------------------------------------------------------


def test_the_options_and_their_defaults() -> None:
    """Seed: max_steps "Optional[int] None", max_iter "int 20", max_tool_calls_per_turn "int 10"."""
    schema = load_preset("praisonai").schema
    table = {f.path: (f.kind.value, f.ge, f.default, f.optional) for f in schema}
    assert table == {
        "execution.max_iter": ("int", 1, 20, False),
        "execution.max_steps": ("int", 1, None, True),
        "execution.max_tool_calls_per_turn": ("int", 1, 10, False),
    }


def test_unset_max_steps_falls_back_to_max_iter(explained: Explain) -> None:
    """Seed: "`None` → fall back to `max_iter`": the default budget is 20, via max_iter."""
    steps = explained("praisonai")["fields"]["execution.max_steps"]

    assert steps["value"] == 20
    assert (steps["source"], steps["locator"]) == ("default", "built-in default")
    unset, taken = steps["candidates"]
    assert unset == {
        "source": "default",
        "locator": "built-in default",
        "value": None,
        "status": "shadowed",
        "reason": "unset, so it takes the value of execution.max_iter",
    }
    assert (taken["status"], taken["from"]) == ("won", "execution.max_iter")


def test_max_iter_is_still_used_when_max_steps_is_unset(explained: Explain, place: Place) -> None:
    """Seed: max_iter, the "Legacy per-loop iteration cap. Still used when max_steps is unset.\""""
    path = agents(place, "max_iter: 30")

    document = explained("praisonai", workflow=path)

    assert document["values"]["execution.max_iter"] == 30
    steps = document["fields"]["execution.max_steps"]
    assert (steps["value"], steps["source"], steps["locator"]) == (
        30,
        "yaml",
        f"{path}:4",
    )
    assert steps["candidates"][-1]["from"] == "execution.max_iter"


def test_an_explicit_none_falls_back_to_max_iter_too(place: Place) -> None:
    """Seed: "`None` → fall back to `max_iter`", also when None is passed or written as null."""
    path = agents(place, "max_steps: null\nmax_iter: 25")
    assert resolve(workflow=path)["execution.max_steps"] == 25

    res = resolve(explicit={"execution.max_steps": None, "execution.max_iter": 40})
    assert res["execution.max_steps"] == 40
    assert res.trace("execution.max_steps").winner.where == "execution.max_iter (explicit)"


@pytest.mark.parametrize(
    ("given", "expected"),
    [({}, 20), ({"execution.max_iter": 7}, 7), ({"execution.max_steps": 9}, 9)],
)
def test_resolved_max_steps_is_max_steps_when_set_else_max_iter(
    explained: Explain, given: dict[str, int], expected: int
) -> None:
    """Seed: "ExecutionConfig.resolved_max_steps() — max_steps when set, else max_iter\""""
    assert explained("praisonai", explicit=given)["values"]["execution.max_steps"] == expected


def test_max_steps_when_set_wins_over_max_iter(explained: Explain, place: Place) -> None:
    """Seed: "Set a low ceiling in the YAML to demonstrate: execution: max_steps: 5\""""
    path = place.write("agents.yaml", AGENTS)

    document = explained("praisonai", workflow=path)

    steps = document["fields"]["execution.max_steps"]
    assert (steps["value"], steps["locator"]) == (5, f"{path}:4")
    assert "from" not in steps["candidates"][-1]
    assert document["values"]["execution.max_iter"] == 20  # max_iter keeps its own value


def test_the_explicit_config_wins_over_the_yaml(explained: Explain, place: Place) -> None:
    """Seed: "execution=ExecutionConfig(max_steps=50)" raises the budget in code."""
    path = place.write("agents.yaml", AGENTS)

    document = explained("praisonai", workflow=path, explicit={"execution.max_steps": 50})

    steps = document["fields"]["execution.max_steps"]
    assert steps["value"] == 50
    assert [(c["source"], c["status"]) for c in steps["candidates"]] == [
        ("default", "shadowed"),
        ("yaml", "shadowed"),
        ("explicit", "won"),
    ]


def test_the_per_turn_cap_is_independent_of_max_steps(explained: Explain, place: Place) -> None:
    """Seed: max_tool_calls_per_turn "Independent of max_steps" — "a per-turn cap of 5 does not
    halve your step budget"."""
    path = agents(place, "max_steps: 50\nmax_tool_calls_per_turn: 5")

    values = explained("praisonai", workflow=path)["values"]

    assert (values["execution.max_steps"], values["execution.max_tool_calls_per_turn"]) == (50, 5)
    low = explained("praisonai", explicit={"execution.max_steps": 5})["values"]
    assert low["execution.max_tool_calls_per_turn"] == 10


def test_resolved_max_tool_calls_is_the_per_turn_cap(explained: Explain) -> None:
    """Seed: "ExecutionConfig.resolved_max_tool_calls() — max_tool_calls_per_turn (independent
    of max_steps)\""""
    given = {"execution.max_iter": 3, "execution.max_tool_calls_per_turn": 4}
    values = explained("praisonai", explicit=given)["values"]
    assert (values["execution.max_steps"], values["execution.max_tool_calls_per_turn"]) == (3, 4)


def test_the_sdk_defaults_are_20_and_10(explained: Explain) -> None:
    """Seed: "the SDK Agent defaults (max_steps=20, max_tool_calls_per_turn=10) are unchanged\""""
    assert explained("praisonai")["values"] == {
        "execution.max_iter": 20,
        "execution.max_steps": 20,
        "execution.max_tool_calls_per_turn": 10,
    }


# --- Validation -------------------------------------------------------------------------


def test_max_steps_below_1_raises_a_value_error() -> None:
    """Seed: "max_steps must be >= 1 when set, otherwise ExecutionConfig raises ValueError.\""""
    with pytest.raises(ValueError, match="must be >= 1, got 0") as caught:
        budgetconf.resolve("praisonai", explicit={"execution.max_steps": 0})

    error = caught.value
    assert isinstance(error, budgetconf.ConfigError)
    assert (error.field, error.source, error.locator, error.raw) == (
        "execution.max_steps",
        "explicit",
        "explicit",
        0,
    )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("0", "must be >= 1, got 0"),
        ("-2", "must be >= 1, got -2"),
        ('"5"', 'not an integer: "5" (a string)'),
        ("5.0", "not an integer: 5.0 (a float)"),
    ],
)
def test_a_bad_max_steps_in_the_yaml_is_an_error_at_its_line(
    place: Place, raw: str, reason: str
) -> None:
    """Seed: "Catch it in config-driven setups": a YAML value is checked as code's is."""
    path = agents(place, f"max_steps: {raw}")

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve("praisonai", workflow=path)

    assert str(caught.value) == f"execution.max_steps from {path}:4 (yaml): {reason}"


def test_the_other_yaml_keys_are_ignored_without_a_warning(
    explained: Explain, place: Place
) -> None:
    """An agents YAML holds roles, tools and a topic: only execution: is read, quietly."""
    path = place.write("agents.yaml", AGENTS + "memory: true\nloop: {max_steps: 1}\n")

    document = explained("praisonai", workflow=path)

    assert document["warnings"] == []
    assert document["values"]["execution.max_steps"] == 5
    assert {s["source"]: s["offered"] for s in document["sources"]}["yaml"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        budgetconf.resolve("praisonai", workflow=path)  # no BudgetConfWarning either


def test_an_agents_yaml_without_execution_changes_nothing(explained: Explain, place: Place) -> None:
    """Without an execution: key the defaults stand: 20 steps via max_iter, 10 calls per turn."""
    path = place.write("agents.yaml", "framework: praisonai\nroles: {}\n")
    assert explained("praisonai", workflow=path)["values"] == explained("praisonai")["values"]


def test_praisonai_has_no_environment_or_flags() -> None:
    """The SDK reads ExecutionConfig and the YAML; arguments for other sources are refused."""
    with pytest.raises(budgetconf.UsageError, match="has no cli source"):
        budgetconf.resolve("praisonai", argv=["--max-steps", "5"])


# --- What the preset declares for the loop -----------------------------------------------


def test_the_loop_table_declares_the_seed_s_behaviour() -> None:
    """Seed: on the final permitted step both loops inject the wrap-up message; a truncated run
    prints the one-line stderr warning."""
    loop = load_preset("praisonai").description.loop
    assert loop is not None
    assert loop.budgets == {
        "max_steps": "execution.max_steps",
        "max_tool_calls_per_turn": "execution.max_tool_calls_per_turn",
    }
    assert loop.behaviours == {"last_turn": "wrap_up", "over_cap": "truncate"}
    assert loop.stop_reasons == {}
    assert loop.wrap_up_message == WRAP_UP
    assert loop.truncated_warning == SEED_WARNING


# --- budgetconf explain -----------------------------------------------------------------


def test_explain_shows_max_steps_taken_from_max_iter(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table's answer line says the budget is max_iter's, and where max_iter was set."""
    agents(place, "max_iter: 30")

    code, out, err = explain(["--workflow", "agents.yaml"], capsys)

    assert (code, err) == (0, "")
    lines = [line.split() for line in out.splitlines()]
    start = lines.index(["execution.max_iter", "30", "./agents.yaml:4"])
    assert lines[start : start + 6] == [
        ["execution.max_iter", "30", "./agents.yaml:4"],
        ["shadowed", "20", "built-in", "default"],
        ["execution.max_steps", "30", "execution.max_iter", "(./agents.yaml:4)"],
        ["shadowed", "unset", "built-in", "default"],
        ["unset,", "so", "it", "takes", "the", "value", "of", "execution.max_iter"],
        ["execution.max_tool_calls_per_turn", "10", "built-in", "default"],
    ]
    assert "warning" not in out


def test_explain_json_marks_the_value_taken_from_max_iter(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document: source and locator of max_iter's value, and "from" on the winner."""
    path = agents(place, "max_iter: 30")

    code, out, _ = explain(["--workflow", str(path), "--format", "json"], capsys)

    assert code == 0
    entry = json.loads(out)["fields"]["execution.max_steps"]
    assert entry == {
        "value": 30,
        "source": "yaml",
        "locator": f"{path}:4",
        "merge": "field",
        "candidates": [
            {
                "source": "default",
                "locator": "built-in default",
                "value": None,
                "status": "shadowed",
                "reason": "unset, so it takes the value of execution.max_iter",
            },
            {
                "source": "yaml",
                "locator": f"{path}:4",
                "value": 30,
                "from": "execution.max_iter",
                "status": "won",
            },
        ],
    }


def test_explain_reports_max_steps_0_and_exits_1(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_steps: 0 in the YAML is an error line on stderr and exit 1."""
    path = agents(place, "max_steps: 0")

    code, _, err = explain(["--workflow", "agents.yaml"], capsys)

    assert code == 1
    assert (
        err == f"budgetconf: error: execution.max_steps from {path}:4 (yaml): must be >= 1, got 0\n"
    )


def test_explain_set_is_the_explicit_config(capsys: pytest.CaptureFixture[str]) -> None:
    """--set execution.max_steps=50 stands for ExecutionConfig(max_steps=50)."""
    code, out, _ = explain(["--set", "execution.max_steps=50", "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["values"]["execution.max_steps"] == 50


def test_explain_toml_leaves_out_the_value_taken_from_max_iter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--format toml writes max_iter but not max_steps, which keeps following max_iter."""
    code = main(["explain", "--preset", "praisonai", "--format", "toml"])
    out = capsys.readouterr().out
    assert code == 0
    assert "max_iter = 20" in out
    assert "max_steps" not in out
