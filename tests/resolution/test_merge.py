"""Merge modes: `field` merges value by value, `replace` swaps a whole section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest

import budgetconf

from conftest import Place
from helpers import DATA
from helpers.presetfiles import SourceEntry, preset_file

LAYERED = str(DATA / "presets" / "layered.toml")


@pytest.fixture
def global_settings(place: Place) -> Path:
    settings = {
        "loop": {"max_steps": 12, "max_tool_calls_per_turn": 3},
        "limits": {"max_tokens": 900},
    }
    return place.write(".budgetconf/settings.json", json.dumps(settings, indent=2), base=place.home)


def test_a_profile_loop_section_replaces_the_global_one_whole(
    place: Place, global_settings: Path
) -> None:
    """A replacing profile's loop wins; fields it omits take the defaults, not the global values."""
    profile = place.write("fast.json", '{"loop": {"max_steps": 25}}')

    res = budgetconf.resolve(LAYERED, profile=profile, env={})

    assert res["loop.max_steps"] == 25
    assert res["loop.max_tool_calls_per_turn"] == 10
    replaced = res.trace("loop.max_tool_calls_per_turn").candidates[1]
    assert (replaced.source, replaced.status, replaced.value) == ("global", "replaced", 3)
    assert replaced.reason == f"section loop replaced whole by profile {profile}:1"
    assert res.trace("loop.max_steps").merge == "replace"


def test_replace_leaves_other_sections_alone(place: Place, global_settings: Path) -> None:
    """Replacing the loop section keeps what the global file said for limits."""
    profile = place.write("fast.json", '{"loop": {"max_steps": 25}}')

    res = budgetconf.resolve(LAYERED, profile=profile, env={})

    assert res["limits.max_tokens"] == 900
    assert res.trace("limits.max_tokens").source == "global"


def test_a_profile_without_the_section_leaves_the_global_section_in_force(
    place: Place, global_settings: Path
) -> None:
    """A profile that does not mention loop replaces nothing."""
    profile = place.write("quiet.json", '{"limits": {"max_tokens": 5}}')

    res = budgetconf.resolve(LAYERED, profile=profile, env={})

    assert (res["loop.max_steps"], res["loop.max_tool_calls_per_turn"]) == (12, 3)
    assert res.trace("loop.max_steps").merge == "field"


def test_an_empty_section_still_defines_it(place: Place, global_settings: Path) -> None:
    """``"loop": {}`` defines the section, so every loop field goes back to its default."""
    profile = place.write("reset.json", '{"loop": {}}')

    res = budgetconf.resolve(LAYERED, profile=profile, env={})

    assert (res["loop.max_steps"], res["loop.max_tool_calls_per_turn"]) == (40, 10)
    statuses = [c.status for c in res.trace("loop.max_steps").candidates]
    assert statuses == ["won", "replaced"]


