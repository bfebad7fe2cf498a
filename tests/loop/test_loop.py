"""The loop executor's rules, each run through both drivers: `run` and `arun`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.loop import LoopExecutor, ScriptedModel, StopReason

from conftest import Place
from helpers import DOCS
from helpers.loops import Driver, Echo, answer, budget, call, calls, types, usage
from helpers.presetfiles import preset_file

# --- turns and answers -----------------------------------------------------------------


def test_a_final_answer_completes_the_run(drive: Driver) -> None:
    """A response without tool calls is the final answer: status ok, stop completed."""
    model = ScriptedModel([answer("42")])
    result = drive.run(drive.executor(model, budget=budget(max_steps=5)), "question")
    assert (result.status, result.stop_reason, result.stop_kind) == ("ok", "completed", "completed")
    assert result.output == "42"
    assert result.turns == 1
    assert result.limit is None
    assert result.messages == [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": "42"},
    ]
    assert result.message == "completed in 1 turn"


def test_a_turn_is_one_response_however_many_calls_it_makes(drive: Driver) -> None:
    """Three calls in one response are one turn, and their results reach the next turn."""
    echo = Echo()
    model = ScriptedModel([calls(3), answer()])
    result = drive.run(drive.executor(model, {"echo": echo}, budget(max_steps=5)), "go")
    assert result.turns == 2
    assert echo.seen == ["0", "1", "2"]
    assert result.tool_calls_executed == 3
    second_request = model.received[1]
    assert [m["role"] for m in second_request] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m["content"] for m in second_request[2:]] == ["0", "1", "2"]


def test_tool_calls_answer_in_the_order_they_were_made(drive: Driver) -> None:
    """Each call id has its tool message, in the order of the calls."""
    model = ScriptedModel([calls(2), answer()])
    result = drive.run(drive.executor(model, {"echo": Echo()}, budget(max_steps=5)), "go")
    ids = [c["id"] for c in result.messages[1]["tool_calls"]]
    assert [m["tool_call_id"] for m in result.messages[2:4]] == ids == ["call_1_0", "call_1_1"]


# --- the per-response cap ---------------------------------------------------------------


def test_an_over_cap_response_is_rejected_whole_and_consumes_a_turn(drive: Driver) -> None:
    """11 calls under a cap of 10: none run, all 11 ids are answered, a turn is used, it goes on."""
    echo = Echo()
    model = ScriptedModel([calls(11), answer("fewer now")])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=5, max_tool_calls_per_turn=10))
    result = drive.run(ex, "go")
    assert echo.seen == []
    assert result.turns == 2
    assert result.status == "ok"
    asked = [c["id"] for c in result.messages[1]["tool_calls"]]
    answers = [m for m in result.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == asked
    assert len(asked) == 11
    assert all("none ran" in m["content"] for m in answers)
    assert "at most 10" in answers[0]["content"]
    assert "loop.max_tool_calls_per_turn = 10" in answers[0]["content"]
    rejected = next(e for e in result.events if e["type"] == "batch_rejected")
    assert (rejected["calls"], rejected["cap"], rejected["ids"]) == (11, 10, asked)


def test_a_batch_at_the_cap_runs_and_the_cap_is_per_response(drive: Driver) -> None:
    """Ten calls in one response and ten in the next are all allowed: the cap is not a total."""
    echo = Echo()
    model = ScriptedModel([calls(10), calls(10), answer()])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=5, max_tool_calls_per_turn=10))
    result = drive.run(ex, "go")
    assert len(echo.seen) == 20
    assert result.tool_calls_executed == 20
    assert "batch_rejected" not in types(result)


def test_truncate_runs_the_first_calls_and_skips_the_rest(drive: Driver) -> None:
    """over_cap = truncate: the first N calls run, the others are answered as skipped."""
    echo = Echo()
    model = ScriptedModel([calls(4), answer()])
    ex = drive.executor(
        model, {"echo": echo}, budget(max_steps=5, max_tool_calls_per_turn=2, over_cap="truncate")
    )
    result = drive.run(ex, "go")
    assert echo.seen == ["0", "1"]
    contents = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert contents[:2] == ["0", "1"]
    assert all(
        c == "skipped: only the first 2 calls of a response run (loop.max_tool_calls_per_turn = 2)"
        for c in contents[2:]
    )
    assert len(contents) == 4
    truncated = next(e for e in result.events if e["type"] == "batch_truncated")
    assert truncated["skipped"] == ["call_1_2", "call_1_3"]


# --- the last turn ------------------------------------------------------------------------


def test_warn_tells_the_model_before_its_last_turn_and_a_final_answer_completes(
    drive: Driver,
) -> None:
    """last_turn = warn: the notice goes with the last request only; an answer then is ok."""
    model = ScriptedModel([calls(1), calls(1), answer("final")])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=3, last_turn="warn"))
    result = drive.run(ex, "go")
    assert (result.status, result.output) == ("ok", "final")
    notices = [m for m in model.received[2] if m["role"] == "user"][1:]
    assert [m["content"] for m in notices] == [ex.budget.spec.warn_message]
    assert all(len([m for m in r if m["role"] == "user"]) == 1 for r in model.received[:2])
    assert ex.budget.spec.warn_message not in str(result.messages)
    notice = next(e for e in result.events if e["type"] == "last_turn_notice")
    assert (notice["turn"], notice["kind"]) == (3, "warn")


def test_wrap_up_makes_the_last_answer_the_output_of_a_truncated_run(drive: Driver) -> None:
    """last_turn = wrap_up: the model is asked to summarise; its answer is a truncated output."""
    model = ScriptedModel([calls(1), answer("summary of progress")])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2, last_turn="wrap_up"))
    result = drive.run(ex, "go")
    assert (result.status, result.stop_reason) == ("truncated", "max_steps")
    assert result.output == "summary of progress"
    assert model.received[1][-1] == {"role": "user", "content": ex.budget.spec.wrap_up_message}
    assert ex.budget.spec.wrap_up_message not in str(result.messages)
    assert result.limit is not None
    assert result.limit["field"] == "loop.max_steps"


def test_none_sends_no_notice(drive: Driver) -> None:
    """last_turn = none: the last request is like the others."""
    model = ScriptedModel([calls(1), answer()])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2, last_turn="none"))
    result = drive.run(ex, "go")
    assert result.status == "ok"
    assert "last_turn_notice" not in types(result)
    assert [m["role"] for m in model.received[1]] == ["user", "assistant", "tool"]


def test_no_notice_when_the_model_is_offered_no_tools(drive: Driver) -> None:
    """The notice is about tools, so a model without tools never gets it."""
    model = ScriptedModel([answer()])
    result = drive.run(drive.executor(model, None, budget(max_steps=1, last_turn="warn")), "go")
    assert result.status == "ok"
    assert "last_turn_notice" not in types(result)
    assert model.received[0] == [{"role": "user", "content": "go"}]


def test_calls_on_the_last_turn_never_run(drive: Driver) -> None:
    """A response on the last turn that is not a final answer ends the run; its calls do not run."""
    echo = Echo()
    model = ScriptedModel([calls(1), calls(2)])
    result = drive.run(drive.executor(model, {"echo": echo}, budget(max_steps=2)), "go")
    assert echo.seen == ["0"]
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 2)
    last = result.messages[-2:]
    assert [m["tool_call_id"] for m in last] == ["call_2_0", "call_2_1"]
    assert all(m["content"].startswith("not executed:") for m in last)


@pytest.mark.parametrize(
    ("script", "limits", "stop", "why"),
    [
        ([calls(1), calls(2)], {"max_steps": 2}, "max_steps", "this was the last turn"),
        ([{**calls(2), **usage(200)}], {"max_tokens": 100}, "max_tokens", "the run's max_tokens"),
        ([calls(2), calls(2)], {"max_tool_calls": 3}, "max_tool_calls", "the run's tool-call"),
        ([{**calls(2), "finish_reason": "length"}], {}, "length_truncated", "the response ended"),
    ],
    ids=["max_steps", "max_tokens", "max_tool_calls", "blocked"],
)
def test_each_call_of_a_stopping_response_has_one_answer_saying_why(
    drive: Driver, script: list[dict[str, Any]], limits: dict[str, int], stop: str, why: str
) -> None:
    """The conversation can be sent again: one tool message per call id, with the stop's reason."""
    model = ScriptedModel(script)
    ex = drive.executor(model, {"echo": Echo()}, budget(**{"max_steps": 9, **limits}))
    result = drive.run(ex, "go")
    assert result.stop_reason == stop
    asked = [c["id"] for m in result.messages for c in m.get("tool_calls", ())]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert answered == asked
    last = [m["content"] for m in result.messages[-2:]]
    assert all(text.startswith(f"not executed: {why}") for text in last), last


