"""A resolution is reused only while nothing it read has changed.

resolve() keeps recent results keyed by what each source would read: the
variables, the arguments, and each file's path and version. Every change to
an input must be seen at once; a result with errors is never kept.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.sources import SourceStatus

from conftest import Place
from helpers.presetfiles import preset_file
from helpers.seeds import SKILLER_WORKFLOW


def _replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as editors and deploy tools do: a new file moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)


def _global(place: Place, steps: int) -> Path:
    path = place.budgetconf_home / "settings.json"
    _replace_file(path, json.dumps({"loop": {"max_steps": steps}}))
    return path


def _aged(path: Path) -> Path:
    """Date the file 10 s back: a file that has just changed is not keyed by its signature."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10_000_000_000))
    return path


def test_unchanged_inputs_give_the_very_same_resolution(place: Place) -> None:
    _aged(_global(place, 12))
    project = _aged(place.write("settings.toml", "[loop]\nmax_tool_calls_per_turn = 4\n"))
    first = budgetconf.resolve(env={"HOME": str(place.home)}, project_file=project)
    again = budgetconf.resolve(env={"HOME": str(place.home)}, project_file=project)
    assert again is first
    assert again["loop.max_steps"] == 12


Change = Callable[[Place, dict[str, Any]], Any]


def _edit_global(place: Place, kwargs: dict[str, Any]) -> int:
    _global(place, 31)
    return 31


def _remove_global(place: Place, kwargs: dict[str, Any]) -> int:
    (place.budgetconf_home / "settings.json").unlink()
    return 40


def _move_home(place: Place, kwargs: dict[str, Any]) -> int:
    moved = place.work / "elsewhere"
    _replace_file(moved / "settings.json", json.dumps({"loop": {"max_steps": 32}}))
    kwargs["env"]["BUDGETCONF_HOME"] = str(moved)
    return 32


def _set_variable(place: Place, kwargs: dict[str, Any]) -> int:
    kwargs["env"]["BUDGETCONF_MAX_STEPS"] = "33"
    return 33


def _set_argument(place: Place, kwargs: dict[str, Any]) -> int:
    kwargs["explicit"] = {"loop.max_steps": 34}
    return 34


def _set_flag(place: Place, kwargs: dict[str, Any]) -> int:
    kwargs["argv"] = ["--max-steps", "35"]
    return 35


def _add_project(place: Place, kwargs: dict[str, Any]) -> int:
    _replace_file(place.work / "settings.toml", "[loop]\nmax_steps = 36\n")
    return 36


def _edit_workflow(place: Place, kwargs: dict[str, Any]) -> int:
    workflow = place.work / "flow.yaml"
    _replace_file(workflow, "loop:\n  max_steps: 37\n")
    kwargs["workflow"] = str(workflow)
    budgetconf.resolve(**kwargs)  # the workflow as first written is now known
    _replace_file(workflow, "loop:\n  max_steps: 38\n")
    return 38


def _change_directory(place: Place, kwargs: dict[str, Any]) -> int:
    # the same relative path names another file once the working directory moves
    other = place.work / "other"
    _replace_file(other / "settings.toml", "[loop]\nmax_steps = 39\n")
    os.chdir(other)
    return 39


