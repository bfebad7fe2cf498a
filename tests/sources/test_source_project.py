"""The ``project`` source: settings.toml or pyproject.toml's [tool.budgetconf], found upward.

The test's own folder holds a ``.git`` (see conftest): ``work`` and ``home`` are
folders of one repository, so the search never leaves the test's folder.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place, source_statuses
from helpers.presetfiles import preset_file

PYPROJECT = """\
[project]
name = "report-agent"

[tool.ruff]
line-length = 100

[tool.budgetconf.loop]
max_steps = 12

[tool.budgetconf.limits]
max_tokens = 5000
"""


def _project(res: budgetconf.Resolution) -> tuple[str, str | None]:
    (report,) = [s for s in res.sources if s.source == "project"]
    return report.status.value, report.locator


def _in(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    return folder


def test_project_file_is_found_in_the_working_directory(place: Place) -> None:
    """./settings.toml is read from the cwd, and its locator is absolute with a line."""
    place.write("settings.toml", "# budgets\n\n[loop]\nmax_steps = 9\n")
    res = budgetconf.resolve(env={})
    assert res.trace("loop.max_steps").locator == f"{place.work}/settings.toml:4"


# --- pyproject.toml ---------------------------------------------------------------------


def test_the_tool_budgetconf_table_of_pyproject_is_the_project_file(place: Place) -> None:
    """[tool.budgetconf.loop] sets loop's fields, each at its own line; the rest is other tools'."""
    path = place.write("pyproject.toml", PYPROJECT)
    res = budgetconf.resolve(env={})  # warnings are errors: [project] and [tool.ruff] say nothing
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (12, 5000)
    assert res.trace("loop.max_steps").locator == f"{path}:8"
    assert res.trace("limits.max_tokens").locator == f"{path}:11"
    assert _project(res) == ("loaded", f"{path} [tool.budgetconf]")


def test_explain_names_the_pyproject_table(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table's sources list says which file, and that it is its [tool.budgetconf] table."""
    place.write("pyproject.toml", PYPROJECT)
    assert main(["explain", "loop.max_steps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "loop.max_steps 12 ./pyproject.toml:8" in lines
    assert "  project  loaded         ./pyproject.toml [tool.budgetconf], 2 values" in lines


def test_keys_inside_the_table_are_checked_as_in_any_settings_file(place: Place) -> None:
    """In [tool.budgetconf] every key is a section, so a typo there is reported, at its line."""
    path = place.write(
        "pyproject.toml",
        "[tool.budgetconf]\nlop = {max_steps = 3}\nloop = {max_step = 4}\n",
    )
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (
        f"lop in {path}:2 is not a known key; did you mean loop?",
        f"loop.max_step in {path}:3 is not a known key; did you mean loop.max_steps?",
    )


def test_a_pyproject_without_the_table_is_not_the_project_file(place: Place) -> None:
    """A pyproject.toml of other tools is passed over, and the search goes on upward."""
    place.write("settings.toml", "[loop]\nmax_steps = 7\n")
    sub = _in(place.work / "pkg")
    (sub / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], _project(res)) == (7, ("loaded", f"{place.work}/settings.toml"))


def test_in_one_folder_settings_toml_wins_over_pyproject(place: Place) -> None:
    """Both in one folder: settings.toml is the project file, and the pyproject is not read."""
    place.write("pyproject.toml", PYPROJECT)
    place.write("settings.toml", "[loop]\nmax_steps = 3\n")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (3, None)


def test_a_table_that_is_not_a_table_is_an_error_at_its_line(place: Place) -> None:
    """`tool.budgetconf = 5` holds no sections: the source fails, naming the line."""
    path = place.write("pyproject.toml", "[tool]\nruff = {}\nbudgetconf = 5\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={})
    assert str(caught.value) == (
        f"project {path}:3: [tool.budgetconf] must be a table of sections, not a single value"
    )


def test_a_broken_pyproject_fails_the_source(place: Place) -> None:
    """A pyproject.toml that is no TOML may hold the table: it stops the search, and fails."""
    path = place.write("pyproject.toml", "[tool.budgetconf\n")
    with pytest.raises(budgetconf.SourceError, match=f"project {path}:1: "):
        budgetconf.resolve(env={})


# --- Upward -------------------------------------------------------------------------------


def test_explain_from_a_subfolder_finds_the_project_file(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from src/agent, the repository's settings.toml two folders up is the project file."""
    path = place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    _in(place.work / "src" / "agent")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], _project(res)) == (9, ("loaded", str(path)))
    assert main(["explain", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["fields"]["loop.max_steps"]["locator"] == f"{path}:2"


def test_the_nearest_project_file_wins(place: Place) -> None:
    """A folder's own settings.toml (or pyproject table) hides those above it, whole."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n[limits]\nmax_tokens = 10\n")
    sub = _in(place.work / "service")
    (sub / "pyproject.toml").write_text("[tool.budgetconf.loop]\nmax_steps = 4\n")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (4, None)


def test_the_search_stops_at_the_repository_root(place: Place) -> None:
    """A settings.toml above the folder that holds .git belongs to something else."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    repo = place.work / "repo"
    (repo / ".git").mkdir(parents=True)
    _in(repo / "src")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], _project(res)) == (40, ("missing", f"{repo}/src/settings.toml"))
    (repo / "settings.toml").write_text("[loop]\nmax_steps = 8\n")  # the root itself is read
    assert budgetconf.resolve(env={})["loop.max_steps"] == 8


def test_a_worktree_s_git_file_is_a_repository_root(place: Place) -> None:
    """`.git` may be a file (a git worktree, a submodule): it bounds the search all the same."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    tree = place.work / "tree"
    tree.mkdir()
    (tree / ".git").write_text("gitdir: /elsewhere\n")
    _in(tree / "sub")
    assert budgetconf.resolve(env={})["loop.max_steps"] == 40


def test_the_search_stops_at_the_home_folder(place: Place) -> None:
    """Under home and in no repository, home is the last folder looked in."""
    (place.work.parent / "settings.toml").write_text("[loop]\nmax_steps = 9\n")  # above home
    _in(place.home / "notes" / "drafts")
    assert budgetconf.resolve(env={})["loop.max_steps"] == 40
    (place.home / "settings.toml").write_text("[loop]\nmax_steps = 6\n")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], _project(res)) == (6, ("loaded", f"{place.home}/settings.toml"))


def test_the_home_folder_bounds_the_search_through_a_symlink(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME that names the home folder through a link is still where the search stops."""
    (place.work.parent / "settings.toml").write_text("[loop]\nmax_steps = 9\n")
    link = place.work.parent / "link-to-home"
    link.symlink_to(place.home)
    monkeypatch.setenv("HOME", str(link))
    _in(place.home / "sub")  # the working directory is the real path
    assert budgetconf.resolve(env={})["loop.max_steps"] == 40


def test_outside_a_repository_and_home_only_the_working_directory_is_read(
    place: Place,
) -> None:
    """With no .git above and home elsewhere, a folder above (a /tmp) may hold anyone's file."""
    shutil.rmtree(place.work.parent / ".git")
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    _in(place.work / "sub")
    res = budgetconf.resolve(env={})
    assert (res["loop.max_steps"], _project(res)) == (
        40,
        ("missing", f"{place.work}/sub/settings.toml"),
    )
    os.chdir(place.work)
    assert budgetconf.resolve(env={})["loop.max_steps"] == 9


def test_a_removed_working_directory_holds_no_project_file(place: Place) -> None:
    """No working directory: there is no project file to find, and nothing above it is read."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")  # the removed folder's parent's
    gone = _in(place.work / "gone")
    gone.rmdir()
    res = budgetconf.resolve(env={})
    report = {s.source: s for s in res.sources}["project"]
    assert (report.status.value, report.locator) == ("missing", "settings.toml")
    assert res["loop.max_steps"] == 40


# --- A settings.toml shared with the application --------------------------------------------


def test_the_applications_own_tables_are_left_alone(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """[database] and [log] are the application's: check passes, and nothing is said."""
    place.write(
        "settings.toml",
        '[database]\nurl = "postgres://x"\n[log]\nlevel = "info"\ndebug = true\n'
        "[loop]\nmax_steps = 9\n",
    )
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 31 fields resolved, no warnings (preset budgetconf)\n"
    assert budgetconf.resolve(env={})["loop.max_steps"] == 9


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("lop", "loop"),
        ("Loop", "loop"),
        ("lopo", "loop"),
        ("limts", "limits"),
        ("lmiits", "limits"),
    ],
)
def test_a_table_within_an_edit_of_a_section_is_reported(
    place: Place, key: str, meant: str
) -> None:
    """[lop] is most likely [loop]: a warning, with its did-you-mean."""
    path = place.write("settings.toml", f"[{key}]\nmax_steps = 3\n")
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (f"{key} in {path}:1 is not a known key; did you mean {meant}?",)