def test_the_callers_list_is_never_changed(drive: Driver) -> None:
    """After runs that sent a warning, a wrap-up and corrective feedback, the list is as it was."""
    caller = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    before = copy.deepcopy(caller)
    originals = list(caller)
    for last_turn in ("warn", "wrap_up"):
        model = ScriptedModel([calls(3), calls(1), answer()])
        b = budget(max_steps=2, max_tool_calls_per_turn=2, last_turn=last_turn)
        result = drive.run(drive.executor(model, {"echo": Echo()}, b), caller)
        assert "batch_rejected" in types(result)
        assert "last_turn_notice" in types(result)
        assert result.messages is not caller
        assert caller == before
        assert all(a is b for a, b in zip(caller, originals, strict=True))
        assert result.messages[:2] == before


def test_a_prompt_string_is_one_user_message(drive: Driver) -> None:
    """run("text") is run([{"role": "user", "content": "text"}])."""
    model = ScriptedModel([answer()])
    drive.run(drive.executor(model, budget=budget(max_steps=1)), "text")
    assert model.received[0] == [{"role": "user", "content": "text"}]


# --- the step budget ----------------------------------------------------------------------


def test_exhaustion_is_a_recorded_stop_that_says_what_to_raise(drive: Driver) -> None:
    """Out of turns: truncated, max_steps, no exception; the message names field, source, fix."""
    model = ScriptedModel([{"content": "working on it", "tool_calls": [call()]}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=3, last_turn="none"))
    result = drive.run(ex, "go")
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 3)
    assert result.output == "working on it"  # the last non-empty assistant text
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from explicit; raise it where it is set"
    )
    assert result.limit == {
        "field": "loop.max_steps",
        "value": 3,
        "source": "explicit",
        "locator": "explicit",
        "raise_with": [],  # no variable or flag outranks code
    }
    assert types(result)[-2:] == ["budget_exhausted", "stopped"]


