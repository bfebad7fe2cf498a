"""The skiller preset's loop half, sentence by sentence from its seed.

Each Python-API test runs twice through ``drive`` (``run`` and ``arun``) with
``budget=budgetconf.resolve("skiller", workflow=..., step="reviewer")``; the
command-line tests run ``budgetconf run --preset skiller``. The seed's layout,
rebuilt in each test's home folder:

    ~/.skiller/settings/agent.json              the global agent configuration
    ~/.skiller/profiles/agent.reviewer.json     the reviewer's profile
    ./workflow.yaml                             - agent: reviewer / config: {file: ...}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.loop import ScriptedModel, StopReason

from conftest import Place
from helpers.loops import ECHO, Driver, Echo, answer, busy, calls, types
from helpers.seeds import SKILLER_OVERRIDES, SKILLER_WORKFLOW

# a profile as people write it, with the agent's other settings: max_turns on line 4
PROFILE_TEXT = """\
{{
  "model": "big",
  "loop": {{
    "max_turns": {turns}
  }}
}}
"""


def profile_file(place: Place, text: str = '{"model": "big"}\n') -> Path:
    return place.write(".skiller/profiles/agent.reviewer.json", text, base=place.home)


def global_file(place: Place, loop: dict[str, int]) -> Path:
    body = json.dumps({"model": "small", "loop": loop}, indent=2) + "\n"
    return place.write(".skiller/settings/agent.json", body, base=place.home)


def workflow(place: Place, text: str = SKILLER_WORKFLOW) -> Path:
    """The workflow YAML; the reviewer's profile is written too (without a loop section)."""
    if not (place.home / ".skiller/profiles/agent.reviewer.json").exists():
        profile_file(place)
    return place.write("workflow.yaml", text)


def reviewer(place: Place, *, max_turns: int | None = None, text: str | None = None) -> Any:
    """The resolution of `--step reviewer`; ``max_turns`` is written on the step."""
    if text is None:
        text = (
            SKILLER_WORKFLOW
            if max_turns is None
            else f"{SKILLER_WORKFLOW}  max_turns: {max_turns}\n"
        )
    return budgetconf.resolve("skiller", workflow=workflow(place, text), step="reviewer")


def tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


# --- Fields: max_turns ------------------------------------------------------------------


def test_a_turn_is_one_model_response_not_one_tool_call(drive: Driver, place: Place) -> None:
    """Seed: "A turn is one model response, not one tool call.\""""
    echo = Echo()
    model = ScriptedModel([calls(3), calls(3), answer("reviewed")])
    ex = drive.executor(model, {"echo": echo}, reviewer(place, max_turns=3))

    result = drive.run(ex, "review the change")

    assert (result.status, result.output) == ("ok", "reviewed")
    assert result.turns == len(model.received) == 3
    assert result.tool_calls_executed == len(echo.seen) == 6


def test_results_of_several_calls_reach_the_model_on_its_next_turn(
    drive: Driver, place: Place
) -> None:
    """Seed: "A model can request several tools in one turn; their results are available to the
    model on its next turn.\""""
    model = ScriptedModel([calls(3), answer()])
    ex = drive.executor(model, {"echo": Echo()}, reviewer(place))

    drive.run(ex, "review the change")

    ids = [c["id"] for c in model.received[1][1]["tool_calls"]]
    results = tool_messages(model.received[1])
    assert [(m["tool_call_id"], m["content"]) for m in results] == list(
        zip(ids, ["0", "1", "2"], strict=True)
    )
    assert tool_messages(model.received[0]) == []


# --- When a limit is reached: model turns -----------------------------------------------


def test_the_model_is_warned_before_its_last_allowed_turn(drive: Driver, place: Place) -> None:
    """Seed: "When tools are enabled, the harness warns the model before its last allowed
    turn.\""""
    model = ScriptedModel([calls(1), calls(1), answer("final")])
    caller = [{"role": "user", "content": "review the change"}]
    ex = drive.executor(model, {"echo": Echo()}, reviewer(place, max_turns=3))

    result = drive.run(ex, caller)

    warning = ex.budget.spec.warn_message
    assert model.received[2][-1] == {"role": "user", "content": warning}
    assert all(warning not in str(request) for request in model.received[:2])
    assert warning not in str(result.messages)
    assert caller == [{"role": "user", "content": "review the change"}]
    [notice] = [e for e in result.events if e["type"] == "last_turn_notice"]
    assert (notice["turn"], notice["kind"], notice["content"]) == (3, "warn", warning)
    # a final answer on the warned turn completes the step
    assert (result.status, result.stop_reason, result.output) == ("ok", "completed", "final")


