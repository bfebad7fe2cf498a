"""What the commands print and write: nothing a terminal acts on, nothing echoed without bound.

A preset's name, a file's name, its keys and values, a variable, a step's
name, a server's answer: each reaches every command's output escaped, and a
value or a list repeated in a message keeps only its start.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TextIO, cast

import pytest

import budgetconf
from budgetconf import cli
from budgetconf._engine import load_preset
from budgetconf.cli import main
from budgetconf.cli._output import Guarded
from budgetconf.cli._table import render

from conftest import Place
from helpers.chat_server import Failure, reply, serving
from helpers.presetfiles import preset_file

#: a window title, a cleared screen, a C1 CSI, a right-to-left override, a DEL
HOSTILE = "ev\x1b]0;owned\x07il\x1b[2J\x9b31m\u202ex\x7f"
#: what must never reach the terminal or a generated file as it is
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\x7f")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


def _strings(data: object) -> list[str]:
    """Every string of a JSON document, keys included."""
    if isinstance(data, dict):
        return [s for key, value in data.items() for s in (key, *_strings(value))]
    if isinstance(data, list):
        return [s for item in data for s in _strings(item)]
    return [data] if isinstance(data, str) else []


def _hostile_preset(place: Place, name: str = HOSTILE) -> Path:
    return preset_file(
        place.work,
        name=name,
        sources=[
            "default",
            {"kind": "global", "path": "./global.json"},
            {"kind": "project", "path": "./settings.toml"},
            {"kind": "env", "prefix": "APP_"},
            "explicit",
        ],
        fields={
            "loop.max_steps": {"type": "int", "default": 5, "env": ["APP_MAX_STEPS"]},
            "loop.mode": {"type": "enum", "choices": ["fast", "slow"], "default": "fast"},
        },
    )


@pytest.mark.parametrize(
    "args",
    [
        ["explain"],
        ["check"],
        ["explain", "--format", "toml"],
        ["explain", "--format", "json"],
        ["explain", "--diff", "--set", "loop.max_steps=7"],
        ["explain", "--format", "json", "--diff", "--set", "loop.max_steps=7"],
        ["schema"],
        ["explain", "--profile", "p"],  # a usage error that names the preset
    ],
)
def test_a_preset_name_with_escape_sequences_reaches_no_output_raw(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """The name is shown escaped in every command and format; JSON and TOML read back whole."""
    preset = _hostile_preset(place)
    command, *rest = args
    _, out, err = run([command, "--preset", str(preset), *rest], capsys)
    assert _raw(out + err) == []
    assert "ev\\x1b]0;owned\\x07il" in out + err or "ev\\u001b]0;owned\\u0007il" in out
    if "json" in args or command == "schema":
        assert any(HOSTILE in text for text in _strings(json.loads(out)))
    if "toml" in args:
        assert tomllib.loads(out) == {"loop": {"max_steps": 5, "mode": "fast"}}


@pytest.mark.parametrize("file", ["settings.toml", "settings.json"])
def test_init_for_a_preset_whose_name_holds_lines_writes_a_file_that_sets_nothing(
    place: Place, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    """A name of several lines stays in its comment; the file sets no value, and says so."""
    name = f"n\n[loop]\nmax_steps = 1\n#{HOSTILE}"
    preset = _hostile_preset(place, name)
    kind = ["--kind", "global"] if file.endswith(".json") else []
    code, out, err = run(["init", "--preset", str(preset), *kind, file], capsys)
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    written = (place.work / file).read_text()
    assert _raw(written) == []
    if file.endswith(".toml"):
        assert tomllib.loads(written) == {}
        assert written.splitlines()[0].startswith("# Project settings for preset n\\n[loop]\\n")
    else:
        assert name in json.loads(written)["$comment"][0]
    code, out, _ = run(["explain", "--preset", str(preset), "--format", "json"], capsys)
    assert json.loads(out)["fields"]["loop.max_steps"]["source"] == "default"


def test_a_json_document_spells_c1_del_and_overrides_as_escapes(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """json.dumps lets U+0080-U+009F and DEL through; the document never does, yet loads whole."""
    value = "9\x9b\x85\x7f\u202e\u2028"
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", value)
    _, out, _ = run(["explain", "--format", "json"], capsys)
    assert [c for c in value if c in out] == ["9"]
    assert "9\\u009b\\u0085\\u007f\\u202e\\u2028" in out
    (rejected,) = json.loads(out)["fields"]["loop.max_steps"]["candidates"][1:]
    assert rejected["raw"] == value


def test_a_file_name_with_control_characters_is_shown_escaped_as_a_locator(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The locator of a bad value in a file named with escapes: escaped in the table and errors."""
    path = place.write("odd\x1b[2J\u202e.toml", "[loop]\nmax_steps = 0\n")
    for args in (["explain"], ["check"], ["explain", "--format", "toml"]):
        _, out, err = run([*args, "--project", str(path)], capsys)
        assert _raw(out + err) == []
        assert "odd\\x1b[2J\\u202e.toml:2" in out + err