def test_a_truncated_run_without_text_has_empty_output(drive: Driver) -> None:
    """No wrap-up answer and no assistant text: the output is the empty string."""
    model = ScriptedModel([calls(1)])
    result = drive.run(drive.executor(model, {"echo": Echo()}, budget(max_steps=1)), "go")
    assert (result.status, result.output) == ("truncated", "")


def test_the_limit_names_the_locator_that_set_it(
    drive: Driver, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step budget from a project file is reported with that file's path and line."""
    path = place.write("settings.toml", "[loop]\n\nmax_steps = 1\n")
    res = budgetconf.resolve(env={})
    model = ScriptedModel([calls(1)])
    result = drive.run(drive.executor(model, {"echo": Echo()}, res), "go")
    assert result.limit is not None
    assert (result.limit["source"], result.limit["locator"]) == ("project", f"{path}:3")
    assert result.message.endswith(
        f"loop.max_steps = 1 from {path}:3; raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit["raise_with"] == ["BUDGETCONF_MAX_STEPS", "--max-steps"]


def test_opendot_stops_with_its_seed_message_and_names_its_variable(drive: Driver) -> None:
    """opendot: "stopped: hit max_steps (40)", then where 40 came from and what raises it."""
    model = ScriptedModel([calls(1)])
    result = drive.run(drive.executor(model, {"echo": Echo()}, "opendot"), "go")
    assert result.turns == 40
    assert result.message.startswith("stopped: hit max_steps (40)")
    assert "agent.max_steps = 40 from built-in default" in result.message
    assert result.message.endswith("raise it with OPENDOT_MAX_STEPS")
    assert result.limit is not None
    assert result.limit["raise_with"] == ["OPENDOT_MAX_STEPS"]  # opendot has no flags
    assert "last_turn_notice" not in types(result)


def test_a_preset_may_rename_the_budget_stop(drive: Driver, place: Place) -> None:
    """stop_reasons renames the stop; stop_kind keeps the standard name."""
    path = preset_file(
        place.work,
        fields={"agent.turns": {"type": "int", "ge": 1, "default": 2}},
        loop={"max_steps": "agent.turns", "stop_reasons": {"max_steps": "out_of_turns"}},
    )
    model = ScriptedModel([calls(1)])
    result = drive.run(drive.executor(model, {"echo": Echo()}, str(path)), "go")
    assert (result.stop_reason, result.stop_kind) == ("out_of_turns", StopReason.MAX_STEPS)
    assert result.message.startswith(
        "stopped: hit turns (2): agent.turns = 2 from built-in default"
    )
    assert result.message.endswith("raise it where it is set")
    assert result.events[-1]["stop_reason"] == "out_of_turns"


# --- run-wide limits ----------------------------------------------------------------------


def test_a_response_that_goes_over_the_token_budget_stops_the_run(drive: Driver) -> None:
    """Tokens past the limit after a response: its calls are answered, not run; max_tokens."""
    echo = Echo()
    model = ScriptedModel([{**calls(1), **usage(60)}, {**calls(1), **usage(60)}])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=9, max_tokens=100))
    result = drive.run(ex, "go")
    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_tokens", 2)
    assert echo.seen == ["0"]
    assert result.tokens == 120
    assert result.limit is not None
    assert result.limit["field"] == "limits.max_tokens"
    assert result.messages[-1]["content"].startswith("not executed: the run's max_tokens budget")


