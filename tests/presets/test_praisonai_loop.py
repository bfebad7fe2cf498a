"""The praisonai and praisonai-code presets' loop half, sentence by sentence from their seed.

Each Python-API test runs twice through ``drive`` (``run`` and ``arun``) with
``budget=budgetconf.resolve("praisonai", ...)``: an agents YAML is the
``workflow`` (only its ``execution:`` is read) and ``ExecutionConfig(...)`` is
``explicit``. The command-line tests run ``budgetconf run --preset praisonai``
(or ``praisonai-code``, whose own flags follow ``--``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.loop import LoopExecutor, ScriptedModel, StopReason

from conftest import Place
from helpers.loops import ECHO, Driver, Echo, answer, busy, calls, script, types
from helpers.seeds import AGENTS, SEED_WARNING, WRAP_UP

CONTINUE = "Continue from where you left off."
SUMMARY = "I started on the auth module, but did not finish because the step limit was reached."
BLOCKS = [
    ("content_filter", "content_filtered"),
    ("refusal", "refused"),
    ("length", "length_truncated"),
]


def agents(place: Place, execution: str = "max_steps: 5") -> Path:
    """The agents YAML with ``execution`` (lines of `key: value`) under its execution: key."""
    body = "".join(f"  {line}\n" for line in execution.splitlines())
    return place.write("agents.yaml", AGENTS.replace("  max_steps: 5\n", body))


def praisonai(**execution: int) -> budgetconf.Resolution:
    """The budget of ``ExecutionConfig(**execution)``."""
    return budgetconf.resolve(
        "praisonai", explicit={f"execution.{k}": v for k, v in execution.items()}
    )


def block(finish_reason: str) -> dict[str, Any]:
    return {"content": "partial", "finish_reason": finish_reason}


# --- The final step ---------------------------------------------------------------------


def test_on_the_final_permitted_step_the_model_is_asked_to_wrap_up(
    drive: Driver, place: Place
) -> None:
    """Seed: "On the final permitted step the model is asked to wrap up, so you get a coherent
    answer instead of a hard cut.\""""
    model = ScriptedModel([calls(1), calls(1), answer(SUMMARY)])
    res = budgetconf.resolve("praisonai", workflow=agents(place, "max_steps: 3"))
    ex = drive.executor(model, {"echo": Echo()}, res)

    result = drive.run(ex, "Refactor the auth module across all files")

    assert model.received[2][-1] == {"role": "user", "content": WRAP_UP}
    assert all(WRAP_UP not in str(request) for request in model.received[:2])
    [notice] = [e for e in result.events if e["type"] == "last_turn_notice"]
    assert (notice["turn"], notice["kind"], notice["content"]) == (3, "wrap_up", WRAP_UP)
    assert (result.status, result.stop_reason, result.output) == ("truncated", "max_steps", SUMMARY)


def test_the_wrap_up_message_never_leaks_into_the_callers_history(drive: Driver) -> None:
    """Seed: "The wrap-up message works on a local copy of the conversation, so it never leaks into
    the caller's history.\""""
    caller = [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "user", "content": "Refactor the auth module across all files"},
    ]
    before = copy.deepcopy(caller)
    originals = list(caller)
    model = ScriptedModel([calls(1), answer(SUMMARY)])
    ex = drive.executor(model, {"echo": Echo()}, praisonai(max_steps=2))

    result = drive.run(ex, caller)

    assert model.received[1][-1]["content"] == WRAP_UP  # the model was asked
    assert caller == before
    assert all(a is b for a, b in zip(caller, originals, strict=True))
    assert WRAP_UP not in str(result.messages)
    assert result.messages[:2] == before
    assert result.messages[-1] == {"role": "assistant", "content": SUMMARY}


# --- last_stop_reason -------------------------------------------------------------------


def test_completed_is_a_task_finished_normally(drive: Driver) -> None:
    """Seed: "`"completed"` | Task finished normally\""""
    model = ScriptedModel([calls(1), answer("Done: the auth module is refactored.")])

    result = drive.run(drive.executor(model, {"echo": Echo()}, praisonai()), "go")

    assert (result.stop_reason, result.stop_kind, result.status) == ("completed", "completed", "ok")
    assert result.output == "Done: the auth module is refactored."
    assert result.limit is None


