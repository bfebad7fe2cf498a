"""The budgetconf command: explain, check, presets — formats, exit codes, one-line errors."""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

import budgetconf
from budgetconf._presets import preset_names
from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_process(
    args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    script = Path(sys.executable).with_name("budgetconf")
    return subprocess.run(
        [str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


# --- explain --------------------------------------------------------------------------


def test_explain_table_shows_winner_evidence_and_sources(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table gives each value and locator, the candidates under it, the sources and warnings."""
    place.write(
        ".budgetconf/settings.json",
        '{\n  "loop": {\n    "max_steps": 12\n  }\n}\n',
        base=place.home,
    )
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    monkeypatch.setenv("BUDGETCONF_MAX_TOOL_CALLS_PER_TURN", "ten")
    monkeypatch.setenv("BUDGETCONF_MAX_STEP", "9")

    code, out, err = run(["explain"], capsys)

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "preset budgetconf  (built-in)"
    start = lines.index(next(line for line in lines if line.startswith("loop.max_steps")))
    assert [line.split() for line in lines[start : start + 6]] == [
        ["loop.max_steps", "7", "env:BUDGETCONF_MAX_STEPS"],
        ["shadowed", "12", "~/.budgetconf/settings.json:3"],
        ["shadowed", "40", "built-in", "default"],
        ["loop.max_tool_calls_per_turn", "10", "built-in", "default"],
        ["rejected", "'ten'", "env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN"],
        ["not", "an", "integer:", "'ten'"],
    ]
    assert "limits.max_tokens" in out
    assert "unset" in out
    assert ["global", "loaded", "~/.budgetconf/settings.json,", "1", "value"] in [
        line.split() for line in lines
    ]
    assert ["project", "missing", "./settings.toml"] in [line.split() for line in lines]
    assert any(
        line.startswith("warning BUDGETCONF_MAX_STEP is not a known variable") for line in lines
    )
    assert all(line == line.rstrip() for line in lines)


def test_piped_explain_never_wraps_nor_breaks_a_path_or_a_name(place: Place) -> None:
    """Piped, with COLUMNS=80: no escape codes, and every row, locator and warning on one line."""
    deep = place.work / ("very-long-folder-name-" * 4) / "another-long-nested-folder"
    deep.mkdir(parents=True)
    (deep / "settings.toml").write_text("[loop]\nmax_tool_calls_per_turn = 3\nmax_step = 1\n")
    result = run_process(
        ["explain", "--project", str(deep / "settings.toml"), "--", "--last-turn", "sometimes"],
        env={"COLUMNS": "80", "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "x" * 60},
        cwd=place.home,
    )
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout
    lines = result.stdout.splitlines()
    located = f"{deep}/settings.toml:2"
    row = ["loop.max_tool_calls_per_turn", "3", located]
    assert row in [line.split() for line in lines]
    assert any(line.split()[-1:] == ["env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN"] for line in lines)
    warnings = [line for line in lines if line.startswith("warning ")]
    assert len(warnings) == 3  # the key, the flag's value and the variable's: one line each
    assert any(line.endswith(f"ignored, using 3 from {located}") for line in warnings)
    assert lines[-3:] == warnings  # and no warning goes on to a second line


def test_a_long_field_path_is_never_folded(place: Place) -> None:
    """An application's long field name stays whole on its line, piped as on a terminal."""
    path = f"{'s' * 30}.{'n' * 60}"
    preset = preset_file(place.work, fields={path: {"type": "int", "default": 1}})
    piped = run_process(["explain", "--preset", str(preset)], env={"COLUMNS": "40"})
    assert piped.returncode == 0
    assert [path, "1", "built-in", "default"] in [
        line.split() for line in piped.stdout.splitlines()
    ]
    shown = _through_a_terminal(["explain", "--preset", str(preset)], {"NO_COLOR": "1"}, columns=40)
    assert [path, "1", "built-in", "default"] in [line.split() for line in shown.splitlines()]


def test_on_a_narrow_terminal_only_prose_wraps_and_only_at_spaces(place: Place) -> None:
    """At 60 columns a warning wraps between words; a path longer than the terminal is whole."""
    deep = place.work / ("very-long-folder-name-" * 4) / "another-long-nested-folder"
    deep.mkdir(parents=True)
    (deep / "settings.toml").write_text("[loop]\nmax_tool_calls_per_turn = 3\n")
    env = {"NO_COLOR": "1", "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "ten", "BUDGETCONF_MAX_STEP": "9"}
    shown = _through_a_terminal(
        ["explain", "--project", str(deep / "settings.toml")], env, columns=60, cwd=place.home
    )
    lines = shown.splitlines()
    located = f"{deep}/settings.toml:2"
    assert any(line.split()[-1:] == [located] for line in lines)  # whole, past the 60 columns
    at = next(i for i, line in enumerate(lines) if "BUDGETCONF_MAX_STEP is" in line)
    assert lines[at : at + 2] == [
        "warning BUDGETCONF_MAX_STEP is not a known variable; did you",
        "        mean BUDGETCONF_MAX_STEPS?",
    ]
    rest = next(i for i, line in enumerate(lines) if "from env:BUDGETCONF_MAX_TOOL" in line)
    words = " ".join(line.strip() for line in lines[rest:]).removeprefix("warning ")
    assert words == (
        "loop.max_tool_calls_per_turn from env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN: not an"
        f" integer: 'ten'; ignored, using 3 from {located}"
    )


def _through_a_terminal(
    args: list[str], env: dict[str, str], *, columns: int = 80, cwd: Path | None = None
) -> str:
    """What the command prints when its stdout is a terminal ``columns`` wide."""
    primary, secondary = os.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    script = Path(sys.executable).with_name("budgetconf")
    process = subprocess.Popen(
        [str(script), *args],
        stdout=secondary,
        stderr=subprocess.DEVNULL,
        env={
            **{k: v for k, v in os.environ.items() if k != "COLUMNS"},
            "TERM": "xterm-256color",
            **env,
        },
        cwd=cwd,
    )
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([primary], [], [], 10)
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closed when the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=10)
    os.close(primary)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_explain_uses_colour_on_a_terminal_unless_no_color_is_set() -> None:
    """On a terminal the table is coloured; NO_COLOR turns colour off."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = _through_a_terminal(["explain", "loop.max_steps"], {**env})
    plain = _through_a_terminal(["explain", "loop.max_steps"], {"NO_COLOR": "1"})
    assert "\x1b[" in coloured
    assert "loop.max_steps" in plain
    assert "\x1b" not in plain


def test_explain_json_from_an_empty_directory_shows_every_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a clean home and an empty cwd, every field comes from `default`."""
    code, out, _ = run(["explain", "--format", "json"], capsys)
    document = json.loads(out)
    assert code == 0
    assert document["version"] == 1
    assert document["preset"] == "budgetconf"
    assert {f["source"] for f in document["fields"].values()} == {"default"}
    assert document["values"]["loop.max_steps"] == 40


def test_explain_json_with_an_env_override(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BUDGETCONF_MAX_STEPS=7 gives 7 from env:BUDGETCONF_MAX_STEPS and the default shadowed."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    _, out, _ = run(["explain", "--format", "json"], capsys)
    entry = json.loads(out)["fields"]["loop.max_steps"]
    assert (entry["value"], entry["source"], entry["locator"]) == (
        7,
        "env",
        "env:BUDGETCONF_MAX_STEPS",
    )
    assert [(c["source"], c["status"]) for c in entry["candidates"]] == [
        ("default", "shadowed"),
        ("env", "won"),
    ]


def test_explain_json_with_a_rejected_env_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BUDGETCONF_MAX_STEPS=abc leaves 40 and shows the env candidate rejected, exit 0."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "abc")
    code, out, err = run(["explain", "--format", "json"], capsys)
    entry = json.loads(out)["fields"]["loop.max_steps"]
    assert (code, err, entry["value"]) == (0, "", 40)
    assert entry["candidates"][1] == {
        "source": "env",
        "locator": "env:BUDGETCONF_MAX_STEPS",
        "raw": "abc",
        "status": "rejected",
        "reason": "not an integer: 'abc'",
    }


def test_explain_toml_reads_back_as_a_project_file(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format toml output, saved as settings.toml, resolves to the same values from `project`."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    monkeypatch.setenv("BUDGETCONF_TIMEOUT_SECONDS", "30")
    code, out, _ = run(["explain", "--format", "toml"], capsys)
    assert code == 0
    assert "max_tokens" not in tomllib.loads(out)["limits"]
    before = budgetconf.resolve().values
    monkeypatch.delenv("BUDGETCONF_MAX_STEPS")
    monkeypatch.delenv("BUDGETCONF_TIMEOUT_SECONDS")
    place.write("settings.toml", out)
    res = budgetconf.resolve()
    assert res.values == before
    assert res.trace("loop.max_steps").source == "project"


@pytest.mark.parametrize(
    ("names", "how"),
    [
        ({"env": ["APP_DSN"], "flags": ["--dsn"]}, "set it with APP_DSN"),
        ({"flags": ["--dsn"]}, "set it with --dsn"),
        ({}, "write it here under [db] in full"),
    ],
    ids=["variable", "flag", "neither"],
)
def test_explain_toml_leaves_out_any_text_it_would_write_with_a_password_masked(
    names: dict[str, list[str]],
    how: str,
    place: Place,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An application's text field holding a URL is shown with its password masked: the TOML
    leaves it out, says why and how to set it, and the rest reads back as it was."""
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "project", "path": "settings.toml"}, "env", "cli"],
        fields={
            "db.dsn": {"type": "text", "default": "postgres://app:hunter2@db:5432/x", **names},
            "db.pool": {"type": "int", "default": 5},
        },
    )
    code, out, err = run(["explain", "--preset", str(preset), "--format", "toml"], capsys)
    assert (code, err) == (0, "")
    assert "hunter2" not in out
    expected = f"# db.dsn is left out: its password would be written as ***, not as itself; {how}."
    assert expected in out.splitlines()
    assert tomllib.loads(out) == {"db": {"pool": 5}}
    place.write("settings.toml", out)
    code, _, err = run(["check", "--preset", str(preset)], capsys)
    assert (code, err) == (0, "")
    res = budgetconf.resolve(preset, env={})
    assert res.trace("db.pool").source == "project"
    assert res["db.dsn"] == "postgres://app:hunter2@db:5432/x"


def test_check_fails_on_any_text_read_back_with_the_mask_for_its_password(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every text is shown with a URL's password masked, so any text read back with ``***`` for
    a password is warned of, in one line that shows no more of it than its locator."""
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "project", "path": "settings.toml"}],
        fields={"db.dsn": {"type": "text", "optional": True}},
    )
    path = place.write("settings.toml", '[db]\ndsn = "postgres://app:***@db:5432/x"\n')
    code, out, err = run(["check", "--preset", str(preset)], capsys)
    assert code == 1
    assert err == (
        f"budgetconf: warning: db.dsn from {path}:2 (project): the URL's password is ***, the"
        " mask shown in place of a password, not a password (copied from explain's output?)\n"
    )
    assert out.startswith("check failed: 0 errors, 1 warning")


def test_errors_print_one_line_each_on_stderr_and_exit_1(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rejected file value under the error policy: the table prints, stderr has the error."""
    path = place.write("settings.toml", "[loop]\nmax_steps = 0\n")
    code, out, err = run(["explain"], capsys)
    assert code == 1
    assert "loop.max_steps" in out
    assert (
        err == f"budgetconf: error: loop.max_steps from {path}:2 (project): must be >= 1, got 0\n"
    )


def test_json_errors_stay_in_the_document(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """In JSON the document is printed with the error and the source status `error`."""
    place.write("settings.toml", "[loop\n")
    code, out, err = run(["explain", "--format", "json"], capsys)
    document = json.loads(out)
    assert (code, err) == (1, "")
    project = next(s for s in document["sources"] if s["source"] == "project")
    assert project["status"] == "error"
    assert document["errors"] == [project["error"]]
    assert "invalid TOML" in project["error"]
    assert "settings.toml:1" in project["error"]


def test_app_arguments_after_a_double_dash_are_the_cli_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`-- --max-steps 300` feeds the cli source."""
    _, out, _ = run(["explain", "--format", "json", "--", "--max-steps", "300"], capsys)
    entry = json.loads(out)["fields"]["loop.max_steps"]
    assert (entry["value"], entry["source"], entry["locator"]) == (300, "cli", "--max-steps")


def test_set_feeds_the_explicit_source_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    """--set FIELD=VALUE parses VALUE as text, like a flag, into the explicit source."""
    _, out, _ = run(["explain", "--format", "json", "--set", "limits.max_cost_usd=1.5"], capsys)
    entry = json.loads(out)["fields"]["limits.max_cost_usd"]
    assert (entry["value"], entry["source"], entry["locator"]) == (1.5, "explicit", "explicit")


def test_budgetconf_preset_chooses_the_preset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --preset, BUDGETCONF_PRESET names it."""
    monkeypatch.setenv("BUDGETCONF_PRESET", "opendot")
    _, out, _ = run(["explain", "--format", "json"], capsys)
    assert json.loads(out)["preset"] == "opendot"


def test_a_broken_preset_file_still_prints_a_json_document(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An application preset that cannot load: exit 1, and JSON readers still get a document."""
    place.write("app.toml", "format = 1\n")
    code, out, _ = run(["explain", "--format", "json", "--preset", "app.toml"], capsys)
    document = json.loads(out)
    assert code == 1
    assert document["errors"] == [
        f"preset {place.work}/app.toml: fields: a preset needs at least one field"
    ]
    code, out, err = run(["explain", "--preset", "app.toml"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: preset ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain", "--format", "yaml"], "invalid choice: 'yaml'"),
        (
            ["explain", "loop.max_step"],
            "unknown field 'loop.max_step'; did you mean 'loop.max_steps'?",
        ),
        (["explain", "--set", "loop.max_steps"], "--set takes FIELD=VALUE, got one with no '='"),
        (["explain", "--preset", "opendots"], "unknown preset 'opendots'; did you mean 'opendot'?"),
        (
            ["explain", "--preset", "opendot", "--", "--max-steps", "3"],
            "has no cli source for arguments after --",
        ),
        (["explain", "--preset", "opendot", "--global", "g.json"], "has no global source"),
        (["explain", "--step", "review"], "--step needs --workflow"),
        (["explain", "--bogus"], "unrecognized arguments: --bogus"),
        (["presets", "--", "x"], "presets takes no application arguments"),
        ([], "COMMAND"),
    ],
)
def test_usage_errors_exit_64_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """Every usage error is one line on stderr (two with the help summary) and exit 64."""
    code, out, err = run(args, capsys)
    assert code == 64
    assert out == ""
    assert message in err
    if args:
        assert err.count("\n") == 1
        assert err.startswith("budgetconf: usage error: ")


def test_an_unknown_set_field_is_an_error_not_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A typo in --set is reported like one in code: exit 1, the document says why."""
    code, out, _ = run(["explain", "--format", "json", "--set", "loop.max_step=5"], capsys)
    assert code == 1
    assert json.loads(out)["errors"] == [
        "loop.max_step from explicit: unknown field; did you mean 'loop.max_steps'?"
    ]
    _, _, err = run(["explain", "--set", "max_turns=5"], capsys)
    assert err == (
        "budgetconf: error: max_turns from explicit: unknown field; "
        "did you mean 'loop.max_turns'?\n"
    )


# --- check, presets, version ----------------------------------------------------------


def test_check_passes_on_a_clean_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    """check exits 0 and says so when there is nothing to report."""
    code, out, err = run(["check"], capsys)
    assert (code, out, err) == (0, "ok: 31 fields resolved, no warnings (preset budgetconf)\n", "")


def test_check_fails_on_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A warning alone (a rejected env value) makes check exit 1, for CI."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "abc")
    code, out, err = run(["check"], capsys)
    assert code == 1
    assert out == "check failed: 0 errors, 1 warning (preset budgetconf)\n"
    assert err == (
        "budgetconf: warning: loop.max_steps from env:BUDGETCONF_MAX_STEPS: "
        "not an integer: 'abc'; ignored, using 40 from built-in default\n"
    )
    code, out, _ = run(["check", "--format", "json"], capsys)
    assert code == 1
    assert json.loads(out)["warnings"]


def test_presets_lists_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    """presets prints each built-in preset's name and summary on one line."""
    code, out, _ = run(["presets"], capsys)
    lines = out.splitlines()
    assert code == 0
    assert [line.split()[0] for line in lines] == preset_names()
    assert all(len(line.split()) > 2 for line in lines)  # a name and a summary
    assert "OPENDOT_MAX_STEPS" in lines[1]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the package version."""
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"budgetconf {budgetconf.__version__}\n"


def test_python_dash_m_runs_the_same_command(place: Place) -> None:
    """python -m budgetconf is the budgetconf command."""
    result = subprocess.run(
        [sys.executable, "-m", "budgetconf", "explain", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=place.work,
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["values"]["loop.max_steps"] == 40


def test_the_module_entry_point_exits_with_the_commands_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """budgetconf/__main__.py hands the command line to main and exits with what it returns."""
    import runpy

    monkeypatch.delitem(sys.modules, "budgetconf.__main__", raising=False)  # runpy warns if set
    monkeypatch.setattr(sys, "argv", ["budgetconf", "explain", "--format", "json"])
    with pytest.raises(SystemExit) as caught:
        runpy.run_module("budgetconf", run_name="__main__")
    assert caught.value.code == 0
    assert json.loads(capsys.readouterr().out)["values"]["loop.max_steps"] == 40


def test_a_closed_pipe_ends_quietly(place: Place) -> None:
    """`budgetconf explain | head -1` prints no traceback when head stops reading."""
    result = subprocess.run(
        f"'{Path(sys.executable).with_name('budgetconf')}' explain --format json | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        cwd=place.work,
    )
    assert result.stdout == '{\n  "versi'
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["explain", "--format", "json"], ["presets"]])
def test_a_pipe_closed_before_the_output_ends_quietly_with_exit_1(
    place: Place, args: list[str]
) -> None:
    """The reader is gone before a byte is written: exit 1 and nothing on stderr, not an error."""
    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails with EPIPE, whenever it happens
    try:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("budgetconf")), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            cwd=place.work,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")


def test_a_closed_pipe_in_the_same_process_returns_1_and_swallows_later_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """main returns 1 with nothing said, and stdout then writes to nowhere: no error at exit."""
    import io

    read, write = os.pipe()
    os.close(read)
    stdout = io.TextIOWrapper(os.fdopen(write, "wb", buffering=0), write_through=True)
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["explain", "--format", "json"]) == 1
    assert stderr.getvalue() == ""
    assert stdout.write("more\n") == 5  # the descriptor is /dev/null now, not the broken pipe
    stdout.close()


# --- nothing from a file reaches the terminal as a command, nothing ends in a traceback ---


def test_control_characters_from_files_are_escaped(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown key that holds terminal escapes is shown escaped, in check and in the table."""
    place.write("settings.toml", '[loop]\n"\\u001b[31mRED\\u001b]0;title\\u0007" = 1\n')
    for args in (["check"], ["explain"]):
        main(args)
        out, err = capsys.readouterr()
        assert "\x1b" not in out + err
        assert "\x07" not in out + err
        assert "\\x1b[31mRED" in out + err


def test_rich_markup_in_a_path_or_key_is_shown_as_written(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder named like rich markup, or a key like a closing tag, is text, not a style."""
    folder = place.work / "[bold]x"
    folder.mkdir()
    (folder / "settings.toml").write_text('[loop]\nmax_steps = 3\n"[/]" = 1\n')
    assert main(["explain", "--project", str(folder / "settings.toml")]) == 0
    out = capsys.readouterr().out
    assert "./[bold]x/settings.toml:2" in out
    assert "loop.[/] in ./[bold]x/settings.toml:3 is not a known key" in out


def test_a_long_winning_value_is_never_cut(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer is shown whole; only rejected raw values are shortened in the table."""
    monkeypatch.setenv("BUDGETCONF_MAX_TOKENS", "9223372036854775807")
    monkeypatch.setenv("BUDGETCONF_MAX_COST_USD", "x" * 40)
    main(["explain", "limits.max_tokens", "limits.max_cost_usd"])
    out = capsys.readouterr().out
    assert "9223372036854775807" in out
    assert "'xxxxxxxxxxxxxx…" in out


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (
            lambda p: p.write("settings.toml", "[loop]\nmax_steps = " + "9" * 5000 + "\n"),
            ["explain"],
            "invalid TOML",
        ),
        (
            lambda p: p.write("k.yaml", "loop:\n  ? " + "9" * 5000 + "\n  : 1\n"),
            ["explain", "--workflow", "k.yaml"],
            "invalid YAML",
        ),
        (
            lambda p: p.write("app.toml", "format = 1\nmax_file_bytes = " + "9" * 5000 + "\n"),
            ["explain", "--preset", "app.toml"],
            "invalid TOML",
        ),
        (
            lambda p: p.write("app.toml", "x = " + "[" * 3000 + "]" * 3000 + "\n"),
            ["explain", "--preset", "app.toml"],
            "invalid TOML",
        ),
    ],
    ids=["toml-huge-int", "yaml-huge-key", "preset-huge-int", "preset-deep"],
)
def test_hostile_files_give_one_line_errors(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[Place], Path],
    args: list[str],
    message: str,
) -> None:
    """Integers past Python's digit limit and deep nesting are errors, never tracebacks."""
    setup(place)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_bytes_the_locale_cannot_encode_do_not_crash_output(place: Place) -> None:
    """A path with undecodable bytes prints escaped even under a strict UTF-8 stdout."""
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("budgetconf")).encode(),
            b"explain",
            b"--profile",
            b"a\xff.json",
            b"--format",
            b"json",
        ],
        capture_output=True,
        check=False,
        cwd=place.work,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    assert b"a\\udcff.json" in result.stdout
