"""The preset's budget flags, given to explain, check and run directly.

A stop message says "raise it with BUDGETCONF_MAX_STEPS or --max-steps"; the
flag works where the user is: ``budgetconf run --model s.json --max-steps 5
hi`` feeds the ``cli`` source exactly as ``... hi -- --max-steps 5`` does,
located as the flag. The flags are the chosen preset's, a preset file's too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from budgetconf.cli import main

from conftest import Place
from helpers.loops import ECHO, script
from helpers.presetfiles import preset_file


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def document(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``budgetconf explain --format json ARGS``'s document; the command must succeed."""
    code, out, err = run(["explain", "--format", "json", *args], capsys)
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def run_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    command = Path(sys.executable).with_name("budgetconf")
    return subprocess.run(
        [str(command), *args], capture_output=True, text=True, cwd=cwd, check=False
    )


# --- the flag a stop message recommends -----------------------------------------------------


def test_the_flag_the_stop_message_recommends_works_on_run(place: Place) -> None:
    """End to end: the message says --max-steps, and run --max-steps 5 runs five turns."""
    model = script(place, ECHO)
    first = run_process(["run", "--model", model, "--max-steps", "3", "hi"], place.work)
    assert (first.returncode, first.stdout) == (2, "")
    assert first.stderr.endswith("loop.max_steps = 3 from --max-steps; raise it with --max-steps\n")
    again = run_process(
        ["run", "--model", model, "--output", "json", "--max-steps", "5", "hi"], place.work
    )
    done = json.loads(again.stdout)
    assert (again.returncode, done["turns"], done["limit"]["locator"]) == (2, 5, "--max-steps")
    assert done["limit"]["source"] == "cli"