def test_no_warning_when_tools_are_not_enabled(drive: Driver, place: Place) -> None:
    """Seed: "When tools are enabled, the harness warns the model ..." — and only then."""
    model = ScriptedModel([answer("looks good")])
    ex = drive.executor(model, None, reviewer(place, max_turns=1))

    result = drive.run(ex, "review the change")

    assert (result.status, result.output) == ("ok", "looks good")
    assert model.received == [[{"role": "user", "content": "review the change"}]]
    assert "last_turn_notice" not in types(result)


def test_exhaustion_without_a_final_answer_stops_with_max_turns_exhausted(
    drive: Driver, place: Place
) -> None:
    """Seed: "If the budget is exhausted without a final answer, execution stops with the reason
    max_turns_exhausted.\""""
    ex = drive.executor(busy(), {"echo": Echo()}, reviewer(place, max_turns=4))

    result = drive.run(ex, "review the change")

    assert (result.stop_reason, result.stop_kind, result.status) == (
        "max_turns_exhausted",
        StopReason.MAX_STEPS,
        "truncated",
    )
    assert result.turns == 4
    assert [e["stop_reason"] for e in result.events if e["type"] == "stopped"] == [
        "max_turns_exhausted"
    ]


def test_the_default_budget_of_30_turns_is_exhausted_the_same_way(
    drive: Driver, place: Place
) -> None:
    """Seed: "max_turns  Maximum model turns during one agent step execution. ...  30\""""
    model = busy()
    ex = drive.executor(model, {"echo": Echo()}, reviewer(place))

    result = drive.run(ex, "review the change")

    assert (result.stop_reason, result.turns, len(model.received)) == (
        "max_turns_exhausted",
        30,
        30,
    )
    assert result.limit is not None
    assert (result.limit["field"], result.limit["value"], result.limit["locator"]) == (
        "loop.max_turns",
        30,
        "built-in default",
    )


def test_exhaustion_is_a_recorded_control_message_and_event_not_an_answer_or_a_failure(
    drive: Driver, place: Place
) -> None:
    """Seed: "The harness records a control message and event, rather than inventing a final
    answer or treating exhaustion as a technical failure.\""""
    model = busy()
    ex = drive.executor(model, {"echo": Echo()}, reviewer(place, max_turns=3))

    result = drive.run(ex, "review the change")  # no exception

    assert (result.status, result.stop_kind) == ("truncated", StopReason.MAX_STEPS)  # not failed
    assert result.message.startswith("stopped: hit max_turns (3): loop.max_turns = 3 from step:")
    [exhausted] = [e for e in result.events if e["type"] == "budget_exhausted"]
    assert (exhausted["stop_reason"], exhausted["field"], exhausted["value"]) == (
        "max_turns_exhausted",
        "loop.max_turns",
        3,
    )
    assert types(result)[-2:] == ["budget_exhausted", "stopped"]
    # no answer is invented: the model said nothing, and the conversation holds only its turns
    assert result.output == ""
    assistant = [m for m in result.messages if m["role"] == "assistant"]
    assert len(assistant) == 3
    assert all(m["content"] is None for m in assistant)


def test_the_budget_starts_again_on_the_next_step_execution(drive: Driver, place: Place) -> None:
    """Seed: "The budget starts again on the next agent step execution.\""""
    model = busy()
    ex = drive.executor(model, {"echo": Echo()}, reviewer(place, max_turns=3))

    first = drive.run(ex, "review the change")
    second = drive.run(ex, "review the next change")

    assert (first.turns, second.turns) == (3, 3)
    assert second.stop_reason == "max_turns_exhausted"
    assert len(model.received) == 6
    assert [e["turn"] for e in second.events if e["type"] == "turn_started"] == [1, 2, 3]
    assert [e["turn"] for e in second.events if e["type"] == "last_turn_notice"] == [3]
    assert second.messages[0] == {"role": "user", "content": "review the next change"}


# --- When a limit is reached: tool calls per response -----------------------------------


