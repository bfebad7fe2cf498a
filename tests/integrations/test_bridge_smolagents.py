"""The smolagents bridge against the real smolagents, offline, with a scripted `Model`."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from smolagents import CodeAgent, Model, ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.memory import ActionStep  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    ChatMessageStreamDelta,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    ChatMessageToolCallStreamDelta,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage  # type: ignore[import-untyped]
from smolagents.utils import AgentError, AgentGenerationError  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations.smolagents import limits, run
from budgetconf.loop import Budget, RunStatus, StopReason, current_run

from conftest import Place
from helpers import BENCH
from helpers.bridged import env

Reply = Callable[[int, bool], ChatMessage]


def call(name: str, args: dict[str, Any], cid: str) -> ChatMessageToolCall:
    function = ChatMessageToolCallFunction(name=name, arguments=args)
    return ChatMessageToolCall(id=cid, type="function", function=function)


def adds(n: int, count: int = 1, tokens: tuple[int, int] = (10, 5)) -> ChatMessage:
    """A response of ``count`` calls to ``add``, ``tokens`` (input, output): 15 by default."""
    calls = [call("add", {"a": n, "b": i}, f"c{n}.{i}") for i in range(count)]
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=f"step {n}",
        tool_calls=calls,
        token_usage=TokenUsage(*tokens),
    )


def answer(value: object) -> ChatMessage:
    final = [call("final_answer", {"answer": value}, "fin")]
    return ChatMessage(
        role=MessageRole.ASSISTANT, content="", tool_calls=final, token_usage=TokenUsage(10, 5)
    )


def answer_with(name: str) -> ChatMessage:
    calls = [call(name, {}, "w")]
    return ChatMessage(
        role=MessageRole.ASSISTANT, content="", tool_calls=calls, token_usage=TokenUsage(10, 5)
    )


def summary(n: int, tools: bool) -> ChatMessage:
    """smolagents' tool-less calls (its forced final answer, a plan) get this, 10 tokens."""
    return ChatMessage(role=MessageRole.ASSISTANT, content="summary", token_usage=TokenUsage(7, 3))


class Scripted(Model):  # type: ignore[misc]
    """smolagents' own test double: a `Model` whose ``generate`` is a script.

    ``calls`` records each call: True when it offered tools, False for a
    tool-less one (a plan, or smolagents' forced final answer); ``inputs`` the
    text of each call's last message.
    """

    def __init__(self, reply: Reply | None = None, quiet: Reply = summary) -> None:
        super().__init__(model_id="scripted")
        self.reply = reply or (lambda n, tools: adds(n))
        self.quiet = quiet
        self.calls: list[bool] = []
        self.inputs: list[str] = []

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: object = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        tools = bool(tools_to_call_from)
        self.calls.append(tools)
        self.inputs.append(said(messages[-1].content))
        n = len(self.calls)
        return self.reply(n, tools) if tools else self.quiet(n, tools)


def said(content: object) -> str:
    """A message's text, its parts joined."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


RAN: list[tuple[int, int]] = []


@tool  # type: ignore[untyped-decorator]
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    RAN.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _ran() -> None:
    RAN.clear()


def agent(model: Scripted, **options: Any) -> ToolCallingAgent:
    return ToolCallingAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF, **options)


def observations(ag: ToolCallingAgent) -> list[str]:
    """What each action step of the agent's last run told the model its calls gave."""
    return [s.observations for s in ag.memory.steps if isinstance(s, ActionStep)]


WRAP_UP = (
    "You have reached the step budget for this task. Stop calling tools now and give your best"
    " final answer: summarise the work done so far and say clearly what is left incomplete."
)


def test_a_step_stop_makes_max_steps_model_calls_and_the_last_ones_calls_do_not_run() -> None:
    """max_steps 3: three calls with tools, the third's answered as not executed, and no more."""
    model = Scripted()
    ag = agent(model)
    result = run(ag, "loop", env(max_steps="3"))
    assert model.calls == [True, True, True]
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_steps",
        3,
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS;"
        " raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit is not None
    assert result.limit["locator"] == "env:BUDGETCONF_MAX_STEPS"
    assert (result.output, result.framework, result.native) == ("step 3", "smolagents", None)
    assert (RAN, result.tool_calls_executed) == ([(1, 0), (2, 0)], 2)
    assert observations(ag)[2] == "not executed: this was the last turn the step budget allows"
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert (refused["turn"], refused["ids"]) == (3, ["c3.0"])


def test_the_last_permitted_call_carries_the_wrap_up_notice_and_an_answer_to_it_is_truncated() -> (
    None
):
    """The preset's wrap-up text ends the third call's input; a final answer to it stops the run."""
    model = Scripted(lambda n, tools: adds(n) if n < 3 else answer("all I have"))
    result = run(agent(model), "loop", env(max_steps="3"))
    assert [WRAP_UP in text for text in model.inputs] == [False, False, True]
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.TRUNCATED,
        "max_steps",
        "all I have",
    )
    notices = [e for e in result.events if e["type"] == "last_turn_notice"]
    assert [(e["turn"], e["kind"]) for e in notices] == [(3, "wrap_up")]


