"""Merge modes: `field` merges value by value, `replace` swaps a whole section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import budgetconf

from conftest import Place

LAYERED = str(Path(__file__).parent / "data" / "presets" / "layered.toml")


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