def test_a_field_written_outside_its_section_is_reported(place: Place) -> None:
    """`max_steps = 3` at the top level is a budget written in the wrong place."""
    path = place.write("settings.toml", "max_steps = 3\n")
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (
        f"max_steps in {path}:1 is not a known key; did you mean loop.max_steps?",
    )


def test_unknown_keys_inside_a_section_stay_warnings(place: Place) -> None:
    """The application owns other tables, not budgetconf's: a typo in [loop] is reported."""
    path = place.write("settings.toml", "[database]\nurl = 1\n[loop]\nmax_stepz = 3\n")
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={})
    assert res.warnings == (
        f"loop.max_stepz in {path}:4 is not a known key; did you mean loop.max_steps?",
    )


# --- Named files, and the preset's path -------------------------------------------------------


def test_a_named_project_file_is_read_as_given(place: Place) -> None:
    """--project names one file: no search, and it must exist."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    _in(place.work / "sub")
    with pytest.raises(budgetconf.SourceError, match="no such file"):
        budgetconf.resolve(env={}, project_file="settings.toml")
    assert budgetconf.resolve(env={}, project_file="../settings.toml")["loop.max_steps"] == 9


def test_a_named_pyproject_is_read_for_its_table(place: Place) -> None:
    """--project pyproject.toml reads [tool.budgetconf]; without the table that is an error."""
    path = place.write("ci/pyproject.toml", PYPROJECT)
    assert budgetconf.resolve(env={}, project_file=path)["loop.max_steps"] == 12
    other = place.write("other/pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, project_file=other)
    assert str(caught.value) == f"project {other}: no [tool.budgetconf] table"


def _with_project(place: Place, **options: object) -> Path:
    return preset_file(
        place.work.parent,
        sources=["default", {"kind": "project", **options}],
        fields={"loop.max_steps": {"type": "int", "default": 40}},
    )


def test_a_preset_s_relative_path_is_searched_for_upward(place: Place) -> None:
    """`path = "config/budgets.toml"` is looked for in each folder, with pyproject beside it."""
    preset = _with_project(place, path="config/budgets.toml")
    place.write("config/budgets.toml", "[loop]\nmax_steps = 5\n")
    _in(place.work / "src")
    assert budgetconf.resolve(preset, env={})["loop.max_steps"] == 5


def test_a_preset_s_absolute_or_home_path_is_read_as_written(place: Place) -> None:
    """`{home}/…` and absolute paths name one file: nothing is searched for."""
    place.write("settings.toml", "[loop]\nmax_steps = 9\n")
    _in(place.work / "sub")
    preset = _with_project(place, path=str(place.work / "sub" / "settings.toml"))
    assert _project(budgetconf.resolve(preset, env={}))[0] == "missing"
    preset = _with_project(place, path="{home}/settings.toml")
    assert budgetconf.resolve(preset, env={})["loop.max_steps"] == 40


def test_a_preset_names_its_own_pyproject_table(place: Place) -> None:
    """`pyproject = "tool.app"`: an application's budgets under its own tool table."""
    preset = _with_project(place, path="app.toml", pyproject="tool.app")
    path = place.write(
        "pyproject.toml", "[tool.budgetconf.loop]\nmax_steps = 3\n[tool.app.loop]\nmax_steps = 4\n"
    )
    res = budgetconf.resolve(preset, env={})
    assert (res["loop.max_steps"], _project(res)) == (4, ("loaded", f"{path} [tool.app]"))


