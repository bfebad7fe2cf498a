"""Workflow steps: finding the selected step, in a `steps:` list or a file that is the list."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import pytest

import budgetconf

from conftest import Place
from helpers.presetfiles import SourceEntry, preset_file

# the steps are the file itself, named by agent or else by name, with loop's fields on them
STEP: Final = {"kind": "step", "list": ".", "name_keys": ["agent", "name"], "section": "loop"}


def _listed(
    place: Place, step: Mapping[str, object] | None = STEP, *, file: str = "listed.toml"
) -> Path:
    """A preset whose profile is the one the selected ``step`` names (no step source: None)."""
    sources: list[SourceEntry] = ["default", {"kind": "profile", "from_step": "config.file"}]
    if step is not None:
        sources.append(step)
    return preset_file(
        place.work,
        name="listed",
        file=file,
        sources=sources,
        fields={
            "loop.max_turns": {"type": "int", "ge": 1, "default": 30, "aliases": ["turns"]},
            "loop.max_tool_calls": {"type": "int", "ge": 1, "default": 10},
        },
    )


WORKFLOW = """\
- agent: planner
  max_turns: 4
- agent: reviewer
  config:
    file: profile.json
  prompt: Review the change.
  max_turns: 15
  max_tool_calls: 3
- name: tidy
  turns: 2
"""


@pytest.fixture
def listed(place: Place) -> Path:
    place.write("profile.json", '{\n  "loop": {\n    "max_tool_calls": 7\n  }\n}\n')
    return _listed(place)


def test_a_workflow_that_is_a_list_holds_the_steps(place: Place, listed: Path) -> None:
    """list = "." reads the steps from the top level; fields sit directly on the step."""
    path = place.write("wf.yaml", WORKFLOW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # agent, config and prompt are the application's keys
        res = budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert (res["loop.max_turns"], res["loop.max_tool_calls"]) == (15, 3)
    assert res.trace("loop.max_turns").locator == f"step:reviewer ({path}:7)"
    assert res.trace("loop.max_tool_calls").locator == f"step:reviewer ({path}:8)"
    assert {s.source: s.locator for s in res.sources}["step"] == f"step:reviewer ({path}:3)"


def test_a_step_is_named_by_any_of_its_name_keys(place: Place, listed: Path) -> None:
    """name_keys = ["agent", "name"]: a step without an agent key is named by name."""
    path = place.write("wf.yaml", WORKFLOW)
    res = budgetconf.resolve(listed, workflow=path, step="tidy")
    assert res["loop.max_turns"] == 2
    assert res.trace("loop.max_turns").winner.alias == "turns"


def test_steps_that_share_an_agent_are_told_apart_by_name(place: Place, listed: Path) -> None:
    """Two steps of one agent: each answers to its name; the agent alone is ambiguous."""
    path = place.write(
        "wf.yaml",
        "- agent: reviewer\n  name: first-pass\n  max_turns: 5\n"
        "- agent: reviewer\n  name: second-pass\n  max_turns: 9\n",
    )
    assert budgetconf.resolve(listed, workflow=path, step="second-pass")["loop.max_turns"] == 9
    with pytest.raises(budgetconf.SourceError, match=r"2 steps have that name \(lines 1, 4\)"):
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    with pytest.raises(budgetconf.SourceError, match="its steps are reviewer, first-pass, second"):
        budgetconf.resolve(listed, workflow=path, step="zzz")


def test_a_step_that_sets_no_field_changes_nothing(place: Place, listed: Path) -> None:
    """A step without fields leaves every value to the lower sources."""
    path = place.write("wf.yaml", "- agent: quiet\n  prompt: hello\n")
    res = budgetconf.resolve(listed, workflow=path, step="quiet")
    assert res.values == {"loop.max_turns": 30, "loop.max_tool_calls": 10}
    assert {s.source: s.offered for s in res.sources}["step"] == 0


def test_a_near_miss_on_a_step_is_reported(place: Place, listed: Path) -> None:
    """A step's own keys are quiet, but one a letter away from a field is most likely a typo."""
    path = place.write("wf.yaml", "- agent: reviewer\n  max_turn: 5\n")
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert res["loop.max_turns"] == 30
    assert [str(w.message) for w in caught] == [
        f"max_turn in step:reviewer ({path}:2) is not a known key; did you mean loop.max_turns?"
    ]


