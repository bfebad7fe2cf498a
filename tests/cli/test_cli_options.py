"""The command line's own options: what each refuses, and what it does when given nothing.

An option that names a path, a file, a preset, a profile, a step or a
variable never means "the default" when given empty: it is a usage error,
whichever option and whichever command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.cli._resolution import GONE

from conftest import Place
from helpers.loops import ECHO, script


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


_RESOLUTION = ["--preset", "--global", "--project", "--profile", "--workflow", "--step"]


@pytest.mark.parametrize("command", ["explain", "check", "schema", "init"])
def test_an_empty_preset_is_a_usage_error_not_the_default(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--preset '' was the default preset in silence, while --global '' was refused."""
    code, out, err = run([command, "--preset", ""], capsys)
    assert (code, out, err) == (64, "", "budgetconf: usage error: --preset is empty\n")


@pytest.mark.parametrize("option", _RESOLUTION)
@pytest.mark.parametrize("command", ["explain", "check", "run"])
def test_every_empty_resolution_option_is_a_usage_error(
    place: Place, command: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each resolution option given empty, on each command that resolves, says so, exit 64."""
    rest = ["--model", script(place, ECHO), "go"] if command == "run" else []
    code, out, err = run([command, option, "", *rest], capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {option} is empty\n")


@pytest.mark.parametrize(
    "option",
    ["--events", "--model", "--base-url", "--model-name", "--api-key-env", "--set"],
)
def test_every_empty_option_of_run_is_a_usage_error(
    place: Place, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--events '' said 'No such file', --api-key-env '' looked in $: each is now 'is empty'."""
    model = script(place, ECHO)
    given = {"--model": [], "--base-url": [], "--model-name": ["--base-url", "http://h/v1"]}
    chosen = given.get(option, ["--model", model])
    if option == "--api-key-env":
        chosen = ["--base-url", "http://h/v1", "--model-name", "m"]
    code, out, err = run(["run", *chosen, option, "", "go"], capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {option} is empty\n")


def test_an_empty_preset_is_named_before_the_flags_it_would_have_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--preset '' --max-steps 3: the flag is unknown because the preset is empty; that is said."""
    code, _, err = run(["explain", "--preset", "", "--max-steps", "3"], capsys)
    assert (code, err) == (64, "budgetconf: usage error: --preset is empty\n")


def test_an_empty_option_after_diff_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    """The second side of --diff is parsed as the first: --profile '' there is as empty."""
    code, _, err = run(["explain", "--diff", "--profile", ""], capsys)
    assert (code, err) == (64, "budgetconf: usage error: --profile is empty\n")


def test_an_empty_preset_variable_is_unset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BUDGETCONF_PRESET= is an empty variable, which offers nothing: the default preset."""
    monkeypatch.setenv("BUDGETCONF_PRESET", "")
    code, out, _ = run(["check"], capsys)
    assert (code, out.endswith("(preset budgetconf)\n")) == (0, True)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["init", ""], "PATH"),
        (["init", "--kind", "profile", ""], "PATH"),  # wrote profiles/.json
        (["explain", ""], "FIELD"),
        (["explain", "loop.max_steps", ""], "FIELD"),
    ],
)
def test_an_empty_path_or_field_argument_is_a_usage_error(
    place: Place, args: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """init '' wrote a profile named '.json'; an empty PATH or FIELD is refused as empty."""
    code, out, err = run(args, capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {named} is empty\n")
    assert not (place.budgetconf_home / "profiles" / ".json").exists()


def test_an_empty_prompt_is_a_prompt(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt is a message, not a name: run takes an empty one and the model answers it."""
    code, out, _ = run(["run", "--model", script(place, {"content": "hi"}), ""], capsys)
    assert (code, out) == (0, "hi\n")


# --- FIELD: a field, an alias, or a whole section -----------------------------------------

LOOP = [
    "loop.max_steps",
    "loop.max_tool_calls_per_turn",
    "loop.last_turn",
    "loop.over_cap",
    "loop.warn_model",
    "loop.max_repeats",
]


def test_a_section_name_shows_every_field_of_that_section(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """explain loop is explain loop.max_steps loop.max_tool_calls_per_turn ... in one word."""
    code, out, _ = run(["explain", "--format", "json", "loop"], capsys)
    assert code == 0
    assert list(json.loads(out)["fields"]) == LOOP
    _, spelled_out, _ = run(["explain", "--format", "json", *LOOP], capsys)
    assert out == spelled_out


def test_a_section_and_its_fields_are_each_shown_once_in_the_order_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """limits, then a loop field, then loop again: each field once, where first asked for."""
    code, out, _ = run(
        ["explain", "--format", "json", "limits.max_tokens", "loop.last_turn", "limits", "loop"],
        capsys,
    )
    assert code == 0
    assert list(json.loads(out)["fields"]) == [
        "limits.max_tokens",
        "loop.last_turn",
        "limits.max_tool_calls",
        "limits.max_cost_usd",
        "limits.timeout_seconds",
        "limits.warn_at",
        "loop.max_steps",
        "loop.max_tool_calls_per_turn",
        "loop.over_cap",
        "loop.warn_model",
        "loop.max_repeats",
    ]


def test_check_and_diff_take_a_section_too(capsys: pytest.CaptureFixture[str]) -> None:
    """check loop counts the section's fields; --diff limits its comparison to the section."""
    assert (
        run(["check", "loop"], capsys)[1]
        == "ok: 6 fields resolved, no warnings (preset budgetconf)\n"
    )
    code, out, _ = run(["explain", "limits", "--diff", "--set", "loop.max_steps=7"], capsys)
    assert (code, out) == (0, "preset budgetconf: no field differs\n")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "lop",
            "unknown field or section 'lop'; did you mean 'loop'?"
            " (sections: loop, limits, tools, ledger, prices, telemetry)",
        ),
        (
            "zzz",
            "unknown field or section 'zzz'"
            " (sections: loop, limits, tools, ledger, prices, telemetry)",
        ),
        ("loop.max_step", "unknown field 'loop.max_step'; did you mean 'loop.max_steps'?"),
    ],
)
def test_an_unknown_name_suggests_a_field_or_a_section(
    name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt section gets the section; a dotted name the nearest field; both list sections."""
    assert run(["explain", name], capsys) == (64, "", f"budgetconf: usage error: {message}\n")


# --- a working directory that was removed -------------------------------------------------


def _in_a_removed_directory(place: Place, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The console script, run in a folder deleted just before it starts."""
    gone = place.work / "gone"
    gone.mkdir()
    script = shlex.join([str(Path(sys.executable).with_name("budgetconf")), *args])
    return subprocess.run(
        ["sh", "-c", f'cd {shlex.quote(str(gone))} && rmdir "$PWD" && exec {script}'],
        capture_output=True,
        text=True,
        check=False,
    )


def test_explain_json_prints_its_document_in_a_removed_directory(place: Place) -> None:
    """The document is printed, every value resolved, with a warning that says why no file is."""
    result = _in_a_removed_directory(place, ["explain", "--format", "json"])
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["values"]["loop.max_steps"] == 40
    assert document["warnings"] == [GONE]
    assert {s["source"]: s["status"] for s in document["sources"]}["project"] == "missing"


@pytest.mark.parametrize(
    ("args", "code", "out"),
    [
        (["explain"], 0, "loop.max_steps"),
        (["explain", "--format", "toml"], 0, "[loop]"),
        (["check", "--format", "json"], 1, '"version": 1'),
        (["check"], 1, "check failed: 0 errors, 1 warning (preset budgetconf)"),
        (["explain", "--diff", "--set", "loop.max_steps=3"], 0, "1 field differs"),
    ],
)
def test_every_format_of_explain_and_check_works_in_a_removed_directory(
    place: Place, args: list[str], code: int, out: str
) -> None:
    """Table, TOML, check and --diff resolve too; check fails on the warning, as on any."""
    result = _in_a_removed_directory(place, args)
    assert (result.returncode, out in result.stdout) == (code, True), result.stderr
    assert "Traceback" not in result.stderr


def test_run_works_in_a_removed_directory_and_warns(place: Place) -> None:
    """A run with an absolute script runs; the warning is on stderr, the run's JSON on stdout."""
    model = script(place, {"content": "done"})
    result = _in_a_removed_directory(place, ["run", "--model", model, "--output", "json", "go"])
    assert result.returncode == 0
    assert json.loads(result.stdout)["result"] == "done"
    assert result.stderr == f"budgetconf: warning: {GONE}\n"


def test_a_relative_preset_file_in_a_removed_directory_is_a_document_error(place: Place) -> None:
    """--preset app.toml cannot be found there: the JSON document says so, exit 1."""
    result = _in_a_removed_directory(place, ["explain", "--preset", "app.toml", "--format", "json"])
    assert result.returncode == 1
    assert json.loads(result.stdout)["errors"] == ["preset app.toml: No such file or directory"]


def test_explain_in_this_process_after_its_directory_is_removed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same in the test's own process: the directory goes, explain and resolve() still work."""
    gone = place.work / "gone"
    gone.mkdir()
    os.chdir(gone)
    gone.rmdir()
    try:
        code, out, _ = run(["explain", "--format", "json", "--preset", "app.toml"], capsys)
        assert (code, json.loads(out)["errors"]) == (
            1,
            ["preset app.toml: No such file or directory"],
        )
        code, out, _ = run(["explain", "--format", "json"], capsys)
        assert (code, json.loads(out)["warnings"]) == (0, [GONE])
        res = budgetconf.resolve(env={})
        assert {s.source: s.locator for s in res.sources}["project"] == "settings.toml"
    finally:
        os.chdir(place.work)


@pytest.mark.parametrize(
    ("args", "said", "meant"),
    [
        (
            ["explian"],
            "argument COMMAND: invalid choice: 'explian' (choose from 'explain', ",
            "explain",
        ),
        (["explain", "--format", "tomll"], "argument --format: invalid choice: 'tomll' ", "toml"),
        (["ledger", "stats"], "argument VIEW: invalid choice: 'stats' ", "status"),
    ],
)
def test_a_mistyped_choice_gets_a_did_you_mean(
    args: list[str], said: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped command, view or choice is a usage error naming the nearest choice."""
    assert main(args) == 64
    err = capsys.readouterr().err
    assert err.startswith(f"budgetconf: usage error: {said}")
    assert err.endswith(f"; did you mean {meant!r}?\n")


BIG: Final = "x" * 100_000


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "--format", BIG],
        ["explain", BIG],
        ["explain", f"loop.{BIG}"],
        ["ledger", "runs", "--limit", BIG],
        ["ledger", "runs", "--scope", BIG],
        ["run", "--base-url", f"ftp://{BIG}", "hi"],
        ["run", "--model-name", "m", "--base-url", "http://h", "--max-retries", BIG, "hi"],
        ["run", "--model-name", "m", "--base-url", "http://h", "--request-timeout", BIG, "hi"],
    ],
    ids=["choice", "section", "field", "limit", "scope", "base-url", "retries", "timeout"],
)
def test_a_value_echoed_in_a_usage_error_is_clipped(
    args: list[str],
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 100 kB value is echoed cut to its start, with its length, whichever option it was."""
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", "sqlite:///ledger.db")
    assert main(args) == 64
    err = capsys.readouterr().err
    assert len(err) < 400, err[:400]
    assert re.search(r"\(10000\d characters, 99\d{3} not shown\)", err), err


@pytest.mark.parametrize(
    ("name", "meant"),
    [("max_step", "loop.max_steps"), ("max_tool_call", "limits.max_tool_calls")],
)
def test_a_near_miss_of_a_bare_field_name_suggests_its_field(
    name: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain max_step: a leaf name mistyped without its section finds its dotted field."""
    assert main(["explain", name]) == 64
    assert f"; did you mean {meant!r}?" in capsys.readouterr().err


def test_check_refuses_the_toml_format_it_does_not_write(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """check --format toml is a usage error, and check's help offers only table and json."""
    assert main(["check", "--format", "toml"]) == 64
    assert "invalid choice: 'toml' (choose from 'table', 'json')" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    assert "{table,json}" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "explain"])
def test_help_at_80_columns_keeps_each_flag_whole_beside_its_help(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 80 columns a long flag keeps its help on its line, and no word is cut at a hyphen."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main([command, "--help"])
    lines = capsys.readouterr().out.splitlines()
    flag = next(line for line in lines if line.startswith("  --ledger-max-cost-usd NUMBER"))
    assert flag.split("NUMBER", 1)[1].strip()  # its help begins on the flag's own line
    assert not [line for line in lines if line.rstrip().endswith("-") and line.strip() != "-"]
