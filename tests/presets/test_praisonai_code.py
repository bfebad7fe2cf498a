"""The praisonai-code preset, sentence by sentence from its seed, through resolve() and explain.

Tests that take ``explained`` run twice, once through ``budgetconf.resolve`` and
once through ``budgetconf explain --format json -- ARGS`` with the variable exported.

`praisonai code --max-steps 300 "…"` is ``argv=["--max-steps", "300", "…"]``; the
environment is ``env=``. Both set the step budget and the per-response cap.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.cli import main

from conftest import Explain

VARIABLE = "PRAISONAI_CODE_MAX_STEPS"
BOTH = ("execution.max_steps", "execution.max_tool_calls_per_turn")


def both(res: budgetconf.Resolution | dict[str, Any]) -> tuple[object, object]:
    """The two fields' values, from a resolution or an explain document."""
    values = res["values"] if isinstance(res, dict) else res.values
    return values[BOTH[0]], values[BOTH[1]]


def locators(document: dict[str, Any]) -> set[str]:
    return {document["fields"][path]["locator"] for path in BOTH}


def explain(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["explain", "--preset", "praisonai-code", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- The coding-sized budget ------------------------------------------------------------


def test_the_coding_budget_is_200_for_both_fields(explained: Explain) -> None:
    """Seed: "a coding-sized budget of 200 steps, raising both ExecutionConfig.max_steps and
    ExecutionConfig.max_tool_calls_per_turn\""""
    document = explained("praisonai-code", argv=[])
    assert both(document) == (200, 200)
    assert locators(document) == {"built-in default"}


def test_the_sdk_defaults_are_unchanged(explained: Explain) -> None:
    """Seed: "This applies only to the coding CLI — the SDK Agent defaults (max_steps=20,
    max_tool_calls_per_turn=10) are unchanged.\""""
    assert both(explained("praisonai-code")) == (200, 200)
    assert both(explained("praisonai")) == (20, 10)


def test_the_fields_share_one_variable_and_one_flag() -> None:
    """Seed: "Override at any level": one flag and one variable, for both fields."""
    schema = load_preset("praisonai-code").schema
    table = {f.path: (f.kind.value, f.ge, f.default, f.env, f.flags) for f in schema}
    assert table == dict.fromkeys(BOTH, ("int", 1, 200, (VARIABLE,), ("--max-steps",)))


# --- Override at any level --------------------------------------------------------------


def test_the_default_is_the_lowest_level(explained: Explain) -> None:
    """Seed: "Default | DEFAULT_CODE_MAX_STEPS = 200 | Lowest\""""
    document = explained("praisonai-code", env={VARIABLE: "150"})
    assert both(document) == (150, 150)
    candidates = document["fields"][BOTH[0]]["candidates"]
    assert [(c["value"], c["status"]) for c in candidates] == [(200, "shadowed"), (150, "won")]


def test_the_environment_is_the_middle_level(explained: Explain) -> None:
    """Seed: "Environment | PRAISONAI_CODE_MAX_STEPS=300 praisonai code "…" | Middle\""""
    document = explained("praisonai-code", env={VARIABLE: "300"}, argv=["Refactor the module"])
    assert both(document) == (300, 300)
    assert locators(document) == {f"env:{VARIABLE}"}


def test_the_flag_is_the_highest_level(explained: Explain) -> None:
    """Seed: "CLI flag | praisonai code --max-steps 300 "…" | Highest\""""
    argv = ["code", "--max-steps", "300", "Refactor the auth module"]
    document = explained("praisonai-code", env={VARIABLE: "250"}, argv=argv)
    assert both(document) == (300, 300)
    assert locators(document) == {"--max-steps"}
    candidates = document["fields"][BOTH[1]]["candidates"]
    assert [(c["source"], c["status"]) for c in candidates] == [
        ("default", "shadowed"),
        ("env", "shadowed"),
        ("cli", "won"),
    ]


def test_the_flag_takes_its_value_either_way(explained: Explain) -> None:
    """--max-steps=300 is --max-steps 300."""
    assert both(explained("praisonai-code", argv=["--max-steps=300"])) == (300, 300)


# --- Junk falls through -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("lots", "not an integer: 'lots'"),
        ("4.5", "not an integer: '4.5'"),
        ("0", "must be >= 1, got '0'"),
        ("-10", "must be >= 1, got '-10'"),
    ],
)
def test_a_bad_variable_falls_through_to_the_default(raw: str, reason: str) -> None:
    """Junk, zero or negative in PRAISONAI_CODE_MAX_STEPS: both fields keep 200, with a warning."""
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve("praisonai-code", env={VARIABLE: raw})

    assert both(res) == (200, 200)
    assert [str(w.message) for w in caught] == [
        f"{path} from env:{VARIABLE}: {reason}; ignored, using 200 from built-in default"
        for path in BOTH
    ]
    rejected = res.trace(BOTH[0]).candidates[1]
    assert (rejected.status, rejected.raw, rejected.reason) == ("rejected", raw, reason)


