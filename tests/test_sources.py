"""Each source kind: where it reads, what it reports, and how it fails."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import budgetconf

from conftest import Place
from presetfiles import preset_file


def _statuses(res: budgetconf.Resolution) -> dict[str, str]:
    return {s.source: s.status.value for s in res.sources}


# --- global, project, profile -------------------------------------------------------


def test_missing_default_locations_are_reported_as_missing(place: Place) -> None:
    """Files at default locations that do not exist are `missing`, with the path looked at."""
    res = budgetconf.resolve(env={})
    reports = {s.source: s for s in res.sources}
    assert reports["global"].status == "missing"
    assert reports["global"].locator == f"{place.home}/.budgetconf/settings.json"
    assert reports["project"].status == "missing"
    assert reports["project"].locator == f"{place.work}/settings.toml"
    assert _statuses(res)["profile"] == "not configured"


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


def test_budgetconf_home_moves_the_global_file(place: Place) -> None:
    """BUDGETCONF_HOME, read from the env mapping, replaces ~/.budgetconf."""
    place.write("elsewhere/settings.json", '{"loop": {"max_steps": 3}}')
    res = budgetconf.resolve(env={"BUDGETCONF_HOME": str(place.work / "elsewhere")})
    assert res["loop.max_steps"] == 3
    assert res.trace("loop.max_steps").locator == f"{place.work}/elsewhere/settings.json:1"


def test_budgetconf_home_is_read_from_the_process_when_the_mapping_lacks_it(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A control variable missing from env= falls back to the process environment."""
    place.write("elsewhere/settings.json", '{"loop": {"max_steps": 4}}')
    monkeypatch.setenv("BUDGETCONF_HOME", str(place.work / "elsewhere"))
    assert budgetconf.resolve(env={})["loop.max_steps"] == 4


def test_home_in_the_env_mapping_locates_the_user_folder(place: Place) -> None:
    """HOME given in env= is where ~ points, not the process's home."""
    other = place.work / "other-home"
    place.write("other-home/.budgetconf/settings.json", '{"loop": {"max_steps": 5}}')
    assert budgetconf.resolve(env={"HOME": str(other)})["loop.max_steps"] == 5


def test_project_file_is_found_in_the_working_directory(place: Place) -> None:
    """./settings.toml is read from the cwd, and its locator is absolute with a line."""
    place.write("settings.toml", "# budgets\n\n[loop]\nmax_steps = 9\n")
    res = budgetconf.resolve(env={})
    assert res.trace("loop.max_steps").locator == f"{place.work}/settings.toml:4"


@pytest.mark.parametrize("given", ["fast", "~/fast.json", "./fast.json", "fast.json"])
def test_profile_names_and_paths(place: Place, given: str) -> None:
    """A bare name is looked up in the profiles folder; a separator, ~ or .json makes a path."""
    place.write(".budgetconf/profiles/fast.json", '{"loop": {"max_steps": 11}}', base=place.home)
    place.write("fast.json", '{"loop": {"max_steps": 12}}', base=place.home)
    place.write("fast.json", '{"loop": {"max_steps": 13}}')
    expected = {"fast": 11, "~/fast.json": 12, "./fast.json": 13, "fast.json": 13}[given]
    assert budgetconf.resolve(env={}, profile=given)["loop.max_steps"] == expected


def test_a_named_profile_that_does_not_exist_is_an_error(place: Place) -> None:
    """--profile NAME must name an existing profile."""
    with pytest.raises(
        budgetconf.SourceError, match=r"profile .*/profiles/ghost.json: no such file"
    ):
        budgetconf.resolve(env={}, profile="ghost")


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
    """`loop = 5` in a file under the error policy raises, naming the place and the value."""
    path = place.write("settings.toml", "loop = 5\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})
    assert str(caught.value) == f"{path}:1 (project): section loop must be a table of fields, got 5"


# --- env ------------------------------------------------------------------------------


def test_unknown_budgetconf_variables_are_reported_with_a_suggestion() -> None:
    """BUDGETCONF_MAX_STEP is not a variable; the warning suggests BUDGETCONF_MAX_STEPS."""
    env = {
        "BUDGETCONF_MAX_STEP": "9",
        "BUDGETCONF_HOME": "/nowhere",
        "BUDGETCONF_PRESET": "x",
        "BUDGETCONF_QQQ": "1",
    }
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env=env)
    assert res.warnings == (
        "BUDGETCONF_MAX_STEP is not a known variable; did you mean BUDGETCONF_MAX_STEPS?",
        "BUDGETCONF_QQQ is not a known variable",
    )