def test_max_steps_is_a_truncated_run_whose_output_is_the_wrap_up_answer(drive: Driver) -> None:
    """Seed: "`"max_steps"` | The `max_steps` budget was reached and the run was truncated\""""
    model = ScriptedModel([calls(1), {"content": "still working", **calls(1)}, answer(SUMMARY)])

    result = drive.run(drive.executor(model, {"echo": Echo()}, praisonai(max_steps=3)), "go")

    assert (result.stop_reason, result.stop_kind, result.status) == (
        "max_steps",
        StopReason.MAX_STEPS,
        "truncated",
    )
    assert result.output == SUMMARY
    assert result.turns == 3


def test_error_is_a_loop_stopped_by_an_error(drive: Driver) -> None:
    """Seed: "`"error"` | The loop stopped because of an error\""""
    echo = Echo()
    state = {"calls": 0}

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        state["calls"] += 1
        if state["calls"] == 2:
            raise ConnectionError("provider unreachable")
        return calls(1)

    result = drive.run(drive.executor(model, {"echo": echo}, praisonai()), "go")

    assert (result.stop_reason, result.stop_kind, result.status) == ("error", "error", "failed")
    assert "ConnectionError: provider unreachable" in result.message
    assert result.turns == 2
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool"]


@pytest.mark.parametrize(("finish_reason", "reason"), BLOCKS)
def test_a_provider_block_is_content_filtered_refused_or_length_truncated(
    drive: Driver, finish_reason: str, reason: str
) -> None:
    """Seed: "`"content_filtered"` / `"refused"` / `"length_truncated"` | The provider blocked,
    refused, or truncated the response\""""
    model = ScriptedModel([calls(1), block(finish_reason)])

    result = drive.run(drive.executor(model, {"echo": Echo()}, praisonai(max_steps=5)), "go")

    assert (result.stop_reason, result.stop_kind, result.status) == (reason, reason, "blocked")
    assert result.turns == 2
    assert result.limit is None


def test_max_steps_is_sticky_over_a_provider_block_on_the_final_step(drive: Driver) -> None:
    """Seed: "A "max_steps" result is sticky and is never downgraded by a later provider block\""""
    for finish_reason, _ in BLOCKS:
        model = ScriptedModel([calls(1), calls(1), block(finish_reason)])
        ex = drive.executor(model, {"echo": Echo()}, praisonai(max_steps=3))

        result = drive.run(ex, "go")

        assert model.received[2][-1]["content"] == WRAP_UP
        assert (result.stop_reason, result.status) == ("max_steps", "truncated"), finish_reason
        assert result.limit is not None
        assert result.limit["field"] == "execution.max_steps"


@pytest.mark.parametrize("turn", [1, 2])
@pytest.mark.parametrize(("finish_reason", "reason"), BLOCKS)
def test_a_block_on_a_run_that_did_not_hit_max_steps_is_not_completed(
    drive: Driver, finish_reason: str, reason: str, turn: int
) -> None:
    """Seed: "a provider block/refusal recorded on a run that *did not* hit `max_steps` surfaces as
    `content_filtered` / `refused` / `length_truncated` instead of `completed`.\""""
    model = ScriptedModel([*[calls(1)] * (turn - 1), block(finish_reason), answer("done")])

    result = drive.run(drive.executor(model, {"echo": Echo()}, praisonai(max_steps=5)), "go")

    assert (result.stop_reason, result.status) == (reason, "blocked")
    assert result.turns == turn


# --- Setting the budget -----------------------------------------------------------------


def test_a_low_ceiling_in_the_yaml_truncates_the_run_at_5(drive: Driver, place: Place) -> None:
    """Seed: "Set a low ceiling in the YAML to demonstrate: execution: max_steps: 5\""""
    path = agents(place)
    model = busy()
    ex = drive.executor(model, {"echo": Echo()}, budgetconf.resolve("praisonai", workflow=path))

    result = drive.run(ex, "Refactor the auth module across all files")

    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 5)
    assert len(model.received) == 5
    assert result.limit == {
        "field": "execution.max_steps",
        "value": 5,
        "source": "yaml",
        "locator": f"{path}:4",
        "raise_with": [],
    }
    assert result.message.startswith(
        f"stopped: hit max_steps (5): execution.max_steps = 5 from {path}:4"
    )