def test_warnings_step_and_profile_names_are_shown_escaped(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A step list, a step's key, a profile's name, each holding escapes: escaped everywhere."""
    place.write(
        "w.yaml",
        'steps:\n  - name: "a\\e[2J"\n    loop: {max_step: 3}\n  - name: "b\\u202e"\n',
    )
    for args in (
        ["explain", "--workflow", "w.yaml", "--step", "zzz"],
        ["check", "--workflow", "w.yaml", "--step", "a\x1b[2J"],
        ["explain", "--workflow", "w.yaml", "--step", "a\x1b[2J"],
        ["explain", "--profile", "x\x1b]0;t\x07"],
        ["explain", "--profile", "x\x1b]0;t\x07", "--format", "json"],
    ):
        _, out, err = run(args, capsys)
        assert _raw(out + err) == [], args
        assert "\\x1b" in out + err or "\\u001b" in out, args


def test_an_error_on_stderr_is_escaped_by_main(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A message that quotes a path as it is (a file that cannot be written) is escaped too."""
    place.write("plain", "")
    code, out, err = run(["init", "plain/\x1b]0;t\x07.toml"], capsys)
    assert code == 1
    assert _raw(out + err) == []
    shown = f"{place.work}/plain/\\x1b]0;t\\x07.toml"
    assert err == f"budgetconf: error: cannot write {shown}: Not a directory\n"


def test_main_gives_back_the_streams_it_guarded(capsys: pytest.CaptureFixture[str]) -> None:
    """While a command runs sys.stdout and sys.stderr are guarded; then they are as they were."""
    before = sys.stdout, sys.stderr
    with pytest.raises(SystemExit):
        main(["--version"])
    assert (sys.stdout, sys.stderr) == before
    assert capsys.readouterr().out.startswith("budgetconf ")


def test_a_server_s_answer_and_error_cannot_drive_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` against a server: its answer keeps its lines but not its escapes; so does its error."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    options = ["--model-name", "m", "--max-retries", "0"]
    with serving([reply(f"line one\n{HOSTILE}\tend")]) as chat:
        code, out, err = run(["run", "--base-url", chat.url, *options, "go"], capsys)
    assert (code, err) == (0, "")
    assert out == "line one\nev\\x1b]0;owned\\x07il\\x1b[2J\\x9b31m\\u202ex\\x7f\tend\n"
    failure = Failure(400, {"error": {"message": f"bad {HOSTILE}"}})
    with serving([failure]) as chat:
        code, out, err = run(["run", "--base-url", chat.url, *options, "go"], capsys)
    assert code == 1
    assert _raw(out + err) == []
    assert err.count("\n") == 1


# --- what is echoed back is bounded ------------------------------------------------------


def test_a_huge_variable_makes_a_small_table_and_a_whole_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """100,000 characters: the table shows 80 and says how many were cut; the JSON keeps them."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "a" * 100_000)
    _, out, _ = run(["explain"], capsys)
    assert len(out) < 3000
    cut = "'" + "a" * 80 + "…' (100000 characters, 99920 not shown)"
    assert f"not an integer: {cut}" in out
    _, out, err = run(["check"], capsys)
    assert len(err) < 500
    assert cut in err
    _, out, _ = run(["explain", "--format", "json"], capsys)
    (rejected,) = json.loads(out)["fields"]["loop.max_steps"]["candidates"][1:]
    assert rejected["raw"] == "a" * 100_000
    assert rejected["reason"] == f"not an integer: {cut}"


def test_a_missing_step_lists_ten_of_twenty_thousand_names(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The step list keeps its first ten names and counts the rest."""
    place.write("w.yaml", "steps:\n" + "".join(f"  - name: s{i}\n" for i in range(20_000)))
    code, _, err = run(["explain", "--workflow", "w.yaml", "--step", "zzz"], capsys)
    assert code == 1
    assert err.endswith(
        "no step named 'zzz'; its steps are s0, s1, s2, s3, s4, s5, s6, s7, s8, s9"
        " … and 19990 more\n"
    )


def _choices_preset(place: Place) -> Path:
    return preset_file(
        place.work,
        sources=["default", "env", "explicit"],
        fields={
            "loop.mode": {
                "type": "enum",
                "choices": [f"c{i}" for i in range(20_000)],
                "default": "c0",
                "env": ["APP_MODE"],
            }
        },
    )


@pytest.mark.parametrize(
    ("arrange", "args", "echo"),
    [
        (  # an unknown key of a file
            lambda p: p.write("settings.toml", f"[loop]\n{'k' * 100_000} = 1\n"),
            ["check"],
            "loop." + "k" * 75 + "… (100005 characters, 99925 not shown) in ",
        ),
        (  # a variable with the prefix that names nothing
            lambda p: None,
            ["check"],
            "BUDGETCONF_" + "V" * 69 + "… (100011 characters, 99931 not shown) is not",
        ),
        (  # a field --set names that does not exist
            lambda p: None,
            ["check", "--set", f"loop.{'x' * 100_000}=1"],
            "loop." + "x" * 75 + "… (100005 characters, 99925 not shown) from explicit",
        ),
        (  # a field explain is asked for that does not exist
            lambda p: None,
            ["explain", f"loop.{'x' * 100_000}"],
            "unknown field 'loop." + "x" * 75 + "…' (100005 characters, 99925 not shown)",
        ),
        (  # a --set without =: not quoted at all, as what was meant as a value may be a secret
            lambda p: None,
            ["explain", "--set", "y" * 100_000],
            "--set takes FIELD=VALUE, got one with no '='",
        ),
        (  # a preset that does not exist
            lambda p: None,
            ["explain", "--preset", "p" * 100_000],
            "unknown preset '" + "p" * 80 + "…' (100000 characters, 99920 not shown)",
        ),
        (  # a key twice in a JSON file
            lambda p: p.write(
                ".budgetconf/settings.json",
                json.dumps({"loop": {"d" * 100_000: 1}})[:-2] + f', "{"d" * 100_000}": 2}}}}',
                base=p.home,
            ),
            ["check"],
            "duplicate key '" + "d" * 80 + "…' (100000 characters, 99920 not shown)",
        ),
        (  # a value that is not one of twenty thousand choices
            lambda p: None,
            ["check", "--preset", "app.toml", "--set", "loop.mode=nope"],
            "not one of c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 … and 19990 more: 'nope'",
        ),
        (  # a body that is not a table: named by its type, never quoted
            lambda p: p.write("settings.toml", f'loop = "{"b" * 100_000}"\n'),
            ["check"],
            "section loop must be a table of fields, got a string",
        ),
    ],
)
def test_a_message_echoes_at_most_the_start_of_a_long_name_or_value(
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arrange: object,
    args: list[str],
    echo: str,
) -> None:
    """Keys, variable names, field names, flags' values, preset names, choices: each cut to 80."""
    assert callable(arrange)
    arrange(place)
    _choices_preset(place)
    monkeypatch.setenv("BUDGETCONF_" + "V" * 100_000, "1")
    _, out, err = run(args, capsys)
    assert echo in out + err
    assert len(out + err) < 2000


def test_the_toml_output_of_a_hostile_enum_value_reads_back(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A choice holding C1 and an override is written as TOML escapes and reads back as itself."""
    choice = "a\x9bb\u202ec"
    preset = preset_file(
        place.work,
        sources=["default"],
        fields={"loop.mode": {"type": "enum", "choices": [choice], "default": choice}},
    )
    code, out, _ = run(["explain", "--preset", str(preset), "--format", "toml"], capsys)
    assert code == 0
    assert _raw(out) == []
    assert 'mode = "a\\u009bb\\u202ec"' in out
    assert tomllib.loads(out) == {"loop": {"mode": choice}}


# --- the guard and the terminal layout, in process ---------------------------------------


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal, as a real one would."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_a_guarded_stream_is_its_stream_but_for_escapes() -> None:
    """It is a terminal when its stream is, has its encoding, and escapes each write."""
    stream = _Terminal()
    guarded = Guarded(stream)
    assert (guarded.isatty(), guarded.encoding, guarded.writable()) == (True, "utf-8", True)
    assert Guarded(io.StringIO()).encoding == "utf-8"  # a stream without one reads as UTF-8
    guarded.write("a\x1b[2Jb\n")
    guarded.flush()
    assert stream.getvalue() == "a\\x1b[2Jb\n"
    with open(os.devnull, "w", encoding="utf-8") as file:
        assert Guarded(file).fileno() == file.fileno()


def test_on_a_terminal_the_table_wraps_prose_at_spaces_and_keeps_names_whole(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 60 columns: a warning wraps between words, a field name longer than that stays whole."""
    path = f"{'s' * 30}.{'n' * 40}"
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "env", "prefix": "APP_"}],
        fields={path: {"type": "int", "default": 1, "env": ["APP_MAXIMUM_NUMBER_OF_STEPS"]}},
    )
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("NO_COLOR", "1")
    with pytest.warns(budgetconf.BudgetConfWarning, match="not a known variable"):
        res = budgetconf.resolve(str(preset), env={"APP_MAXIMUM_NUMBER_OF_STEP": "2"})
    out = _Terminal()
    render(res, load_preset(str(preset)), [], cast(TextIO, Guarded(out)))
    lines = out.getvalue().splitlines()
    assert lines[2].split() == [path, "1", "built-in", "default"]
    assert lines[-2:] == [
        "warning APP_MAXIMUM_NUMBER_OF_STEP is not a known variable;",
        "        did you mean APP_MAXIMUM_NUMBER_OF_STEPS?",
    ]


def test_paths_are_shown_whole_when_neither_home_nor_a_working_directory_shortens_them(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME=/ and a removed working directory give no prefix: a path is shown as it is."""
    from budgetconf.cli._table import Shortener

    gone = place.work / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("HOME", "/")
    shorten = Shortener()
    assert shorten(f"{gone}/settings.toml (line 2)") == f"{gone}/settings.toml (line 2)"
    assert shorten(None) == ""


def test_in_the_home_folder_the_global_file_reads_as_the_user_s_own(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from $HOME, the global file is ~/.budgetconf/settings.json, never ./.budgetconf/…,
    which would read as a file of the project."""
    place.write(".budgetconf/settings.json", '{"loop": {"max_steps": 8}}', base=place.home)
    monkeypatch.chdir(place.home)
    assert main(["explain", "loop.max_steps"]) == 0
    out = capsys.readouterr().out
    assert "loop.max_steps  8 ~/.budgetconf/settings.json:1\n" in out
    assert "./.budgetconf" not in out


@pytest.mark.parametrize(
    "args",
    [
        ["explain"],
        ["explain", "--format", "json"],
        ["check", "--format", "json"],
        ["presets"],
        ["schema"],
        ["completion", "bash"],
        ["init"],
        ["explain", "--help"],
        ["--version"],
    ],
)
@pytest.mark.parametrize("buffered", [True, False])
def test_a_full_standard_output_is_one_line_and_exit_1(
    tmp_path: Path, args: list[str], buffered: bool
) -> None:
    """stdout on /dev/full: every command says it cannot write to standard output, exit 1."""
    env = dict(os.environ, HOME=str(tmp_path))
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "budgetconf", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            check=False,
        )
    assert (result.returncode, result.stderr) == (
        1,
        "budgetconf: error: cannot write to standard output: No space left on device\n",
    )


@pytest.mark.parametrize("args", [["explain"], ["presets"], ["explain", "--help"]])
def test_a_full_standard_output_in_process_is_the_same_one_line(
    place: Place,
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """main() called by an application whose stdout is full says so, and leaves it unwritable
    no more: what the stream still holds is dropped, not raised at its next flush."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        monkeypatch.setattr(sys, "stdout", full)
        assert main(args) == 1
        full.write("more")
        full.flush()  # the stream now writes to the null device
    assert capsys.readouterr().err == (
        "budgetconf: error: cannot write to standard output: No space left on device\n"
    )


class _Full(io.StringIO):
    """A caller's own stream, with no file behind it, that is full."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_stream_of_a_callers_own_is_the_same_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _Full())
    assert main(["presets"]) == 1
    assert capsys.readouterr().err == (
        "budgetconf: error: cannot write to standard output: No space left on device\n"
    )


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        (KeyboardInterrupt(), 130, ""),
        (
            OSError(errno.EACCES, "Permission denied"),
            1,
            "budgetconf: error: [Errno 13] Permission denied\n",
        ),
    ],
    ids=["interrupted", "os-error"],
)
def test_an_interrupt_or_an_os_error_ends_a_command_with_its_code(
    raised: BaseException,
    code: int,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """^C is exit 130 and no traceback; an OSError a command did not expect is one line."""

    def command(args: list[str], out: TextIO, err: TextIO) -> int:
        raise raised

    monkeypatch.setattr(cli, "_main", command)
    assert main(["presets"]) == code
    assert capsys.readouterr().err == said


def test_a_full_standard_error_is_the_callers_to_see() -> None:
    """Only standard output's failure is a command's one line: stderr's is raised as it is."""
    guarded = Guarded(cast(TextIO, _Full()))
    with pytest.raises(OSError, match="No space left"):
        guarded.write("a warning")