def test_a_response_over_the_limit_of_10_is_rejected_as_a_whole(
    drive: Driver, place: Place
) -> None:
    """Seed: "With a limit of 10, a response containing 11 calls is rejected as a whole: none of
    those tools execute.\""""
    echo = Echo()
    model = ScriptedModel([calls(11), answer()])
    ex = drive.executor(model, {"echo": echo}, reviewer(place))

    result = drive.run(ex, "review the change")

    assert echo.seen == []
    assert result.tool_calls_executed == 0
    [rejected] = [e for e in result.events if e["type"] == "batch_rejected"]
    asked = [c["id"] for c in result.messages[1]["tool_calls"]]
    assert (rejected["calls"], rejected["cap"], rejected["ids"]) == (11, 10, asked)
    assert "tool_executed" not in types(result)


def test_corrective_feedback_asks_for_fewer_calls_and_the_run_continues(
    drive: Driver, place: Place
) -> None:
    """Seed: "The harness adds corrective feedback asking the model to return fewer calls and
    continues if turns remain.\""""
    echo = Echo()
    model = ScriptedModel([calls(11), calls(2), answer("reviewed")])
    ex = drive.executor(model, {"echo": echo}, reviewer(place))

    result = drive.run(ex, "review the change")

    assert (result.status, result.output, result.turns) == ("ok", "reviewed", 3)
    assert echo.seen == ["0", "1"]
    asked = [c["id"] for c in model.received[1][1]["tool_calls"]]
    feedback = tool_messages(model.received[1])
    assert [m["tool_call_id"] for m in feedback] == asked
    for message in feedback:
        assert message["content"].startswith("not executed: this response has 11 tool calls")
        assert (
            "at most 10 are accepted in one response (loop.max_tool_calls = 10)"
            in (message["content"])
        )
        assert message["content"].endswith("Send at most 10 calls in a response.")
    assert feedback == tool_messages(result.messages)[:11]  # it belongs to the conversation


def test_rejections_go_on_only_while_turns_remain(drive: Driver, place: Place) -> None:
    """Seed: "... and continues if turns remain." — a model that keeps sending 11 calls runs out."""
    echo = Echo()
    ex = drive.executor(ScriptedModel([calls(11)]), {"echo": echo}, reviewer(place, max_turns=3))

    result = drive.run(ex, "review the change")

    assert (result.stop_reason, result.turns) == ("max_turns_exhausted", 3)
    assert echo.seen == []
    assert [e["turn"] for e in result.events if e["type"] == "batch_rejected"] == [1, 2]


def test_the_rejected_response_still_consumes_a_turn(drive: Driver, place: Place) -> None:
    """Seed: "The rejected response still consumes a turn.\""""
    echo = Echo()
    model = ScriptedModel([calls(11), calls(1)])
    ex = drive.executor(model, {"echo": echo}, reviewer(place, max_turns=2))

    result = drive.run(ex, "review the change")

    # turn 1 was the rejected response, so the corrected one came on the last turn
    assert (result.stop_reason, result.turns) == ("max_turns_exhausted", 2)
    assert model.received[1][-1]["content"] == ex.budget.spec.warn_message
    assert echo.seen == []


def test_ten_calls_now_and_ten_later_are_allowed(drive: Driver, place: Place) -> None:
    """Seed: "Ten calls in one response and another ten in a later response are allowed. This
    setting limits batch size, not the total number of calls or their execution time.\""""
    echo = Echo()
    model = ScriptedModel([calls(10), calls(10), answer("reviewed")])
    ex = drive.executor(model, {"echo": echo}, reviewer(place))

    result = drive.run(ex, "review the change")

    assert (result.status, result.tool_calls_executed, len(echo.seen)) == ("ok", 20, 20)
    assert "batch_rejected" not in types(result)
    # nothing bounds the total of calls or the time they take
    assert set(ex.budget.limits) == {"max_steps", "max_tool_calls_per_turn"}


# --- Step overrides ---------------------------------------------------------------------