@pytest.mark.parametrize("max_iter", [None, 7])
def test_unset_max_steps_falls_back_to_max_iter(
    drive: Driver, place: Place, max_iter: int | None
) -> None:
    """Seed: "`max_steps` ... `None` → fall back to `max_iter`." and "`max_iter` | `int` | `20` |
    Legacy per-loop iteration cap. Still used when `max_steps` is unset.\""""
    if max_iter is None:
        res, steps, where = budgetconf.resolve("praisonai"), 20, "built-in default"
    else:
        path = agents(place, f"max_iter: {max_iter}")
        res, steps, where = budgetconf.resolve("praisonai", workflow=path), 7, f"{path}:4"

    result = drive.run(drive.executor(busy(), {"echo": Echo()}, res), "go")

    assert (result.stop_reason, result.turns) == ("max_steps", steps)
    assert result.limit is not None
    assert (result.limit["field"], result.limit["value"], result.limit["locator"]) == (
        "execution.max_steps",
        steps,
        where,
    )
    assert f"execution.max_steps = {steps} from execution.max_iter ({where})" in result.message


# --- max_tool_calls_per_turn ------------------------------------------------------------


def test_a_round_of_5_parallel_calls_does_not_exhaust_max_steps_5(
    drive: Driver, place: Place
) -> None:
    """Seed: "if they were coupled, a single parallel-tool response could exhaust the whole step
    budget (e.g. `max_steps=5` truncating after one round of 5 parallel calls).\""""
    path = agents(place, "max_steps: 5\nmax_tool_calls_per_turn: 5")
    echo = Echo()
    model = ScriptedModel([calls(5), calls(5), answer("done")])
    ex = drive.executor(model, {"echo": echo}, budgetconf.resolve("praisonai", workflow=path))

    result = drive.run(ex, "go")

    assert (result.status, result.stop_reason, result.turns) == ("ok", "completed", 3)
    assert len(echo.seen) == result.tool_calls_executed == 10


def test_a_per_turn_cap_of_5_does_not_halve_the_step_budget(drive: Driver) -> None:
    """Seed: "a per-turn cap of 5 does not halve your step budget.\""""
    echo = Echo()
    ex = drive.executor(busy(5), {"echo": echo}, praisonai(max_steps=4, max_tool_calls_per_turn=5))

    result = drive.run(ex, "go")

    assert (result.stop_reason, result.turns) == ("max_steps", 4)
    assert len(echo.seen) == 15  # three full rounds; the final step's calls never run


def test_the_cap_applies_within_a_single_response(drive: Driver) -> None:
    """Seed: "Cap on tool calls within a **single** LLM response (parallel-tool guardrail).\""""
    echo = Echo()
    model = ScriptedModel([calls(7), calls(5), answer("done")])
    ex = drive.executor(model, {"echo": echo}, praisonai(max_steps=5, max_tool_calls_per_turn=5))

    result = drive.run(ex, "go")

    # over the cap the first 5 run and the rest are skipped; the next response runs in full
    assert echo.seen == ["0", "1", "2", "3", "4", "0", "1", "2", "3", "4"]
    assert (result.status, result.turns) == ("ok", 3)
    [truncated] = [e for e in result.events if e["type"] == "batch_truncated"]
    assert (truncated["turn"], truncated["calls"], truncated["cap"]) == (1, 7, 5)
    assert truncated["skipped"] == ["call_1_5", "call_1_6"]
    answers = [m["content"] for m in result.messages if m["role"] == "tool"][:7]
    assert answers[:5] == ["0", "1", "2", "3", "4"]
    assert all(text.startswith("skipped: only the first 5 calls") for text in answers[5:])
    assert "batch_rejected" not in types(result)


def test_the_default_cap_is_10_whatever_max_steps_is(drive: Driver) -> None:
    """Seed: "`max_tool_calls_per_turn` | `int` | `10` | ... Independent of `max_steps`.\""""
    echo = Echo()
    model = ScriptedModel([calls(11), answer("done")])

    result = drive.run(drive.executor(model, {"echo": echo}, praisonai(max_steps=50)), "go")

    assert len(echo.seen) == 10
    [truncated] = [e for e in result.events if e["type"] == "batch_truncated"]
    assert truncated["cap"] == 10


# --- Pattern 2: detect and continue after truncation ------------------------------------