def test_warn_sends_the_presets_warning_and_an_answer_to_it_completes() -> None:
    """last_turn = warn: the executor's warning is true here, the wrapper runs no tool."""
    model = Scripted(lambda n, tools: adds(n) if n < 2 else answer("done"))
    result = run(agent(model), "loop", env(max_steps="2", last_turn="warn"))
    assert model.inputs[1].endswith(
        "This is your last turn: tools you call now will not run. "
        "Give your final answer without calling tools."
    )
    assert (result.status, result.stop_reason, result.output) == (RunStatus.OK, "completed", "done")


def test_no_notice_with_last_turn_none_or_without_tools_of_the_agents_own() -> None:
    """none sends nothing; an agent whose only tool is final_answer is warned of no tools."""
    model = Scripted()
    run(agent(model), "loop", env(max_steps="2", last_turn="none"))
    alone = Scripted(lambda n, tools: answer("ok"))
    bare = ToolCallingAgent(tools=[], model=alone, verbosity_level=LogLevel.OFF)
    result = run(bare, "go", env(max_steps="1"))
    assert not any(WRAP_UP in text for text in model.inputs + alone.inputs)
    assert (result.stop_reason, result.output) == ("completed", "ok")


def test_smolagents_full_result_is_the_native_one_when_asked_for() -> None:
    """return_full_result=True passes through when smolagents ends the run; a stop has none."""
    done = agent(Scripted(lambda n, tools: answer(3)), return_full_result=True)
    result = run(done, "1+2", env(max_steps="3"))
    assert (result.stop_reason, result.output, result.native.state) == ("completed", "3", "success")
    result = run(agent(Scripted()), "loop", env(max_steps="3"), return_full_result=True)
    assert (result.stop_reason, result.output, result.native) == ("max_steps", "step 3", None)


def test_a_final_answer_completes_and_its_value_is_text() -> None:
    """A response whose only call is final_answer is the answer: not a tool call counted."""
    model = Scripted(lambda n, tools: adds(n) if n == 1 else answer(3))
    result = run(agent(model), "1+2", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.OK, "completed", 2)
    assert (result.output, result.message, result.limit) == ("3", "completed in 2 turns", None)
    assert result.tool_calls_executed == 1
    (response,) = [e for e in result.events if e["type"] == "model_response" and e["turn"] == 2]
    assert response["tool_calls"] == []


def test_a_final_answer_after_the_tool_call_budget_is_used_completes() -> None:
    """Exactly max_tool_calls calls, then an answer: the budget was not passed."""
    model = Scripted(lambda n, tools: adds(n) if n <= 2 else answer("done"))
    result = run(agent(model), "go", env(max_tool_calls="2"))
    assert (result.stop_reason, result.output, len(RAN)) == ("completed", "done", 2)


def test_a_response_whose_calls_would_pass_the_tool_call_budget_runs_none() -> None:
    """Two calls a response, a budget of 3: the second response's pair is refused whole."""
    model = Scripted(lambda n, tools: adds(n, count=2))
    ag = agent(model)
    result = run(ag, "go", env(max_tool_calls="3"))
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_tool_calls",
        2,
    )
    assert len(RAN) == 2
    assert model.calls == [True, True]
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls = 3")
    assert result.output == "step 2"  # the last text the model sent
    assert observations(ag)[1] == (
        "not executed: the run's tool-call budget would be exceeded\n"
        "not executed: the run's tool-call budget would be exceeded"
    )


def test_a_response_over_the_per_response_cap_is_rejected_whole_and_the_run_goes_on() -> None:
    """Three calls, two accepted: none runs, each is told why, and the model is asked again."""
    model = Scripted(lambda n, tools: adds(n, count=3) if n == 1 else answer("fewer"))
    ag = agent(model)
    result = run(ag, "go", env(max_tool_calls_per_turn="2"))
    assert (result.stop_reason, result.output, result.turns, RAN) == ("completed", "fewer", 2, [])
    why = (
        "not executed: this response has 3 tool calls and at most 2 are accepted in one response"
        " (loop.max_tool_calls_per_turn = 2), so none ran. Send at most 2 calls in a response."
    )
    assert observations(ag)[0] == "\n".join([why] * 3)
    (rejected,) = [e for e in result.events if e["type"] == "batch_rejected"]
    assert (rejected["turn"], rejected["ids"]) == (1, ["c1.0", "c1.1", "c1.2"])


def test_truncate_runs_the_first_calls_of_a_response_over_the_cap_by_their_arguments() -> None:
    """over_cap = truncate: the first two of four run, whichever thread smolagents starts first."""
    model = Scripted(lambda n, tools: adds(n, count=4) if n == 1 else answer("ok"))
    ag = agent(model, max_tool_threads=4)
    result = run(ag, "go", env(max_tool_calls_per_turn="2", over_cap="truncate"))
    assert (result.stop_reason, sorted(RAN), result.tool_calls_executed) == (
        "completed",
        [(1, 0), (1, 1)],
        2,
    )
    skip = "skipped: only the first 2 calls of a response run (loop.max_tool_calls_per_turn = 2)"
    assert observations(ag)[0] == f"1\n2\n{skip}\n{skip}"