def test_a_budgetconf_variable_in_the_wrong_case_is_reported() -> None:
    """budgetconf_max_steps is ignored like any unknown name, but not silently."""
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={"budgetconf_max_steps": "9", "Budgetconf_Home": "/x"})
    assert res["loop.max_steps"] == 40
    assert res.warnings == (
        "Budgetconf_Home is not a known variable; did you mean BUDGETCONF_HOME?",
        "budgetconf_max_steps is not a known variable; did you mean BUDGETCONF_MAX_STEPS?",
    )


class _Changing(Mapping[str, str]):
    """An environment another thread changes while it is copied, the first two times."""

    def __init__(self, data: dict[str, str]) -> None:
        self._data = data
        self.copies = 0

    def __getitem__(self, name: str) -> str:
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        self.copies += 1
        if self.copies == 1:
            raise RuntimeError("dictionary changed size during iteration")
        if self.copies == 2:  # a variable unset between listing the names and reading it
            return iter([*self._data, "BUDGETCONF_GONE"])
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_an_environment_that_changes_while_it_is_read_is_read_again() -> None:
    """A copy interrupted by a change in size or a vanished variable is taken again, whole."""
    env = _Changing({"BUDGETCONF_MAX_STEPS": "7"})
    res = budgetconf.resolve(env=env)
    assert res["loop.max_steps"] == 7
    assert env.copies >= 3  # the two interrupted copies were taken again


def test_the_environment_is_read_on_every_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without env=, os.environ is read afresh each time."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "6")
    first = budgetconf.resolve()["loop.max_steps"]
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    assert (first, budgetconf.resolve()["loop.max_steps"]) == (6, 7)


# --- cli ------------------------------------------------------------------------------


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
    assert _statuses(res)["cli"] == "not configured"


# --- one variable or flag for several fields ------------------------------------------


def _shared(place: Place) -> Path:
    """Two fields that list the same variable and the same flag, each with one of its own."""
    return preset_file(
        place.work,
        name="shared",
        file="shared.toml",
        sources=[
            "default",
            {"kind": "env", "invalid": "fallback"},
            {"kind": "cli", "invalid": "fallback"},
        ],
        fields={
            "run.steps": {
                "type": "int",
                "ge": 1,
                "default": 200,
                "env": ["APP_BUDGET"],
                "flags": ["--budget"],
            },
            "run.calls": {
                "type": "int",
                "ge": 1,
                "default": 100,
                "env": ["APP_BUDGET", "APP_CALLS"],
                "flags": ["--budget", "--calls"],
            },
        },
    )


def test_one_variable_sets_every_field_that_lists_it(place: Place) -> None:
    """A variable listed by two fields offers its value to both, each located at it."""
    res = budgetconf.resolve(_shared(place), env={"APP_BUDGET": "300"})
    assert res.values == {"run.steps": 300, "run.calls": 300}
    assert {t.locator for t in res.traces()} == {"env:APP_BUDGET"}


def test_one_flag_sets_every_field_that_lists_it(place: Place) -> None:
    """A flag listed by two fields offers its value to both; a field's own flag is its own."""
    path = _shared(place)
    res = budgetconf.resolve(path, env={}, argv=["--budget", "300"])
    assert res.values == {"run.steps": 300, "run.calls": 300}
    res = budgetconf.resolve(path, env={}, argv=["--budget=300", "--calls", "7"])
    assert res.values == {"run.steps": 300, "run.calls": 7}


def test_a_bad_shared_value_falls_back_in_every_field(place: Place) -> None:
    """Rejected under fallback, the shared value leaves each field to its next candidate."""
    path = _shared(place)
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"APP_BUDGET": "300"}, argv=["--budget", "0"])
    assert res.values == {"run.steps": 300, "run.calls": 300}
    tail = "from --budget (cli): must be >= 1, got '0'; ignored, using 300 from env:APP_BUDGET"
    assert [str(w.message) for w in caught] == [f"run.steps {tail}", f"run.calls {tail}"]


# --- yaml and step --------------------------------------------------------------------

WORKFLOW = """\
agents:
  coder: {model: big}
loop:
  max_steps: 30
steps:
  - name: plan
    loop: {max_steps: 3}
  - name: review
    loop:
      max_steps: 5
    limits:
      max_tokens: 100
    other: ignored
"""


def test_workflow_sections_are_read_and_other_keys_ignored(place: Place) -> None:
    """Top-level sections are the yaml source; agents: and steps: are not reported."""
    path = place.write("wf.yaml", WORKFLOW)
    res = budgetconf.resolve(env={}, workflow=path)
    assert res["loop.max_steps"] == 30
    assert res.trace("loop.max_steps").locator == f"{path}:4"
    assert res.warnings == ()