def test_a_truncated_run_is_continued_until_it_completes(drive: Driver) -> None:
    """Seed: "Pattern 2 — Detect and continue after truncation": `while agent.last_stop_reason ==
    "max_steps": result = agent.start("Continue from where you left off.")`"""
    model = ScriptedModel([calls(1), answer(SUMMARY), calls(1), answer("Done: all files.")])
    ex = drive.executor(model, {"echo": Echo()}, praisonai(max_steps=2))

    result = drive.run(ex, "Refactor the auth module across all files")
    assert (result.stop_reason, result.output) == ("max_steps", SUMMARY)
    rounds = 0
    while result.stop_reason == "max_steps" and rounds < 3:
        result = drive.resume(ex, result, extra_steps=3, prompt=CONTINUE)
        rounds += 1

    assert rounds == 1
    assert (result.stop_reason, result.status, result.output) == (
        "completed",
        "ok",
        "Done: all files.",
    )
    assert result.turns == 4  # the whole conversation
    assert [m["role"] for m in result.messages] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert result.messages[3:5] == [
        {"role": "assistant", "content": SUMMARY},
        {"role": "user", "content": CONTINUE},
    ]
    assert WRAP_UP not in str(result.messages)


def test_a_continuation_that_is_truncated_again_is_wrapped_up_again(drive: Driver) -> None:
    """Seed: "while agent.last_stop_reason == "max_steps": ..." — each continuation has its own
    final step, and a wrap-up on it."""
    model = ScriptedModel([calls(1), answer(SUMMARY), calls(1), answer(SUMMARY)])
    ex = drive.executor(model, {"echo": Echo()}, praisonai(max_steps=2))

    first = drive.run(ex, "go")
    again = drive.resume(ex, first, extra_steps=2, prompt=CONTINUE)

    assert (again.stop_reason, again.turns, again.output) == ("max_steps", 4, SUMMARY)
    assert model.received[3][-1] == {"role": "user", "content": WRAP_UP}
    assert again.limit is not None
    assert again.limit["locator"] == "resume(extra_steps=2)"