CHANGES: dict[str, Change] = {
    "a changed global file": _edit_global,
    "a removed global file": _remove_global,
    "a moved home folder": _move_home,
    "a variable set": _set_variable,
    "an argument in code": _set_argument,
    "a flag": _set_flag,
    "a project file that appears": _add_project,
    "a changed workflow file": _edit_workflow,
    "another working directory": _change_directory,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_every_change_to_what_a_source_reads_is_seen(place: Place, change: Change) -> None:
    _global(place, 12)
    kwargs: dict[str, Any] = {
        "env": {"HOME": str(place.home)},
        "project_file": "settings.toml",
    }
    place.write("settings.toml", "")
    before = budgetconf.resolve(**kwargs)
    assert before["loop.max_steps"] == 12
    expected = change(place, kwargs)
    after = budgetconf.resolve(**kwargs)
    assert after is not before
    assert after["loop.max_steps"] == expected


def _nearer_settings(place: Place) -> int:
    _aged(place.write("src/settings.toml", "[loop]\nmax_steps = 21\n"))
    return 21


def _pyproject_gains_the_table(place: Place) -> int:
    path = place.work / "src" / "pyproject.toml"
    _replace_file(path, '[project]\nname = "x"\n[tool.budgetconf.loop]\nmax_steps = 22\n')
    _aged(path)
    return 22


def _repository_between(place: Place) -> int:
    (place.work / "src" / ".git").mkdir()
    return 40


def _edit_the_file_found(place: Place) -> int:
    _replace_file(place.work / "settings.toml", "[loop]\nmax_steps = 23\n")
    _aged(place.work / "settings.toml")
    return 23


def _remove_the_file_found(place: Place) -> int:
    (place.work / "settings.toml").unlink()
    return 40


SEARCH_CHANGES: dict[str, Callable[[Place], int]] = {
    "a settings.toml nearer": _nearer_settings,
    "a pyproject.toml that gains the table": _pyproject_gains_the_table,
    "a repository's root between": _repository_between,
    "the file found edited": _edit_the_file_found,
    "the file found removed": _remove_the_file_found,
}


@pytest.mark.parametrize("change", SEARCH_CHANGES.values(), ids=SEARCH_CHANGES.keys())
def test_the_search_for_the_project_file_sees_every_change_on_its_way(
    place: Place, change: Callable[[Place], int]
) -> None:
    """Found from src/app, the project file's resolution is reused, until anything the search
    looked at changes: a file nearer, a pyproject's table, a .git, the file found."""
    _aged(place.write("settings.toml", "[loop]\nmax_steps = 11\n"))
    _aged(place.write("src/pyproject.toml", '[project]\nname = "x"\n'))
    (place.work / "src" / "app").mkdir()
    os.chdir(place.work / "src" / "app")
    env = {"HOME": str(place.home)}
    first = budgetconf.resolve(env=env)
    assert first["loop.max_steps"] == 11
    assert budgetconf.resolve(env=env) is first
    expected = change(place)
    assert budgetconf.resolve(env=env)["loop.max_steps"] == expected


def test_a_profile_named_by_a_workflow_step_is_read_again_when_it_changes(place: Place) -> None:
    """skiller's step names its profile: the profile's key follows the step to the file."""
    profile = place.home / ".skiller" / "profiles" / "agent.reviewer.json"
    _replace_file(profile, json.dumps({"loop": {"max_turns": 20}}))
    workflow = place.write("workflow.yaml", SKILLER_WORKFLOW)
    kwargs: dict[str, Any] = {
        "env": {"HOME": str(place.home)},
        "workflow": workflow,
        "step": "reviewer",
    }
    assert budgetconf.resolve("skiller", **kwargs)["loop.max_turns"] == 20
    _replace_file(profile, json.dumps({"loop": {"max_turns": 21}}))
    assert budgetconf.resolve("skiller", **kwargs)["loop.max_turns"] == 21


def test_a_resolution_with_errors_is_never_kept(place: Place) -> None:
    project = place.write("settings.toml", "[loop]\nmax_steps = 0\n")
    for _ in range(2):
        with pytest.raises(budgetconf.ConfigError, match="must be >= 1, got 0"):
            budgetconf.resolve(env={}, project_file=project)
    _replace_file(project, "[loop]\nmax_steps = 5\n")
    assert budgetconf.resolve(env={}, project_file=project)["loop.max_steps"] == 5


def test_warnings_are_given_again_by_a_reused_resolution() -> None:
    env = {"BUDGETCONF_MAX_STEP": "9"}
    for _ in range(2):
        with pytest.warns(budgetconf.BudgetConfWarning, match="BUDGETCONF_MAX_STEP is not a"):
            budgetconf.resolve(env=env)


def test_an_argument_that_cannot_be_a_key_is_judged_afresh_each_time() -> None:
    for _ in range(2):
        with pytest.raises(budgetconf.ConfigError, match="not an integer"):
            budgetconf.resolve(env={}, explicit={"loop.max_steps": [5]})
    assert budgetconf.resolve(env={}, explicit={"loop.max_steps": 5})["loop.max_steps"] == 5


class _Shifting(Mapping[str, str]):
    """An environment that changes under the resolver: each read of a variable counts up."""

    def __init__(self) -> None:
        self.reads = 0

    def __getitem__(self, name: str) -> str:
        if name != "BUDGETCONF_MAX_STEPS":
            raise KeyError(name)
        self.reads += 1
        return str(self.reads)

    def __iter__(self) -> Iterator[str]:
        return iter(["BUDGETCONF_MAX_STEPS"])

    def __len__(self) -> int:
        return 1


def test_inputs_that_change_while_they_are_read_are_not_kept() -> None:
    env = _Shifting()
    first = budgetconf.resolve(env=env)
    again = budgetconf.resolve(env=env)
    assert again is not first


class _Flipping(Mapping[str, str]):
    """An environment whose variable reads 7, except at one read, which gives 9."""

    def __init__(self, odd_read: int) -> None:
        self.odd_read = odd_read
        self.reads = 0

    def __getitem__(self, name: str) -> str:
        if name != "BUDGETCONF_MAX_STEPS":
            raise KeyError(name)
        self.reads += 1
        return "9" if self.reads == self.odd_read else "7"

    def __iter__(self) -> Iterator[str]:
        return iter(["BUDGETCONF_MAX_STEPS"])

    def __len__(self) -> int:
        return 1


@pytest.mark.parametrize("odd_read", [1, 2, 3, 4])
def test_a_value_seen_for_a_moment_is_never_kept_under_the_lasting_one(odd_read: int) -> None:
    """Whichever read sees the passing 9, once the variable stays 7, resolutions say 7."""
    env = _Flipping(odd_read)
    assert budgetconf.resolve(env=env)["loop.max_steps"] in (7, 9)
    assert [budgetconf.resolve(env=env)["loop.max_steps"] for _ in range(3)] == [7, 7, 7]


def test_a_resolution_is_read_only() -> None:
    res = budgetconf.resolve(env={})
    with pytest.raises(AttributeError, match="read-only"):
        res.preset = "other"
    with pytest.raises(TypeError):
        res.values["loop.max_steps"] = 1  # type: ignore[index]


def test_nothing_reached_from_a_resolution_can_be_changed() -> None:
    """Its records, its schema and its loop are shared with every later resolution."""
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "7"})
    trace = res.trace("loop.max_steps")
    with pytest.raises(AttributeError, match="read-only"):
        trace.winner.value = 9999
    with pytest.raises(AttributeError, match="read-only"):
        trace.field.ge = 8
    with pytest.raises(AttributeError, match="read-only"):
        res.sources[0].status = SourceStatus.ERROR
    with pytest.raises(AttributeError, match="read-only"):
        del trace.merge
    with pytest.raises(AttributeError, match="read-only"):
        res.schema.fields = ()
    with pytest.raises(TypeError):
        del res.schema.by_path["loop.max_steps"]  # type: ignore[attr-defined]
    assert res.loop is not None
    with pytest.raises(TypeError):
        res.loop.budgets["max_steps"] = "limits.max_tokens"  # type: ignore[index]
    assert budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "7"})["loop.max_steps"] == 7