def test_a_step_value_is_checked_like_any_file_value(place: Place, listed: Path) -> None:
    """A step value that breaks its field is an error naming the step and its line."""
    path = place.write("wf.yaml", "- agent: reviewer\n  max_tool_calls: 0\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"loop.max_tool_calls from step:reviewer ({path}:2): must be >= 1, got 0"
    )


def test_a_mapping_is_not_a_list_of_steps(place: Place, listed: Path) -> None:
    """With list = ".", a workflow whose top level is a mapping has no steps: one line says so."""
    path = place.write("wf.yaml", "steps:\n  - agent: reviewer\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"step {path}:1: the top level must be the list of steps (- agent: reviewer), got a mapping"
    )


def test_a_list_file_has_no_steps_key(place: Place) -> None:
    """The default step source looks for `steps:` and finds a bare list wanting."""
    path = place.write("wf.yaml", "- name: review\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert [str(e) for e in caught.value.errors] == [
        f"yaml {path}:1: the top level must be a mapping of sections, not a list",
        f"step {path}:1: the top level must be a mapping with a steps: list of steps, got a list",
    ]


def test_the_yaml_source_needs_a_mapping_of_sections(place: Place) -> None:
    """A workflow that is a list has no top-level sections: the yaml source says so, at its line."""
    path = place.write("wf.yaml", "# steps only\n- name: review\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path)
    assert str(caught.value) == (
        f"yaml {path}:2: the top level must be a mapping of sections, not a list"
    )


def test_an_unknown_step_in_a_list_file_is_named(place: Place, listed: Path) -> None:
    """A step that is not there is refused with the nearest name, as for a steps: list."""
    path = place.write("wf.yaml", WORKFLOW)
    with pytest.raises(budgetconf.SourceError, match="no step named 'reveiwer'; did you mean"):
        budgetconf.resolve(listed, workflow=path, step="reveiwer")


def test_a_step_without_a_name_cannot_be_selected(place: Place, listed: Path) -> None:
    """A step that has none of the name keys is skipped when steps are listed."""
    path = place.write("wf.yaml", "- prompt: unnamed\n  max_turns: 2\n")
    with pytest.raises(budgetconf.SourceError, match=r"no step named 'x'; no step has a name$"):
        budgetconf.resolve(listed, workflow=path, step="x")


def test_the_step_section_must_exist(place: Place) -> None:
    """section = names one of the preset's sections, checked when the preset is loaded."""
    path = _listed(place, {**STEP, "section": "lop"}, file="bad.toml")
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path)
    assert str(caught.value) == (
        f"preset {path}: sources[2] (step).section: no section 'lop' in the fields"
    )


def test_the_step_options_are_typed(place: Place) -> None:
    """name_keys is a list of strings, as every list option is."""
    path = _listed(place, {**STEP, "name_keys": "agent"}, file="bad.toml")
    with pytest.raises(budgetconf.PresetError, match='name_keys: expected a list, got "agent"'):
        budgetconf.resolve(path)


# --- the profile a step names ---------------------------------------------------------


def test_the_step_names_the_profile_relative_to_the_workflow(place: Place, listed: Path) -> None:
    """from_step = "config.file": a relative path is read from the workflow file's folder."""
    path = place.write("flows/wf.yaml", WORKFLOW.replace("  max_tool_calls: 3\n", ""))
    profile = place.write("flows/profile.json", '{\n  "loop": {\n    "max_tool_calls": 4\n  }\n}\n')
    res = budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert res["loop.max_tool_calls"] == 4
    assert res.trace("loop.max_tool_calls").locator == f"{profile}:3"
    assert {s.source: s.locator for s in res.sources}["profile"] == str(profile)


