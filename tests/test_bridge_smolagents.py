"""The smolagents bridge against the real smolagents, offline, with a scripted `Model`."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from smolagents import CodeAgent, Model, ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.memory import ActionStep  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage  # type: ignore[import-untyped]
from smolagents.utils import AgentError, AgentGenerationError  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations import smolagents as bridge
from budgetconf.integrations.smolagents import limits, run
from budgetconf.loop import Budget, RunStatus

from conftest import Place

Reply = Callable[[int, bool], ChatMessage]


def call(name: str, args: dict[str, Any], cid: str) -> ChatMessageToolCall:
    function = ChatMessageToolCallFunction(name=name, arguments=args)
    return ChatMessageToolCall(id=cid, type="function", function=function)


def adds(n: int, count: int = 1) -> ChatMessage:
    """A response of ``count`` calls to ``add``, 15 tokens."""
    calls = [call("add", {"a": n, "b": i}, f"c{n}.{i}") for i in range(count)]
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=f"step {n}",
        tool_calls=calls,
        token_usage=TokenUsage(10, 5),
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
    tool-less one (smolagents' forced final answer, or a plan).
    """

    def __init__(self, reply: Reply | None = None, quiet: Reply = summary) -> None:
        super().__init__(model_id="scripted")
        self.reply = reply or (lambda n, tools: adds(n))
        self.quiet = quiet
        self.calls: list[bool] = []

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
        n = len(self.calls)
        return self.reply(n, tools) if tools else self.quiet(n, tools)


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


def env(**values: str) -> budgetconf.Resolution:
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})


def test_a_step_stop_makes_max_steps_model_calls_the_last_its_forced_answer() -> None:
    """max_steps 3: two steps with tools, then smolagents' tool-less final call, and no more."""
    model = Scripted()
    ag = agent(model)
    result = run(ag, "loop", env(max_steps="3"))
    assert model.calls == [True, True, False]
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
    assert (result.output, result.framework) == ("summary", "smolagents")
    assert result.native == "summary"  # what agent.run returned
    assert len(RAN) == 2


def test_smolagents_full_result_is_the_native_one_when_asked_for() -> None:
    """return_full_result=True passes through: smolagents' RunResult, its state its own."""
    result = run(agent(Scripted()), "loop", env(max_steps="3"), return_full_result=True)
    assert (result.stop_reason, result.output) == ("max_steps", "summary")
    assert result.native.state == "max_steps_error"
    done = agent(Scripted(lambda n, tools: answer(3)), return_full_result=True)
    result = run(done, "1+2", env(max_steps="3"))
    assert (result.stop_reason, result.output, result.native.state) == ("completed", "3", "success")


def test_a_final_answer_completes_and_its_value_is_text() -> None:
    model = Scripted(lambda n, tools: adds(n) if n == 1 else answer(3))
    result = run(agent(model), "1+2", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.OK, "completed", 2)
    assert (result.output, result.message, result.limit) == ("3", "completed in 2 turns", None)


def test_a_final_answer_after_the_tool_call_budget_is_used_completes() -> None:
    """Exactly max_tool_calls calls, then an answer: the budget was not passed."""
    model = Scripted(lambda n, tools: adds(n) if n <= 2 else answer("done"))
    result = run(agent(model), "go", env(max_tool_calls="2"))
    assert (result.stop_reason, result.output, len(RAN)) == ("completed", "done", 2)


def test_a_response_whose_calls_would_pass_the_tool_call_budget_runs_none() -> None:
    """Two calls a response, a budget of 3: the second response's pair is refused whole."""
    model = Scripted(lambda n, tools: adds(n, count=2))
    result = run(agent(model), "go", env(max_tool_calls="3"))
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_tool_calls",
        2,
    )
    assert len(RAN) == 2
    assert model.calls == [True, True]
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls = 3")
    assert result.output == "step 2"  # the last text the model sent


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
    assert isinstance(result.native, AgentError)  # smolagents' own interrupt


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


def test_a_budget_spent_on_the_last_step_prevents_the_forced_call() -> None:
    """smolagents ignores an interrupt on its last step: the bridge ends the run itself."""
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
    """Its tools run inside its code, out of sight; its steps and tokens are counted."""

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


def test_planning_calls_are_turns_and_the_agent_gets_the_steps_that_fit() -> None:
    """max_steps 6 with a plan every 2 steps: plan, 2 steps, plan, 1 step, the forced call."""
    model = Scripted()
    ag = agent(model, planning_interval=2)
    result = run(ag, "go", env(max_steps="6"))
    assert model.calls == [False, True, True, False, True, False]
    assert (result.stop_reason, result.turns) == ("max_steps", 6)
    assert ag.max_steps == 20


def test_a_planning_call_that_spends_the_token_budget_ends_the_run_there() -> None:
    """smolagents calls the model for the step after a plan before it reads an interrupt."""
    model = Scripted()
    result = run(agent(model, planning_interval=1), "go", env(max_tokens="30"))
    assert model.calls == [False, True, False]  # plan 10, step 15, plan 10: 35
    assert (result.stop_reason, result.turns) == ("max_tokens", 3)


@pytest.mark.parametrize("interval", [1, 2, 3, 5])
def test_the_planned_steps_are_the_most_that_fit(interval: int) -> None:
    for total in range(3, 60):
        fits = [s for s in range(1, total) if bridge._calls(s, interval) <= total]
        assert bridge._planned_steps(total, interval) == max(fits)


