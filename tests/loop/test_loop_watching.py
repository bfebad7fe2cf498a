"""What the Meter watches besides the totals: each tool's own limit (`tools.max_calls`), a
warning before any limit (`limits.warn_at`, `loop.warn_model`), and a run that goes nowhere
(`loop.max_repeats`), in the executor, sync and async."""

from __future__ import annotations

import time
from typing import Any

import pytest

import budgetconf
from budgetconf.errors import BudgetConfWarning
from budgetconf.loop import Budget, LoopExecutor, RunHandle, RunResult, ScriptedModel, current_run

from conftest import Place
from helpers.loops import Driver, Echo, answer, types, usage


def asks(*names: str, **arguments: Any) -> dict[str, Any]:
    """A response asking for one call of each tool named, with ``arguments``."""
    return {"tool_calls": [{"name": n, "arguments": arguments or {"text": "x"}} for n in names]}


def tool_texts(result: RunResult) -> list[str]:
    return [m["content"] for m in result.messages if m["role"] == "tool"]


def of(result: RunResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == kind]


# -- tools.max_calls ----------------------------------------------------------------------


def test_a_tool_past_its_own_limit_is_answered_as_not_executed_and_the_run_goes_on(
    drive: Driver,
) -> None:
    echo, other = Echo(), Echo()
    model = ScriptedModel([asks("echo", "echo", "other")] * 2 + [answer()])
    limits = {"tools.max_calls": {"echo": 3}, "loop.max_steps": 5}
    ex = drive.executor(model, {"echo": echo, "other": other}, limits)
    result = drive.run(ex, "go")
    assert (result.status.value, result.stop_reason, result.turns) == ("ok", "completed", 3)
    assert len(echo.seen) == 3  # the fourth call of echo did not run
    assert len(other.seen) == 2  # another tool is not bounded by echo's limit
    refused = [t for t in tool_texts(result) if t.startswith("not executed")]
    assert refused == [
        "not executed: echo may run 3 times in a run, and has (tools.max_calls.echo = 3 from"
        " explicit); it will not run again in this run"
    ]
    (limited,) = of(result, "tool_limited")
    assert (limited["turn"], limited["name"], limited["field"]) == (
        2,
        "echo",
        "tools.max_calls.echo",
    )
    assert limited["value"] == 3
    assert limited["locator"] == "explicit"
    assert result.tool_calls_executed == 5


def test_calls_of_one_response_count_in_order_against_the_tools_limit(drive: Driver) -> None:
    echo = Echo()
    model = ScriptedModel([asks("echo", "echo", "echo"), answer()])
    ex = drive.executor(model, {"echo": echo}, {"tools.max_calls.echo": 2})
    result = drive.run(ex, "go")
    assert echo.seen == ["x", "x"]
    texts = tool_texts(result)
    assert len(texts) == 3
    assert texts[2].startswith("not executed: echo may run 2 times")
    assert of(result, "tool_limited")[0]["ids"] == [result.events[2]["tool_calls"][2]["id"]]


def test_a_limit_of_zero_never_runs_the_tool(drive: Driver) -> None:
    echo = Echo()
    ex = drive.executor(
        ScriptedModel([asks("echo"), answer()]), {"echo": echo}, {"tools.max_calls": {"echo": 0}}
    )
    result = drive.run(ex, "go")
    assert echo.seen == []
    assert result.status.value == "ok"


def test_a_refused_call_takes_nothing_from_the_runs_tool_call_budget(drive: Driver) -> None:
    echo, other = Echo(), Echo()
    model = ScriptedModel([asks("echo", "other"), asks("echo", "other"), answer()])
    limits = {"tools.max_calls": {"echo": 1}, "limits.max_tool_calls": 3}
    result = drive.run(drive.executor(model, {"echo": echo, "other": other}, limits), "go")
    assert (result.stop_reason, len(echo.seen), len(other.seen)) == ("completed", 1, 2)


def test_the_limit_is_named_and_raised_by_the_tables_variable_and_flag(place: Place) -> None:
    place.write("settings.toml", "[tools.max_calls]\nweb_search = 3\n")
    (limit,) = Budget.from_resolution(budgetconf.resolve()).tools.values()
    assert (limit.field, limit.value, limit.locator) == (
        "tools.max_calls.web_search",
        3,
        f"{place.work / 'settings.toml'}:2",
    )
    assert limit.raise_with == ("BUDGETCONF_TOOLS_MAX_CALLS", "--tools-max-calls")
    command_line = Budget.from_resolution(
        budgetconf.resolve(explicit={"tools.max_calls.x": 1}), command_line=True
    )
    # set by code, which outranks the variable and the flag: the command line's --set raises it
    assert command_line.tools["x"].raise_with == ("--set tools.max_calls.x=N",)


