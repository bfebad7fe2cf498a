"""The opendot preset's loop half, sentence by sentence from its seed.

Each Python-API test runs twice through ``drive`` (``run`` and ``arun``) with
``budget=budgetconf.resolve("opendot")``, the process environment standing in
for the user's shell; the command-line tests run ``budgetconf run --preset
opendot`` with the variable exported.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.loop import ScriptedModel, StopReason

from conftest import Place
from helpers.loops import ECHO, Driver, Echo, answer, busy, calls, script, types

VARIABLE = "OPENDOT_MAX_STEPS"
AT_40 = (
    "stopped: hit max_steps (40): agent.max_steps = 40 from built-in default;"
    " raise it with OPENDOT_MAX_STEPS"
)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", "--preset", "opendot", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, _ = run_cli(["--output", "json", *args], capsys)
    return code, json.loads(out)


# --- At the ceiling ---------------------------------------------------------------------


def test_the_loop_is_bounded_by_a_hard_cap_of_40_turns(drive: Driver) -> None:
    """Seed: "In opendot, the agent loop is bounded by a hard cap on tool-calling turns per user
    message.\""""
    model = busy()
    ex = drive.executor(model, {"echo": Echo()}, budgetconf.resolve("opendot"))

    result = drive.run(ex, "refactor everything")

    assert len(model.received) == result.turns == 40
    assert (result.status, result.stop_reason, result.stop_kind) == (
        "truncated",
        "max_steps",
        StopReason.MAX_STEPS,
    )


def test_the_stop_message_starts_as_the_seeds_and_says_where_40_came_from(drive: Driver) -> None:
    """Seed: "When a long task hit the ceiling, the loop aborted with stopped: hit max_steps
    (40)\""""
    ex = drive.executor(busy(), {"echo": Echo()}, budgetconf.resolve("opendot"))

    result = drive.run(ex, "refactor everything")

    assert result.message.startswith("stopped: hit max_steps (40)")
    assert result.message == AT_40
    assert result.limit == {
        "field": "agent.max_steps",
        "value": 40,
        "source": "default",
        "locator": "built-in default",
        "raise_with": [VARIABLE],
    }


def test_the_stop_names_the_variable_that_raises_the_cap(drive: Driver) -> None:
    """Seed: "it makes the failure look like a tool bug rather than a configuration limit. The user
    sees the agent stop mid-thought with no actionable path forward.\""""
    ex = drive.executor(busy(), {"echo": Echo()}, budgetconf.resolve("opendot"))

    result = drive.run(ex, "refactor everything")

    assert result.message.endswith("; raise it with OPENDOT_MAX_STEPS")
    exhausted = [e for e in result.events if e["type"] == "budget_exhausted"]
    assert [(e["field"], e["value"], e["raise_with"]) for e in exhausted] == [
        ("agent.max_steps", 40, [VARIABLE])
    ]
    assert types(result)[-1] == "stopped"


# --- The escape hatch -------------------------------------------------------------------


def test_an_exported_variable_bounds_the_next_run(
    drive: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed: "a user can export OPENDOT_MAX_STEPS before each run and see the effect
    immediately.\""""
    monkeypatch.setenv(VARIABLE, "5")
    result = drive.run(
        drive.executor(busy(), {"echo": Echo()}, budgetconf.resolve("opendot")), "go"
    )
    assert (result.status, result.turns) == ("truncated", 5)
    assert result.limit is not None
    assert (result.limit["source"], result.limit["locator"]) == ("env", "env:OPENDOT_MAX_STEPS")
    assert result.message == (
        "stopped: hit max_steps (5): agent.max_steps = 5 from env:OPENDOT_MAX_STEPS;"
        " raise it with OPENDOT_MAX_STEPS"
    )

    monkeypatch.setenv(VARIABLE, "7")
    again = drive.run(drive.executor(busy(), {"echo": Echo()}, budgetconf.resolve("opendot")), "go")
    assert again.turns == 7


@pytest.mark.parametrize("raw", ["junk", "4.5", "0", "-3"])
def test_a_malformed_variable_keeps_the_cap_of_40(
    drive: Driver, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    """Seed: "unset, non-integer, and non-positive values all keep the original default of 40.
    A malformed env var should not silently remove the safety rail.\""""
    monkeypatch.setenv(VARIABLE, raw)
    with pytest.warns(budgetconf.BudgetConfWarning, match=VARIABLE):
        res = budgetconf.resolve("opendot")

    result = drive.run(drive.executor(busy(), {"echo": Echo()}, res), "go")

    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 40)
    assert result.message == AT_40