def test_a_reached_token_budget_stops_before_the_next_turn(drive: Driver) -> None:
    """Exactly at the limit, the calls run, and no further turn starts."""
    echo = Echo()
    model = ScriptedModel([{**calls(1), **usage(100)}])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=9, max_tokens=100))
    result = drive.run(ex, "go")
    assert (result.stop_reason, result.turns, echo.seen) == ("max_tokens", 1, ["0"])


def test_a_final_answer_that_crosses_the_token_budget_still_completes(drive: Driver) -> None:
    """The answer is already given: crossing the budget with it does not truncate it."""
    model = ScriptedModel([answer("big", **usage(500))])
    result = drive.run(drive.executor(model, None, budget(max_steps=9, max_tokens=100)), "go")
    assert (result.status, result.output, result.tokens) == ("ok", "big", 500)


def test_the_cost_budget_counts_reported_cost(drive: Driver) -> None:
    """cost_usd adds up; past max_cost_usd the run stops with max_cost."""
    model = ScriptedModel([{**calls(1), "cost_usd": 0.3}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=9, max_cost_usd=0.5))
    result = drive.run(ex, "go")
    assert (result.stop_reason, result.turns) == ("max_cost", 2)
    assert result.cost_usd == pytest.approx(0.6)
    assert result.limit is not None
    assert result.limit["field"] == "limits.max_cost_usd"


def test_the_run_wide_tool_call_budget_refuses_a_batch_that_would_pass_it(drive: Driver) -> None:
    """limits.max_tool_calls: a response whose calls would go past it runs none and stops."""
    echo = Echo()
    model = ScriptedModel([calls(2), calls(2)])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=9, max_tool_calls=3))
    result = drive.run(ex, "go")
    assert (result.stop_reason, result.status) == ("max_tool_calls", "truncated")
    assert echo.seen == ["0", "1"]
    assert result.tool_calls_executed == 2
    assert [m["content"][:13] for m in result.messages[-2:]] == ["not executed:"] * 2