def test_step_values_take_precedence_over_the_resolved_configuration(
    drive: Driver, place: Place
) -> None:
    """Seed: "These step values take precedence over the resolved configuration.\""""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile_file(place, PROFILE_TEXT.format(turns=4))
    path = workflow(place, SKILLER_OVERRIDES)
    res = budgetconf.resolve("skiller", workflow=path, step="reviewer")
    echo = Echo()
    model = ScriptedModel([calls(4), calls(3)])
    ex = drive.executor(model, {"echo": echo}, res)

    result = drive.run(ex, "review the change")

    assert (result.stop_reason, result.turns) == ("max_turns_exhausted", 15)
    assert result.limit == {
        "field": "loop.max_turns",
        "value": 15,
        "source": "step",
        "locator": f"step:reviewer ({path}:4)",
        "raise_with": [],
    }
    assert result.message == (
        f"stopped: hit max_turns (15): loop.max_turns = 15 from step:reviewer ({path}:4);"
        " raise it where it is set"
    )
    # max_tool_calls: 3 caps every response: the 4 calls of turn 1 are rejected, 3 run after
    [rejected] = [e for e in result.events if e["type"] == "batch_rejected"]
    assert (rejected["turn"], rejected["cap"]) == (1, 3)
    assert "(loop.max_tool_calls = 3)" in tool_messages(result.messages)[0]["content"]
    assert len(echo.seen) == 3 * 13  # turns 2..14; the calls of the last turn never run


def test_a_profile_loop_section_bounds_the_step(drive: Driver, place: Place) -> None:
    """Seed: "Skiller uses the loop section from the agent profile first.\""""
    global_file(place, {"max_turns": 50})
    profile = profile_file(place, PROFILE_TEXT.format(turns=4))

    result = drive.run(drive.executor(busy(), {"echo": Echo()}, reviewer(place)), "go")

    assert (result.stop_reason, result.turns) == ("max_turns_exhausted", 4)
    assert result.limit is not None
    assert (result.limit["source"], result.limit["locator"]) == ("profile", f"{profile}:4")
    assert f"loop.max_turns = 4 from {profile}:4" in result.message


def test_a_profile_loop_section_brings_back_the_default_cap(drive: Driver, place: Place) -> None:
    """Seed: "A profile's loop section replaces the entire global section. Omitted fields use their
    defaults, not the corresponding global values.\""""
    global_file(place, {"max_turns": 50, "max_tool_calls": 2})
    profile_file(place, PROFILE_TEXT.format(turns=4))
    echo = Echo()
    model = ScriptedModel([calls(10), calls(11), answer()])

    result = drive.run(drive.executor(model, {"echo": echo}, reviewer(place)), "go")

    assert len(echo.seen) == 10  # the global cap of 2 is gone; the default 10 is in force
    [rejected] = [e for e in result.events if e["type"] == "batch_rejected"]
    assert (rejected["turn"], rejected["cap"]) == (2, 10)


# --- budgetconf run --preset skiller ----------------------------------------------------


def _cli(place: Place, *options: str) -> list[str]:
    path = workflow(place, SKILLER_OVERRIDES)
    model = place.write("model.json", json.dumps({"responses": [ECHO]}))
    return ["run", "--preset", "skiller", "--workflow", str(path), "--step", "reviewer",
            "--model", str(model), *options, "review the change"]  # fmt: skip


def test_run_exits_2_with_max_turns_exhausted_and_the_step_limit(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "execution stops with the reason max_turns_exhausted" — through `budgetconf run`."""
    code = main(_cli(place, "--output", "json"))
    document = json.loads(capsys.readouterr().out)

    path = place.work / "workflow.yaml"
    assert code == 2
    assert (document["status"], document["stop_reason"], document["turns"]) == (
        "truncated",
        "max_turns_exhausted",
        15,
    )
    assert document["limit"] == {
        "field": "loop.max_turns",
        "value": 15,
        "source": "step",
        "locator": f"step:reviewer ({path}:4)",
        "raise_with": [],
    }
    assert document["result"] == ""
    [notice] = [e for e in document["events"] if e["type"] == "last_turn_notice"]
    assert (notice["turn"], notice["kind"]) == (15, "warn")


def test_run_in_text_mode_warns_in_one_line_naming_field_value_and_locator(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed: "The harness records a control message and event" — on the CLI, one stderr line."""
    code = main(_cli(place))
    captured = capsys.readouterr()

    path = place.work / "workflow.yaml"
    assert (code, captured.out) == (2, "")
    assert captured.err == (
        "budgetconf: warning: stopped: hit max_turns (15):"
        f" loop.max_turns = 15 from step:reviewer ({path}:4); raise it where it is set\n"
    )
