"""A field set twice in one place by two of its names, and aliases that are other fields' names.

`max_steps` and its alias `max_turns` in one `[loop]` cannot both be meant: under
the `error` policy that is an error naming both lines, under `fallback` the name
wins and a warning names both. Every source that reads names does the same:
files of each format, the workflow's sections, a step, dynaconf, code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import dynaconf
import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file

# a field with two aliases, for the rule between aliases
STEPS = {"type": "int", "ge": 1, "default": 40, "aliases": ["max_turns", "turns"]}


def _app(place: Place, *sources: str | Mapping[str, object]) -> Path:
    return preset_file(place.work, sources=["default", *sources], fields={"loop.max_steps": STEPS})


def test_a_name_and_its_alias_in_one_section_are_an_error(place: Place) -> None:
    """`max_steps = 20` and `max_turns = 30` under [loop]: an error naming both lines."""
    path = place.write(
        "settings.toml", '[loop]\nmax_steps = 20\nmax_turns = 30\nlast_turn = "warn"\n'
    )
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})
    assert str(caught.value) == (
        f"loop.max_steps from {path}:3 (project): max_turns is an alias of max_steps,"
        f" which is set too at {path}:2"
    )
    error = caught.value
    assert (error.field, error.source, error.locator) == ("loop.max_steps", "project", f"{path}:3")


def test_the_per_response_cap_set_twice_fails_check(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """[loop] max_tool_calls is the per-response cap's alias: after the name it is an error."""
    path = place.write(
        "settings.toml", "[loop]\nmax_tool_calls_per_turn = 3\nmax_tool_calls = 20\n"
    )
    assert main(["check"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"budgetconf: error: loop.max_tool_calls_per_turn from {path}:3 (project):"
        f" max_tool_calls is an alias of max_tool_calls_per_turn, which is set too at {path}:2\n"
    )
    assert captured.out == "check failed: 1 error, 0 warnings (preset budgetconf)\n"


def test_under_fallback_the_name_wins_with_a_warning_naming_both(place: Place) -> None:
    """Whatever the order in the file, the field's own name stands; the alias is rejected."""
    preset = _app(place, {"kind": "project", "path": "settings.toml", "invalid": "fallback"})
    path = place.write("settings.toml", "[loop]\nmax_turns = 30\nmax_steps = 20\n")
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(preset, env={})
    assert res["loop.max_steps"] == 20
    assert [str(w.message) for w in caught] == [
        f"loop.max_steps from {path}:2 (project): max_turns is an alias of max_steps,"
        f" which is set too at {path}:3; ignored, using 20 from {path}:3"
    ]
    candidates = res.to_dict()["fields"]["loop.max_steps"]["candidates"]
    assert [(c["locator"], c["status"], c.get("alias")) for c in candidates] == [
        ("built-in default", "shadowed", None),
        (f"{path}:2", "rejected", "max_turns"),
        (f"{path}:3", "won", None),
    ]
    assert candidates[1]["raw"] == 30


def test_of_two_aliases_the_one_listed_first_wins(place: Place) -> None:
    """`turns` and `max_turns` (listed first in the preset): max_turns stands, turns is refused."""
    preset = _app(place, {"kind": "project", "path": "settings.toml", "invalid": "fallback"})
    path = place.write("settings.toml", "[loop]\nturns = 5\nmax_turns = 6\n")
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(preset, env={})
    assert res["loop.max_steps"] == 6
    assert [str(w.message) for w in caught] == [
        f"loop.max_steps from {path}:2 (project): turns and max_turns are both aliases of"
        f" loop.max_steps, and max_turns (listed first) is set too at {path}:3;"
        f" ignored, using 6 from {path}:3"
    ]


def test_a_rejected_name_leaves_the_field_to_the_sources_below(place: Place) -> None:
    """Under fallback a bad value for the name is ignored; the refused alias does not stand in."""
    preset = _app(place, {"kind": "project", "path": "settings.toml", "invalid": "fallback"})
    place.write("settings.toml", "[loop]\nmax_steps = 0\nmax_turns = 6\n")
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(preset, env={})
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (40, "default")
    assert len(caught) == 2  # the bad value, and the alias set beside the name


def test_the_same_name_in_two_places_is_no_conflict(place: Place) -> None:
    """The rule is one place: a name in the project file and an alias in a profile rank as usual."""
    place.write("settings.toml", "[loop]\nmax_steps = 20\n")
    profile = place.write("fast.json", '{"loop": {"max_turns": 5}}')
    res = budgetconf.resolve(env={}, profile=profile)
    assert res["loop.max_steps"] == 5
    assert res.warnings == ()


@pytest.mark.parametrize(
    ("kind", "name", "text", "line"),
    [
        ("global", ".budgetconf/settings.json", '{"loop": {\n"max_steps": 2,\n"max_turns": 3}}', 3),
        ("profile", "fast.json", '{"loop": {\n"max_steps": 2,\n"max_turns": 3}}', 3),
        ("yaml", "workflow.yaml", "loop:\n  max_steps: 2\n  max_turns: 3\n", 3),
    ],
)
def test_every_file_format_refuses_a_second_name(
    place: Place, kind: str, name: str, text: str, line: int
) -> None:
    """JSON (global, profile) and the workflow's YAML sections: the same error, at the line."""
    base = place.home if kind == "global" else place.work
    path = place.write(name, text, base=base)
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(
            env={},
            profile=path if kind == "profile" else None,
            workflow=path if kind == "yaml" else None,
        )
    assert str(caught.value) == (
        f"loop.max_steps from {path}:{line} ({kind}): max_turns is an alias of max_steps,"
        f" which is set too at {path}:{line - 1}"
    )


def test_a_step_refuses_a_second_name(place: Place) -> None:
    """A step's sections are one place too; its locator names the step and the line."""
    path = place.write(
        "workflow.yaml", "steps:\n  - name: review\n    loop: {max_steps: 2, max_turns: 3}\n"
    )
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert str(caught.value) == (
        f"loop.max_steps from step:review ({path}:3): max_turns is an alias of max_steps,"
        f" which is set too at step:review ({path}:3)"
    )


def test_fields_written_on_a_step_refuse_a_second_name(place: Place) -> None:
    """With ``section``, the step's own keys: `max_turns: 15` beside `turns: 2`."""
    step = {"kind": "step", "list": ".", "name_keys": ["agent"], "section": "loop"}
    preset = _app(place, step)
    path = place.write("wf.yaml", "- agent: reviewer\n  turns: 2\n  max_turns: 15\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={}, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"loop.max_steps from step:reviewer ({path}:2): turns and max_turns are both aliases of"
        f" loop.max_steps, and max_turns (listed first) is set too at step:reviewer ({path}:3)"
    )


def test_code_refuses_a_second_name(capsys: pytest.CaptureFixture[str]) -> None:
    """explicit={...} and --set alike: loop.max_turns beside loop.max_steps is an error."""
    why = "loop.max_turns is an alias of loop.max_steps, which is given too"
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"loop.max_turns": 3, "loop.max_steps": 4})
    assert str(caught.value) == f"loop.max_steps from explicit: {why}"
    code = main(
        ["explain", "--format", "json", "--set", "loop.max_turns=3", "--set", "loop.max_steps=4"]
    )
    document = json.loads(capsys.readouterr().out)
    assert (code, document["errors"]) == (1, [f"loop.max_steps from explicit: {why}"])