def test_a_token_budget_reached_stops_before_the_next_model_call() -> None:
    """15 tokens a response, a budget of 30: two responses, their tools run, no third."""
    model = Scripted()
    result = run(agent(model), "go", env(max_tokens="30"))
    assert (result.stop_reason, result.turns, len(model.calls), len(RAN)) == (
        "max_tokens",
        2,
        2,
        2,
    )
    assert result.native is None  # the bridge ended the run: smolagents neither returned nor raised


def test_a_response_that_passes_the_token_budget_runs_no_tools() -> None:
    model = Scripted()
    result = run(agent(model), "go", env(max_tokens="20"))
    assert (result.stop_reason, result.turns, len(RAN)) == ("max_tokens", 2, 1)


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run() -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: failed, before the response's tools."""

    def huge(n: int, tools: bool) -> ChatMessage:
        message = adds(n)
        message.token_usage = TokenUsage(10, 2**63 - 11)
        return message

    model = Scripted(huge)
    result = run(agent(model), "loop", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith(
        "failed: malformed model response: usage.total_tokens: more tokens than one response"
    )
    assert (model.calls, RAN) == ([True], [])


def test_the_usage_is_the_responses_with_cached_tokens_and_the_model_name() -> None:
    """The raw OpenAI-style response gives the cached input tokens and the model's name."""

    def cached(n: int, tools: bool) -> ChatMessage:
        message = adds(n) if n == 1 else answer("ok")
        details = SimpleNamespace(cached_tokens=4)
        message.raw = SimpleNamespace(
            model="served-model", usage=SimpleNamespace(prompt_tokens_details=details)
        )
        return message

    result = run(agent(Scripted(cached)), "go", env(max_steps="3"))
    usage = result.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (20, 8, 10)
    assert (usage.total_tokens, usage.cost_source) == (30, "none")
    models = [e["model"] for e in result.events if e["type"] == "model_response"]
    assert models == ["served-model", "served-model"]
    plain = run(agent(Scripted(lambda n, tools: answer("ok"))), "go", env(max_steps="3"))
    assert [e["model"] for e in plain.events if e["type"] == "model_response"] == ["scripted"]


def test_a_budget_spent_on_the_last_step_prevents_the_forced_call() -> None:
    """smolagents' forced, tool-less final call never comes: the Meter stops the run first."""
    model = Scripted()
    result = run(agent(model), "go", env(max_steps="3", max_tokens="30"))
    assert model.calls == [True, True]  # no tool-less third call
    assert (result.stop_reason, result.turns) == ("max_tokens", 2)


def test_the_deadline_stops_the_run_before_tools_run_and_models_are_called() -> None:
    def slow(n: int, tools: bool) -> ChatMessage:
        if n == 2:
            time.sleep(0.4)
        return adds(n)

    model = Scripted(slow)
    result = run(agent(model), "go", env(timeout_seconds="0.3"))
    assert (result.stop_reason, result.turns, len(RAN)) == ("timeout", 2, 1)
    assert model.calls == [True, True]


def test_a_model_call_still_running_at_the_deadline_is_abandoned() -> None:
    """As the executor leaves a call it cannot cancel: the run stops at the deadline."""

    release, returned = threading.Event(), threading.Event()

    def slow(n: int, tools: bool) -> ChatMessage:
        release.wait(30)  # until the run has returned: it must not wait for this call
        returned.set()
        return adds(n)

    model = Scripted(slow)
    result = run(agent(model), "go", env(timeout_seconds="0.3"))
    still_running = not returned.is_set()
    release.set()
    assert still_running
    assert (result.status, result.stop_reason, result.turns, RAN) == (
        RunStatus.TRUNCATED,
        "timeout",
        1,
        [],
    )
    assert result.message.startswith("stopped: hit timeout_seconds (0.3)")


def test_the_deadline_passed_in_a_tool_stops_the_run_before_the_next_call() -> None:
    @tool  # type: ignore[untyped-decorator]
    def wait() -> str:
        """Take a while."""
        time.sleep(0.4)
        return "waited"

    model = Scripted(lambda n, tools: adds(n) if n > 1 else answer_with("wait"))
    ag = ToolCallingAgent(tools=[wait, add], model=model, verbosity_level=LogLevel.OFF)
    result = run(ag, "go", env(timeout_seconds="0.3"))
    assert (result.stop_reason, result.turns, model.calls) == ("timeout", 1, [True])


def test_a_code_agent_runs_within_its_token_budget() -> None:
    """Its tools run inside its code, out of the Meter's sight; its steps and tokens count."""

    def code(n: int, tools: bool) -> ChatMessage:
        action = "print(add(1, 2))" if n < 3 else "final_answer(add(1, 2))"
        content = f"Thought: go\n<code>\n{action}\n</code>"
        return ChatMessage(MessageRole.ASSISTANT, content, token_usage=TokenUsage(10, 5))

    def coder() -> CodeAgent:
        return CodeAgent(tools=[add], model=Scripted(quiet=code), verbosity_level=LogLevel.OFF)

    result = run(coder(), "go", env(max_tokens="30"))
    assert (result.stop_reason, result.turns, len(RAN)) == ("max_tokens", 2, 2)
    assert result.output.startswith("Thought: go")
    assert (run(coder(), "go").output, len(RAN)) == ("3", 5)


def test_a_code_agents_last_permitted_code_runs_and_the_run_stops_before_the_next_call() -> None:
    """max_steps 2: two responses, both codes run, the wrap-up notice with the second."""

    def code(n: int, tools: bool) -> ChatMessage:
        content = f"Thought: go\n<code>\nprint(add({n}, 0))\n</code>"
        return ChatMessage(MessageRole.ASSISTANT, content, token_usage=TokenUsage(10, 5))

    model = Scripted(quiet=code)
    coder = CodeAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF)
    result = run(coder, "go", env(max_steps="2"))
    assert (result.stop_reason, result.turns, RAN, model.calls) == (
        "max_steps",
        2,
        [(1, 0), (2, 0)],
        [False, False],
    )
    assert [WRAP_UP in text for text in model.inputs] == [False, True]
    warned = Scripted(quiet=code)
    coder = CodeAgent(tools=[add], model=warned, verbosity_level=LogLevel.OFF)
    run(coder, "go", env(max_steps="2", last_turn="warn"))  # its warning would not be true
    assert not any("will not run" in text for text in warned.inputs)


