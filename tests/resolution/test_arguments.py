"""add_arguments and argv_from: an application's own argparse parser feeds the cli source."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings

import pytest

import budgetconf

from conftest import Place
from helpers import ROOT
from helpers.presetfiles import preset_file

EXAMPLE = ROOT / "examples" / "agent.py"


def _parser(preset: str = "budgetconf") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="app")
    parser.add_argument("task")
    budgetconf.add_arguments(parser, preset=preset)
    return parser


def test_help_shows_each_flag_with_its_default_and_variable() -> None:
    """The group lists every flag of the preset, its built-in default and its env var."""
    text = " ".join(_parser().format_help().split())
    assert "budgets (preset budgetconf):" in text
    assert "--max-steps INT Model responses one run may consume" in text
    assert "(built-in default: 40; env: BUDGETCONF_MAX_STEPS)" in text
    assert "--last-turn {warn,wrap_up,none}" in text
    assert "(built-in default: wrap_up; env: BUDGETCONF_LAST_TURN)" in text
    assert "(built-in default: unset; env: BUDGETCONF_MAX_TOKENS)" in text


def test_a_given_flag_wins_at_the_cli_rank_with_its_flag_as_locator() -> None:
    """--max-steps 300 beats the environment, and explain names --max-steps."""
    args = _parser().parse_args(["go", "--max-steps", "300"])
    assert budgetconf.argv_from(args) == ["--max-steps=300"]
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "7"}, argv=budgetconf.argv_from(args))
    assert res["loop.max_steps"] == 300
    trace = res.trace("loop.max_steps")
    assert (trace.source, trace.locator) == ("cli", "--max-steps")
    assert [c.status.value for c in trace.candidates] == ["shadowed", "shadowed", "won"]


def test_flags_left_out_do_not_shadow_lower_sources(place: Place) -> None:
    """Without the flag, the project file's value stands and the cli source offers nothing."""
    place.write("settings.toml", "[loop]\nmax_steps = 12\n")
    args = _parser().parse_args(["go"])
    assert args.max_steps is None
    assert budgetconf.argv_from(args) == []
    res = budgetconf.resolve(env={}, argv=budgetconf.argv_from(args))
    assert res["loop.max_steps"] == 12
    assert res.trace("loop.max_steps").source == "project"


def test_a_bad_flag_value_is_judged_by_the_presets_policy() -> None:
    """argparse takes the text as it is; the cli source's fallback rejects it with a warning."""
    args = _parser().parse_args(["go", "--max-steps", "lots"])
    with pytest.warns(budgetconf.BudgetConfWarning, match="--max-steps"):
        res = budgetconf.resolve(env={}, argv=budgetconf.argv_from(args))
    assert res["loop.max_steps"] == 40
    assert res.trace("loop.max_steps").candidates[-1].status.value == "rejected"


def test_an_applications_preset_file_gives_its_own_flags(place: Place) -> None:
    """A preset file's fields, flags (with their aliases) and help reach the parser."""
    preset = preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "cli", "invalid": "error"}],
        fields={
            "agent.turns": {
                "type": "int",
                "default": 5,
                "flags": ["--turns", "--t"],
                "help": "Turns, 100% of them.",
            },
            "agent.quiet": {"type": "bool", "default": False},  # no flag: not added
        },
    )
    parser = _parser(str(preset))
    assert "Turns, 100% of them. (built-in default: 5)" in " ".join(parser.format_help().split())
    args = parser.parse_args(["go", "--t", "9"])
    assert vars(args) == {"task": "go", "turns": "9"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = budgetconf.resolve(preset, argv=budgetconf.argv_from(args, preset=preset))
    assert res["agent.turns"] == 9
    # the alias the user typed is the locator, as resolve(argv=["--t", "9"]) gives it
    direct = budgetconf.resolve(preset, argv=["--t", "9"]).trace("agent.turns").locator
    assert res.trace("agent.turns").locator == direct == "--t"


def test_a_flag_that_sets_two_fields_is_one_option_and_sets_both() -> None:
    """praisonai-code's --max-steps sets the step and the tool-call budgets alike."""
    parser = _parser("praisonai-code")
    assert parser.format_help().count("--max-steps INT") == 2  # usage line and option
    args = parser.parse_args(["go", "--max-steps", "300"])
    res = budgetconf.resolve(
        "praisonai-code", env={}, argv=budgetconf.argv_from(args, preset="praisonai-code")
    )
    assert res.values == {
        "execution.max_steps": 300,
        "execution.max_tool_calls_per_turn": 300,
    }


def test_a_preset_without_a_cli_source_is_refused() -> None:
    """opendot reads no flags: adding them would be a lie."""
    with pytest.raises(budgetconf.UsageError, match="no cli source"):
        budgetconf.add_arguments(argparse.ArgumentParser(), preset="opendot")


@pytest.mark.parametrize(
    ("args", "code", "lines"),
    [
        ([], 0, ["Summary of 12 of 12 pages: nothing alarming."]),
        (
            ["--max-steps", "5"],
            2,
            [
                "Summary of 4 of 12 pages: nothing alarming.",
                "stopped: hit max_steps (5): loop.max_steps = 5 from --max-steps;"
                " raise it with --max-steps",
            ],
        ),
    ],
)
def test_the_example_application_runs(
    place: Place, args: list[str], code: int, lines: list[str]
) -> None:
    """examples/agent.py runs as a program: its flags reach the loop's budget."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "Summarise", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert (done.stdout + done.stderr).splitlines() == lines


def test_a_tables_flag_is_given_once_per_pair_and_fed_back_as_given() -> None:
    """``--tools-max-calls`` is repeatable: each pair is one flag of argv, the later winning."""
    given = ["task", "--tools-max-calls", "web_search=3", "--tools-max-calls=fetch=1"]
    argv = budgetconf.argv_from(_parser().parse_args(given))
    assert argv == ["--tools-max-calls=web_search=3", "--tools-max-calls=fetch=1"]
    res = budgetconf.resolve(env={}, argv=argv)
    assert res["tools.max_calls"] == {"fetch": 1, "web_search": 3}