def test_the_default_stop_names_the_flag_and_the_flag_is_then_taken(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default's advice names --max-steps; following it word for word raises the budget."""
    model = script(place, ECHO)
    code, _, err = run(["run", "--model", model, "--max-steps", "2", "go"], capsys)
    assert code == 2
    assert "raise it with --max-steps" in err
    code, _, err = run(["run", "--model", model, "--max-steps=4", "go"], capsys)
    assert (code, "hit max_steps (4)" in err) == (2, True)


@pytest.mark.parametrize("command", ["explain", "check"])
def test_explain_and_check_take_the_flags_as_the_cli_source(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain --max-steps 5 is explain -- --max-steps 5: the same document, located --max-steps."""
    code, out, _ = run([command, "--format", "json", "--max-steps", "5"], capsys)
    direct = json.loads(out)
    _, out, _ = run([command, "--format", "json", "--", "--max-steps", "5"], capsys)
    assert (code, direct) == (0, json.loads(out))
    assert direct["fields"]["loop.max_steps"]["locator"] == "--max-steps"
    assert direct["fields"]["loop.max_steps"]["source"] == "cli"


def test_flags_given_before_and_after_double_dash_are_one_cli_source_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--max-steps 5 ... -- --max-steps 7: the later wins, as with a flag given twice."""
    found = document(["--max-steps", "5", "--", "--max-steps", "7"], capsys)
    candidates = found["fields"]["loop.max_steps"]["candidates"]
    assert [(c["raw"], c["status"]) for c in candidates if c["source"] == "cli"] == [
        ("5", "shadowed"),
        ("7", "won"),
    ]


def test_every_flag_of_the_preset_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    """Each field's flag, of each type: the values are the cli source's, each located by flag."""
    given = {
        "--max-steps": ("loop.max_steps", "9", 9),
        "--max-tool-calls-per-turn": ("loop.max_tool_calls_per_turn", "2", 2),
        "--last-turn": ("loop.last_turn", "warn", "warn"),
        "--over-cap": ("loop.over_cap", "truncate", "truncate"),
        "--max-tool-calls": ("limits.max_tool_calls", "30", 30),
        "--max-tokens": ("limits.max_tokens", "1000", 1000),
        "--max-cost-usd": ("limits.max_cost_usd", "0.5", 0.5),
        "--timeout-seconds": ("limits.timeout_seconds", "60", 60.0),
    }
    args = [word for flag, (_, text, _) in given.items() for word in (flag, text)]
    found = document(args, capsys)
    for flag, (path, _, value) in given.items():
        entry = found["fields"][path]
        assert (entry["value"], entry["locator"]) == (value, flag)


def test_one_flag_that_sets_two_fields_sets_both(capsys: pytest.CaptureFixture[str]) -> None:
    """praisonai-code's --max-steps raises both its budgets, as after -- it does."""
    found = document(["--preset", "praisonai-code", "--max-steps", "300"], capsys)
    assert found["values"] == {
        "execution.max_steps": 300,
        "execution.max_tool_calls_per_turn": 300,
    }


# --- a value the flag's field cannot take: a usage error, before anything is resolved --------


def test_a_typo_in_a_flag_on_run_is_a_usage_error_and_nothing_runs(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --max-steps 5O: one line naming the flag, the value and the fault, exit 64; no turn
    is taken, no event written, and --output json writes no document of a run."""
    model = script(place, ECHO)
    events = place.work / "events.jsonl"
    for output in ("text", "json"):
        args = ["run", "--model", model, "--output", output, "--events", str(events)]
        assert run([*args, "--max-steps", "5O", "hi"], capsys) == (
            64,
            "",
            "budgetconf: usage error: argument --max-steps: not an integer: '5O'\n",
        )
    assert not events.exists()


@pytest.mark.parametrize("command", ["explain", "check"])
@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--max-steps", "5O"], "argument --max-steps: not an integer: '5O'"),
        (["--max-steps=5O"], "argument --max-steps: not an integer: '5O'"),
        (["--max-st", "5O"], "argument --max-steps: not an integer: '5O'"),  # argparse's prefix
        (["--max-steps", "0"], "argument --max-steps: must be >= 1, got '0'"),
        (["--max-steps="], "argument --max-steps: not an integer: ''"),
        (["--max-cost-usd", "inf"], "argument --max-cost-usd: not a number: 'inf'"),
        (
            ["--last-turn", "Warn"],
            "argument --last-turn: not one of warn, wrap_up, none: 'Warn' (did you mean 'warn'?)",
        ),
        (
            ["--max-steps", "5", "--max-tokens", "lots", "--max-steps", "x"],
            "argument --max-tokens: not an integer: 'lots'",  # the first that is wrong
        ),
    ],
)
def test_a_flag_s_value_its_field_cannot_take_is_a_usage_error(
    command: str, given: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a number, past the field's own bounds, not a choice: one line on stderr, exit 64."""
    assert run([command, *given], capsys) == (64, "", f"budgetconf: usage error: {message}\n")


def test_the_same_text_after_double_dash_is_judged_by_the_cli_source_s_policy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """-- --max-steps ten is the application's flag: rejected under fallback, with a warning."""
    warning = (
        "loop.max_steps from --max-steps (cli): not an integer: 'ten';"
        " ignored, using 40 from built-in default"
    )
    code, out, err = run(["check", "--", "--max-steps", "ten"], capsys)
    assert (code, err) == (1, f"budgetconf: warning: {warning}\n")
    assert out.startswith("check failed: 0 errors, 1 warning")
    found = document(["--", "--max-steps", "ten"], capsys)
    assert (found["values"]["loop.max_steps"], found["warnings"]) == (40, [warning])


@pytest.mark.parametrize("invalid", ["error", "fallback"])
def test_a_bad_flag_is_a_usage_error_whatever_the_cli_source_s_policy(
    invalid: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The policy judges the application's arguments (after --); budgetconf's own option is
    refused under either, while after -- the same text is an error or a fallback."""
    path = preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "cli", "invalid": invalid}],
        fields={"agent.turns": {"type": "int", "ge": 1, "default": 8, "flags": ["--turns"]}},
    )
    assert run(["explain", "--preset", str(path), "--turns", "x"], capsys) == (
        64,
        "",
        "budgetconf: usage error: argument --turns: not an integer: 'x'\n",
    )
    found = json.loads(
        run(["explain", "--preset", str(path), "--format", "json", "--", "--turns", "x"], capsys)[1]
    )
    said = found["errors"] if invalid == "error" else found["warnings"]
    assert [s.partition(";")[0] for s in said] == [
        "agent.turns from --turns (cli): not an integer: 'x'"
    ]


def test_a_flag_of_a_secret_field_never_shows_its_value(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A secret's text is masked in the usage error, and no choice near it is suggested."""
    path = preset_file(
        place.work,
        name="app",
        sources=["default", "cli"],
        fields={
            "agent.pin": {"type": "int", "secret": True, "default": 1, "flags": ["--pin"]},
            "agent.code": {
                "type": "enum",
                "choices": ["alpha", "bravo"],
                "secret": True,
                "default": "alpha",
                "flags": ["--code"],
            },
        },
    )
    assert run(["explain", "--preset", str(path), "--pin", "12x4"], capsys) == (
        64,
        "",
        "budgetconf: usage error: argument --pin: not an integer: ***\n",
    )
    code, _, err = run(["check", "--preset", str(path), "--code", "alpah"], capsys)
    assert (code, err) == (
        64,
        "budgetconf: usage error: argument --code: not one of alpha, bravo: ***\n",
    )


def test_a_ledger_url_flag_that_is_refused_hides_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--ledger-url mysql://u:PW@h/x: what is wrong is said, and the password never is."""
    code, out, err = run(["check", "--ledger-url", "mysql://ada:S3CRET@db/x"], capsys)
    assert (code, out) == (64, "")
    assert err.startswith("budgetconf: usage error: argument --ledger-url: the ledger URL is not")
    assert err.endswith(": 'mysql://ada:***@db/x'\n")
    assert "S3CRET" not in err


def test_one_flag_of_two_fields_names_the_field_that_refuses(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flag that sets two fields must suit both: the error names the one it does not suit."""
    path = preset_file(
        place.work,
        name="app",
        sources=["default", "cli"],
        fields={
            "agent.turns": {"type": "int", "default": 8, "flags": ["--level"]},
            "agent.mode": {
                "type": "enum",
                "choices": ["warn", "stop"],
                "default": "stop",
                "flags": ["--level"],
            },
        },
    )
    assert run(["explain", "--preset", str(path), "--level", "warn"], capsys) == (
        64,
        "",
        "budgetconf: usage error: argument --level: not an integer: 'warn' (for agent.turns)\n",
    )
    code, _, err = run(["explain", "--preset", str(path), "--level", "3"], capsys)
    assert (code, err) == (
        64,
        "budgetconf: usage error: argument --level: not one of warn, stop: '3' (for agent.mode)\n",
    )


def test_a_value_the_field_takes_but_the_policy_clamps_is_no_usage_error(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-steps 500 under a ceiling of 200 is a value of the field: the policy clamps it."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{"loop": {"max_steps": {"max": 200}}}', encoding="utf-8")
    found = document(["--max-steps", "500"], capsys)
    entry = found["fields"]["loop.max_steps"]
    assert (entry["value"], entry["source"]) == (200, "policy")
    assert [c["status"] for c in entry["candidates"] if c["source"] == "cli"] == ["clamped"]


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "--diff", "--max-steps", "x"],  # the second side's flag
        ["explain", "--max-steps", "x", "--diff", "--max-steps", "7"],  # the first side's
        ["explain", "--diff", "--preset", "praisonai-code", "--max-steps", "x"],
    ],
)
def test_a_bad_flag_on_either_side_of_diff_is_a_usage_error(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each side's flags are its preset's options, refused as they are read."""
    code, out, err = run(args, capsys)
    assert (code, out) == (64, "")
    assert err.startswith("budgetconf: usage error: argument --max-steps: not an integer: 'x'")
    assert err.count("\n") == 1


# --- the flags of a preset file: read after --preset ------------------------------------------


def _app(place: Place, **flags: list[str]) -> Path:
    """A preset file with a cli source: agent.turns has --turns (and its aliases)."""
    return preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "cli", "invalid": "error"}, "explicit"],
        fields={
            "agent.turns": {"type": "int", "ge": 1, "default": 8, "flags": ["--turns", "--t"]},
            **{
                f"agent.{name}": {"type": "int", "default": 1, "flags": given}
                for name, given in flags.items()
            },
        },
        loop={"max_steps": "agent.turns"},
    )


@pytest.mark.parametrize(
    "spelled", [["--preset", "{path}"], ["--preset={path}"], ["--pre", "{path}"]]
)
def test_a_preset_file_s_flags_are_taken_however_preset_is_spelled(
    place: Place, spelled: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The preset is read first, then its flags: --turns belongs to app.toml, not to the default."""
    path = _app(place)
    chosen = [word.format(path=path) for word in spelled]
    found = document([*chosen, "--turns", "3"], capsys)
    assert (found["values"]["agent.turns"], found["fields"]["agent.turns"]["locator"]) == (
        3,
        "--turns",
    )


def test_a_flag_s_alias_is_located_as_typed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--t is a flag of its own, so explain names --t, as after -- it would."""
    found = document(["--preset", str(_app(place)), "--t", "4"], capsys)
    assert found["fields"]["agent.turns"]["locator"] == "--t"


def test_the_preset_from_the_variable_gives_its_flags(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """$BUDGETCONF_PRESET chooses the preset, and so the flags, as --preset does."""
    monkeypatch.setenv("BUDGETCONF_PRESET", str(_app(place)))
    assert document(["--turns", "6"], capsys)["values"]["agent.turns"] == 6


def test_the_help_lists_the_preset_s_flags(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --help shows the flags with their defaults and variables; a preset file's, its own."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "budget flags of preset budgetconf (the cli source):" in shown
    assert "--max-steps INT Model responses one run may consume" in shown
    assert "(built-in default: 40; env: BUDGETCONF_MAX_STEPS)" in shown
    with pytest.raises(SystemExit):
        main(["explain", "--preset", str(_app(place)), "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "budget flags of preset app (the cli source): --turns INT" in shown
    assert "--max-steps INT" not in shown


def test_diff_compares_two_flag_values(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-steps 5 --diff --max-steps 7: the second side's flag comes later, and wins."""
    code, out, _ = run(["explain", "--max-steps", "5", "--diff", "--max-steps", "7"], capsys)
    assert code == 0
    assert out.splitlines()[2:] == [
        "loop.max_steps",
        "  before 5  cli      --max-steps",
        "  after  7  cli      --max-steps",
    ]


# --- where a flag cannot be taken ------------------------------------------------------------


def test_a_preset_that_reads_no_flags_shows_the_set_that_works(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """opendot has no cli source: the error gives the exact --set that sets the field instead."""
    model = script(place, ECHO)
    code, out, err = run(
        ["run", "--preset", "opendot", "--model", model, "--max-steps", "5", "hi"], capsys
    )
    assert (code, out) == (64, "")
    assert err == (
        "budgetconf: usage error: unrecognized arguments: --max-steps;"
        " preset 'opendot' reads no flags: use --set agent.max_steps=5\n"
    )
    code, _, _ = run(
        ["run", "--preset", "opendot", "--model", model, "--set", "agent.max_steps=5", "hi"], capsys
    )
    assert code == 2


def test_a_misspelt_flag_suggests_the_flag_meant(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-stepz 5: unrecognized, and the nearest option of the command is named."""
    assert run(["explain", "--max-stepz", "5"], capsys) == (
        64,
        "",
        "budgetconf: usage error: unrecognized arguments: --max-stepz; did you mean --max-steps?\n",
    )


def test_a_preset_file_that_cannot_be_read_says_why_its_flags_are_unknown(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flag is not known because the preset is not: the usage error says so."""
    broken = place.write("broken.toml", "format = \n")
    code, _, err = run(["explain", "--preset", str(broken), "--turns", "3"], capsys)
    assert code == 64
    assert err.startswith(
        "budgetconf: usage error: unrecognized arguments: --turns"
        f" (the preset's flags are not known: preset {broken}: invalid TOML"
    )


# --- a preset's flag that is also a command's own option ------------------------------------


def test_a_command_s_own_option_wins_and_explain_and_check_warn(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format and --output are the commands' own: the preset's flags of those names are
    shadowed there, explain and check say where, and run takes its own --output and says
    so."""
    path = _app(place, shape=["--format"], verbosity=["--output"])
    found = json.loads(run(["explain", "--preset", str(path), "--format", "json"], capsys)[1])
    assert found["values"]["agent.shape"] == 1  # --format json was explain's own
    assert found["warnings"] == [
        "the preset's flag --format (agent.shape) is shadowed on explain, check and prices by the"
        " command's own --format: there, give it after -- (budgetconf explain ... -- --format"
        " VALUE)",
        "the preset's flag --output (agent.verbosity) is shadowed on run by the command's own"
        " --output: there, give it after -- (budgetconf run ... -- --output VALUE)",
    ]
    code, out, _ = run(["check", "--preset", str(path)], capsys)
    assert (code, out) == (1, "check failed: 0 errors, 2 warnings (preset app)\n")
    after = document(["--preset", str(path), "--", "--format", "4"], capsys)
    assert (after["values"]["agent.shape"], after["fields"]["agent.shape"]["locator"]) == (
        4,
        "--format",
    )

    model = script(place, {"content": "done"})
    code, out, err = run(
        ["run", "--preset", str(path), "--model", model, "--output", "json", "go"], capsys
    )
    assert (code, json.loads(out)["result"]) == (0, "done")  # run's own --output
    assert err == (  # and it says so, of its own option alone
        "budgetconf: warning: the preset's flag --output (agent.verbosity) is shadowed on run by"
        " the command's own --output: there, give it after -- (budgetconf run ... -- --output"
        " VALUE)\n"
    )


def test_a_preset_without_a_cli_source_warns_of_nothing(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its flags are options nowhere, so no command shadows them: opendot's explain is quiet."""
    assert document(["--preset", "opendot"], capsys)["warnings"] == []


def test_an_unknown_option_before_any_command_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """budgetconf --bogus: no command, so no command's options to suggest from; one line."""
    assert run(["--bogus"], capsys) == (
        64,
        "",
        "budgetconf: usage error: unrecognized arguments: --bogus\n",
    )


def test_preset_without_its_value_is_argparse_s_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--preset at the end names no preset: the default's flags, then argparse's own error."""
    code, _, err = run(["explain", "--max-steps", "5", "--preset"], capsys)
    assert (code, err) == (
        64,
        "budgetconf: usage error: argument --preset: expected one argument\n",
    )


def test_an_extra_word_of_run_is_unrecognized_without_a_hint(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """run takes one PROMPT: a second word is refused as it is, with nothing to suggest."""
    code, _, err = run(["run", "--model", script(place, ECHO), "say", "hi"], capsys)
    assert (code, err) == (64, "budgetconf: usage error: unrecognized arguments: hi\n")


@pytest.mark.parametrize(
    ("sources", "given", "hint"),
    [
        (["default", "explicit"], ["--turns", "3"], ": use --set agent.turns=3"),
        (["default", "explicit"], ["--turns=3"], ": use --set agent.turns=3"),
        (["default", "explicit"], ["--turns"], ": use --set agent.turns=VALUE"),
        (["default", "explicit"], ["--colour", "3"], ""),  # no field of that name
        (["default", "env"], ["--turns", "3"], ""),  # and no explicit source to set it with
    ],
)
def test_a_preset_s_flag_without_a_cli_source_gives_the_set_that_works(
    place: Place,
    sources: list[str],
    given: list[str],
    hint: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Flags declared, no cli source: none is taken; the error gives --set where it works."""
    path = preset_file(
        place.work,
        name="quiet",
        sources=sources,
        fields={"agent.turns": {"type": "int", "default": 8, "flags": ["--turns"]}},
    )
    code, _, err = run(["explain", "--preset", str(path), *given], capsys)
    assert code == 64
    assert err.endswith(f"; preset 'quiet' reads no flags{hint}\n")


def test_a_preset_whose_only_flags_are_a_command_s_options_adds_none_there(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A preset whose one flag is --format: explain has no budget flags at all, and warns."""
    path = preset_file(
        place.work,
        name="clash",
        sources=["default", "cli"],
        fields={"agent.shape": {"type": "int", "default": 1, "flags": ["--format"]}},
    )
    with pytest.raises(SystemExit):
        main(["explain", "--preset", str(path), "--help"])
    assert "budget flags of preset clash" not in capsys.readouterr().out
    found = document(["--preset", str(path)], capsys)
    assert [w.split(" by ")[0] for w in found["warnings"]] == [
        "the preset's flag --format (agent.shape) is shadowed on explain, check and prices"
    ]