def test_a_limit_for_a_tool_the_run_does_not_have_is_a_warning() -> None:
    with pytest.warns(BudgetConfWarning) as caught:
        LoopExecutor(
            ScriptedModel([answer()]), {"echo": Echo()}, {"tools.max_calls.serach": 2}
        ).run("go")
    assert [str(w.message) for w in caught] == [
        "tools.max_calls.serach = 2 from explicit: the run has no tool named 'serach' (its"
        " tools: echo)"
    ]


def test_a_secret_tables_limit_is_masked_in_the_answer_and_the_events(place: Place) -> None:
    preset = place.write(
        "secret.toml",
        'format = 1\n[[sources]]\nkind = "default"\n[[sources]]\nkind = "explicit"\n'
        '[fields."loop.max_steps"]\ntype = "int"\ndefault = 5\n'
        '[fields."tools.max_calls"]\ntype = "table"\nvalues = "int"\nkeys = "tool-name"\n'
        "secret = true\n"
        '[loop]\nmax_steps = "loop.max_steps"\nmax_calls_by_tool = "tools.max_calls"\n',
    )
    res = budgetconf.resolve(str(preset), explicit={"tools.max_calls": {"echo": 1}})
    model = ScriptedModel([asks("echo", "echo"), answer()])
    result = LoopExecutor(model, {"echo": Echo()}, res).run("go")
    assert (
        "not executed: echo may run *** times in a run, and has (tools.max_calls.echo = ***"
        in tool_texts(result)[1]
    )
    assert of(result, "tool_limited")[0]["value"] == "***"
    assert of(result, "run_started")[0]["tools"]["echo"]["value"] == "***"


def test_a_carved_child_starts_from_its_parents_remainder_of_each_tool(drive: Driver) -> None:
    echo = Echo()
    seen: list[Budget] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert isinstance(handle, RunHandle)
        carved = handle.carve()
        seen.append(carved)
        child = LoopExecutor(
            ScriptedModel([asks("echo", "echo"), answer()]), {"echo": echo}, carved
        )
        return child.run(task).output

    model = ScriptedModel([asks("echo"), asks("delegate", task="t"), asks("echo"), answer()])
    ex = LoopExecutor(model, {"echo": echo, "delegate": delegate}, {"tools.max_calls.echo": 2})
    result = ex.run("go")
    assert seen[0].tools["echo"].value == 1  # two, less the one the parent ran
    assert len(echo.seen) == 2  # one by the parent, one by the child; the parent's third refused
    assert tool_texts(result)[-1].startswith("not executed: echo may run 2 times")


# -- limits.warn_at and loop.warn_model ---------------------------------------------------


def test_each_budget_is_warned_of_once_when_its_use_first_reaches_the_fraction(
    drive: Driver,
) -> None:
    model = ScriptedModel([{**asks("echo"), **usage(30)}] * 4 + [answer()])
    limits = {
        "limits.warn_at": 0.5,
        "loop.max_steps": 8,
        "limits.max_tool_calls": 4,
        "limits.max_tokens": 200,
        "tools.max_calls.echo": 6,
    }
    with pytest.warns(BudgetConfWarning) as caught:
        result = drive.run(drive.executor(model, {"echo": Echo()}, limits), "go")
    warned = [
        (e["turn"], e["budget"], e["field"], e["used"], e["limit"], e["fraction"])
        for e in of(result, "budget_warning")
    ]
    assert warned == [
        (2, "max_tool_calls", "limits.max_tool_calls", 2, 4, 0.5),
        (3, "max_calls_by_tool", "tools.max_calls.echo", 3, 6, 0.5),
        (4, "max_steps", "loop.max_steps", 4, 8, 0.5),
        (4, "max_tokens", "limits.max_tokens", 120, 200, 0.6),
    ]
    assert [str(w.message) for w in caught] == [
        "budget warning: 2 of 4 tool calls used: limits.max_tool_calls = 4 from explicit",
        "budget warning: 3 of 6 calls of echo used: tools.max_calls.echo = 6 from explicit",
        "budget warning: 4 of 8 turns used: loop.max_steps = 8 from explicit",
        "budget warning: 120 of 200 tokens used: limits.max_tokens = 200 from explicit",
    ]


def test_the_time_and_cost_budgets_are_warned_of_too() -> None:
    def slow(text: str) -> str:
        time.sleep(0.3)
        return text

    responses = [{**asks("slow"), "usage": {"total_tokens": 10}, "cost_usd": 0.4}] * 3 + [answer()]
    limits = {"limits.warn_at": 0.5, "limits.max_cost_usd": 1.0, "limits.timeout_seconds": 1.0}
    with pytest.warns(BudgetConfWarning):
        result = LoopExecutor(ScriptedModel(responses), {"slow": slow}, limits).run("go")
    fields = {e["field"]: e["used"] for e in of(result, "budget_warning")}
    assert fields.keys() == {"limits.max_cost_usd", "limits.timeout_seconds"}
    assert fields["limits.max_cost_usd"] == 0.8
    assert fields["limits.timeout_seconds"] >= 0.5