def _fallback_code(place: Place, default: int = 40) -> Path:
    """A preset whose explicit source falls back, as the env source does."""
    return preset_file(
        place.work,
        name="app",
        sources=[
            "default",
            {"kind": "env", "invalid": "fallback"},
            {"kind": "explicit", "invalid": "fallback"},
        ],
        fields={
            "agent.max_steps": {
                "type": "int",
                "ge": 1,
                "default": default,
                "env": ["APP_MAX_STEPS"],
            }
        },
    )


@pytest.mark.parametrize(
    ("odd", "even"),
    [(True, 1), (1.0, 1), (1, True), (-0.0, 0.0)],
    ids=["bool then int", "float then int", "int then bool", "negative zero then zero"],
)
def test_values_that_compare_equal_but_differ_in_type_are_not_one_key(
    place: Place, odd: object, even: object
) -> None:
    """True == 1 == 1.0 in Python, but only 1 is an integer: each is judged as itself."""
    preset = _fallback_code(place)
    os.utime(preset, ns=(0, 0))  # settled: kept by its signature
    for value in (odd, even):
        fresh = _outcome(_copy(place, preset), {"env": {}, "explicit": {"agent.max_steps": value}})
        kept = _outcome(preset, {"env": {}, "explicit": {"agent.max_steps": value}})
        assert kept == fresh


