"""budgetconf init: a settings file that sets nothing, written whole, never over another."""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
import warnings
from pathlib import Path
from typing import Final

import jsonschema
import pytest

import budgetconf
from budgetconf.cli import _init, main

from conftest import Place
from helpers.presetfiles import preset_file

DEFAULTS = {f.path: f.default for f in budgetconf.resolve(env={}).schema}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _clean(*, profile: str | None = None) -> budgetconf.Resolution:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a written file must read back without a warning
        return budgetconf.resolve(env={}, profile=profile)


def test_the_project_file_changes_nothing_and_explains_every_field(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """./settings.toml: all comments, read back as loaded with no value; defaults unchanged."""
    code, out, err = run(["init"], capsys)
    assert (code, err) == (0, "")
    path = place.work / "settings.toml"
    assert out == f"wrote {path}: project settings for preset budgetconf, nothing set yet\n"
    text = path.read_text()
    assert tomllib.loads(text) == {}
    assert "# max_steps = 40\n" in text
    assert '# last_turn = "wrap_up"\n' in text
    assert "# [limits]\n" in text
    assert "BUDGETCONF_MAX_STEPS" in text
    assert "--timeout-seconds" in text
    res = _clean()
    assert res.values == DEFAULTS
    project = next(s for s in res.sources if s.source == "project")
    assert (project.status.value, project.offered) == ("loaded", 0)


def test_uncommenting_a_line_sets_that_value(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Switch on `[loop]` and `max_steps`, and the file's value wins at its own line."""
    assert main(["init"]) == 0
    path = place.work / "settings.toml"
    text = (
        path.read_text().replace("# [loop]", "[loop]").replace("# max_steps = 40", "max_steps = 7")
    )
    path.write_text(text)
    line = text.splitlines().index("max_steps = 7") + 1
    res = _clean()
    assert res["loop.max_steps"] == 7
    assert res.trace("loop.max_steps").locator == f"{path}:{line}"


@pytest.mark.parametrize(
    ("args", "relative"),
    [
        (["--kind", "global"], ".budgetconf/settings.json"),
        (["--format", "json"], ".budgetconf/settings.json"),
        (["--kind", "profile", "fast"], ".budgetconf/profiles/fast.json"),
    ],
)
def test_the_json_files_say_what_they_hold_in_a_comment_key(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], relative: str
) -> None:
    """global and profile files: JSON with one `$comment` list, read back with nothing set."""
    assert main(["init", *args]) == 0
    path = place.home / relative
    document = json.loads(path.read_text())
    assert list(document) == ["$comment"]
    (note,) = [n for n in document["$comment"] if n.startswith("loop.max_steps: ")]
    assert "Takes an integer >= 1. Default: 40. Environment: BUDGETCONF_MAX_STEPS." in note
    kind = "profile" if "profile" in args else "global"
    res = _clean(profile="fast" if kind == "profile" else None)
    assert res.values == DEFAULTS
    report = next(s for s in res.sources if s.source == kind)
    assert (report.status.value, report.offered) == ("loaded", 0)


def test_the_json_file_validates_against_the_schema(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An editor given `budgetconf schema` finds nothing wrong with the written file."""
    assert main(["init", "--kind", "global"]) == 0
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    document = json.loads((place.home / ".budgetconf/settings.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(document)) == []


def test_an_existing_file_is_kept_without_force(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 and one line; the file is untouched; with --force it is replaced."""
    place.write("settings.toml", "[loop]\nmax_steps = 3\n")
    code, out, err = run(["init"], capsys)
    assert (code, out) == (1, "")
    path = place.work / "settings.toml"
    assert err == f"budgetconf: error: {path} exists; pass --force to overwrite it\n"
    assert (place.work / "settings.toml").read_text() == "[loop]\nmax_steps = 3\n"
    assert main(["init", "--force"]) == 0
    assert tomllib.loads((place.work / "settings.toml").read_text()) == {}
    assert sorted(p.name for p in place.work.iterdir()) == ["settings.toml"]


def test_the_file_is_readable_as_an_ordinary_file_would_be(place: Place) -> None:
    """Not the 0600 of a temporary file: the umask decides."""
    old = os.umask(0o022)
    try:
        (place.work / "elsewhere").mkdir()
        assert main(["init", "elsewhere/budget.toml"]) == 0
    finally:
        os.umask(old)
    mode = stat.S_IMODE((place.work / "elsewhere/budget.toml").stat().st_mode)
    assert mode == 0o644


def test_a_failed_write_leaves_no_file_behind(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills up after the temporary file is made: one line, exit 1, nothing left."""

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code, _, err = run(["init"], capsys)
    assert code == 1
    assert err == (
        f"budgetconf: error: cannot write {place.work / 'settings.toml'}: No space left on device\n"
    )
    assert list(place.work.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "project", "--format", "json"], "the project file is TOML, not JSON"),
        (["--kind", "profile"], "init --kind profile needs a NAME or PATH"),
        (["--preset", "opendot"], "preset 'opendot' has no project source"),
        (["--preset", "nope"], "unknown preset"),
        (["--", "--max-steps", "3"], "init takes no application arguments"),
        (["--kind", "profile", "./p.toml"], "the profile file is JSON, not TOML: ./p.toml"),
        (["--kind", "project", "x.json"], "the project file is TOML, not JSON: x.json"),
        (["--format", "toml", "y.json"], "--format toml, but y.json is a JSON file name"),
        (["--format", "json", "y.toml"], "--format json, but y.toml is a TOML file name"),
    ],
)
def test_usage_errors_exit_64_with_one_line(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """A request init cannot carry out (an extension against --kind or --format) writes nothing."""
    code, out, err = run(["init", *args], capsys)
    assert (code, out) == (64, "")
    assert re.fullmatch(rf"budgetconf: usage error: .*{re.escape(message)}.*\n", err)
    assert list(place.work.iterdir()) == []


def test_a_preset_without_a_default_project_path_needs_one(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A preset file whose project source names no path: init asks for PATH, then writes it."""
    preset_file(
        place.work,
        name="app",
        sources=["default", "project"],
        fields={"agent.turns": {"type": "int", "default": 5, "help": "Turns."}},
    )
    code, _, err = run(["init", "--preset", "app.toml"], capsys)
    assert code == 64
    assert "names no project file: give a PATH" in err
    assert main(["init", "--preset", "app.toml", "budget.toml"]) == 0
    assert "# turns = 5\n" in (place.work / "budget.toml").read_text()
    res = budgetconf.resolve("app.toml", project_file=Path("budget.toml"))
    assert res["agent.turns"] == 5


def test_a_file_that_reads_some_sections_lists_only_those(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project source with `sections = ["agent"]`: the written file leaves the others out."""
    preset_file(
        place.work,
        name="app",
        sources=[
            "default",
            {"kind": "project", "path": "app-settings.toml", "sections": ["agent"]},
        ],
        fields={
            "agent.turns": {"type": "int", "default": 5},
            "server.retries": {"type": "int", "default": 2},
        },
    )
    assert main(["init", "--preset", "app.toml"]) == 0
    text = (place.work / "app-settings.toml").read_text()
    assert "# [agent]\n" in text
    assert "server" not in text


def test_a_name_longer_than_a_comment_line_is_never_cut_in_two(place: Place) -> None:
    """A variable of 90 characters stays whole on its comment line, as explain never breaks one."""
    variable = "APP_" + "LONG_" * 17 + "STEPS"
    preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "project", "path": "settings.toml"}, "env"],
        fields={"loop.max_steps": {"type": "int", "default": 5, "env": [variable]}},
    )
    assert main(["init", "--preset", "app.toml"]) == 0
    lines = (place.work / "settings.toml").read_text().splitlines()
    assert f"# {variable}." in lines
    assert tomllib.loads("\n".join(lines)) == {}


@pytest.mark.parametrize(
    ("args", "name", "kind"),
    [
        (["x.json"], "x.json", "global"),
        (["y.toml"], "y.toml", "project"),
        (["--kind", "profile", "./p.json"], "p.json", "profile"),
    ],
)
def test_the_extension_gives_the_format(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], name: str, kind: str
) -> None:
    """Without --format, ``x.json`` is written as JSON (the global file) and ``y.toml`` as TOML."""
    code, out, _ = run(["init", *args], capsys)
    assert code == 0
    assert out.startswith(f"wrote {place.work / name}: {kind} settings")
    text = (place.work / name).read_text()
    if name.endswith(".json"):
        assert "$comment" in json.loads(text)
    else:
        assert tomllib.loads(text) == {}


def test_force_writes_through_a_symbolic_link(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--force on a link: the link stays, and its target gets the new text."""
    real = place.write("real.toml", "[loop]\nmax_steps = 3\n")
    link = place.work / "settings.toml"
    link.symlink_to(real.name)

    code, _, err = run(["init"], capsys)
    assert (code, err) == (1, f"budgetconf: error: {link} exists; pass --force to overwrite it\n")
    assert run(["init", "--force"], capsys)[0] == 0
    assert link.is_symlink()
    assert os.readlink(link) == real.name
    assert tomllib.loads(real.read_text()) == {}
    assert sorted(p.name for p in place.work.iterdir()) == ["real.toml", "settings.toml"]


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["new", "force"])
def test_a_directory_is_named_as_one(
    place: Place, capsys: pytest.CaptureFixture[str], force: list[str]
) -> None:
    """``init somedir``: "is a directory", exit 1, with or without --force; nothing left."""
    (place.work / "somedir").mkdir()
    code, _, err = run(["init", "somedir", *force], capsys)
    assert (code, err) == (1, f"budgetconf: error: {place.work / 'somedir'} is a directory\n")
    assert [p.name for p in place.work.iterdir()] == ["somedir"]
    assert list((place.work / "somedir").iterdir()) == []


@pytest.mark.parametrize(
    ("where", "reason"),
    [("/proc/nope.toml", "No such file or directory"), ("a-file/x.toml", "Not a directory")],
    ids=["proc", "under-a-file"],
)
def test_a_file_that_cannot_be_written_is_named_not_the_temporary(
    place: Place, capsys: pytest.CaptureFixture[str], where: str, reason: str
) -> None:
    """A folder that takes no file: "cannot write PATH: reason", exit 1, no temporary name."""
    place.write("a-file", "")
    code, _, err = run(["init", where], capsys)
    assert (code, err) == (1, f"budgetconf: error: cannot write {place.work / where}: {reason}\n")
    assert sorted(p.name for p in place.work.iterdir()) == ["a-file"]


def test_an_exclusive_create_never_overwrites(place: Place) -> None:
    """Where hard links fail, the fallback writes a new file and refuses an existing one."""
    path = str(place.work / "new.toml")
    _init.create_new(path, "# new\n")
    assert Path(path).read_text() == "# new\n"
    with pytest.raises(FileExistsError):
        _init.create_new(path, "# other\n")
    assert Path(path).read_text() == "# new\n"


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["new", "force"])
def test_a_missing_folder_is_named_and_never_created(
    place: Place, capsys: pytest.CaptureFixture[str], force: list[str]
) -> None:
    """``init nope/x/settings.toml``: one line naming the folder, exit 1, nothing made."""
    code, out, err = run(["init", "nope/x/settings.toml", *force], capsys)
    where = place.work / "nope/x/settings.toml"
    assert (code, out) == (1, "")
    assert err == f"budgetconf: error: cannot write {where}: no folder {where.parent}\n"
    assert list(place.work.iterdir()) == []


def test_the_presets_own_folder_is_made_for_its_file(place: Place) -> None:
    """``init --kind profile fast`` on a new home: the preset's profiles folder is its own."""
    assert not (place.home / ".budgetconf").exists()
    assert main(["init", "--kind", "profile", "fast"]) == 0
    assert (place.home / ".budgetconf/profiles/fast.json").is_file()


@pytest.mark.parametrize(
    ("args", "starts"),
    [([], "# Project settings"), (["--kind", "global"], "{"), (["--format", "json"], "{")],
)
def test_a_dash_writes_the_file_to_standard_output(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], starts: str
) -> None:
    """``init -``: the file's text on stdout, as ``report -o -`` does; no file named ``-``."""
    code, out, err = run(["init", "-", *args], capsys)
    assert (code, err) == (0, "")
    assert out.startswith(starts)
    if starts == "{":
        assert list(json.loads(out)) == ["$comment"]
    else:
        assert tomllib.loads(out) == {}
    assert list(place.work.iterdir()) == []
    assert list(place.home.iterdir()) == []


_SETTING: Final = re.compile(r'^# (\[[\w.]+\]|(?:\w+|"[^"]+") = .*)$', flags=re.MULTILINE)


@pytest.mark.parametrize("preset", ["budgetconf", "app.toml"])
def test_every_line_uncommented_is_valid_toml_that_check_passes(
    place: Place, capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    """Each field without a default shows an example of its kind: switched on, all pass check."""
    preset_file(
        place.work,
        sources=["default", {"kind": "project", "path": "settings.toml"}],
        fields={
            # a table before the section's other fields: written after them, under its header
            "agent.calls": {"type": "table", "values": "int", "keys": "tool-name", "ge": 1},
            "agent.turns": {"type": "int", "default": 5},
            "agent.steps": {"type": "int", "optional": True, "default_from": "agent.turns"},
            "agent.share": {"type": "number", "optional": True, "gt": 0, "lt": 0.5},
            "agent.few": {"type": "int", "optional": True, "ge": 2, "le": 3},
            "agent.mode": {"type": "enum", "choices": ["a", "b"], "optional": True},
            "agent.quiet": {"type": "bool", "optional": True},
            "agent.name": {"type": "text", "optional": True},
            "agent.token": {"type": "text", "secret": True, "default": "s3cret"},
            "ledger.url": {"type": "text", "default": "redis://agent:hunter2@127.0.0.1:6379/0"},
            "agent.keys": {
                "type": "table",
                "values": "text",
                "keys": "tool-name",
                "secret": True,
                "default": {"api": "s3cret"},
            },
            # a section of tables alone; a key TOML quotes
            "teams.scopes": {
                "type": "table",
                "values": "enum",
                "choices": ["x", "y"],
                "keys": "ledger-scope",
                "default": {"team:a/b": "y"},
            },
        },
    )
    assert main(["init", "--preset", preset, "all.toml"]) == 0
    text = (place.work / "all.toml").read_text()
    assert re.search(r"^# \w+ =$", text, flags=re.MULTILINE) is None
    assert "s3cret" not in text  # a secret's default is never written
    assert "hunter2" not in text  # nor a URL's password
    switched_on = _SETTING.sub(r"\1", text)
    document = tomllib.loads(switched_on)
    written = {f"{s}.{k}" for s, table in document.items() for k in table}
    fields = {f.path for f in budgetconf.resolve(preset, env={}).schema}
    assert written == fields
    (place.work / "all.toml").write_text(switched_on)
    capsys.readouterr()
    code, out, err = run(["check", "--preset", preset, "--project", "all.toml"], capsys)
    assert (code, err) == (0, ""), out


def test_a_field_without_a_default_shows_an_example_of_its_kind(place: Place) -> None:
    """Unset limits take a number within their bounds, the ledger's URL a valid address."""
    assert main(["init"]) == 0
    text = (place.work / "settings.toml").read_text()
    assert "# max_tool_calls = 100\n" in text
    assert "# max_cost_usd = 10.0\n" in text
    assert '# url = "sqlite:///ledger.db"\n' in text


def test_a_table_is_a_commented_table_of_its_own_with_an_example_key(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``# [tools.max_calls]`` / ``# web_search = 100``, the key rule's example: switched on,
    the key is set at its own line; the JSON files show the same as a ``$comment``."""
    assert main(["init"]) == 0
    path = place.work / "settings.toml"
    text = path.read_text()
    assert "\n# [tools.max_calls]\n# web_search = 100\n" in text
    assert "# [tools]\n" not in text  # a section of one table: the table's header is enough
    prose = " ".join(line.removeprefix("# ") for line in text.splitlines())
    assert "Takes a table of tool-name keys, each an integer >= 0." in prose
    path.write_text(
        text.replace("# [tools.max_calls]\n# web_search = 100", "[tools.max_calls]\nweb_search = 3")
    )
    line = path.read_text().splitlines().index("web_search = 3") + 1
    res = _clean()
    assert res.sections()["tools"] == {"max_calls": {"web_search": 3}}
    assert res.trace("tools.max_calls.web_search").locator == f"{path}:{line}"

    assert main(["init", "--kind", "global"]) == 0
    notes = json.loads((place.home / ".budgetconf/settings.json").read_text())["$comment"]
    (note,) = [n for n in notes if n.startswith("tools.max_calls: ")]
    assert note.endswith(' Set as "tools": {"max_calls": {"web_search": 100}}.')


TABLE: Final = "[tool.budgetconf.loop]\nmax_steps = 7\n"


@pytest.mark.parametrize(
    ("files", "args", "found"),
    [
        ({"pyproject.toml": TABLE}, [], "pyproject.toml [tool.budgetconf]"),
        ({"../pyproject.toml": TABLE}, [], "../pyproject.toml [tool.budgetconf]"),
        ({"../settings.toml": "[loop]\nmax_steps = 7\n"}, [], "../settings.toml"),
        ({"../pyproject.toml": TABLE}, ["./settings.toml"], "../pyproject.toml [tool.budgetconf]"),
    ],
    ids=["pyproject-here", "pyproject-above", "settings-above", "path-here"],
)
def test_a_file_that_would_hide_the_project_file_is_refused(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    args: list[str],
    found: str,
) -> None:
    """The project's own file, found from here, is named: exit 1, nothing written, value kept."""
    work = place.work / "sub"
    work.mkdir()
    os.chdir(work)
    for name, text in files.items():
        (work / name).write_text(text)
    code, out, err = run(["init", *args], capsys)
    assert (code, out) == (1, "")
    shown = os.path.normpath(work / found.split(" ")[0])
    table = " [tool.budgetconf]" if "[" in found else ""
    assert err == (
        f"budgetconf: error: {work / 'settings.toml'} would hide {shown}{table}, the project"
        " file read here; set values there, or write another file and name it with --project\n"
    )
    assert not (work / "settings.toml").exists()
    assert budgetconf.resolve(env={})["loop.max_steps"] == 7


def test_a_file_the_nearer_project_file_would_hide_is_refused(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``init ../settings.toml`` below a folder with its own: the nearer file is named."""
    (place.work / "sub").mkdir()
    near = place.write("sub/settings.toml", "[loop]\nmax_steps = 7\n")
    os.chdir(place.work / "sub")
    code, _, err = run(["init", "../settings.toml"], capsys)
    assert code == 1
    assert err == (
        f"budgetconf: error: {place.work / 'settings.toml'} would not be read here: {near}"
        " is the project file found first; write it there, or name it with --project\n"
    )
    assert not (place.work / "settings.toml").exists()


def test_a_file_out_of_the_search_is_written(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pyproject.toml without the table, or a PATH the search never reads, hides nothing."""
    place.write("pyproject.toml", "[tool.other]\nx = 1\n")
    assert main(["init"]) == 0
    assert main(["init", "ci.toml"]) == 0


def test_outside_any_repository_the_search_reaches_the_root_and_hides_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No repository and no home above: the folders looked in end at the working directory."""
    work = tmp_path / "no-repository" / "here"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.chdir(work)
    code, out, _ = run(["init"], capsys)
    assert code == 0
    assert out.startswith(f"wrote {work / 'settings.toml'}")


def test_with_no_working_directory_a_named_path_is_written(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A removed working directory has no project file to hide: an absolute PATH is written."""
    gone = place.work / "gone"
    gone.mkdir()
    os.chdir(gone)
    gone.rmdir()
    target = place.work / "settings.toml"
    code, _, _ = run(["init", str(target)], capsys)
    assert code == 0
    assert target.exists()