def test_planning_calls_are_turns_counted_by_the_meter() -> None:
    """max_steps 6, a plan every 2 steps: plan, 2 steps, plan, 2 steps, and no third plan."""
    model = Scripted()
    ag = agent(model, planning_interval=2)
    result = run(ag, "go", env(max_steps="6"))
    assert model.calls == [False, True, True, False, True, True]
    assert (result.stop_reason, result.turns, len(RAN)) == ("max_steps", 6, 3)
    assert ag.max_steps == 20


def test_a_planning_call_that_spends_the_token_budget_ends_the_run_there() -> None:
    """smolagents calls the model for the step after a plan: the Meter refuses that call."""
    model = Scripted()
    result = run(agent(model, planning_interval=1), "go", env(max_tokens="30"))
    assert model.calls == [False, True, False]  # plan 10, step 15, plan 10: 35
    assert (result.stop_reason, result.turns) == ("max_tokens", 3)


def test_a_step_budget_of_one_is_one_turn_whose_calls_do_not_run() -> None:
    """run() needs no forced final call: max_steps 1 is one model call (limits() needs 2)."""
    model = Scripted()
    result = run(agent(model), "go", env(max_steps="1"))
    assert (model.calls, RAN, result.stop_reason, result.turns) == ([True], [], "max_steps", 1)


def test_too_few_steps_for_smolagents_own_run_are_refused_by_limits_naming_the_field() -> None:
    with pytest.raises(budgetconf.UsageError) as caught:
        limits(env={"BUDGETCONF_MAX_STEPS": "1"})
    assert str(caught.value) == (
        "loop.max_steps = 1 from env:BUDGETCONF_MAX_STEPS: smolagents needs at least 2"
        " (its forced final answer is one more model call); unset it, or run the agent through"
        " run(), which enforces it"
    )


def test_a_budget_without_a_step_limit_is_refused() -> None:
    budget = Budget.from_resolution(env(max_steps="3"))
    unset = dataclasses.replace(budget, limits={})
    with pytest.raises(budgetconf.UsageError, match=r"loop\.max_steps is unset: smolagents would"):
        run(agent(Scripted()), "go", unset)


def test_limits_carry_the_step_budget_into_smolagents_own_run() -> None:
    model = Scripted()
    keywords = limits(env={"BUDGETCONF_MAX_STEPS": "4"})
    assert keywords == {"max_steps": 3}
    agent(model).run("go", **keywords)
    assert model.calls == [True, True, True, False]