def test_without_warn_at_nothing_is_warned() -> None:
    model = ScriptedModel([asks("echo")] * 3 + [answer()])
    result = LoopExecutor(model, {"echo": Echo()}, {"loop.max_steps": 4}).run("go")
    assert of(result, "budget_warning") == []
    assert of(result, "run_started")[0]["warn_at"] is None


def test_warn_model_tells_the_model_on_its_next_call_in_the_notices_place(drive: Driver) -> None:
    model = ScriptedModel([asks("echo")] * 4 + [answer()])
    limits = {"limits.warn_at": 0.5, "loop.warn_model": True, "loop.max_steps": 4}
    with pytest.warns(BudgetConfWarning):
        result = drive.run(drive.executor(model, {"echo": Echo()}, limits), "go")
    last = [received[-1] for received in model.received]
    told = [m["content"] for m in last if m["role"] == "user" and "used" in m["content"]]
    # warned after the second turn: the third call is told; the fourth gets the last-turn
    # notice alone, as nothing new was warned of
    assert told == ["2 of 4 turns used: loop.max_steps = 4 from explicit"]
    assert (
        last[3]["content"]
        == budgetconf.loop.Budget.from_resolution(budgetconf.resolve()).spec.wrap_up_message
    )
    assert result.stop_reason == "max_steps"


def test_a_warning_due_on_the_last_turn_goes_before_the_last_turn_notice() -> None:
    model = ScriptedModel([asks("echo")] * 2 + [answer()])
    limits = {"limits.warn_at": 0.5, "loop.warn_model": True, "loop.max_steps": 2}
    with pytest.warns(BudgetConfWarning):
        LoopExecutor(model, {"echo": Echo()}, limits).run("go")
    notice = model.received[1][-1]["content"]
    assert notice.startswith("1 of 2 turns used: loop.max_steps = 2 from explicit\nYou have")


def test_without_warn_model_the_model_is_not_told() -> None:
    model = ScriptedModel([asks("echo")] * 4 + [answer()])
    with pytest.warns(BudgetConfWarning):
        LoopExecutor(model, {"echo": Echo()}, {"limits.warn_at": 0.5, "loop.max_steps": 9}).run(
            "go"
        )
    assert all("used" not in str(m.get("content")) for received in model.received for m in received)


def test_warn_at_is_a_fraction_between_zero_and_one() -> None:
    for bad in ("0", "1", "1.5", "-0.2"):
        with pytest.warns(BudgetConfWarning, match="must be > 0 and < 1"):
            res = budgetconf.resolve(env={"BUDGETCONF_WARN_AT": bad})  # the env falls back
        assert res["limits.warn_at"] is None


# -- loop.max_repeats -----------------------------------------------------------------------


def failing(text: str) -> str:
    raise ValueError(f"cannot {text}")


def test_the_same_failing_call_ends_the_run_as_going_nowhere(drive: Driver) -> None:
    model = ScriptedModel([asks("failing", text="open")])
    ex = drive.executor(model, {"failing": failing}, {"loop.max_repeats": 3, "loop.max_steps": 9})
    result = drive.run(ex, "go")
    assert (result.status.value, result.stop_reason, result.turns) == (
        "truncated",
        "no_progress",
        3,
    )
    assert result.message == (
        'stopped: no progress: failing({"text":"open"}) ran 3 times in a row with the same'
        " arguments and the same result: loop.max_repeats = 3 from explicit; raise it where it"
        " is set"
    )
    assert result.limit is not None
    assert result.limit["field"] == "loop.max_repeats"
    assert model.calls == 3  # stopped before the fourth model call
    assert types(result)[-2:] == ["budget_exhausted", "stopped"]


def test_the_same_answer_counts_as_the_same_result(drive: Driver) -> None:
    model = ScriptedModel([asks("echo", text="a")])
    ex = drive.executor(model, {"echo": Echo()}, {"loop.max_repeats": 2})
    assert drive.run(ex, "go").turns == 2


def test_calls_within_one_response_count_in_order() -> None:
    model = ScriptedModel([asks("echo", "echo", "echo", text="a")])
    result = LoopExecutor(model, {"echo": Echo()}, {"loop.max_repeats": 3}).run("go")
    assert (result.stop_reason, result.turns, result.tool_calls_executed) == ("no_progress", 1, 3)