def test_a_tilde_in_the_step_s_profile_is_the_home_folder(place: Place, listed: Path) -> None:
    """config.file: "~/.app/reviewer.json" is under $HOME, as the seed writes it."""
    path = place.write("wf.yaml", "- agent: reviewer\n  config: {file: ~/.app/reviewer.json}\n")
    profile = place.write(".app/reviewer.json", '{"loop": {"max_turns": 9}}', base=place.home)
    res = budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert res["loop.max_turns"] == 9
    assert res.trace("loop.max_turns").locator == f"{profile}:1"


def test_a_profile_argument_beats_the_step_s_profile(place: Place, listed: Path) -> None:
    """profile= (--profile) is the caller's choice and wins over config.file."""
    path = place.write("wf.yaml", WORKFLOW)
    other = place.write("other.json", '{"loop": {"max_tool_calls": 2}}')
    res = budgetconf.resolve(listed, workflow=path, step="tidy", profile=other)
    assert res.trace("loop.max_tool_calls").locator == f"{other}:1"
    res = budgetconf.resolve(listed, workflow=path, step="planner", profile=other)
    assert res["loop.max_tool_calls"] == 2


def test_without_a_step_or_its_key_there_is_no_profile(place: Place, listed: Path) -> None:
    """A step that names no profile, or no step at all, leaves the profile source unused."""
    path = place.write("wf.yaml", WORKFLOW)
    for step in ("planner", None):
        res = budgetconf.resolve(listed, workflow=path, step=step)
        assert {s.source: s.status.value for s in res.sources}["profile"] == "not configured"


def test_a_profile_key_that_is_no_path_is_an_error(place: Place, listed: Path) -> None:
    """config.file must be text; anything else is an error at its line."""
    path = place.write("wf.yaml", "- agent: reviewer\n  config:\n    file: 3\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"profile step:reviewer ({path}:3): config.file must be the path of a profile,"
        " got an integer"
    )


def test_a_config_that_is_no_mapping_is_an_error(place: Place, listed: Path) -> None:
    """`config: profile.json` where `config: {file: ...}` belongs is an error, not ignored."""
    path = place.write("wf.yaml", "- agent: reviewer\n  config: profile.json\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"profile step:reviewer ({path}:2): config must be a mapping, got a string"
    )


def test_the_profile_a_step_names_must_exist(place: Place, listed: Path) -> None:
    """The workflow named the profile, so a missing file is an error, not a quiet default."""
    path = place.write("wf.yaml", "- agent: reviewer\n  config: {file: gone.json}\n")
    with pytest.raises(budgetconf.SourceError, match=r"gone\.json: no such file"):
        budgetconf.resolve(listed, workflow=path, step="reviewer")


def test_an_unknown_step_is_reported_once(place: Place, listed: Path) -> None:
    """The profile source does not repeat the step source's complaint about a missing step."""
    path = place.write("wf.yaml", WORKFLOW)
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="nobody")
    assert caught.value.source == "step"
    assert caught.value.errors == (caught.value,)


def test_from_step_needs_a_step_source(place: Place) -> None:
    """A profile cannot read its path from a step when the preset selects no steps."""
    path = _listed(place, None, file="bad.toml")
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path)
    assert (
        str(caught.value) == f"preset {path}: sources[1] (profile).from_step: needs a step source"
    )


# --- steps in a `steps:` list, more closely -------------------------------------------


def test_a_step_without_a_workflow_is_a_usage_error() -> None:
    """step= needs workflow= to be found in."""
    with pytest.raises(budgetconf.UsageError, match="step= needs workflow="):
        budgetconf.resolve(env={}, step="review")