# --- On the CLI: praisonai --------------------------------------------------------------


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_truncated_at_the_yaml_ceiling_exits_2_with_the_summary_as_result(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "A step-limit-truncated run through `praisonai run` / `praisonai-code run` exits `2`
    and emits `status: "truncated"` under `--output json`, preserving the wrap-up summary in
    `result`.\""""
    path = agents(place)
    model = script(place, ECHO, ECHO, ECHO, ECHO, {"content": SUMMARY})
    args = ["--preset", "praisonai", "--workflow", str(path), "--model", model]

    code, out, _ = run_cli([*args, "--output", "json", "Refactor the auth module"], capsys)

    document = json.loads(out)
    assert code == 2
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "truncated",
        "max_steps",
        5,
    )
    assert document["result"] == SUMMARY
    assert (document["limit"]["field"], document["limit"]["locator"]) == (
        "execution.max_steps",
        f"{path}:4",
    )
    [notice] = [e for e in document["events"] if e["type"] == "last_turn_notice"]
    assert (notice["turn"], notice["content"]) == (5, WRAP_UP)


def test_run_in_interactive_mode_adds_the_seeds_one_line_stderr_warning(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "Interactive (non-JSON) mode additionally prints a one-line stderr warning: Run hit
    the step/iteration limit; ... and re-run.\""""
    path = agents(place)
    model = script(place, ECHO, ECHO, ECHO, ECHO, {"content": SUMMARY})
    args = ["--preset", "praisonai", "--workflow", str(path), "--model", model]

    code, out, err = run_cli([*args, "Refactor the auth module"], capsys)

    assert code == 2
    assert out == SUMMARY + "\n"
    # then what set the limit, and what outranks it: on the command line, --set
    limit = f"execution.max_steps = 5 from {path}:4; raise it with --set execution.max_steps=N"
    assert err == f"{SEED_WARNING} [{limit}]\n"


def test_run_that_completes_prints_no_warning(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "A step-limit-truncated run ... exits `2`" — and only such a run: a finished one is
    exit 0, without the warning."""
    path = agents(place)
    model = script(place, ECHO, {"content": "Done."})
    args = ["--preset", "praisonai", "--workflow", str(path), "--model", model]

    code, out, err = run_cli([*args, "Refactor the auth module"], capsys)

    assert (code, out, err) == (0, "Done.\n", "")


# --- praisonai code ---------------------------------------------------------------------


def test_praisonai_code_loop_behaves_as_praisonai(drive: Driver) -> None:
    """PRESETS.md: "`praisonai-code` ... Loop behaviour as `praisonai`." — wrap-up and truncate."""
    res = budgetconf.resolve("praisonai-code", argv=["--max-steps", "3"])
    echo = Echo()
    model = ScriptedModel([calls(5), calls(1), answer(SUMMARY)])

    result = drive.run(drive.executor(model, {"echo": echo}, res), "go")

    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 3)
    assert result.output == SUMMARY
    assert model.received[2][-1] == {"role": "user", "content": WRAP_UP}
    assert echo.seen == ["0", "1", "2", "0"]  # --max-steps raises the per-response cap too
    assert result.limit is not None
    assert result.limit["locator"] == "--max-steps"


@pytest.mark.parametrize(
    ("env", "app_args", "steps", "locator"),
    [
        ({}, ["--max-steps", "3"], 3, "--max-steps; raise it with --max-steps"),
        (
            {"PRAISONAI_CODE_MAX_STEPS": "4"},
            [],
            4,
            "env:PRAISONAI_CODE_MAX_STEPS; raise it with PRAISONAI_CODE_MAX_STEPS or --max-steps",
        ),
    ],
    ids=["flag", "env"],
)
def test_praisonai_code_run_truncates_at_the_flag_or_variable(
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    models: list[ScriptedModel],
    env: dict[str, str],
    app_args: list[str],
    steps: int,
    locator: str,
) -> None:
    """Seed: "| CLI flag | `praisonai code --max-steps 300 "…"` | Highest |" and "| Environment |
    `PRAISONAI_CODE_MAX_STEPS=300 praisonai code "…"` | Middle |" — truncated runs exit 2."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ["--preset", "praisonai-code", "--model", script(place, ECHO), "go"]

    code, out, err = run_cli([*args, "--", *app_args] if app_args else args, capsys)

    [model] = models
    assert (code, out) == (2, "")
    assert len(model.received) == steps
    assert model.received[-1][-1] == {"role": "user", "content": WRAP_UP}
    assert all(WRAP_UP not in str(request) for request in model.received[:-1])
    assert err == f"{SEED_WARNING} [execution.max_steps = {steps} from {locator}]\n"


def test_praisonai_code_run_json_keeps_the_wrap_up_summary(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "A step-limit-truncated run through ... `praisonai-code run` exits `2` and emits
    `status: "truncated"` under `--output json`, preserving the wrap-up summary in `result`.\""""
    model = script(place, ECHO, ECHO, {"content": SUMMARY})
    args = ["--preset", "praisonai-code", "--model", model, "--output", "json", "go"]

    code, out, _ = run_cli([*args, "--", "--max-steps", "3"], capsys)

    document = json.loads(out)
    assert (code, document["status"], document["result"], document["turns"]) == (
        2,
        "truncated",
        SUMMARY,
        3,
    )
    assert document["limit"]["locator"] == "--max-steps"


def test_a_stop_at_max_iter_s_value_says_max_steps_would_raise_it(place: Place) -> None:
    """A max_steps left unset takes max_iter's value; setting max_steps in the YAML raises it."""
    res = budgetconf.resolve("praisonai", explicit={"execution.max_iter": 2})
    result = LoopExecutor(ScriptedModel([calls(1)]), {"echo": Echo()}, res).run("go")
    assert result.message == (
        "stopped: hit max_steps (2): execution.max_steps = 2 from execution.max_iter (explicit);"
        " raise it there, or in the workflow file or code (explicit)"
    )


def test_a_resumed_run_names_the_resume_not_max_iter(drive: Driver) -> None:
    """Continuing a run whose budget came from max_iter: the new budget is the resume's own."""
    model = ScriptedModel([calls(1)])
    ex = drive.executor(model, {"echo": Echo()}, budgetconf.resolve("praisonai"))
    again = drive.resume(ex, drive.run(ex, "go"), extra_steps=2)
    assert again.message == (
        "stopped: hit max_steps (2): execution.max_steps = 2 from resume(extra_steps=2);"
        " raise it with extra_steps"
    )