@pytest.mark.parametrize("table", ["", "tool..app", "tool."])
def test_the_pyproject_option_is_a_dotted_table(place: Place, table: str) -> None:
    """An empty part names no table: the preset is refused, naming the option."""
    with pytest.raises(budgetconf.PresetError, match=r"\(project\)\.pyproject: expected a dotted"):
        budgetconf.resolve(_with_project(place, path="s.toml", pyproject=table), env={})


def test_a_missing_project_file_is_where_it_would_be(place: Place) -> None:
    """Nothing found: the source is missing, at the working directory's settings.toml."""
    _in(place.work / "a" / "b")
    res = budgetconf.resolve(env={})
    assert source_statuses(res)["project"] == "missing"
    assert _project(res)[1] == f"{place.work}/a/b/settings.toml"


# --- A table field ---------------------------------------------------------------------------


def test_a_tables_keys_are_located_at_their_own_lines(place: Place) -> None:
    """``[tools.max_calls]`` / ``web_search = 3``: the key's own line is its locator."""
    path = place.write(
        "settings.toml", "[loop]\nmax_steps = 9\n\n[tools.max_calls]\nweb_search = 3\nfetch = 10\n"
    )
    res = budgetconf.resolve(env={})
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 3}
    assert res.trace("tools.max_calls.web_search").locator == f"{path}:5"
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:6"
    assert res.warnings == ()


def test_an_inline_table_locates_its_keys_at_its_line(place: Place) -> None:
    """``max_calls = { web_search = 3 }`` under ``[tools]``: every key is on the table's line."""
    path = place.write("settings.toml", "[tools]\nmax_calls = { web_search = 3, fetch = 1 }\n")
    res = budgetconf.resolve(env={})
    assert res["tools.max_calls"] == {"fetch": 1, "web_search": 3}
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:2"


def test_a_pyprojects_table_is_read_under_tool_budgetconf(place: Place) -> None:
    """``[tool.budgetconf.tools.max_calls]`` in a pyproject.toml, each key at its line."""
    path = place.write(
        "pyproject.toml", '[project]\nname = "x"\n\n[tool.budgetconf.tools.max_calls]\nfetch = 2\n'
    )
    res = budgetconf.resolve(env={})
    assert res["tools.max_calls"] == {"fetch": 2}
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:5"