def test_step_names_are_compared_as_the_file_writes_them(place: Place) -> None:
    """`name: true` is the step true, `name: 010` the step 010."""
    path = place.write(
        "wf.yaml", "steps:\n  - name: true\n    loop: {max_steps: 2}\n  - name: 010\n"
    )
    assert budgetconf.resolve(env={}, workflow=path, step="true")["loop.max_steps"] == 2
    with pytest.raises(budgetconf.SourceError, match=r"its steps are true, 010$"):
        budgetconf.resolve(env={}, workflow=path, step="other")


@pytest.mark.parametrize(
    ("text", "line", "got"),
    [
        ("# steps by name\nsteps:\n  review:\n    loop: {max_steps: 2}\n", 2, "a mapping"),
        ("steps: review\n", 1, "a string"),
        ("loop: {max_steps: 3}\nsteps:\n", 2, "nothing (null)"),
        ("steps: true\n", 1, "a boolean"),
        ("steps: 2024-01-02\n", 1, "a date"),
    ],
    ids=["mapping", "string", "empty", "boolean", "date"],
)
def test_a_steps_key_that_is_not_a_list_is_one_line_naming_it(
    place: Place, text: str, line: int, got: str
) -> None:
    """`steps:` written as a mapping (or text, or nothing) is one error at its line, saying what
    was expected; the step asked for shows how a step is written."""
    path = place.write("wf.yaml", text)
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert str(caught.value) == (
        f"step {path}:{line}: steps must be a list of steps (- name: review), got {got}"
    )
    assert (caught.value.line, caught.value.locator) == (line, "step:review")


def test_a_workflow_without_steps_says_what_it_lacks(place: Place) -> None:
    """No `steps:` at all: the error says which key was looked for and how a step is written."""
    path = place.write("wf.yaml", "loop: {max_steps: 3}\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert str(caught.value) == (
        f"step {path}: no top-level steps: list of steps (expected steps: / - name: review)"
    )


@pytest.mark.parametrize(
    ("entry", "line", "got"),
    [("  - - name: review\n", 3, "a list"), ("  - review\n", 2, "a string")],
    ids=["list", "string"],
)
def test_a_step_that_is_no_mapping_is_named_when_the_step_is_not_found(
    place: Place, entry: str, line: int, got: str
) -> None:
    """`- - name: review` (a list where a step belongs) or `- review`: not found, and why."""
    path = place.write("wf.yaml", "steps:\n  - name: plan\n" + entry)
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert str(caught.value) == (
        f"step {path}:{line}: no step named 'review', and step 2 of steps is {got},"
        " not a mapping (- name: review)"
    )


def test_a_stray_entry_in_a_list_file_is_named_as_a_step_of_the_file(
    place: Place, listed: Path
) -> None:
    """In a workflow that is the list of steps, an entry is counted in the file."""
    path = place.write("wf.yaml", "- agent: planner\n- 3\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    assert str(caught.value) == (
        f"step {path}:1: no step named 'reviewer', and step 2 of the file is a number,"
        " not a mapping (- agent: reviewer)"
    )


def test_two_steps_with_one_name_are_an_error(place: Place) -> None:
    """Which of two same-named steps applies cannot be guessed; both lines are named."""
    path = place.write("wf.yaml", "steps:\n  - name: a\n  - name: a\n")
    with pytest.raises(budgetconf.SourceError, match=r"2 steps have that name \(lines 2, 3\)"):
        budgetconf.resolve(env={}, workflow=path, step="a")


def test_a_misspelt_profile_a_step_names_suggests_the_file_beside_it(
    place: Place, listed: Path
) -> None:
    """config.file: prfile.json beside profile.json: the error names the file most likely meant."""
    path = place.write("wf.yaml", WORKFLOW.replace("file: profile.json", "file: prfile.json"))
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(listed, workflow=path, step="reviewer")
    meant = place.work / "profile.json"
    assert str(caught.value).endswith(f"prfile.json: no such file; did you mean {str(meant)!r}?")