def test_too_few_steps_for_smolagents_are_refused_naming_the_field() -> None:
    with pytest.raises(budgetconf.UsageError) as caught:
        limits(env={"BUDGETCONF_MAX_STEPS": "1"})
    assert str(caught.value) == (
        "loop.max_steps = 1 from env:BUDGETCONF_MAX_STEPS: smolagents needs at least 2"
        " (its forced final answer is one more model call)"
    )
    with pytest.raises(budgetconf.UsageError, match="at least 3 with planning_interval"):
        run(agent(Scripted(), planning_interval=2), "go", env(max_steps="2"))
    with pytest.raises(budgetconf.UsageError, match="planning_interval: expected an int"):
        run(agent(Scripted(), planning_interval=2.5), "go", env(max_steps="5"))


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


def test_a_budget_smolagents_cannot_enforce_is_refused_or_warned() -> None:
    cost = env(max_cost_usd="2")
    with pytest.raises(budgetconf.UsageError) as caught:
        run(agent(Scripted()), "go", cost)
    assert str(caught.value) == (
        "limits.max_cost_usd = 2.0 from env:BUDGETCONF_MAX_COST_USD cannot be enforced by"
        " smolagents; unset it, or pass unenforced='warn' to run without it"
    )
    model = Scripted(lambda n, tools: answer("ok"))
    with pytest.warns(budgetconf.BudgetConfWarning, match="running without it") as warned:
        result = run(agent(model), "go", cost, unenforced="warn")
    assert (len(warned), result.output) == (1, "ok")


def test_a_budget_the_policy_sets_that_smolagents_cannot_enforce_is_refused_even_to_warn(
    place: Place,
) -> None:
    """An administrator's ceiling on the unset cost limit is never run without, warn or not."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{\n  "limits": {\n    "max_cost_usd": {"max": 5}}}', encoding="utf-8")
    with pytest.raises(budgetconf.UsageError) as caught:
        run(agent(Scripted(lambda n, tools: answer("ok"))), "go", unenforced="warn")
    assert str(caught.value) == (
        f"limits.max_cost_usd = 5.0 from the policy {place.policy}:3 cannot be enforced by"
        " smolagents; a budget the policy sets is never run without"
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


def test_smolagents_ignores_max_steps_0_which_the_bridge_refuses() -> None:
    """The trap: run(max_steps=0) falls back to the agent's own max_steps."""
    model = Scripted()
    agent(model, max_steps=2).run("go", max_steps=0)
    assert model.calls == [True, True, False]
    with pytest.raises(budgetconf.UsageError, match="max_steps= would set smolagents's own limit"):
        run(agent(Scripted()), "go", max_steps=0)


def test_the_agent_is_given_back_as_it_was_also_when_the_run_raises() -> None:
    def broken(n: int, tools: bool) -> ChatMessage:
        raise RuntimeError("the model is down")

    mine: list[int] = []
    ag = agent(Scripted(broken), max_steps=7, step_callbacks=[lambda step: mine.append(1)])
    callbacks = ag.step_callbacks
    with pytest.raises(AgentGenerationError, match="the model is down"):
        run(ag, "go", env(max_steps="3"))
    assert (ag.max_steps, ag.step_callbacks) == (7, callbacks)
    assert "process_tool_calls" not in vars(ag)
    assert ag.step_callbacks._callbacks[ActionStep][-1] == ag.monitor.update_metrics
    ag.model = Scripted(lambda n, tools: answer("ok"))
    run(ag, "go", env(max_steps="3"))
    assert (ag.max_steps, ag.step_callbacks, ag.interrupt_switch) == (7, callbacks, False)
    assert mine == [1, 1]  # the model that raised made a step too


def test_an_agents_own_process_tool_calls_is_put_back() -> None:
    ag = agent(Scripted(lambda n, tools: answer("ok")))
    own = ag.process_tool_calls
    ag.process_tool_calls = own
    assert run(ag, "go").output == "ok"
    assert vars(ag)["process_tool_calls"] is own


def test_an_interrupt_the_bridge_did_not_make_is_raised_unchanged() -> None:
    def stop(step: ActionStep, agent: ToolCallingAgent) -> None:
        agent.interrupt()

    ag = agent(Scripted(), step_callbacks=[stop])
    with pytest.raises(AgentError, match="Agent interrupted"):
        run(ag, "go", env(max_steps="5"))


def test_a_failed_forced_call_leaves_the_last_text_and_a_list_answer_is_joined() -> None:
    def down(n: int, tools: bool) -> ChatMessage:
        raise RuntimeError("the model is down")

    result = run(agent(Scripted(quiet=down)), "go", env(max_steps="3"))
    assert (result.stop_reason, result.turns, result.output) == ("max_steps", 3, "step 2")
    assert isinstance(result.native, list)  # smolagents' own, untouched

    def parts(n: int, tools: bool) -> ChatMessage:
        content = [{"type": "text", "text": "half "}, {"type": "text", "text": "done"}]
        return ChatMessage(role=MessageRole.ASSISTANT, content=content)

    result = run(agent(Scripted(quiet=parts)), "go", env(max_steps="2"))
    assert (result.output, result.turns) == ("half done", 2)


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
    """bench/bridge_smolagents.py's rows, in quick mode, so the script cannot rot."""
    path = Path(__file__).parent.parent / "bench" / "bridge_smolagents.py"
    spec = importlib.util.spec_from_file_location("bridge_smolagents_bench", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.rows(quick=True)
    assert set(rows) == {
        "smolagents: framework alone, per turn",
        "smolagents: through the bridge, per turn",
    }
    assert all(ns > 0 for ns in rows.values())


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
        "budgetconf.integrations._frameworks",
        "budgetconf.integrations._install",
        "budgetconf.integrations.smolagents",
    }