def test_limits_refuse_a_budget_only_run_enforces() -> None:
    with pytest.raises(budgetconf.UsageError, match=r"by smolagents through limits\(\)"):
        limits(env={"BUDGETCONF_MAX_TOKENS": "500"})
    with pytest.raises(budgetconf.UsageError, match=r"max_tool_calls_per_turn = 3 .* limits\(\)"):
        limits(env={"BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "3"})


def test_a_cost_budget_for_a_model_with_no_price_follows_prices_unknown() -> None:
    """The agent's model is named (``scripted``) and has no price: refused before its first
    call, with unenforced="warn" too; under prices.unknown = warn, one warning, and the run
    counts no cost."""
    cost = env(max_cost_usd="2", price_table="none")
    model = Scripted()
    with pytest.raises(budgetconf.UsageError) as caught:
        run(agent(model), "go", cost, unenforced="warn")
    assert str(caught.value) == (
        "no price for the model 'scripted', and limits.max_cost_usd = $2 from"
        " env:BUDGETCONF_MAX_COST_USD is a cost budget: set prices.input_per_mtok and"
        " prices.output_per_mtok, name a table file in prices.table, or pip install"
        " 'budgetconf[prices]'"
    )
    assert model.calls == []
    model = Scripted(lambda n, tools: answer("ok"))
    warned_env = env(max_cost_usd="2", price_table="none", price_unknown="warn")
    with pytest.warns(budgetconf.BudgetConfWarning, match="'scripted'") as warned:
        result = run(agent(model), "go", warned_env)
    assert (len(warned), result.output, result.usage.cost_source) == (1, "ok", "none")


def test_a_cost_budget_stops_the_run_at_the_models_price() -> None:
    """The price fields price the scripted model's token_usage: 1,000 + 1,000 tokens a call at
    $0.15 / $0.60 per million is $0.00075, so the third call passes $0.002 and its calls are
    answered as not executed, as in the executor."""
    model = Scripted(lambda n, tools: adds(n, tokens=(1000, 1000)))
    cost = env(max_cost_usd="0.002", price_input_per_mtok="0.15", price_output_per_mtok="0.6")
    result = run(agent(model), "go", cost)
    assert (result.stop_reason, result.turns, len(model.calls), RAN) == (
        "max_cost",
        3,
        3,
        [(1, 0), (2, 0)],
    )
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.00225, "priced")
    assert result.message.endswith(
        "; spent $0.00225 at scripted's price (env:BUDGETCONF_PRICE_INPUT_PER_MTOK,"
        " env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK: $0.15 / $0.60 per Mtok)"
    )


def test_a_budget_the_policy_sets_that_smolagents_cannot_enforce_is_refused_even_to_warn(
    place: Place,
) -> None:
    """An administrator's ceiling on the unset cost limit is never run without, warn or not:
    for a model with no name, which nothing can price, it is refused as the policy's."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{\n  "limits": {\n    "max_cost_usd": {"max": 5}}}', encoding="utf-8")
    nameless = Scripted(lambda n, tools: answer("ok"))
    nameless.model_id = None
    with pytest.raises(budgetconf.UsageError) as caught:
        run(agent(nameless), "go", unenforced="warn")
    assert str(caught.value) == (
        f"limits.max_cost_usd = 5.0 from the policy {place.policy}:3 cannot be enforced by"
        " smolagents: it reports no cost, and no price is known for a model with no name (set"
        " prices.input_per_mtok and prices.output_per_mtok); a budget the policy sets is never"
        " run without"
    )
    with pytest.raises(budgetconf.UsageError, match="from the policy"):
        limits()


def test_a_code_agents_tool_calls_are_out_of_sight_and_refused() -> None:
    code = CodeAgent(tools=[add], model=Scripted(), verbosity_level=LogLevel.OFF)
    with pytest.raises(budgetconf.UsageError) as caught:
        run(code, "go", env(max_tool_calls="3"))
    assert str(caught.value) == (
        "limits.max_tool_calls = 3 from env:BUDGETCONF_MAX_TOOL_CALLS cannot be enforced by"
        " smolagents for a CodeAgent: it calls its tools inside the code it writes;"
        " or pass unenforced='warn' to run without it"
    )
    with pytest.raises(budgetconf.UsageError, match=r"^loop\.max_tool_calls_per_turn = 4 from"):
        run(code, "go", env(max_tool_calls_per_turn="4"))
    with pytest.raises(budgetconf.UsageError, match=r"^tools\.max_calls\.add = 1 from .*CodeAgent"):
        run(code, "go", env(tools_max_calls="add=1"))
    with pytest.raises(budgetconf.UsageError, match=r"^loop\.max_repeats = 2 from .*CodeAgent"):
        run(code, "go", env(max_repeats="2"))


def test_a_code_agents_per_response_cap_set_by_the_policy_is_refused_even_to_warn(
    place: Place,
) -> None:
    """The policy's cap on calls per response cannot be run without by a CodeAgent."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{"loop": {"max_tool_calls_per_turn": {"max": 3}}}', encoding="utf-8")
    code = CodeAgent(tools=[add], model=Scripted(), verbosity_level=LogLevel.OFF)
    with pytest.raises(budgetconf.UsageError, match="a budget the policy sets is never run"):
        run(code, "go", unenforced="warn")


def test_managed_agents_outside_the_budget_are_refused_or_warned() -> None:
    helper = agent(Scripted(lambda n, tools: answer("sub")), name="helper", description="helps")
    boss = agent(Scripted(lambda n, tools: answer("ok")), managed_agents=[helper])
    with pytest.raises(budgetconf.UsageError, match=r"the managed agents \(helper\) make model"):
        run(boss, "go")
    with pytest.warns(budgetconf.BudgetConfWarning, match="outside the budget"):
        assert run(boss, "go", unenforced="warn").output == "ok"


@pytest.mark.parametrize(("keyword", "value"), [("max_steps", 0), ("stream", True)])
def test_a_keyword_that_sets_what_the_bridge_sets_is_refused(keyword: str, value: object) -> None:
    model = Scripted()
    with pytest.raises(budgetconf.UsageError, match=f"^{keyword}="):
        run(agent(model), "go", env(max_steps="3"), **{keyword: value})  # type: ignore[arg-type]
    assert model.calls == []