def test_higher_sources_still_override_single_fields_after_a_replace(
    place: Place, global_settings: Path
) -> None:
    """Sources above the replacing one merge field by field as usual."""
    profile = place.write("fast.json", '{"loop": {"max_steps": 25}}')

    res = budgetconf.resolve(
        LAYERED, profile=profile, env={"BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "4"}
    )

    assert (res["loop.max_steps"], res["loop.max_tool_calls_per_turn"]) == (25, 4)


def test_a_replacing_source_replaces_the_replaced_candidates_of_lower_replacers(
    place: Place, global_settings: Path
) -> None:
    """A workflow that replaces loop discards the profile's loop, which had discarded global's."""
    profile = place.write("fast.json", '{"loop": {"max_steps": 25}}')
    workflow = place.write("wf.yaml", "loop:\n  max_tool_calls_per_turn: 2\n")

    res = budgetconf.resolve(LAYERED, profile=profile, workflow=workflow, env={})

    assert (res["loop.max_steps"], res["loop.max_tool_calls_per_turn"]) == (40, 2)
    steps = {c.source: c.status for c in res.trace("loop.max_steps").candidates}
    assert steps == {"default": "won", "global": "replaced", "profile": "replaced"}


def test_env_values_below_a_replacing_source_are_replaced_too(place: Place) -> None:
    """Replace discards every lower source but the defaults, the environment included."""
    workflow = place.write("wf.yaml", "loop: {}\n")

    res = budgetconf.resolve(LAYERED, workflow=workflow, env={"BUDGETCONF_MAX_STEPS": "9"})

    assert res["loop.max_steps"] == 40
    env = res.trace("loop.max_steps").candidates[1]
    assert (env.source, env.status, env.value) == ("env", "replaced", 9)


def test_field_merge_is_the_default_mode(place: Place, global_settings: Path) -> None:
    """Without a merge mode, a profile's loop section only overrides the fields it sets."""
    profile = place.write("fast.json", '{"loop": {"max_steps": 25}}')

    res = budgetconf.resolve(profile=profile, env={})

    assert (res["loop.max_steps"], res["loop.max_tool_calls_per_turn"]) == (25, 3)


# --- default_from: an unset field takes another field's value ---------------------------

DERIVED_SOURCES: Final[list[SourceEntry]] = [
    "default",
    {"kind": "env", "invalid": "fallback"},
    "explicit",
]
# two fields that, unset, take another's value: one that has a default, one optional
DERIVED_FIELDS: Final[dict[str, dict[str, object]]] = {
    "run.max_iter": {"type": "int", "ge": 1, "default": 20, "env": ["APP_MAX_ITER"]},
    "run.max_steps": {
        "type": "int",
        "ge": 1,
        "optional": True,
        "default_from": "run.max_iter",
        "env": ["APP_MAX_STEPS"],
    },
    "run.budget": {"type": "int", "ge": 1, "optional": True},
    "run.spend": {"type": "int", "ge": 1, "optional": True, "default_from": "run.budget"},
}


@pytest.fixture
def derived(place: Place) -> Path:
    return preset_file(
        place.work,
        name="derived",
        file="derived.toml",
        sources=DERIVED_SOURCES,
        fields=DERIVED_FIELDS,
    )


def test_an_unset_field_takes_the_other_field_s_value(derived: Path) -> None:
    """Nothing sets run.max_steps: it is run.max_iter's 20, and the trace says where from."""
    res = budgetconf.resolve(derived, env={})

    assert res["run.max_steps"] == 20
    trace = res.trace("run.max_steps")
    assert (trace.source, trace.locator) == ("default", "built-in default")
    assert trace.winner.where == "run.max_iter (built-in default)"
    assert [c.to_dict() for c in trace.candidates] == [
        {
            "source": "default",
            "locator": "built-in default",
            "value": None,
            "status": "shadowed",
            "reason": "unset, so it takes the value of run.max_iter",
        },
        {
            "source": "default",
            "locator": "built-in default",
            "value": 20,
            "from": "run.max_iter",
            "status": "won",
        },
    ]


def test_the_value_taken_keeps_the_source_that_set_it(derived: Path) -> None:
    """run.max_iter from the environment gives run.max_steps, located through run.max_iter."""
    res = budgetconf.resolve(derived, env={"APP_MAX_ITER": "30"})

    assert res["run.max_steps"] == 30
    entry = res.to_dict()["fields"]["run.max_steps"]
    assert (entry["value"], entry["source"], entry["locator"]) == (
        30,
        "env",
        "env:APP_MAX_ITER",
    )
    assert entry["candidates"][-1]["from"] == "run.max_iter"


def test_a_value_of_its_own_wins_as_usual(derived: Path) -> None:
    """Set, the field is itself: no value is taken from the other field."""
    res = budgetconf.resolve(derived, env={"APP_MAX_ITER": "30", "APP_MAX_STEPS": "5"})

    assert res["run.max_steps"] == 5
    assert [(c.source, c.status, c.reason) for c in res.trace("run.max_steps").candidates] == [
        ("default", "shadowed", None),
        ("env", "won", None),
    ]


def test_an_explicit_null_unsets_the_field_and_so_takes_the_other(derived: Path) -> None:
    """null means unset, whichever source says it: the other field's value applies."""
    res = budgetconf.resolve(derived, env={"APP_MAX_STEPS": "5"}, explicit={"run.max_steps": None})

    assert res["run.max_steps"] == 20
    assert [(c.source, c.status) for c in res.trace("run.max_steps").candidates] == [
        ("default", "shadowed"),
        ("env", "shadowed"),
        ("explicit", "shadowed"),
        ("default", "won"),
    ]
    assert res.trace("run.max_steps").candidates[2].reason == (
        "unset, so it takes the value of run.max_iter"
    )


def test_a_fallback_warning_names_the_value_taken(derived: Path) -> None:
    """A rejected value of the field falls back to the other field's value, and says so."""
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(derived, env={"APP_MAX_STEPS": "0"})

    assert res["run.max_steps"] == 20
    assert [str(w.message) for w in caught] == [
        "run.max_steps from env:APP_MAX_STEPS: must be >= 1, got '0'; "
        "ignored, using 20 from run.max_iter (built-in default)"
    ]


def test_an_unset_other_field_leaves_the_field_unset(derived: Path) -> None:
    """When the other field is optional and unset too, so is this one."""
    res = budgetconf.resolve(derived, env={})

    assert res["run.spend"] is None
    assert res.trace("run.spend").winner.where == "run.budget (built-in default)"
    assert budgetconf.resolve(derived, env={}, explicit={"run.budget": 9})["run.spend"] == 9


def test_the_explain_table_shows_where_the_value_was_taken_from(
    derived: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer line names the other field and its locator; the unset default is under it."""
    from budgetconf.cli import main

    assert main(["explain", "--preset", str(derived), "run.max_steps"]) == 0

    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    start = lines.index(["run.max_steps", "20", "run.max_iter", "(built-in", "default)"])
    assert lines[start + 1 : start + 3] == [
        ["shadowed", "unset", "built-in", "default"],
        ["unset,", "so", "it", "takes", "the", "value", "of", "run.max_iter"],
    ]


def test_a_field_may_take_its_default_from_one_listed_after_it(place: Place) -> None:
    """Order in the file does not matter; warnings still come in the fields' order."""
    order = ["run.max_steps", "run.max_iter", "run.budget", "run.spend"]
    path = preset_file(
        place.work,
        name="derived",
        file="reordered.toml",
        sources=DERIVED_SOURCES,
        fields={field: DERIVED_FIELDS[field] for field in order},
    )
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"APP_MAX_STEPS": "x", "APP_MAX_ITER": "y"})
    assert list(res.values)[:2] == ["run.max_steps", "run.max_iter"]
    assert res["run.max_steps"] == 20
    assert [str(w.message).split(" from ")[0] for w in caught] == ["run.max_steps", "run.max_iter"]