# --- stop-reason precedence ------------------------------------------------------------


_LENGTH_ADVICE = (
    "raise the model's limit on one answer (max_completion_tokens or max_tokens in an"
    " OpenAI-compatible request; limits.max_tokens is the run's budget, not this) or ask for"
    " a shorter answer"
)


@pytest.mark.parametrize(
    ("finish", "reason", "message"),
    [
        (
            "content_filter",
            "content_filtered",
            "blocked: the provider's content filter stopped the answer on turn 1"
            " (finish_reason content_filter); rephrase the request, or see the provider's"
            " filter settings",
        ),
        (
            "refusal",
            "refused",
            "blocked: the model refused on turn 1 (finish_reason refusal); what it said is the"
            " output",
        ),
        (
            "length",
            "length_truncated",
            "blocked: the answer on turn 1 was cut off at the model's length limit"
            " (finish_reason length), and its partial text is the output; " + _LENGTH_ADVICE,
        ),
    ],
)
def test_a_provider_block_surfaces_as_its_own_stop(
    drive: Driver, finish: str, reason: str, message: str
) -> None:
    """A block in a run that did not exhaust a budget: blocked, its stop, and what to do next."""
    model = ScriptedModel([{"content": "partial", "finish_reason": finish}])
    result = drive.run(drive.executor(model, None, budget(max_steps=5)), "go")
    assert (result.status, result.stop_reason) == ("blocked", reason)
    assert result.output == "partial"
    assert result.message == message


def test_a_cut_off_answer_keeps_its_partial_text_over_an_earlier_one(drive: Driver) -> None:
    """finish_reason length: the partial answer is the output, not a text from an earlier turn."""
    first = {**calls(1), "content": "let me look"}
    model = ScriptedModel([first, {"content": "The answer is 4", "finish_reason": "length"}])
    result = drive.run(drive.executor(model, {"echo": Echo()}, budget(max_steps=5)), "go")
    assert (result.stop_reason, result.output) == ("length_truncated", "The answer is 4")
    assert result.to_dict()["result"] == "The answer is 4"
    assert result.messages[-1] == {"role": "assistant", "content": "The answer is 4"}


def test_a_cut_off_answer_without_text_says_so(drive: Driver) -> None:
    """A response cut off before any text: the message does not claim a partial text."""
    model = ScriptedModel([{"finish_reason": "length"}])
    result = drive.run(drive.executor(model, None, budget(max_steps=5)), "go")
    assert result.output == ""
    assert result.message == (
        "blocked: the answer on turn 1 was cut off at the model's length limit"
        " (finish_reason length), and it holds no text; " + _LENGTH_ADVICE
    )


def test_a_budget_stop_is_sticky_over_a_block_on_the_last_turn(drive: Driver) -> None:
    """A block on the last permitted turn does not downgrade the step-budget stop."""
    model = ScriptedModel([calls(1), {"content": "", "finish_reason": "content_filter"}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2, last_turn="wrap_up"))
    result = drive.run(ex, "go")
    assert (result.status, result.stop_reason) == ("truncated", "max_steps")


def test_a_token_stop_is_sticky_over_a_block(drive: Driver) -> None:
    """A blocked response that also spends the token budget reports max_tokens."""
    model = ScriptedModel([{"finish_reason": "length", **usage(200)}])
    result = drive.run(drive.executor(model, None, budget(max_steps=5, max_tokens=100)), "go")
    assert result.stop_reason == "max_tokens"


def test_blocked_tool_calls_are_answered_and_not_run(drive: Driver) -> None:
    """Calls in a blocked response may be cut off: they are answered as not executed."""
    echo = Echo()
    model = ScriptedModel([{**calls(1), "finish_reason": "length"}])
    result = drive.run(drive.executor(model, {"echo": echo}, budget(max_steps=5)), "go")
    assert (result.stop_reason, echo.seen) == ("length_truncated", [])
    assert result.messages[-1]["content"] == "not executed: the response ended with length"


# --- events ---------------------------------------------------------------------------------