def test_an_empty_variable_is_unset_for_both_fields() -> None:
    """PRAISONAI_CODE_MAX_STEPS= is as if unset: both fields keep 200, and nothing is said."""
    res = budgetconf.resolve("praisonai-code", env={VARIABLE: ""})

    assert both(res) == (200, 200)
    assert res.warnings == ()
    assert [c.status for c in res.trace(BOTH[1]).candidates] == ["won", "empty"]


@pytest.mark.parametrize("raw", ["lots", "0", "-1"])
def test_a_bad_flag_falls_through_to_the_environment(raw: str) -> None:
    """A bad --max-steps leaves the variable's value in force for both fields."""
    with pytest.warns(budgetconf.BudgetConfWarning, match="ignored, using 300 from env:") as caught:
        res = budgetconf.resolve("praisonai-code", env={VARIABLE: "300"}, argv=["--max-steps", raw])

    assert both(res) == (300, 300)
    assert len(caught) == 2


def test_bad_values_at_every_level_leave_the_default(explained: Explain) -> None:
    """With the flag and the variable both bad, 200 stands: the budget is never lost."""
    document = explained("praisonai-code", env={VARIABLE: "x"}, argv=["--max-steps", "-5"])

    assert both(document) == (200, 200)
    assert len(document["warnings"]) == 4
    assert document["errors"] == []
    candidates = document["fields"][BOTH[0]]["candidates"]
    assert [c["status"] for c in candidates] == ["won", "rejected", "rejected"]


def test_a_flag_without_a_value_falls_through() -> None:
    """`--max-steps` with nothing after it is reported and ignored."""
    with pytest.warns(budgetconf.BudgetConfWarning, match="--max-steps needs a value"):
        res = budgetconf.resolve("praisonai-code", env={VARIABLE: "300"}, argv=["--max-steps"])
    assert both(res) == (300, 300)


# --- What the preset declares for the loop -----------------------------------------------


def test_the_loop_behaves_as_praisonai() -> None:
    """Seed: "praisonai run / praisonai-code run" share the wrap-up and the truncation warning."""
    code = load_preset("praisonai-code").description.loop
    sdk = load_preset("praisonai").description.loop
    assert code is not None
    assert sdk is not None
    assert code.budgets == sdk.budgets
    assert code.behaviours == {"last_turn": "wrap_up", "over_cap": "truncate"}
    assert (code.wrap_up_message, code.truncated_warning) == (
        sdk.wrap_up_message,
        sdk.truncated_warning,
    )


# --- budgetconf explain -----------------------------------------------------------------


def test_explain_takes_the_application_s_flag_after_a_double_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`budgetconf explain --preset praisonai-code -- --max-steps 300`: the flag wins for both."""
    monkeypatch.setenv(VARIABLE, "250")

    code, out, err = explain(["--", "--max-steps", "300"], capsys)

    assert (code, err) == (0, "")
    lines = [line.split() for line in out.splitlines()]
    start = lines.index(["execution.max_steps", "300", "--max-steps"])
    assert lines[start : start + 6] == [
        ["execution.max_steps", "300", "--max-steps"],
        ["shadowed", "250", f"env:{VARIABLE}"],
        ["shadowed", "200", "built-in", "default"],
        ["execution.max_tool_calls_per_turn", "300", "--max-steps"],
        ["shadowed", "250", f"env:{VARIABLE}"],
        ["shadowed", "200", "built-in", "default"],
    ]


def test_explain_json_shows_a_rejected_flag_and_the_value_in_force(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document lists the rejected flag with its raw text; the variable's value stands."""
    monkeypatch.setenv(VARIABLE, "250")

    code, out, _ = explain(["--format", "json", "--", "--max-steps", "0"], capsys)

    document = json.loads(out)
    assert code == 0  # a fallback rejection is a warning, not an error
    assert document["values"] == dict.fromkeys(BOTH, 250)
    assert document["fields"][BOTH[1]]["candidates"][2] == {
        "source": "cli",
        "locator": "--max-steps",
        "raw": "0",
        "status": "rejected",
        "reason": "must be >= 1, got '0'",
    }
    assert len(document["warnings"]) == 2
    assert document["errors"] == []


@pytest.mark.parametrize("raw", ["lots", "0", "-1"])
def test_the_seed_s_bad_flag_falls_back_and_budgetconf_s_own_option_refuses_it(
    raw: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`praisonai code --max-steps lots` is the application's flag, after --: it falls back to
    the variable for both fields. Given to budgetconf's own explain, where the user is at the
    terminal, the same text is a usage error, as on every preset, and nothing is resolved."""
    monkeypatch.setenv(VARIABLE, "300")

    code, out, _ = explain(["--format", "json", "--", "--max-steps", raw], capsys)
    assert (code, both(json.loads(out))) == (0, (300, 300))

    code, out, err = explain(["--max-steps", raw], capsys)
    reason = "not an integer: 'lots'" if raw == "lots" else f"must be >= 1, got '{raw}'"
    assert (code, out, err) == (
        64,
        "",
        f"budgetconf: usage error: argument --max-steps: {reason}\n",
    )