def test_a_step_overrides_the_workflow_and_is_located_by_name_and_line(place: Place) -> None:
    """--step review makes that entry's sections the step source, at step:NAME (path:line)."""
    path = place.write("wf.yaml", WORKFLOW)
    res = budgetconf.resolve(env={}, workflow=path, step="review")
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (5, 100)
    assert res.trace("loop.max_steps").locator == f"step:review ({path}:10)"
    assert {s.source: s.locator for s in res.sources}["step"] == f"step:review ({path}:8)"


def test_an_unknown_step_is_an_error_with_a_suggestion(place: Place) -> None:
    """A step name that is not in the file is refused, naming the nearest one."""
    path = place.write("wf.yaml", WORKFLOW)
    with pytest.raises(
        budgetconf.SourceError, match="no step named 'reveiw'; did you mean 'review'"
    ):
        budgetconf.resolve(env={}, workflow=path, step="reveiw")


def test_a_step_without_a_workflow_is_a_usage_error() -> None:
    """step= needs workflow= to be found in."""
    with pytest.raises(budgetconf.UsageError, match="step= needs workflow="):
        budgetconf.resolve(env={}, step="review")


# --- explicit -------------------------------------------------------------------------


def test_an_unknown_explicit_field_is_an_error_with_a_suggestion() -> None:
    """A typo in code is an error, never a warning, naming the field, source and value."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"loop.max_step": 5})
    assert str(caught.value) == (
        "loop.max_step from explicit: unknown field; did you mean 'loop.max_steps'?"
    )
    assert (caught.value.field, caught.value.source, caught.value.raw) == (
        "loop.max_step",
        "explicit",
        5,
    )


def test_every_unknown_explicit_field_is_reported() -> None:
    """Two typos are two errors, even when neither has a suggestion."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"zzz.aaa": 1, "qqq.bbb": 2})
    assert [e.field for e in caught.value.errors] == ["zzz.aaa", "qqq.bbb"]


def test_explicit_accepts_aliases() -> None:
    """loop.max_turns is loop.max_steps by its alias."""
    res = budgetconf.resolve(env={}, explicit={"loop.max_turns": 50})
    assert res["loop.max_steps"] == 50
    assert res.trace("loop.max_steps").winner.alias == "max_turns"


def test_several_errors_are_raised_together() -> None:
    """Every problem is reported at once, each on its own line."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"loop.max_steps": 0, "limits.max_tokens": "x"})
    assert len(caught.value.errors) == 2
    assert str(caught.value).splitlines() == [
        "2 configuration errors:",
        "  - loop.max_steps from explicit: must be >= 1, got 0",
        '  - limits.max_tokens from explicit: not an integer: "x" (a string)',
    ]


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


# --- steps, more closely ----------------------------------------------------------------


def test_step_names_are_compared_as_the_file_writes_them(place: Place) -> None:
    """`name: true` is the step true, `name: 010` the step 010."""
    path = place.write(
        "wf.yaml", "steps:\n  - name: true\n    loop: {max_steps: 2}\n  - name: 010\n"
    )
    assert budgetconf.resolve(env={}, workflow=path, step="true")["loop.max_steps"] == 2
    with pytest.raises(budgetconf.SourceError, match=r"its steps are true, 010$"):
        budgetconf.resolve(env={}, workflow=path, step="other")


def test_a_steps_key_that_is_not_a_list_is_an_error(place: Place) -> None:
    """`steps:` written as a mapping cannot hold the step asked for."""
    path = place.write("wf.yaml", "steps:\n  review:\n    loop: {max_steps: 2}\n")
    with pytest.raises(budgetconf.SourceError, match="it has no 'steps' list of steps"):
        budgetconf.resolve(env={}, workflow=path, step="review")


def test_two_steps_with_one_name_are_an_error(place: Place) -> None:
    """Which of two same-named steps applies cannot be guessed; both lines are named."""
    path = place.write("wf.yaml", "steps:\n  - name: a\n  - name: a\n")
    with pytest.raises(budgetconf.SourceError, match=r"2 steps have that name \(lines 2, 3\)"):
        budgetconf.resolve(env={}, workflow=path, step="a")


def test_a_broken_workflow_is_reported_once(place: Place) -> None:
    """The yaml and step sources read the same file: its problem is one error, not two."""
    path = place.write("wf.yaml", "loop: [\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert caught.value.errors == (caught.value,)
    assert str(caught.value).startswith(f"yaml {path}:")


def test_membership_understands_aliases() -> None:
    """`in` agrees with []: an alias is in the resolution, a typo is not."""
    res = budgetconf.resolve(env={})
    assert "loop.max_turns" in res
    assert "loop.max_steps" in res
    assert "loop.max_step" not in res
    assert 5 not in res