def test_events_tell_the_run_in_order_and_stream_as_they_happen(drive: Driver) -> None:
    """Every event has a type; on_event sees each one as the result's list records it."""
    streamed: list[dict[str, Any]] = []
    model = ScriptedModel([calls(1), answer()])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=5), on_event=streamed.append)
    result = drive.run(ex, "go")
    assert types(result) == [
        "run_started",
        "turn_started",
        "model_response",
        "tool_started",
        "tool_executed",
        "turn_started",
        "model_response",
        "stopped",
    ]
    assert streamed == result.events
    assert result.events[0]["limits"] == {"max_steps": 5, "max_tool_calls_per_turn": 10}
    last = dict(result.events[-1])
    assert (last.pop("run_id"), type(last.pop("time"))) == (result.run_id, float)
    assert last == {
        "type": "stopped",
        "stop_reason": "completed",
        "status": "ok",
        "turns": 2,
        "tool_calls_executed": 1,
        "tokens": 0,
        "cost_usd": 0.0,
        "message": "completed in 2 turns",
    }


# --- continuation ---------------------------------------------------------------------------


def test_resume_continues_the_conversation_with_more_steps(drive: Driver) -> None:
    """resume(result, extra_steps=N) goes on from result.messages; the counters carry over."""
    echo = Echo()
    model = ScriptedModel([calls(1), calls(1), calls(1), answer("finished")])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=2, last_turn="none"))
    first = drive.run(ex, "go")
    assert (first.status, first.turns, first.tool_calls_executed) == ("truncated", 2, 1)
    second = drive.resume(ex, first, extra_steps=3, prompt="continue")
    assert (second.status, second.output) == ("ok", "finished")
    assert second.turns == 4  # the whole conversation's turns
    assert second.tool_calls_executed == 2
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages)] == {"role": "user", "content": "continue"}
    assert first.messages is not second.messages
    assert second.events[0]["limits"]["max_steps"] == 3
    assert [e["turn"] for e in second.events if e["type"] == "turn_started"] == [3, 4]


def test_a_resumed_run_that_runs_out_names_the_resume(drive: Driver) -> None:
    """The continuation's step budget is extra_steps, and its limit says so."""
    model = ScriptedModel([calls(1)])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=1))
    second = drive.resume(ex, drive.run(ex, "go"), extra_steps=2)
    assert (second.stop_reason, second.turns) == ("max_steps", 3)
    assert second.limit is not None
    assert second.limit["locator"] == "resume(extra_steps=2)"
    assert second.limit["raise_with"] == ["extra_steps"]


def test_run_wide_budgets_count_across_a_resume(drive: Driver) -> None:
    """A token budget spent in the first run is still spent in the continuation."""
    model = ScriptedModel([{**calls(1), **usage(100)}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=5, max_tokens=100))
    first = drive.run(ex, "go")
    second = drive.resume(ex, first, extra_steps=5)
    assert (second.stop_reason, second.turns, second.tokens) == ("max_tokens", 1, 100)


def test_only_a_truncated_run_can_be_resumed(drive: Driver) -> None:
    """Resuming a completed run, or with a bad step count, is a UsageError."""
    ex = drive.executor(ScriptedModel([answer()]), None, budget(max_steps=2))
    done = drive.run(ex, "go")
    with pytest.raises(budgetconf.UsageError, match="only a truncated run can be resumed"):
        drive.resume(ex, done, extra_steps=1)
    cut = drive.run(drive.executor(ScriptedModel([calls(1)]), None, budget(max_steps=1)), "go")
    with pytest.raises(budgetconf.UsageError, match="extra_steps: expected a positive integer"):
        drive.resume(ex, cut, extra_steps=0)


# --- budgets ----------------------------------------------------------------------------------


