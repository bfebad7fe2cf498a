"""The ``cli`` source: the fields' flags in argv=, read as argparse reads them."""

from __future__ import annotations

import sys

import pytest

import budgetconf

from conftest import source_statuses


def test_flags_take_their_value_either_way() -> None:
    """--max-steps 5 and --max-tokens=9 both work; other arguments are the application's."""
    res = budgetconf.resolve(
        env={}, argv=["run", "-v", "--max-steps", "5", "--max-tokens=9", "--verbose", "x"]
    )
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (5, 9)
    assert res.trace("loop.max_steps").locator == "--max-steps"


def test_a_repeated_flag_is_won_by_its_last_occurrence() -> None:
    """As with argparse, the later --max-steps wins; the earlier one is shadowed."""
    res = budgetconf.resolve(env={}, argv=["--max-steps", "5", "--max-steps", "6"])
    assert res["loop.max_steps"] == 6
    assert [c.status for c in res.trace("loop.max_steps").candidates] == [
        "shadowed",
        "shadowed",
        "won",
    ]


def test_arguments_after_a_double_dash_are_not_flags() -> None:
    """-- ends the options: what follows is not read as a budget flag."""
    assert budgetconf.resolve(env={}, argv=["--", "--max-steps", "5"])["loop.max_steps"] == 40


def test_a_misspelt_flag_is_warned_about() -> None:
    """--max-step looks like --max-steps, so it is reported, not silently skipped."""
    with pytest.warns(
        budgetconf.BudgetConfWarning,
        match="--max-step is not a known flag; did you mean --max-steps",
    ):
        budgetconf.resolve(env={}, argv=["--max-step", "5"])


def test_a_flag_without_a_value_is_ignored_with_a_warning() -> None:
    """Under the fallback policy a dangling --max-steps is reported and ignored."""
    with pytest.warns(budgetconf.BudgetConfWarning, match="--max-steps needs a value; ignored"):
        res = budgetconf.resolve(env={}, argv=["--max-steps"])
    assert res["loop.max_steps"] == 40


def test_a_flag_followed_by_another_flag_has_no_value() -> None:
    """As argparse reads it, `--max-steps --max-tokens 5` leaves --max-steps without a value."""
    with pytest.warns(budgetconf.BudgetConfWarning, match="--max-steps needs a value"):
        res = budgetconf.resolve(env={}, argv=["--max-steps", "--max-tokens", "5"])
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (40, 5)


def test_a_negative_number_is_a_flag_value() -> None:
    """`--max-steps -5` offers -5, which is then rejected by the field's bound."""
    with pytest.warns(budgetconf.BudgetConfWarning, match="must be >= 1, got '-5'"):
        budgetconf.resolve(env={}, argv=["--max-steps", "-5"])


def test_sys_argv_is_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without argv= the cli source is not configured, whatever sys.argv holds."""
    monkeypatch.setattr(sys, "argv", ["app", "--max-steps", "3"])
    res = budgetconf.resolve(env={})
    assert res["loop.max_steps"] == 40
    assert source_statuses(res)["cli"] == "not configured"


def test_a_tables_flag_sets_its_keys_and_may_be_repeated() -> None:
    """``--tools-max-calls web_search=3``, again with another key, and ``=``-joined: each flag
    is an offer of the keys it gives, a later one winning a key an earlier one gave."""
    argv = [
        "--tools-max-calls",
        "web_search=3",
        "--tools-max-calls=fetch=10,web_search=4",
        "--tools-max-calls",
        "search=1",
    ]
    res = budgetconf.resolve(env={}, argv=argv)
    assert res["tools.max_calls"] == {"fetch": 10, "search": 1, "web_search": 4}
    trace = res.trace("tools.max_calls.web_search")
    assert [(c.locator, c.raw, c.status) for c in trace.candidates] == [
        ("--tools-max-calls", "3", "shadowed"),
        ("--tools-max-calls", "4", "won"),
    ]


def test_a_tables_flag_it_cannot_take_is_a_warning() -> None:
    """Under the flags' fallback policy, a bad key or value is said and the rest kept."""
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(env={}, argv=["--tools-max-calls", "web_search=-1,fetch=2"])
    assert res["tools.max_calls"] == {"fetch": 2}
    assert [str(w.message) for w in caught] == [
        "tools.max_calls.web_search from --tools-max-calls (cli): must be >= 0, got '-1';"
        " ignored, the key stays unset"
    ]