def test_a_keyword_agent_run_does_not_take_is_the_callers_error_and_is_raised() -> None:
    """Not a failed run: smolagents was never asked."""
    model = Scripted()
    with pytest.raises(budgetconf.UsageTypeError, match=r"^agent\.run: got an unexpected keyword"):
        run(agent(model), "go", env(max_steps="3"), image=None)
    assert model.calls == []


def test_smolagents_ignores_max_steps_0_which_the_bridge_refuses() -> None:
    """The trap: run(max_steps=0) falls back to the agent's own max_steps."""
    model = Scripted()
    agent(model, max_steps=2).run("go", max_steps=0)
    assert model.calls == [True, True, False]
    with pytest.raises(budgetconf.UsageError, match="max_steps= would set smolagents's own limit"):
        run(agent(Scripted()), "go", max_steps=0)


def test_a_model_that_fails_fails_the_run_and_the_agent_is_given_back_as_it_was() -> None:
    """smolagents' AgentGenerationError is the native; model, tools, max_steps are the agent's."""

    def broken(n: int, tools: bool) -> ChatMessage:
        if n == 2:
            raise RuntimeError("the model is down")
        return adds(n)

    mine: list[int] = []
    model = Scripted(broken)
    ag = agent(model, max_steps=7, step_callbacks=[lambda step: mine.append(1)])
    callbacks, tools = ag.step_callbacks, ag.tools
    result = run(ag, "go", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert result.message == "failed: RuntimeError: the model is down (turn 2)"
    assert isinstance(result.native, AgentGenerationError)
    assert (result.output, result.tool_calls_executed) == ("step 1", 1)
    assert (ag.max_steps, ag.step_callbacks, ag.model, ag.tools) == (7, callbacks, model, tools)
    assert ag.tools["add"] is add
    assert ag.step_callbacks._callbacks[ActionStep][-1] == ag.monitor.update_metrics
    assert mine == [1, 1]  # the step whose model raised is a step too


def test_a_tool_that_raises_is_answered_with_its_error_and_the_run_goes_on() -> None:
    """As in the executor: the call counts, and the model is told what went wrong."""

    @tool  # type: ignore[untyped-decorator]
    def fails() -> str:
        """Fail."""
        raise ValueError("no luck")

    model = Scripted(lambda n, tools: answer_with("fails") if n == 1 else answer("ok"))
    ag = ToolCallingAgent(tools=[fails], model=model, verbosity_level=LogLevel.OFF)
    result = run(ag, "go", env(max_steps="3"))
    assert (result.stop_reason, result.output, result.tool_calls_executed) == ("completed", "ok", 1)
    (executed,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert (executed["ok"], executed["error"]) == (False, "ValueError: no luck")
    assert "no luck" in str(ag.memory.steps[1].error)


def test_an_interrupt_of_the_callers_own_cancels_the_run() -> None:
    """agent.interrupt() from a step callback ends the run cancelled, as the executor's."""

    def stop(step: ActionStep, agent: ToolCallingAgent) -> None:
        agent.interrupt()

    ag = agent(Scripted(), step_callbacks=[stop])
    result = run(ag, "go", env(max_steps="5"))
    assert (result.status, result.stop_kind, result.turns) == (
        RunStatus.FAILED,
        StopReason.CANCELLED,
        1,
    )
    assert (result.stop_reason, result.message) == ("cancelled", "cancelled on turn 1")
    assert isinstance(result.native, AgentError)
    assert len(RAN) == 1


def test_a_response_whose_calls_are_written_as_text_runs_them_as_parsed() -> None:
    """smolagents parses a call from a response's text; the Meter decides the call it parsed."""

    def written(n: int, tools: bool) -> ChatMessage:
        if n > 1:
            return answer("ok")
        text = json.dumps({"name": "add", "arguments": {"a": 4, "b": 5}})
        return ChatMessage(MessageRole.ASSISTANT, text, token_usage=TokenUsage(10, 5))

    result = run(agent(Scripted(written)), "go", env(max_steps="3"))
    assert (result.stop_reason, RAN, result.tool_calls_executed) == ("completed", [(4, 5)], 1)
    (response,) = [e for e in result.events if e["type"] == "model_response" and e["turn"] == 1]
    assert [c["name"] for c in response["tool_calls"]] == ["add"]


def test_a_text_reply_smolagents_cannot_parse_is_a_response_without_calls() -> None:
    """smolagents makes it a step with a parsing error and goes on; the Meter counted the turn."""

    def chatty(n: int, tools: bool) -> ChatMessage:
        if n > 1:
            return answer("ok")
        return ChatMessage(MessageRole.ASSISTANT, "just talk", token_usage=TokenUsage(10, 5))

    result = run(agent(Scripted(chatty)), "go", env(max_steps="3"))
    assert (result.stop_reason, result.turns, result.usage.total_tokens) == ("completed", 2, 30)


class Streaming(Scripted):
    """A `Scripted` model that streams each response as deltas."""

    def generate_stream(self, messages: list[Any], **kwargs: Any) -> Iterator[Any]:
        message = self.generate(messages, **kwargs)
        for i, made in enumerate(message.tool_calls or ()):
            function = ChatMessageToolCallFunction(
                name=made.function.name, arguments=json.dumps(made.function.arguments)
            )
            delta = ChatMessageToolCallStreamDelta(
                index=i, id=made.id, type="function", function=function
            )
            yield ChatMessageStreamDelta(content=None, tool_calls=[delta])
        yield ChatMessageStreamDelta(content=said(message.content), token_usage=message.token_usage)


def test_a_streaming_agent_is_metered_as_its_streams_end() -> None:
    """stream_outputs=True: each streamed response is a turn, its calls decided by the Meter."""
    model = Streaming()
    ag = agent(model, stream_outputs=True)
    result = run(ag, "go", env(max_steps="2"))
    assert (result.stop_reason, result.turns, RAN) == ("max_steps", 2, [(1, 0)])
    assert result.usage.total_tokens == 30


def test_events_go_to_on_event_and_the_run_is_named() -> None:
    """The executor's vocabulary, as the result's events; name= names the run."""
    heard: list[dict[str, Any]] = []
    model = Scripted(lambda n, tools: adds(n) if n == 1 else answer("ok"))
    result = run(agent(model), "go", env(max_steps="3"), on_event=heard.append, name="adder")
    assert heard == result.events
    assert [e["type"] for e in heard] == [
        "run_started",
        "turn_started",
        "model_response",
        "tool_started",
        "tool_executed",
        "turn_started",
        "model_response",
        "stopped",
    ]
    assert (heard[0]["name"], heard[0]["framework"]) == ("adder", "smolagents")
    assert {e["run_id"] for e in heard} == {result.run_id}


def test_a_failing_on_event_fails_the_run_before_its_next_call() -> None:
    """As in the executor: the sink's error is the run's, and no model call follows it."""

    def deaf(event: dict[str, Any]) -> None:
        if event["type"] == "model_response":
            raise OSError("disk full")

    model = Scripted()
    result = run(agent(model), "go", env(max_steps="3"), on_event=deaf)
    assert (result.status, model.calls) == (RunStatus.FAILED, [True])
    assert result.message == "failed: on_event raised OSError: disk full (turn 1)"


def test_a_wrapped_tool_sees_the_bridged_run_and_a_sub_agent_charges_it() -> None:
    """current_run() inside a tool is the bridged run: a sub-agent on its carve counts in it."""
    seen: list[Any] = []

    @tool  # type: ignore[untyped-decorator]
    def delegate() -> str:
        """Ask a helper."""
        handle = current_run()
        seen.append(handle)
        assert handle is not None
        helper = agent(Scripted(lambda n, tools: adds(n) if n == 1 else answer("sub")))
        return run(helper, "help", handle.carve(max_steps=3)).output

    model = Scripted(lambda n, tools: answer_with("delegate") if n == 1 else answer("ok"))
    ag = ToolCallingAgent(tools=[delegate], model=model, verbosity_level=LogLevel.OFF)
    result = run(ag, "go", env(max_steps="5"))
    assert (result.stop_reason, result.output) == ("completed", "ok")
    assert seen[0] is not None
    assert current_run() is None  # only inside the run's tools
    assert (result.tool_calls_executed, result.usage.total_tokens) == (2, 60)  # the helper's too


def test_two_overlapping_bridged_runs_of_one_agent_are_refused_and_leave_it_as_it_was() -> None:
    """smolagents keeps a run on its agent: the second run is a UsageError, the first goes on."""
    inside, release = threading.Event(), threading.Event()

    @tool  # type: ignore[untyped-decorator]
    def hold() -> str:
        """Wait to be released."""
        inside.set()
        release.wait(5)
        return "held"

    model = Scripted(lambda n, tools: answer_with("hold") if n == 1 else answer("ok"))
    ag = ToolCallingAgent(tools=[hold], model=model, verbosity_level=LogLevel.OFF)
    own = ag.model, ag.tools, ag.max_steps, ag.step_callbacks
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(run(ag, "go", env(max_steps="2"))))
    first.start()
    assert inside.wait(5)
    try:
        with pytest.raises(budgetconf.UsageError, match="is in a bridged run already"):
            run(ag, "again", env(max_steps="2"))
    finally:
        release.set()
        first.join(5)
    assert results[0].output == "ok"
    assert (ag.model, ag.tools, ag.max_steps, ag.step_callbacks) == own
    assert run(ag, "again", env(max_steps="3")).stop_reason == "completed"  # free once it ended


def test_runs_of_two_agents_overlap_on_threads() -> None:
    """The refusal is one agent's: other agents run at the same time, each within its budget."""
    results: list[Any] = []

    def one() -> None:
        results.append(run(agent(Scripted()), "go", env(max_steps="4")))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert [(r.stop_reason, r.turns, r.tool_calls_executed) for r in results] == [
        ("max_steps", 4, 3)
    ] * 3


def test_a_response_whose_content_is_a_list_of_parts_is_kept_as_its_text() -> None:
    """A plan's content as a list of text parts is the output, joined: always a str."""

    def parts(n: int, tools: bool) -> ChatMessage:
        content = [{"type": "text", "text": "half "}, {"type": "text", "text": "done"}]
        return ChatMessage(role=MessageRole.ASSISTANT, content=content)

    model = Scripted(quiet=parts)
    result = run(agent(model, planning_interval=1), "go", env(max_steps="1"))
    assert (result.output, result.turns, model.calls) == ("half done", 1, [False])


def test_an_agent_of_another_kind_is_refused() -> None:
    with pytest.raises(budgetconf.UsageTypeError, match="expected a smolagents agent, got str"):
        run("agent", "go")


def test_without_smolagents_the_import_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "smolagents.agents", None)  # as for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.smolagents")
    with pytest.raises(ImportError, match=r"pip install 'budgetconf\[smolagents\]'") as raised:
        import budgetconf.integrations.smolagents  # noqa: F401
    assert raised.value.name == "smolagents"