def test_the_budget_may_be_a_resolution_a_preset_or_field_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """budget= takes a Resolution, a preset name (resolved from the environment) or a mapping."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "7")
    model = ScriptedModel([answer()])
    assert LoopExecutor(model, budget="opendot").budget.value("max_steps") == 7
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "9"})
    assert LoopExecutor(model, budget=res).budget.value("max_steps") == 9
    assert LoopExecutor(model, budget={"loop.max_steps": 4}).budget.value("max_steps") == 4
    assert LoopExecutor(model).budget.value("max_steps") == 40
    with pytest.raises(budgetconf.UsageError, match="budget: expected a Resolution"):
        LoopExecutor(model, budget=3)  # type: ignore[arg-type]


def test_a_bad_budget_value_is_a_config_error() -> None:
    """Field values passed as the budget are validated like any explicit value."""
    with pytest.raises(
        budgetconf.ConfigError, match=r"loop\.max_steps from explicit: must be >= 1"
    ):
        LoopExecutor(ScriptedModel([answer()]), budget={"loop.max_steps": 0})


def test_a_preset_without_a_loop_table_cannot_drive_a_loop(place: Place) -> None:
    """The executor needs to know which field is the step budget."""
    path = preset_file(place.work, fields={"a.b": {"type": "int", "default": 1}})
    with pytest.raises(budgetconf.PresetError, match="bounds no loop"):
        LoopExecutor(ScriptedModel([answer()]), budget=str(path))


def test_a_secret_budget_is_masked_in_the_limit_and_events(place: Place) -> None:
    """A budget field marked secret shows as *** wherever the run reports it."""
    path = preset_file(
        place.work,
        fields={"agent.turns": {"type": "int", "default": 1, "secret": True}},
        loop={"max_steps": "agent.turns"},
    )
    result = LoopExecutor(ScriptedModel([calls(1)]), {"echo": Echo()}, str(path)).run("go")
    assert result.limit is not None
    assert result.limit["value"] == "***"
    assert "(***)" in result.message
    assert "1" not in str(result.events[0]["limits"])


def test_bad_models_and_tools_are_refused_up_front() -> None:
    """A model that is not callable, or a tool that is not, is a UsageError at construction."""
    with pytest.raises(budgetconf.UsageError, match="model: expected a callable"):
        LoopExecutor("gpt", budget={"loop.max_steps": 1})  # type: ignore[arg-type]
    with pytest.raises(budgetconf.UsageError, match="tools: expected names mapped to callables"):
        LoopExecutor(ScriptedModel([answer()]), {"echo": 3}, {"loop.max_steps": 1})  # type: ignore[dict-item]
    with pytest.raises(budgetconf.UsageError, match=r"messages\[0\]: expected a dict"):
        LoopExecutor(ScriptedModel([answer()]), budget={"loop.max_steps": 1}).run(["hi"])  # type: ignore[list-item]


def test_resume_defaults_to_the_resolved_step_budget(drive: Driver) -> None:
    """Without extra_steps, the continuation may take as many turns as the budget allows."""
    model = ScriptedModel([calls(1)])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2))
    second = drive.resume(ex, drive.run(ex, "go"))
    assert (second.stop_reason, second.turns) == ("max_steps", 4)
    assert second.limit is not None
    assert second.limit["source"] == "explicit"


def _advised(place: Place) -> Path:
    """A preset whose stack has no variable or flag: a global file, a profile, code."""
    return preset_file(
        place.work,
        home="~/.app",
        sources=[
            "default",
            {"kind": "global", "path": "{home}/settings.json"},
            "profile",
            "explicit",
        ],
        fields={"agent.turns": {"type": "int", "ge": 1, "default": 1}},
        loop={"max_steps": "agent.turns"},
    )


@pytest.mark.parametrize(
    ("setup", "advice"),
    [
        ({}, "from built-in default; raise it in the global file {home}/.app/settings.json,"
         " a profile or code (explicit)"),
        ({"global": 1}, "from {home}/.app/settings.json:1; raise it there, or in a profile or"
         " code (explicit)"),
        ({"explicit": 1}, "from explicit; raise it where it is set"),
    ],
)  # fmt: skip
def test_without_a_variable_or_flag_the_advice_names_the_sources_above(
    place: Place, setup: dict[str, int], advice: str
) -> None:
    """No env var or flag can raise the value: the message names the sources that outrank it."""
    preset = _advised(place)
    if "global" in setup:
        place.write(".app/settings.json", '{"agent": {"turns": 1}}\n', base=place.home)
    explicit = {"agent.turns": 1} if "explicit" in setup else None
    res = budgetconf.resolve(str(preset), env={}, explicit=explicit)
    result = LoopExecutor(ScriptedModel([calls(1)]), {"echo": Echo()}, res).run("go")
    assert result.message.endswith(advice.format(home=place.home))
    assert result.limit is not None
    assert result.limit["raise_with"] == []


def test_costs_add_up_without_float_dust(drive: Driver) -> None:
    """Three responses at 0.1 reach a 0.3 budget exactly: the third's calls still run."""
    echo = Echo()
    model = ScriptedModel([{**calls(1), "cost_usd": 0.1}])
    ex = drive.executor(model, {"echo": echo}, budget(max_steps=9, max_cost_usd=0.3))
    result = drive.run(ex, "go")
    assert (result.stop_reason, result.turns, len(echo.seen)) == ("max_cost", 3, 3)
    assert result.cost_usd == 0.3