def test_a_variable_that_is_not_text_is_judged_afresh_each_time(place: Place) -> None:
    preset = _fallback_code(place)
    os.utime(preset, ns=(0, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
        assert budgetconf.resolve(preset, env={"APP_MAX_STEPS": True})["agent.max_steps"] == 40  # type: ignore[dict-item]
        assert budgetconf.resolve(preset, env={"APP_MAX_STEPS": 1})["agent.max_steps"] == 1  # type: ignore[dict-item]


def _copy(place: Place, preset: Path) -> Path:
    """Another file of the same preset, with a memo of its own, emptied."""
    copy = place.write("copy-" + preset.name, preset.read_text(encoding="utf-8"))
    load_preset(copy).memo.clear()
    return copy


def test_a_rewrite_that_keeps_the_old_modification_time_is_seen(place: Place) -> None:
    """cp -p, tar and rsync -t restore a file's mtime; its change time still moves."""
    project = place.write("settings.toml", "[loop]\nmax_steps = 41\n")
    os.utime(project, ns=(0, 0))
    assert budgetconf.resolve(env={}, project_file=project)["loop.max_steps"] == 41
    project.write_text("[loop]\nmax_steps = 42\n", encoding="utf-8")  # same size, same inode
    os.utime(project, ns=(0, 0))
    assert budgetconf.resolve(env={}, project_file=project)["loop.max_steps"] == 42


def test_a_preset_file_rewritten_with_its_old_modification_time_is_read_again(
    place: Place,
) -> None:
    preset = _fallback_code(place)
    os.utime(preset, ns=(0, 0))
    assert budgetconf.resolve(preset, env={})["agent.max_steps"] == 40
    assert _fallback_code(place, default=41) == preset  # the same file, rewritten in place
    os.utime(preset, ns=(0, 0))
    assert budgetconf.resolve(preset, env={})["agent.max_steps"] == 41


# Random runs of edits: the resolution after each must be the one a fresh
# resolver gives. The fresh one uses its own copy of the preset, whose
# results are forgotten before every call.
EDITS = st.lists(
    st.tuples(
        st.sampled_from(["global", "project", "variable", "argument"]),
        st.one_of(st.none(), st.integers(min_value=0, max_value=3)),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edits=EDITS)
def test_reused_and_fresh_resolutions_agree(
    place: Place, edits: list[tuple[str, int | None]]
) -> None:
    # the copy's policy where the tests keep the built-in preset's
    text = _builtin_text("budgetconf").replace("/etc/budgetconf/policy.json", str(place.policy))
    copy = place.write("copy-of-budgetconf.toml", text)
    env: dict[str, str] = {"HOME": str(place.home)}
    explicit: dict[str, object] | None = None
    project = place.work / "settings.toml"
    for what, value in edits:
        if what == "global":
            if value is None:
                (place.budgetconf_home / "settings.json").unlink(missing_ok=True)
            else:
                _global(place, value)
        elif what == "project":
            text = "" if value is None else f"[loop]\nmax_tool_calls_per_turn = {value}\n"
            _replace_file(project, text)
        elif what == "variable":
            if value is None:
                env.pop("BUDGETCONF_MAX_STEPS", None)
            else:
                env["BUDGETCONF_MAX_STEPS"] = str(value)
        else:
            explicit = None if value is None else {"limits.max_tokens": value}
        kwargs: dict[str, Any] = {"env": env, "project_file": project, "explicit": explicit}
        if not project.exists():
            kwargs.pop("project_file")
        load_preset(copy).memo.clear()
        fresh = _outcome(copy, kwargs)
        reused = _outcome("budgetconf", kwargs)
        assert reused == fresh


def _builtin_text(name: str) -> str:
    folder = Path(budgetconf.__file__).parent / "_presets"
    return (folder / f"{name}.toml").read_text(encoding="utf-8")


def _outcome(preset: str | Path, kwargs: dict[str, Any]) -> object:
    """What a caller sees: the document without the preset's name, or the error's text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
        try:
            document = budgetconf.resolve(preset, **kwargs).to_dict()
        except budgetconf.ConfigError as exc:
            return str(exc)
    del document["preset"]
    return document


def test_a_factory_sees_each_change_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = budgetconf.factory("agent.max_steps", preset="opendot")
    assert steps() == 40
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "7")
    assert steps() == 7
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "8")
    assert steps() == 8


def test_a_factory_reads_the_list_of_flags_it_was_given_when_it_is_made() -> None:
    argv = ["--max-steps", "7"]
    steps = budgetconf.factory("loop.max_steps", env={}, argv=argv)
    argv[1] = "8"
    assert steps() == 7


def test_a_factory_of_a_value_it_cannot_key_resolves_it_at_every_call() -> None:
    """An enum member given in code has no key (see the explicit source): never reused."""
    from budgetconf._loop_table import LastTurn

    last_turn = budgetconf.factory(
        "loop.last_turn", env={}, explicit={"loop.last_turn": LastTurn.WARN}
    )
    assert last_turn() == last_turn() == "warn"


def test_a_factory_over_several_variables_follows_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """praisonai-code reads one variable for two fields: the factory follows it for either."""
    steps = budgetconf.factory("execution.max_tool_calls_per_turn", preset="praisonai-code")
    assert steps() == 200
    monkeypatch.setenv("PRAISONAI_CODE_MAX_STEPS", "250")
    assert steps() == 250
    monkeypatch.setenv("PRAISONAI_CODE_MAX_STEPS", "0")  # the preset's fallback, with a warning
    with pytest.warns(budgetconf.BudgetConfWarning):
        assert steps() == 200


def test_a_factory_tells_unset_from_set_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, set, unset again, set again: no answer of an earlier state comes back."""
    steps = budgetconf.factory("agent.max_steps", preset="opendot")
    for value, expected in [(None, 40), ("7", 7), (None, 40), ("7", 7), ("", 40), ("9", 9)]:
        if value is None:
            monkeypatch.delenv("OPENDOT_MAX_STEPS", raising=False)
        else:
            monkeypatch.setenv("OPENDOT_MAX_STEPS", value)
        assert steps() == expected


def test_a_factory_follows_the_home_folder_its_variable_moves(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The global file is found again at each call: BUDGETCONF_HOME may have moved it."""
    for name, steps in (("a", 5), ("b", 6)):
        place.write(f"{name}/settings.json", json.dumps({"loop": {"max_steps": steps}}))
    max_steps = budgetconf.factory("loop.max_steps")
    assert max_steps() == 40
    monkeypatch.setenv("BUDGETCONF_HOME", str(place.work / "a"))
    assert max_steps() == 5
    monkeypatch.setenv("BUDGETCONF_HOME", str(place.work / "b"))
    assert max_steps() == 6


def test_a_factory_reads_the_mapping_it_was_given_when_it_is_made() -> None:
    """Its arguments are taken once, as its docstring says: a later change to them is not seen."""
    given = {"agent.max_steps": 9}
    steps = budgetconf.factory("agent.max_steps", preset="opendot", explicit=given)
    given["agent.max_steps"] = 10
    assert steps() == 9


#: a factory called twice from a script's own line, in a process of its own (praisonaiagents,
#: which other tests import, replaces warnings.warn, and every warning's line with it)
_WARNING_LINES = """\
import warnings
import budgetconf

max_steps = budgetconf.factory("loop.max_steps")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    values = [max_steps(), max_steps()]
print((values, [(w.filename, w.lineno, str(w.message)) for w in caught]))
"""


def test_a_factory_warns_at_every_call_where_it_is_called(place: Place) -> None:
    """A value it reuses still warns each time, and the warning names the caller's line."""
    script = place.write("app.py", _WARNING_LINES)
    env = {**os.environ, "BUDGETCONF_MAX_STEPS": "many"}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    values, caught = ast.literal_eval(done.stdout)
    assert values == [40, 40]
    assert [(filename, line) for filename, line, _ in caught] == [(str(script), 7)] * 2
    assert all("BUDGETCONF_MAX_STEPS" in message for _, _, message in caught)


def test_a_factory_does_not_keep_an_error(place: Place) -> None:
    """A project file that fails is read again once it is fixed, as resolve() reads it."""
    project = place.write("settings.toml", "[loop]\nmax_steps = 0\n")
    max_steps = budgetconf.factory("loop.max_steps")
    for _ in range(2):
        with pytest.raises(budgetconf.ConfigError, match="max_steps"):
            max_steps()
    _replace_file(project, "[loop]\nmax_steps = 3\n")
    assert max_steps() == 3


def test_a_factory_refuses_a_keyword_resolve_does_not_take() -> None:
    with pytest.raises(TypeError, match="unexpected keyword arguments: enviroment"):
        budgetconf.factory("agent.max_steps", preset="opendot", enviroment={})


def test_a_factory_checks_its_arguments_against_a_preset_file_that_changed(place: Place) -> None:
    """A preset file that drops the source an argument feeds makes the factory fail clearly."""
    text = _builtin_text("opendot").replace('name = "opendot"', 'name = "app"')
    preset = place.write("app.toml", text)
    steps = budgetconf.factory("agent.max_steps", preset=preset, explicit={"agent.max_steps": 9})
    assert steps() == 9
    without_explicit = text.replace('[[sources]]\nkind = "explicit"\ninvalid = "error"\n', "")
    assert without_explicit != text
    _replace_file(preset, without_explicit)
    with pytest.raises(budgetconf.UsageError, match="has no explicit source"):
        steps()


def test_a_rewrite_with_the_same_signature_is_not_served_from_memory(place: Place) -> None:
    """Same size, inode and mtime (a coarse clock): a recent file is never keyed, so it is seen."""
    project = place.write("settings.toml", "[loop]\nmax_steps = 5\n")
    assert budgetconf.resolve(env={}, project_file=project)["loop.max_steps"] == 5
    before = project.stat()
    project.write_text("[loop]\nmax_steps = 6\n", encoding="utf-8")
    os.utime(project, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert project.stat().st_ino == before.st_ino
    assert budgetconf.resolve(env={}, project_file=project)["loop.max_steps"] == 6


def test_a_file_written_a_moment_ago_is_reused_while_its_bytes_are_the_same(place: Place) -> None:
    """A recent file is keyed by its bytes too: unchanged, the resolution is the same one."""
    project = place.write("settings.toml", "[loop]\nmax_steps = 5\n")
    fields = {"loop.max_steps": {"type": "int", "default": 40}}
    preset = preset_file(place.work, fields=fields, sources=["default", "project"])
    first = budgetconf.resolve(env={}, project_file=project, preset=preset)
    assert budgetconf.resolve(env={}, project_file=project, preset=preset) is first
    before = project.stat()
    project.write_text("[loop]\nmax_steps = 6\n", encoding="utf-8")  # same size, inode, mtime
    os.utime(project, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = budgetconf.resolve(env={}, project_file=project, preset=preset)
    assert changed["loop.max_steps"] == 6
    assert budgetconf.resolve(env={}, project_file=project, preset=preset) is changed


def test_a_preset_file_written_a_moment_ago_is_loaded_once(place: Place) -> None:
    fields = {"loop.max_steps": {"type": "int", "default": 40}}
    preset = preset_file(place.work, fields=fields)
    first = load_preset(preset)
    assert load_preset(preset) is first
    before = preset.stat()
    preset.write_text(preset.read_text(encoding="utf-8").replace("40", "41"), encoding="utf-8")
    os.utime(preset, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_preset(preset) is not first
    assert budgetconf.resolve(env={}, preset=preset)["loop.max_steps"] == 41