@pytest.mark.parametrize(
    "responses",
    [
        # other arguments, the same result
        [
            asks("echo", text="a"),
            {"tool_calls": [{"name": "echo", "arguments": {"text": "a", "n": 1}}]},
        ],
        # another tool in between
        [asks("echo", text="a"), asks("other", text="a")],
    ],
)
def test_a_different_call_between_resets_the_count(responses: list[dict[str, Any]]) -> None:
    def other(text: str, n: int = 0) -> str:
        return "other"

    def echo(text: str, n: int = 0) -> str:
        return text

    model = ScriptedModel(responses * 3 + [answer()])
    result = LoopExecutor(model, {"echo": echo, "other": other}, {"loop.max_repeats": 2}).run("go")
    assert result.stop_reason == "completed"


def test_a_different_result_resets_the_count() -> None:
    count = iter(range(100))

    def counter(text: str) -> str:
        return str(next(count))

    model = ScriptedModel([asks("counter")] * 5 + [answer()])
    result = LoopExecutor(model, {"counter": counter}, {"loop.max_repeats": 2}).run("go")
    assert result.stop_reason == "completed"


def test_arguments_are_compared_as_canonical_json() -> None:
    def f(a: int, b: int) -> str:
        return "same"

    one = {"tool_calls": [{"name": "f", "arguments": '{"a": 1, "b": 2}'}]}
    two = {"tool_calls": [{"name": "f", "arguments": '{"b":2,"a":1}'}]}
    result = LoopExecutor(ScriptedModel([one, two]), {"f": f}, {"loop.max_repeats": 2}).run("go")
    assert (result.stop_reason, result.turns) == ("no_progress", 2)


def test_a_call_not_executed_neither_counts_nor_resets() -> None:
    echo = Echo()
    responses = [asks("echo", text="a"), asks("nosuch"), asks("echo", text="a"), answer()]
    result = LoopExecutor(ScriptedModel(responses), {"echo": echo}, {"loop.max_repeats": 2}).run(
        "go"
    )
    assert (result.stop_reason, result.turns) == ("no_progress", 3)


def test_max_repeats_is_at_least_two() -> None:
    with pytest.raises(budgetconf.ConfigError, match=r"loop\.max_repeats"):
        budgetconf.resolve(explicit={"loop.max_repeats": 1})


def test_a_secret_max_repeats_is_not_told_by_the_count(place: Place) -> None:
    preset = place.write(
        "secret.toml",
        'format = 1\n[[sources]]\nkind = "default"\n[[sources]]\nkind = "explicit"\n'
        '[fields."loop.max_steps"]\ntype = "int"\ndefault = 9\n'
        '[fields."loop.max_repeats"]\ntype = "int"\noptional = true\nsecret = true\n'
        '[loop]\nmax_steps = "loop.max_steps"\nmax_repeats = "loop.max_repeats"\n',
    )
    res = budgetconf.resolve(str(preset), explicit={"loop.max_repeats": 2})
    result = LoopExecutor(ScriptedModel([asks("echo", text="a")]), {"echo": Echo()}, res).run("go")
    assert result.stop_reason == "no_progress"
    assert result.message.startswith(
        'stopped: no progress: echo({"text":"a"}) ran again and again in a row with the same'
        " arguments and the same result: loop.max_repeats = *** from explicit"
    )


def test_a_carved_child_is_stopped_as_going_nowhere_too() -> None:
    seen: list[RunResult] = []

    def delegate(task: str = "sub") -> str:
        handle = current_run()
        assert isinstance(handle, RunHandle)
        carved = handle.carve()
        assert carved.limits["max_repeats"].value == 2
        child = LoopExecutor(ScriptedModel([asks("echo", text="a")]), {"echo": Echo()}, carved)
        seen.append(child.run(task))
        return seen[-1].output

    model = ScriptedModel([asks("delegate", task="t"), answer()])
    LoopExecutor(model, {"delegate": delegate}, {"loop.max_repeats": 2}).run("go")
    assert [r.stop_reason for r in seen] == ["no_progress"]


def test_a_run_with_no_tools_to_name_warns_of_no_tools_limit() -> None:
    """Tools are known only at run time: a run that gives none has none to check against."""
    result = LoopExecutor(ScriptedModel([answer()]), {}, {"tools.max_calls.echo": 1}).run("go")
    assert result.stop_reason == "completed"  # and no warning: the suite makes one an error


def test_a_result_or_arguments_that_cannot_be_written_still_compare() -> None:
    """A bridge may hand the Meter any value: one its text cannot be made of is compared by
    identity, arguments that are no JSON by their repr."""
    from budgetconf.loop._watching import _canonical, _outcome

    class Unwritable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    thing = Unwritable()
    assert _outcome(None, thing) == _outcome(None, thing) != _outcome(None, Unwritable())
    assert _outcome("ValueError: x", None) == "raised ValueError: x"
    assert _canonical({"a": {1, 2}}) == repr({"a": {1, 2}})