def test_an_empty_variable_keeps_the_cap_of_40_without_a_word(
    drive: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed: "unset ... values all keep the original default of 40": an empty one is unset, and
    the stop message still says how to raise the cap."""
    monkeypatch.setenv(VARIABLE, "")
    res = budgetconf.resolve("opendot")  # warnings are errors: there is none

    result = drive.run(drive.executor(busy(), {"echo": Echo()}, res), "go")

    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 40)
    assert result.message == AT_40


def test_an_explicit_argument_wins_over_the_variable(
    drive: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed: "AgentConfig(max_steps=100) # always 100, env ignored\""""
    monkeypatch.setenv(VARIABLE, "5")
    res = budgetconf.resolve("opendot", explicit={"agent.max_steps": 100})

    result = drive.run(drive.executor(busy(), {"echo": Echo()}, res), "go")

    assert result.turns == 100
    assert result.limit is not None
    assert (result.limit["locator"], result.limit["raise_with"]) == ("explicit", [])
    assert result.message.startswith("stopped: hit max_steps (100): agent.max_steps = 100 from")


# --- What the seed's loop does not have -------------------------------------------------


def test_no_notice_is_sent_before_the_last_turn(
    drive: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PRESETS.md: "Loop: no notice before the last turn (`last_turn = none`) ... the seed has
    neither.\""""
    monkeypatch.setenv(VARIABLE, "3")
    model = busy()

    result = drive.run(drive.executor(model, {"echo": Echo()}, budgetconf.resolve("opendot")), "go")

    assert result.turns == 3
    assert "last_turn_notice" not in types(result)
    last_request = model.received[-1]
    assert [m["role"] for m in last_request] == ["user", "assistant", "tool", "assistant", "tool"]
    assert last_request[0] == {"role": "user", "content": "go"}


def test_a_response_with_50_calls_runs_them_all(drive: Driver) -> None:
    """PRESETS.md: "no per-response cap — the seed has neither.\""""
    echo = Echo()
    model = ScriptedModel([calls(50), answer("all done")])

    result = drive.run(drive.executor(model, {"echo": echo}, budgetconf.resolve("opendot")), "go")

    assert (result.status, result.output) == ("ok", "all done")
    assert echo.seen == [str(i) for i in range(50)]
    assert result.tool_calls_executed == 50
    assert not {"batch_rejected", "batch_truncated", "calls_not_executed"} & set(types(result))


# --- budgetconf run --preset opendot ----------------------------------------------------


def test_run_stops_at_40_with_the_seeds_message(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "the loop aborted with stopped: hit max_steps (40)" — through `budgetconf run`."""
    code, document = run_json(["--model", script(place, ECHO), "go"], capsys)

    assert code == 2
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "truncated",
        "max_steps",
        40,
    )
    assert document["message"] == AT_40
    assert document["limit"]["raise_with"] == [VARIABLE]


def test_run_in_text_mode_warns_in_one_line_with_the_variable(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "no actionable path forward" — the stderr line says where 40 came from and the fix."""
    code, out, err = run_cli(["--model", script(place, ECHO), "go"], capsys)

    assert (code, out) == (2, "")
    assert err == f"budgetconf: warning: {AT_40}\n"


def test_run_honours_an_exported_variable(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "a user can export OPENDOT_MAX_STEPS before each run and see the effect
    immediately.\""""
    monkeypatch.setenv(VARIABLE, "5")

    code, document = run_json(["--model", script(place, ECHO), "go"], capsys)

    assert (code, document["turns"]) == (2, 5)
    assert document["message"].startswith("stopped: hit max_steps (5)")
    assert (document["limit"]["value"], document["limit"]["locator"]) == (
        5,
        "env:OPENDOT_MAX_STEPS",
    )


def test_run_with_a_malformed_variable_warns_and_keeps_40(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "A malformed env var should not silently remove the safety rail.\""""
    monkeypatch.setenv(VARIABLE, "junk")

    code, out, err = run_cli(["--model", script(place, ECHO), "go"], capsys)

    assert (code, out) == (2, "")
    rejected, stopped = err.splitlines()
    assert rejected.startswith("budgetconf: warning: agent.max_steps from env:OPENDOT_MAX_STEPS")
    assert "'junk'" in rejected
    assert stopped == f"budgetconf: warning: {AT_40}"


def test_run_executes_all_50_calls_of_one_response(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """PRESETS.md: "no per-response cap" — through `budgetconf run`."""
    many = {"tool_calls": [{"name": "echo", "arguments": {"text": str(i)}} for i in range(50)]}

    code, document = run_json(["--model", script(place, many, answer("all done")), "go"], capsys)

    assert (code, document["status"], document["result"]) == (0, "ok", "all done")
    assert document["tool_calls_executed"] == 50