def _dynaconf_app(place: Place, invalid: str) -> Path:
    return _app(place, {"kind": "dynaconf", "key": "budgets", "invalid": invalid})


def _settings(place: Place, text: str) -> dynaconf.Dynaconf:
    path = place.write("config/settings.toml", text)
    return dynaconf.Dynaconf(settings_files=[str(path)], environments=True)


def test_dynaconf_refuses_a_second_name(place: Place) -> None:
    """dynaconf settings are one place per mapping: budgets.loop with max_steps and max_turns."""
    settings = _settings(place, "[default.budgets.loop]\nmax_steps = 2\nmax_turns = 3\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_dynaconf_app(place, "error"), env={}, dynaconf=settings)
    assert str(caught.value) == (
        "loop.max_steps from dynaconf:budgets.loop.max_turns: max_turns is an alias of"
        " max_steps, which is set too at dynaconf:budgets.loop.max_steps"
    )


def test_dynaconf_keys_that_differ_in_case_only_are_one_key_said_twice(place: Place) -> None:
    """`max_steps` and `MAX_STEPS` both reach budgetconf from dynaconf: the first stands."""
    settings = _settings(place, "[default.budgets.loop]\nmax_steps = 2\nMAX_STEPS = 3\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_dynaconf_app(place, "error"), env={}, dynaconf=settings)
    assert str(caught.value) == (
        "dynaconf:budgets.loop.MAX_STEPS (dynaconf): the same key as"
        " dynaconf:budgets.loop.max_steps, as keys match whatever their case"
    )
    with pytest.warns(budgetconf.BudgetConfWarning, match="MAX_STEPS .*; ignored"):
        res = budgetconf.resolve(_dynaconf_app(place, "fallback"), env={}, dynaconf=settings)
    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (
        2,
        "dynaconf:budgets.loop.max_steps",
    )


# --- An alias that is another field's name --------------------------------------------------


def test_an_alias_that_names_another_field_is_noted(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """[loop] max_tool_calls sets the per-response cap; explain notes it is not the run's total,
    in the document and in the table, and check still passes: it is no problem."""
    path = place.write("settings.toml", "[loop]\nmax_tool_calls = 20\n")
    note = (
        f"{path}:2: max_tool_calls under loop is an alias of loop.max_tool_calls_per_turn,"
        " not limits.max_tool_calls"
    )
    res = budgetconf.resolve(env={})
    assert (res["loop.max_tool_calls_per_turn"], res["limits.max_tool_calls"]) == (20, None)
    assert (res.notes, res.warnings) == ((note,), ())
    assert res.to_dict()["notes"] == [note]

    assert main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 31 fields resolved, no warnings (preset budgetconf)\n"
    assert main(["explain", "loop.max_tool_calls_per_turn"]) == 0
    table = capsys.readouterr().out
    assert table.endswith(
        "\nnote ./settings.toml:2: max_tool_calls under loop is an alias of"
        " loop.max_tool_calls_per_turn, not limits.max_tool_calls\n"
    )


def test_the_two_max_tool_calls_in_their_own_sections_are_two_fields(place: Place) -> None:
    """[loop] max_tool_calls and [limits] max_tool_calls set two fields: no conflict, one note."""
    place.write("settings.toml", "[loop]\nmax_tool_calls = 3\n[limits]\nmax_tool_calls = 20\n")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_tool_calls_per_turn"], res["limits.max_tool_calls"]) == (3, 20)
    assert len(res.notes) == 1


def test_no_note_without_the_alias(place: Place) -> None:
    """The name itself, or an alias that is no other field's name, needs no note."""
    place.write("settings.toml", "[loop]\nmax_tool_calls_per_turn = 3\nmax_turns = 9\n")
    assert budgetconf.resolve(env={}).notes == ()


def test_a_field_name_at_the_top_level_suggests_that_field_before_an_alias(place: Place) -> None:
    """`max_tool_calls` written outside any section is limits.max_tool_calls, not loop's alias."""
    path = place.write(".budgetconf/settings.json", '{"max_tool_calls": 5}', base=place.home)
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (
        f"max_tool_calls in {path}:1 is not a known key; did you mean limits.max_tool_calls?",
    )
