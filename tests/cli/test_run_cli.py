"""``budgetconf run``: exit codes, the JSON document, the truncation warning, tools and events."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetconf._engine import load_preset
from budgetconf.cli import main
from budgetconf.loop import ScriptedModel

from conftest import Place
from helpers.loops import ECHO, script
from helpers.presetfiles import preset_file

KEYS = {
    "status",
    "stop_reason",
    "result",
    "output",  # the same text as result, by the name RunResult gives it
    "message",
    "turns",
    "tool_calls_executed",
    "limit",
    "events",
}
RAISE_WITH = ["BUDGETCONF_MAX_STEPS", "--max-steps"]
ANSWER = {"content": "the answer"}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """``budgetconf run ARGS --output json``: the exit code and the document."""
    code, out, _ = run(["run", "--output", "json", *args], capsys)
    return code, json.loads(out)


def run_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    command = Path(sys.executable).with_name("budgetconf")
    return subprocess.run(
        [str(command), *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def types_of(document: dict[str, Any]) -> list[str]:
    return [event["type"] for event in document["events"]]


def own(event: dict[str, Any]) -> dict[str, Any]:
    """An event without the run's id and the time, which every event carries."""
    return {key: value for key, value in event.items() if key not in ("run_id", "time")}


def events_of(document: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [own(event) for event in document["events"] if event["type"] == kind]


def tool_answers(model: ScriptedModel) -> dict[str, str]:
    """Tool call id -> the tool message the model was finally sent for it."""
    return {m["tool_call_id"]: m["content"] for m in model.received[-1] if m.get("role") == "tool"}


# --- the acceptance case and the JSON document -----------------------------------------


def test_max_steps_3_with_a_model_that_always_calls_a_tool_is_truncated_with_exit_2(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--set loop.max_steps=3 and an always-echo model: exit 2, truncated at max_steps after 3."""
    model = script(place, ECHO)
    code, document = run_json(["--model", model, "--set", "loop.max_steps=3", "go"], capsys)
    assert code == 2
    assert set(document) == KEYS
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "truncated",
        "max_steps",
        3,
    )
    assert document["limit"] == {
        "field": "loop.max_steps",
        "value": 3,
        "source": "explicit",
        "locator": "explicit",
        "raise_with": ["--set loop.max_steps=N"],  # nothing ranks above it: --set raises it
    }


def test_a_budget_warning_is_one_line_on_stderr_and_no_progress_stops_with_exit_2(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--warn-at and --max-repeats after --: the warning as it is given, the stop as any."""
    model = script(place, ECHO)
    flags = ["--", "--warn-at", "0.5", "--max-steps", "4", "--max-repeats", "3"]
    assert main(["run", "--model", model, "go", *flags]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "budgetconf: warning: budget warning: 2 of 4 turns used: loop.max_steps = 4 from"
        " --max-steps",
        'budgetconf: warning: stopped: no progress: echo({"text":"again"}) ran 3 times in a row'
        " with the same arguments and the same result: loop.max_repeats = 3 from"
        " --max-repeats; raise it with --max-repeats",
    ]


@pytest.mark.parametrize(
    ("responses", "files"),
    [
        ([ANSWER], {}),
        ([ECHO], {}),
        ([{"tool_calls": 5}], {}),
        ([{"content": "no", "finish_reason": "refusal"}], {}),
        ([ANSWER], {"settings.toml": '[loop]\nmax_steps = "7"\n'}),
    ],
    ids=["ok", "truncated", "failed", "blocked", "not-started"],
)
def test_the_json_document_has_the_same_keys_whatever_the_outcome(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    responses: list[object],
    files: dict[str, str],
) -> None:
    """Every run, even one that never started, prints exactly the documented keys."""
    for name, text in files.items():
        place.write(name, text)
    _, document = run_json(["--model", script(place, *responses), "go"], capsys)
    assert set(document) == KEYS


# --- exit codes ------------------------------------------------------------------------


def test_a_final_answer_is_ok_with_exit_0(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A response without tool calls completes the run: exit 0, ok, the answer as result."""
    code, document = run_json(["--model", script(place, ANSWER), "go"], capsys)
    assert code == 0
    assert (document["status"], document["stop_reason"]) == ("ok", "completed")
    assert (document["result"], document["turns"], document["limit"]) == ("the answer", 1, None)
    assert document["output"] == document["result"]


def test_a_malformed_response_fails_the_run_with_exit_1(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "tool_calls": 5 is not a list: the run fails with `error`, and the message says why."""
    code, document = run_json(["--model", script(place, {"tool_calls": 5}), "go"], capsys)
    assert code == 1
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "failed",
        "error",
        1,
    )
    assert "malformed model response: tool_calls" in document["message"]
    assert document["tool_calls_executed"] == 0


@pytest.mark.parametrize(
    "response",
    [
        {"tool_calls": 5},
        {"content": 5},
        {"content": "x", "finish_reason": "done"},
        {"content": "x", "finish_reason": []},
        {"content": "x", "usage": {"prompt_tokens": "5", "completion_tokens": 3}},
    ],
    ids=["tool_calls-int", "content-int", "finish-unknown", "finish-list", "prompt-tokens-text"],
)
def test_a_malformed_response_in_text_mode_is_one_line_on_stderr(
    place: Place, capsys: pytest.CaptureFixture[str], response: dict[str, object]
) -> None:
    """Whatever is wrong with a response, the run fails with exit 1 and one stderr line."""
    code, _, err = run(["run", "--model", script(place, response), "go"], capsys)
    assert code == 1
    assert err.count("\n") == 1
    assert "malformed model response" in err


def test_a_configuration_error_fails_before_the_run_starts(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_steps = "7" in settings.toml (error policy): exit 1, no turn taken, one stderr line."""
    path = place.write("settings.toml", '[loop]\nmax_steps = "7"\n')
    code, out, err = run(
        ["run", "--output", "json", "--model", script(place, ANSWER), "go"], capsys
    )
    document = json.loads(out)
    assert code == 1
    assert (document["status"], document["stop_reason"]) == ("failed", "error")
    assert (document["turns"], document["events"], document["limit"]) == (0, [], None)
    assert f"{path}:2" in document["message"]
    assert err.count("\n") == 1
    assert err.startswith(f"budgetconf: error: loop.max_steps from {path}:2")


def test_a_configuration_error_in_text_mode_prints_no_answer(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """In text mode a run that never started prints nothing on stdout and one error line."""
    place.write("settings.toml", '[loop]\nmax_steps = "7"\n')
    code, out, err = run(["run", "--model", script(place, ANSWER), "go"], capsys)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert "not an integer" in err


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("content_filter", "content_filtered"),
        ("refusal", "refused"),
        ("length", "length_truncated"),
    ],
)
def test_a_provider_block_is_blocked_with_exit_3(
    place: Place, capsys: pytest.CaptureFixture[str], finish_reason: str, stop_reason: str
) -> None:
    """A response ending with a blocking finish_reason: exit 3, status blocked, its stop reason."""
    model = script(place, {"content": "partial", "finish_reason": finish_reason})
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 3
    assert (document["status"], document["stop_reason"]) == ("blocked", stop_reason)
    assert document["limit"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "go"], "one of the arguments --model --base-url is required"),
        (["run", "--model", "ok.json"], "the following arguments are required: PROMPT"),
        (
            ["run", "--model", "missing.json", "go"],
            "model script missing.json: cannot read: No such file",
        ),
        (["run", "--model", "prose.json", "go"], "model script prose.json: not JSON"),
        (["run", "--model", "empty.json", "go"], "needs a non-empty list of responses"),
        (["run", "--model", "other.json", "go"], 'expected {"responses": [...]}'),
        (["run", "--model", "number.json", "go"], "responses[0]: expected an object, got 5"),
        (["run", "--model", "ok.json", "--preset", "./app.toml", "go"], "has no [loop] table"),
        (["run", "--model", "ok.json", "--preset", "opendots", "go"], "unknown preset 'opendots'"),
        (["run", "--model", "ok.json", "--step", "review", "go"], "--step needs --workflow"),
        (["run", "--model", "ok.json", "--output", "yaml", "go"], "invalid choice: 'yaml'"),
        (
            ["run", "--model", "ok.json", "--preset", "opendot", "go", "--", "--max-steps", "2"],
            "has no cli source for arguments after --",
        ),
    ],
    ids=[
        "no-model",
        "no-prompt",
        "missing-script",
        "not-json",
        "no-responses",
        "no-responses-key",
        "response-not-object",
        "preset-without-loop",
        "unknown-preset",
        "step-without-workflow",
        "unknown-output",
        "app-args-without-cli-source",
    ],
)
def test_usage_errors_exit_64_with_one_line(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """A command line that cannot be carried out: exit 64, nothing on stdout, one stderr line."""
    script(place, ANSWER, name="ok.json")
    place.write("prose.json", "respond politely\n")
    place.write("empty.json", '{"responses": []}\n')
    place.write("other.json", '{"replies": [{"content": "x"}]}\n')
    place.write("number.json", '{"responses": [5]}\n')
    preset_file(place.work, fields={"agent.max_steps": {"type": "int", "default": 3}})
    code, out, err = run(args, capsys)
    assert (code, out) == (64, "")
    assert err.count("\n") == 1
    assert err.startswith("budgetconf: usage error: ")
    assert message in err


def test_a_usage_error_in_json_mode_prints_no_document(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output json does not turn a usage error into a run document: stdout stays empty."""
    place.write("empty.json", '{"responses": []}\n')
    code, out, err = run(["run", "--output", "json", "--model", "empty.json", "go"], capsys)
    assert (code, out) == (64, "")
    assert err.count("\n") == 1


# --- text mode -------------------------------------------------------------------------


def test_text_mode_prints_the_final_answer_on_stdout(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ok run prints its answer on stdout and nothing on stderr."""
    code, out, err = run(["run", "--model", script(place, ECHO, ANSWER), "go"], capsys)
    assert (code, out, err) == (0, "the answer\n", "")


Setup = tuple[list[str], str, str]
BOTH = "raise it with BUDGETCONF_MAX_STEPS or --max-steps"


def _env(place: Place, monkeypatch: pytest.MonkeyPatch) -> Setup:
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "2")
    return [], "env:BUDGETCONF_MAX_STEPS", BOTH


def _project(place: Place, monkeypatch: pytest.MonkeyPatch) -> Setup:
    path = place.write("settings.toml", "[loop]\nmax_steps = 2\n")
    return [], f"{path}:2", BOTH


def _set(place: Place, monkeypatch: pytest.MonkeyPatch) -> Setup:
    return ["--set", "loop.max_steps=2", "go"], "explicit", "raise it with --set loop.max_steps=N"


def _app_args(place: Place, monkeypatch: pytest.MonkeyPatch) -> Setup:
    return ["go", "--", "--max-steps", "2"], "--max-steps", "raise it with --max-steps"


@pytest.mark.parametrize(
    "setup", [_env, _project, _set, _app_args], ids=["env", "project", "set", "app-args"]
)
def test_a_truncated_run_warns_in_one_line_where_the_limit_was_set(
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[Place, pytest.MonkeyPatch], Setup],
) -> None:
    """The stderr line names the field, its value, the locator, and what would raise it.

    Only a variable or flag whose source ranks at or above the one that set the
    value is offered: the environment cannot raise a value set by a flag.
    """
    rest, locator, advice = setup(place, monkeypatch)
    code, out, err = run(["run", "--model", script(place, ECHO), *(rest or ["go"])], capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "loop.max_steps = 2" in err
    assert f"from {locator};" in err
    assert err.endswith(f"; {advice}\n")


def test_opendot_stops_at_its_default_40_and_names_its_variable(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--preset opendot: truncated after 40 turns; the message names OPENDOT_MAX_STEPS."""
    code, document = run_json(["--model", script(place, ECHO), "--preset", "opendot", "go"], capsys)
    assert code == 2
    assert document["turns"] == 40
    assert document["message"].startswith("stopped: hit max_steps (40)")
    assert "OPENDOT_MAX_STEPS" in document["message"]
    assert document["limit"]["raise_with"] == ["OPENDOT_MAX_STEPS"]


def test_opendot_in_text_mode_warns_with_its_variable(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The opendot stderr warning says max_steps (40) and how to raise it."""
    code, _, err = run(["run", "--model", script(place, ECHO), "--preset", "opendot", "go"], capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "stopped: hit max_steps (40)" in err
    assert "OPENDOT_MAX_STEPS" in err


def test_a_wrap_up_answer_is_printed_and_the_run_still_warns(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """With wrap_up, the last turn's answer is on stdout and the truncation on stderr."""
    model = script(place, ECHO, {"content": "summary so far"})
    code, out, err = run(["run", "--model", model, "--set", "loop.max_steps=2", "go"], capsys)
    assert (code, out) == (2, "summary so far\n")
    assert "hit max_steps (2)" in err


def test_a_rejected_env_value_warns_and_the_run_goes_on(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BUDGETCONF_MAX_STEPS=abc falls back to 40 with a warning line; the run completes."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "abc")
    code, out, err = run(["run", "--model", script(place, ANSWER), "go"], capsys)
    assert (code, out) == (0, "the answer\n")
    assert err.count("\n") == 1
    assert err.startswith("budgetconf: warning: loop.max_steps from env:BUDGETCONF_MAX_STEPS")


def test_budgetconf_preset_chooses_the_preset_of_a_run(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --preset, BUDGETCONF_PRESET names the preset that bounds the run."""
    monkeypatch.setenv("BUDGETCONF_PRESET", "opendot")
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "2")
    code, document = run_json(["--model", script(place, ECHO), "go"], capsys)
    assert code == 2
    assert document["limit"]["field"] == "agent.max_steps"
    assert document["limit"]["locator"] == "env:OPENDOT_MAX_STEPS"


@pytest.mark.parametrize(
    ("response", "word", "printed"),
    [
        ({"tool_calls": 5}, "failed:", ""),
        ({"content": "x", "finish_reason": "refusal"}, "blocked:", "x\n"),
    ],
    ids=["failed", "blocked"],
)
def test_the_stderr_line_of_a_failed_or_blocked_run_says_its_status_once(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    response: dict[str, object],
    word: str,
    printed: str,
) -> None:
    """`budgetconf: failed: ...` names the status once; a blocked run's text is on stdout."""
    _, out, err = run(["run", "--model", script(place, response), "go"], capsys)
    assert err.count(word) == 1
    assert err.startswith(f"budgetconf: {word}")
    assert out == printed


def test_a_cut_off_answer_is_printed_and_the_line_says_what_to_raise(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """finish_reason length: the partial text on stdout, and on stderr what to do; exit 3."""
    cut = {"content": "The three reasons are: first, the", "finish_reason": "length"}
    code, out, err = run(["run", "--model", script(place, cut), "go"], capsys)
    assert (code, out) == (3, "The three reasons are: first, the\n")
    assert err.count("\n") == 1
    assert err.startswith("budgetconf: blocked: the answer on turn 1 was cut off")
    assert "its partial text is the output" in err
    assert "max_completion_tokens" in err
    _, document = run_json(["--model", script(place, cut), "go"], capsys)
    assert document["result"] == "The three reasons are: first, the"


# --- the demo tools --------------------------------------------------------------------


def _calls(*calls: dict[str, object]) -> dict[str, object]:
    return {"tool_calls": list(calls)}


def test_add_answers_the_sum(
    place: Place, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    """add with {"a": 2, "b": 3} runs and the model is sent `5`."""
    model = script(place, _calls({"id": "a", "name": "add", "arguments": {"a": 2, "b": 3}}), ANSWER)
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 0
    assert events_of(document, "tool_executed") == [
        {"type": "tool_executed", "turn": 1, "id": "a", "name": "add", "ok": True}
    ]
    assert document["tool_calls_executed"] == 1
    assert tool_answers(models[0]) == {"a": "5"}


def test_echo_returns_its_text(
    place: Place, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    """echo answers with the text it was given, unchanged."""
    model = script(
        place, _calls({"id": "e", "name": "echo", "arguments": {"text": "héllo"}}), ANSWER
    )
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 0
    assert [e["name"] for e in events_of(document, "tool_executed")] == ["echo"]
    assert tool_answers(models[0]) == {"e": "héllo"}


def test_an_unknown_tool_gets_an_error_message_and_the_run_goes_on(
    place: Place, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    """A call to a tool that is not offered is refused with an error message; the run completes."""
    model = script(place, _calls({"id": "s", "name": "search", "arguments": {}}), ANSWER)
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 0
    assert (document["status"], document["turns"], document["result"]) == ("ok", 2, "the answer")
    assert document["tool_calls_executed"] == 0
    [refused] = events_of(document, "tool_refused")
    assert (refused["id"], refused["name"]) == ("s", "search")
    assert "no tool named 'search'" in refused["reason"]
    assert tool_answers(models[0])["s"].startswith("error: no tool named 'search'")


def test_a_tool_that_raises_becomes_an_error_message(
    place: Place, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    """add without b raises TypeError: the model is told, the run goes on."""
    model = script(place, _calls({"id": "a", "name": "add", "arguments": {"a": 1}}), ANSWER)
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 0
    [executed] = events_of(document, "tool_executed")
    assert executed["ok"] is False
    assert executed["error"].startswith("TypeError:")
    assert tool_answers(models[0])["a"].startswith("error: TypeError:")


@pytest.mark.parametrize(
    "call",
    [
        {"id": "a", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {
            "id": "a",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
        },
    ],
    ids=["flat", "openai-nested"],
)
def test_arguments_as_json_text_are_read(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    models: list[ScriptedModel],
    call: dict[str, object],
) -> None:
    """Arguments sent as a JSON string, as the OpenAI API sends them, call the tool the same."""
    code, document = run_json(["--model", script(place, _calls(call), ANSWER), "go"], capsys)
    assert code == 0
    assert [e["ok"] for e in events_of(document, "tool_executed")] == [True]
    assert tool_answers(models[0]) == {"a": "5"}


def test_arguments_that_are_not_json_are_refused_and_the_run_goes_on(
    place: Place, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    """Broken JSON arguments are not guessed at: the call is refused with the reason."""
    model = script(place, _calls({"id": "b", "name": "echo", "arguments": "{text: hi"}), ANSWER)
    code, document = run_json(["--model", model, "go"], capsys)
    assert code == 0
    [refused] = events_of(document, "tool_refused")
    assert "not valid JSON" in refused["reason"]
    assert events_of(document, "tool_executed") == []
    assert tool_answers(models[0])["b"].startswith("error: arguments are not valid JSON")


# --- the events file -------------------------------------------------------------------


def test_events_file_holds_the_runs_events_one_json_object_a_line(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--events FILE gets the same events as the JSON output, from run_started to stopped."""
    model = script(place, ECHO, ANSWER)
    _, document = run_json(["--model", model, "--events", "events.jsonl", "go"], capsys)
    lines = (place.work / "events.jsonl").read_text(encoding="utf-8").splitlines()
    logged = [json.loads(line) for line in lines]
    assert all(isinstance(event, dict) and "type" in event for event in logged)
    assert logged == document["events"]
    assert (logged[0]["type"], logged[-1]["type"]) == ("run_started", "stopped")


def test_events_file_is_appended_to_by_a_second_run(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Running twice with the same --events FILE keeps the first run's events and adds the next."""
    args = ["run", "--model", script(place, ANSWER), "--events", "events.jsonl", "go"]
    run(args, capsys)
    first = (place.work / "events.jsonl").read_text(encoding="utf-8")
    run([*args[:-1], "--set", "loop.max_steps=5", "again"], capsys)
    both = (place.work / "events.jsonl").read_text(encoding="utf-8")
    assert both.startswith(first)
    types = [json.loads(line)["type"] for line in both.splitlines()]
    assert types.count("run_started") == 2
    assert types.count("stopped") == 2
    assert types[-1] == "stopped"
    second_start = json.loads(both[len(first) :].splitlines()[0])
    assert second_start["limits"]["max_steps"] == 5


def test_events_file_is_written_in_text_mode_too(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--events does not depend on --output: a text run logs its events as well."""
    code, out, _ = run(
        ["run", "--model", script(place, ANSWER), "--events", "log.jsonl", "go"], capsys
    )
    assert (code, out) == (0, "the answer\n")
    lines = (place.work / "log.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["type"] for line in lines][-1] == "stopped"


# --- resolution options ----------------------------------------------------------------


def _global(place: Place) -> tuple[list[str], str, str]:
    path = place.write("g.json", '{\n  "loop": {\n    "max_steps": 2\n  }\n}\n')
    return ["--global", str(path)], "global", f"{path}:3"


def _project_option(place: Place) -> tuple[list[str], str, str]:
    path = place.write("conf/other.toml", "[loop]\nmax_steps = 2\n")
    return ["--project", str(path)], "project", f"{path}:2"


def _profile_path(place: Place) -> tuple[list[str], str, str]:
    path = place.write("fast.json", '{"loop": {"max_steps": 2}}\n')
    return ["--profile", "./fast.json"], "profile", f"{path}:1"


def _profile_name(place: Place) -> tuple[list[str], str, str]:
    path = place.write(
        "profiles/fast.json", '{"loop": {"max_steps": 2}}\n', base=place.budgetconf_home
    )
    return ["--profile", "fast"], "profile", f"{path}:1"


WORKFLOW = "loop:\n  max_steps: 3\nsteps:\n  - name: review\n    loop:\n      max_steps: 2\n"


def _workflow(place: Place) -> tuple[list[str], str, str]:
    path = place.write("flow.yaml", WORKFLOW)
    return ["--workflow", str(path)], "yaml", f"{path}:2"


def _step(place: Place) -> tuple[list[str], str, str]:
    path = place.write("flow.yaml", WORKFLOW)
    return ["--workflow", str(path), "--step", "review"], "step", f"step:review ({path}:6)"


def _explicit(place: Place) -> tuple[list[str], str, str]:
    return ["--set", "loop.max_turns=2"], "explicit", "explicit"


@pytest.mark.parametrize(
    "setup",
    [_global, _project_option, _profile_path, _profile_name, _workflow, _step, _explicit],
    ids=["global", "project", "profile-path", "profile-name", "workflow", "step", "set"],
)
def test_every_resolution_option_bounds_the_run(
    place: Place,
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[Place], tuple[list[str], str, str]],
) -> None:
    """The option that set max_steps stops the run, and the limit names its source and line."""
    options, source, locator = setup(place)
    code, document = run_json(["--model", script(place, ECHO), *options, "go"], capsys)
    limit = document["limit"]
    assert code == 2
    assert document["turns"] == limit["value"]
    assert (limit["field"], limit["source"], limit["locator"]) == (
        "loop.max_steps",
        source,
        locator,
    )
    # only flags outrank a workflow; only --set outranks a step, and explicit is --set itself
    set_it = ["--set loop.max_steps=N"]
    expected = {"yaml": ["--max-steps"], "step": set_it, "explicit": set_it}.get(source, RAISE_WITH)
    assert limit["raise_with"] == expected


def test_application_arguments_after_a_double_dash_bound_the_run(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-- --max-steps 2` is the cli source, and it stops the run at 2."""
    args = [
        "run",
        "--output",
        "json",
        "--model",
        script(place, ECHO),
        "go",
        "--",
        "--max-steps",
        "2",
    ]
    code, out, _ = run(args, capsys)
    document = json.loads(out)
    assert (code, document["turns"]) == (2, 2)
    assert (document["limit"]["source"], document["limit"]["locator"]) == ("cli", "--max-steps")


# --- the last turn ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "code", "status"),
    [("warn", 0, "ok"), ("wrap_up", 2, "truncated"), ("none", 0, "ok")],
)
def test_last_turn_setting_decides_the_outcome_of_a_last_turn_answer(
    place: Place, capsys: pytest.CaptureFixture[str], mode: str, code: int, status: str
) -> None:
    """A final answer on the last turn: warn completes, wrap_up truncates, none completes."""
    model = script(place, ECHO, ANSWER)
    args = ["--model", model, "--set", "loop.max_steps=2", "--set", f"loop.last_turn={mode}", "go"]
    exit_code, document = run_json(args, capsys)
    assert (exit_code, document["status"], document["result"]) == (code, status, "the answer")


@pytest.mark.parametrize("mode", ["warn", "wrap_up"])
def test_a_last_turn_notice_is_recorded_before_the_last_turn(
    place: Place, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    """warn and wrap_up record one last_turn_notice event, on the last turn, of their kind."""
    args = ["--model", script(place, ECHO), "--set", "loop.max_steps=3"]
    _, document = run_json([*args, "--set", f"loop.last_turn={mode}", "go"], capsys)
    [notice] = events_of(document, "last_turn_notice")
    assert (notice["turn"], notice["kind"]) == (3, mode)
    assert notice["content"]
    events = [own(event) for event in document["events"]]
    before = events[events.index(notice) - 1]
    assert before == {"type": "turn_started", "turn": 3}


def test_last_turn_none_records_no_notice(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """--set loop.last_turn=none: the run still stops at the budget, with no notice event."""
    args = ["--model", script(place, ECHO), "--set", "loop.max_steps=3"]
    code, document = run_json([*args, "--set", "loop.last_turn=none", "go"], capsys)
    assert (code, document["turns"]) == (2, 3)
    assert "last_turn_notice" not in types_of(document)


def test_a_wrap_up_answer_is_the_result_of_a_truncated_run(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """With wrap_up, a final answer on the last turn becomes `result`; the run is truncated."""
    model = script(place, ECHO, ECHO, {"content": "what I managed"})
    args = ["--model", model, "--set", "loop.max_steps=3", "--set", "loop.last_turn=wrap_up", "go"]
    code, document = run_json(args, capsys)
    assert code == 2
    assert (document["status"], document["stop_reason"]) == ("truncated", "max_steps")
    assert document["result"] == "what I managed"
    assert document["limit"]["field"] == "loop.max_steps"


# --- the real console script -----------------------------------------------------------


def test_console_script_acceptance_case(place: Place) -> None:
    """The installed `budgetconf run` exits 2 with the truncated JSON document."""
    model = script(place, ECHO)
    result = run_process(
        ["run", "--model", model, "--set", "loop.max_steps=3", "--output", "json", "go"],
        cwd=place.work,
    )
    document = json.loads(result.stdout)
    assert result.returncode == 2
    assert set(document) == KEYS
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "truncated",
        "max_steps",
        3,
    )
    assert document["limit"]["source"] == "explicit"


def test_console_script_usage_error_is_one_line_without_traceback(place: Place) -> None:
    """The installed `budgetconf run` with a missing script: exit 64, one stderr line."""
    result = run_process(["run", "--model", "missing.json", "go"], cwd=place.work)
    assert (result.returncode, result.stdout) == (64, "")
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("budgetconf: usage error: model script missing.json")
    assert "Traceback" not in result.stderr


def test_a_presets_own_truncation_warning_is_printed_with_the_limit(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loop table's truncated_warning replaces the default line; [FIELD = V from L] follows."""
    preset = preset_file(
        place.work,
        fields={"agent.turns": {"type": "int", "ge": 1, "default": 2}},
        loop={"max_steps": "agent.turns", "truncated_warning": "Ran out of turns."},
    )
    code, _, err = run(
        ["run", "--model", script(place, ECHO), "--preset", str(preset), "go"], capsys
    )
    assert code == 2
    assert (
        err
        == "Ran out of turns. [agent.turns = 2 from built-in default; raise it where it is set]\n"
    )


def test_an_events_file_that_cannot_be_opened_is_a_usage_error(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--events in a folder that does not exist: exit 64, one line naming the path."""
    target = place.work / "no" / "events.jsonl"
    code, _, err = run(
        ["run", "--model", script(place, ECHO), "--events", str(target), "go"], capsys
    )
    assert code == 64
    assert err == f"budgetconf: usage error: --events {target}: No such file or directory\n"


@pytest.mark.parametrize("option", ["--events", "--report"])
def test_a_dash_for_the_events_or_the_page_is_refused(
    place: Place, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """``--events -``: standard output holds the answer, so ``-`` is refused, not a file named -."""
    code, out, err = run(["run", "--model", script(place, ECHO), option, "-", "go"], capsys)
    assert (code, out) == (64, "")
    assert err == (
        f"budgetconf: usage error: {option} -: standard output is the run's own output;"
        " name a file\n"
    )
    assert not (place.work / "-").exists()


@pytest.mark.parametrize(
    ("target", "reason"),
    [("folder", "Is a directory"), ("fifo", "a FIFO that no process reads")],
)
def test_an_events_path_that_is_no_file_to_append_to_is_refused_at_once(
    place: Place, capsys: pytest.CaptureFixture[str], target: str, reason: str
) -> None:
    """A directory, or a FIFO that nobody reads (which would wait for ever): exit 64, one line."""
    path = place.work / target
    if target == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    code, out, err = run(
        ["run", "--model", script(place, ANSWER), "--events", str(path), "go"], capsys
    )
    assert (code, out) == (64, "")
    assert err == f"budgetconf: usage error: --events {path}: {reason}\n"


def test_an_events_fifo_with_a_reader_gets_the_events(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO someone reads (``--events >(jq .)``) is written to like a file."""
    import threading

    path = place.work / "fifo"
    os.mkfifo(path)
    got: list[str] = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before the run
    reader = threading.Thread(target=lambda: got.append(_read_all(fd)))
    reader.start()
    code, _, _ = run(["run", "--model", script(place, ANSWER), "--events", str(path), "go"], capsys)
    reader.join(10)
    assert code == 0
    assert [json.loads(line)["type"] for line in got[0].splitlines()][-1] == "stopped"


def _read_all(fd: int) -> str:
    """What a FIFO's writers send until the last one closes it."""
    import select

    chunks: list[bytes] = []
    wrote = False
    while True:
        select.select([fd], [], [], 10)
        chunk = os.read(fd, 65536)
        if chunk:
            chunks.append(chunk)
            wrote = True
        elif wrote:  # every writer has closed it
            os.close(fd)
            return b"".join(chunks).decode()


@pytest.mark.parametrize("output", ["text", "json"])
def test_an_events_file_that_cannot_be_written_names_the_file(
    place: Place, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    """--events /dev/full: the run stops, one line says which file and why; exit 1."""
    args = ["run", "--model", script(place, ANSWER), "--events", "/dev/full", "--output", output]
    code, out, err = run([*args, "go"], capsys)
    assert code == 1
    assert err == "budgetconf: error: --events /dev/full: cannot write: No space left on device\n"
    if output == "json":
        document = json.loads(out)
        assert (document["status"], document["turns"]) == ("failed", 0)
        assert "'/dev/full'" in document["message"]
    else:
        assert out == ""


def test_an_events_file_nobody_may_write_is_a_usage_error(place: Place) -> None:
    """A folder the user may not write to: exit 64, one line naming the path (root: as nobody)."""
    folder = Path(tempfile.mkdtemp(prefix="budgetconf-unwritable-"))
    try:
        model = folder / "model.json"  # where nobody may read it, as the test's own folder is not
        model.write_text(json.dumps({"responses": [ANSWER]}), encoding="utf-8")
        model.chmod(0o644)
        folder.chmod(0o555)
        target = folder / "events.jsonl"
        args = ["run", "--model", str(model), "--events", str(target), "go"]
        code, err = _as_unprivileged(args, folder)
        assert code == 64
        assert err == f"budgetconf: usage error: --events {target}: Permission denied\n"
        assert not target.exists()
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def _as_unprivileged(args: list[str], folder: Path) -> tuple[int, str]:
    """``main(args)``'s exit code and stderr, as a user without root's right to write anywhere.

    As root, in a forked child that drops to ``nobody`` and works (and lives) in ``folder``.
    """
    if os.geteuid() != 0:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return main(args), err.getvalue()
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads alive
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; coverage does not follow it
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.chdir(folder)
            os.environ["HOME"] = str(folder)
            # nobody may not look into the test's folder, where the installed policy is moved
            # to, and a policy it cannot look at fails closed: here it is where nobody may look
            installed: Any = load_preset("budgetconf").by_kind["policy"]
            installed._path = str(folder / "policy.json")
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(args)
            os.write(write, json.dumps([code, err.getvalue()]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    code, err = json.loads(data)
    return code, err


@pytest.mark.parametrize("output", ["text", "json"])
def test_output_that_cannot_be_written_is_one_line_and_exit_1(place: Place, output: str) -> None:
    """stdout on /dev/full: the installed command says so in one line, naming stdout."""
    model = script(place, ANSWER)
    command = Path(sys.executable).with_name("budgetconf")
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [str(command), "run", "--model", model, "--output", output, "go"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=place.work,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr == (
        "budgetconf: error: cannot write to standard output: No space left on device\n"
    )


def test_control_codes_in_the_answer_are_escaped_but_lines_kept(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model's answer cannot drive the terminal: escapes are shown, newlines stay newlines."""
    answer = {"content": "line one\nline \x1b[31mtwo"}
    code, out, _ = run(["run", "--model", script(place, answer), "go"], capsys)
    assert (code, out) == (0, "line one\nline \\x1b[31mtwo\n")


@pytest.mark.parametrize("script", ["/dev/zero", "fifo.json"])
def test_a_model_script_that_is_not_a_regular_file_is_a_usage_error(
    place: Place, capsys: pytest.CaptureFixture[str], script: str
) -> None:
    """/dev/zero never ends and a FIFO would wait for a writer: both are refused at once."""
    if script == "fifo.json":
        os.mkfifo(place.work / script)
    assert main(["run", "--model", script, "go"]) == 64
    assert capsys.readouterr().err == (
        f"budgetconf: usage error: model script {script}: not a regular file\n"
    )


@pytest.mark.parametrize(
    ("given", "field", "value"),
    [
        ("loop.max_steps=2", "loop.max_steps", 2),
        ("loop.max_turns=2", "loop.max_steps", 2),  # an alias: the field's own path raises it
        ("limits.max_tool_calls=1", "limits.max_tool_calls", 1),
    ],
)
def test_a_limit_set_with_set_is_raised_with_set(
    place: Place, capsys: pytest.CaptureFixture[str], given: str, field: str, value: int
) -> None:
    """--set FIELD=V stops the run: the message and raise_with name --set FIELD=N, not 'where
    it is set' (nothing ranks above explicit, and --set is how the command line reaches it)."""
    code, document = run_json(["--model", script(place, ECHO), "--set", given, "go"], capsys)
    assert code == 2
    assert document["limit"]["raise_with"] == [f"--set {field}=N"]
    assert document["message"].endswith(
        f"{field} = {value} from explicit; raise it with --set {field}=N"
    )


class _Full(io.StringIO):
    """A standard output on a full disk."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_output_that_cannot_be_written_in_process_is_one_line(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """main() with stdout full: one line on stderr naming standard output, exit 1."""
    model = script(place, ANSWER)
    monkeypatch.setattr(sys, "stdout", _Full())
    assert main(["run", "--model", model, "go"]) == 1
    assert capsys.readouterr().err == (
        "budgetconf: error: cannot write to standard output: No space left on device\n"
    )


def test_another_packages_warning_during_a_run_is_shown_as_python_shows_it() -> None:
    """Only budgetconf's own warnings become ``budgetconf: warning:`` lines."""
    from budgetconf.cli._run import _warnings_said
    from budgetconf.errors import BudgetConfWarning

    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _warnings_said(err):
            warnings.warn("theirs", UserWarning, stacklevel=1)
            warnings.warn("ours", BudgetConfWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["theirs"]
    assert err.getvalue() == "budgetconf: warning: ours\n"