def test_an_empty_wrap_up_answer_leaves_the_last_text_as_output(drive: Driver) -> None:
    """A wrap-up turn that answers nothing: the output is the last non-empty assistant text."""
    model = ScriptedModel([{**calls(1), "content": "halfway"}, {"content": None}])
    ex = drive.executor(model, {"echo": Echo()}, budget(max_steps=2, last_turn="wrap_up"))
    result = drive.run(ex, "go")
    assert (result.status, result.output) == ("truncated", "halfway")


def test_an_interrupt_between_calls_still_answers_every_call() -> None:
    """Ctrl-C outside any call (here in an event handler) ends run() with each id answered."""

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "model_response":
            raise KeyboardInterrupt

    model = ScriptedModel([calls(2)])
    ex = LoopExecutor(model, {"echo": Echo()}, budget(max_steps=3), on_event=on_event)
    result = ex.run("go")
    assert result.stop_reason == "cancelled"
    answers = [m for m in result.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_1_0", "call_1_1"]
    assert all(m["content"] == "not executed: the run stopped (cancelled)" for m in answers)


def test_a_secret_cap_is_not_shown_in_feedback_or_events(place: Place) -> None:
    """The per-response cap of a secret field shows as *** to the model and in events."""
    path = preset_file(
        place.work,
        fields={
            "agent.turns": {"type": "int", "default": 3},
            "agent.cap": {"type": "int", "default": 2, "secret": True},
        },
        loop={"max_steps": "agent.turns", "max_tool_calls_per_turn": "agent.cap"},
    )
    model = ScriptedModel([calls(3), answer()])
    result = LoopExecutor(model, {"echo": Echo()}, str(path)).run("go")
    rejected = next(e for e in result.events if e["type"] == "batch_rejected")
    assert rejected["cap"] == "***"
    feedback = result.messages[2]["content"]
    assert "at most ***" in feedback
    assert "2" not in feedback.replace("agent.cap", "")


def test_the_loop_page_shows_the_cut_off_message_as_it_is(drive: Driver) -> None:
    """docs/loop.md quotes the length block's message: it is the executor's, word for word."""

    page = (DOCS / "loop.md").read_text()
    model = ScriptedModel([{"content": "partial", "finish_reason": "length"}])
    result = drive.run(drive.executor(model, None, budget(max_steps=5)), "go")
    assert f"\n  {result.message}\n" in page


@pytest.mark.parametrize("messages", [5, {"role": "user", "content": "hi"}.keys()])
def test_messages_that_are_neither_a_prompt_nor_a_list_are_refused(
    drive: Driver, messages: object
) -> None:
    """A number, or a dict's keys view, is no conversation: a UsageTypeError naming it."""
    ex = drive.executor(ScriptedModel([answer()]), {}, budget())
    with pytest.raises(budgetconf.UsageTypeError) as caught:
        drive.run(ex, messages)
    assert str(caught.value) == (
        f"messages: expected a prompt or a list of messages, got {messages!r}"
    )
