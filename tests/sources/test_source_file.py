"""The file sources together: what global, project, profile and yaml files report.

Missing and unreadable files, unknown keys, the sections a source reads, and
the paths people give them. Each source's own locations are in its own file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import budgetconf

from conftest import Place, source_statuses
from helpers.presetfiles import preset_file


def test_missing_default_locations_are_reported_as_missing(place: Place) -> None:
    """Files at default locations that do not exist are `missing`, with the path looked at."""
    res = budgetconf.resolve(env={})
    reports = {s.source: s for s in res.sources}
    assert reports["global"].status == "missing"
    assert reports["global"].locator == f"{place.home}/.budgetconf/settings.json"
    assert reports["project"].status == "missing"
    assert reports["project"].locator == f"{place.work}/settings.toml"
    assert source_statuses(res)["profile"] == "not configured"


@pytest.mark.parametrize(
    ("argument", "source"),
    [
        ("global_file", "global"),
        ("project_file", "project"),
        ("profile", "profile"),
        ("workflow", "yaml"),
    ],
)
def test_a_named_file_that_does_not_exist_is_an_error(
    place: Place, argument: str, source: str
) -> None:
    """A path the caller named must exist: SourceError naming the source and the path."""
    missing = str(place.work / "nope.json")
    named: dict[str, Any] = {argument: missing}  # the keyword is chosen at run time
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, **named)
    assert str(caught.value) == f"{source} {missing}: no such file"
    assert (caught.value.source, caught.value.locator) == (source, missing)


def test_aliases_set_the_field_and_are_named_in_the_trace(place: Place) -> None:
    """max_turns in a file sets loop.max_steps; the candidate records the alias used."""
    place.write("settings.toml", "[loop]\nmax_turns = 14\n")
    res = budgetconf.resolve(env={})
    assert res["loop.max_steps"] == 14
    assert res.trace("loop.max_steps").winner.alias == "max_turns"
    assert res.to_dict()["fields"]["loop.max_steps"]["candidates"][1]["alias"] == "max_turns"


def test_unknown_keys_in_files_are_warned_about_with_a_suggestion(place: Place) -> None:
    """Typos in sections, field names and sectionless fields each get a did-you-mean."""
    settings = {"lop": {"max_steps": 1}, "loop": {"max_stepz": 2}, "max_steps": 3, "zzz": 4}
    path = place.write(".budgetconf/settings.json", json.dumps(settings, indent=1), base=place.home)
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (
        f"lop in {path}:2 is not a known key; did you mean loop?",
        f"loop.max_stepz in {path}:6 is not a known key; did you mean loop.max_steps?",
        f"max_steps in {path}:8 is not a known key; did you mean loop.max_steps?",
        f"zzz in {path}:9 is not a known key",
    )
    assert res["loop.max_steps"] == 40


def test_top_level_keys_beginning_with_a_dollar_are_left_to_editors(place: Place) -> None:
    """`$schema` at the top of a file is skipped without a word; inside a section it is a key."""
    place.write("settings.toml", '"$schema" = "./s.json"\n[loop]\nmax_steps = 5\n"$note" = 1\n')
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res["loop.max_steps"] == 5
    assert res.warnings == (f"loop.$note in {place.work / 'settings.toml'}:4 is not a known key",)


def _chosen(place: Place, source: Mapping[str, object]) -> Path:
    """A preset of one field whose second source is ``source``."""
    return preset_file(
        place.work,
        name="chosen",
        file="chosen.toml",
        sources=["default", source],
        fields={"loop.max_steps": {"type": "int", "ge": 1, "default": 40}},
    )


def test_a_file_source_may_read_only_its_sections(place: Place) -> None:
    """With sections = ["loop"], the file's other keys are the application's and stay quiet."""
    settings = {"model": "big", "tools": ["x"], "loop": {"max_steps": 9, "max_step": 1}}
    path = place.write(".budgetconf/agent.json", json.dumps(settings, indent=1), base=place.home)
    chosen = _chosen(place, {"kind": "global", "path": "{home}/agent.json", "sections": ["loop"]})
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(chosen, env={})
    assert res["loop.max_steps"] == 9
    assert [str(w.message) for w in caught] == [
        f"loop.max_step in {path}:8 is not a known key; did you mean loop.max_steps?"
    ]


@pytest.mark.parametrize("kind", ["global", "yaml"])
def test_sections_must_be_the_preset_s_own(place: Place, kind: str) -> None:
    """A section a source is told to read must be one of the preset's, checked at load."""
    where = {"path": "{home}/agent.json"} if kind == "global" else {}
    path = _chosen(place, {"kind": kind, **where, "sections": ["lop"]})
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path, env={})
    assert str(caught.value) == (
        f"preset {path}: sources[1] ({kind}).sections: no section 'lop' in the fields"
    )


def test_a_section_that_is_not_a_table_is_an_error(place: Place) -> None:
    """`loop = 5` under the error policy raises, naming the place and the type, not the value."""
    path = place.write("settings.toml", "loop = 5\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})
    assert (
        str(caught.value)
        == f"{path}:1 (project): section loop must be a table of fields, got an integer"
    )


# --- paths as people give them --------------------------------------------------------


def test_home_placeholder_is_not_expanded_in_a_path_a_person_gives(place: Place) -> None:
    """{home} is a preset's template; in --global it is just part of the name."""
    place.write(".budgetconf/g.json", '{"loop": {"max_steps": 3}}', base=place.home)
    with pytest.raises(budgetconf.SourceError, match=r"\{home\}/g\.json: no such file"):
        budgetconf.resolve(env={}, global_file="{home}/g.json")


def test_a_tilde_user_path_is_expanded(place: Place) -> None:
    """~user/... names that user's home, as in a shell."""
    import getpass

    user = getpass.getuser()
    target = Path(os.path.expanduser(f"~{user}"))
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, profile=f"~{user}/missing-profile.json")
    assert caught.value.locator == f"{target}/missing-profile.json"


@pytest.mark.parametrize("argument", ["global_file", "project_file", "profile", "workflow"])
def test_an_empty_path_is_a_usage_error(argument: str) -> None:
    """An empty path would quietly mean the default location; it is refused instead."""
    named: dict[str, Any] = {argument: ""}  # the keyword is chosen at run time
    with pytest.raises(budgetconf.UsageError, match=f"{argument}= is empty"):
        budgetconf.resolve(env={}, **named)


def test_a_nul_byte_in_a_path_is_a_source_error() -> None:
    """A path the system cannot take is reported like any unreadable source."""
    with pytest.raises(budgetconf.SourceError, match="embedded null byte"):
        budgetconf.resolve(env={}, global_file="a\x00b.json")