def test_without_smolagents_a_fresh_process_says_the_same() -> None:
    code = (
        "import sys; sys.modules['smolagents'] = None\n"
        "try:\n    import budgetconf.integrations.smolagents\n"
        "except ImportError as e:\n    print(e, e.name)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == (
        "budgetconf.integrations.smolagents needs the smolagents package: pip install"
        " 'budgetconf[smolagents]' (from a checkout: pip install -e '.[smolagents]') smolagents\n"
    )


def test_the_bench_measures_both_runs() -> None:
    """bench/bridge_smolagents.py's rows, run and streamed, in quick mode, so the script
    cannot rot."""
    path = BENCH / "bridge_smolagents.py"
    spec = importlib.util.spec_from_file_location("bridge_smolagents_bench", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows(quick=True)
    assert list(rows) == [
        "smolagents: framework alone, per turn",
        "smolagents: through the bridge, per turn",
        "smolagents: the bridge's cost per turn",
    ]
    assert all(ns > 0 for ns in list(rows.values())[:2])
    streamed = module.streamed_rows(quick=True)
    assert list(streamed) == [
        "smolagents, streamed: framework alone, per turn",
        "smolagents, streamed: through the bridge, per turn",
        "smolagents, streamed: the bridge's cost per turn",
    ]
    assert all(ns > 0 for ns in list(streamed.values())[:2])


def test_the_bridge_imports_nothing_beyond_smolagents_and_budgetconf() -> None:
    """smolagents loads all of itself on import; the bridge adds its own modules, not the loop."""
    probe = (
        "import sys, budgetconf, smolagents\n"
        "before = set(sys.modules)\n"
        "import budgetconf.integrations.smolagents\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) <= {
        "budgetconf._loop_table",
        "budgetconf._usage",  # a leaf: the bounds a response's usage is read by
        "budgetconf.integrations",
        "budgetconf.integrations._bridge",
        "budgetconf.integrations._stream",  # a leaf: the streamed run stream() returns
        "budgetconf.integrations._frameworks",
        "budgetconf.integrations._verdicts",
        "budgetconf.integrations._install",
        "budgetconf.integrations._smolagents_run",
        "budgetconf.integrations.smolagents",
    }


def test_ctrl_c_during_the_run_cancels_it_as_the_executor_does() -> None:
    """A KeyboardInterrupt from the model on the second turn ends the run cancelled there."""

    def interrupted(n: int, tools: bool) -> ChatMessage:
        if n == 2:
            raise KeyboardInterrupt
        return adds(n)

    model = Scripted(interrupted)
    ag = agent(model)
    result = run(ag, "go", env(max_steps="5"))
    assert (result.status, result.stop_kind, result.turns) == (
        RunStatus.FAILED,
        StopReason.CANCELLED,
        2,
    )
    assert isinstance(result.native, KeyboardInterrupt)
    assert (RAN, ag.model) == ([(1, 0)], model)


def test_a_process_leaving_mid_run_records_the_failure_and_goes_on_leaving() -> None:
    """SystemExit from the model is raised again, after the run's end is recorded."""

    def leaving(n: int, tools: bool) -> ChatMessage:
        raise SystemExit(3)

    seen: list[dict[str, Any]] = []
    model = Scripted(leaving)
    ag = agent(model)
    with pytest.raises(SystemExit) as caught:
        run(ag, "go", env(max_steps="5"), on_event=seen.append)
    assert caught.value.code == 3
    (stopped,) = [e for e in seen if e["type"] == "stopped"]
    assert (stopped["status"], stopped["stop_reason"]) == ("failed", "error")
    assert ag.model is model


def test_a_stream_that_breaks_fails_the_run_on_its_turn() -> None:
    """A streamed response that raises midway fails the run there, with the model's error."""

    def broken(n: int, tools: bool) -> ChatMessage:
        if n == 2:
            raise RuntimeError("the stream broke")
        return adds(n)

    ag = agent(Streaming(broken), stream_outputs=True)
    result = run(ag, "go", env(max_steps="4"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert result.message == "failed: RuntimeError: the stream broke (turn 2)"
    assert RAN == [(1, 0)]
