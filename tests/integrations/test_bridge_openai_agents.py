"""The openai-agents bridge, against the real framework with a scripted `Model`, offline."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import time
from typing import Any

import pytest
from agents import (
    Agent,
    AgentsException,
    MaxTurnsExceeded,
    ModelResponse,
    RunConfig,
    RunContextWrapper,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    RunHooks,
    Runner,
    RunState,
    UserError,
    function_tool,
)

import budgetconf
from budgetconf.integrations import openai_agents
from budgetconf.loop import RunStatus, StopReason

from conftest import Place
from helpers.agents_double import (  # noqa: F401  (fixtures)
    Output,
    Scripted,
    _default_loop_closed,
    _no_tracing,
    call,
    text,
)
from helpers.bridged import env
from helpers.presetfiles import preset_file

ran: list[int] = []


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(a)
    return a + b


def agent(model: Scripted, **kwargs: Any) -> Agent[Any]:
    ran.clear()
    return Agent(name="calc", model=model, tools=[add], **kwargs)


def test_the_step_budget_stops_the_run_with_its_provenance_and_the_exact_call_count() -> None:
    """max_steps = 3: three model responses, the tools of the first two run and the last's are
    answered as not executed, as in the executor; then the executor's stop."""
    model = Scripted()
    result = openai_agents.run(agent(model), "go", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.stop_kind) == (
        RunStatus.TRUNCATED,
        "max_steps",
        StopReason.MAX_STEPS,
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS;"
        " raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit is not None
    assert result.limit["value"] == 3
    assert (model.calls, result.turns, len(ran)) == (3, 3, 2)
    assert result.output == "working 3"  # the last text the run saw
    assert isinstance(result.native, AgentsException)
    assert result.framework == "openai_agents"
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert (refused["turn"], refused["reason"]) == (
        3,
        "this was the last turn the step budget allows",
    )


def test_a_completed_run_gives_the_final_answer() -> None:
    model = Scripted([[call("c1", 2)], [text("3")]])
    result = openai_agents.run(agent(model), "1+2?", env(max_steps="5"))
    assert (result.status, result.stop_reason, result.message) == (
        RunStatus.OK,
        "completed",
        "completed in 2 turns",
    )
    assert (result.output, result.turns, result.limit, ran) == ("3", 2, None, [2])
    assert result.native.final_output == "3"


def test_the_last_turn_carries_the_wrap_up_notice_and_an_answer_to_it_is_truncated() -> None:
    """As in the executor: the notice goes with the last call only, and ends the run."""
    model = Scripted([[call("c1")], [text("best so far")]])
    result = openai_agents.run(agent(model), "go", env(max_steps="2"))
    notice = budgetconf.resolve().loop
    assert notice is not None
    assert json.dumps(model.inputs[0]).count(notice.wrap_up_message) == 0
    assert model.inputs[1][-1] == {"role": "user", "content": notice.wrap_up_message}
    assert (result.stop_reason, result.output, result.turns) == ("max_steps", "best so far", 2)


def test_warn_sends_the_presets_warning_since_the_last_turns_tools_do_not_run() -> None:
    """The last turn's calls are answered as not executed, so the preset's own warning (that
    they will not run) holds here as in the executor."""
    model = Scripted([[call("c1")], [text("done")]])
    result = openai_agents.run(agent(model), "go", env(max_steps="2", last_turn="warn"))
    warning = budgetconf.resolve().loop
    assert warning is not None
    assert model.inputs[1][-1]["content"] == warning.warn_message
    assert (result.stop_reason, result.output) == ("completed", "done")


def test_no_notice_without_tools_or_with_last_turn_none() -> None:
    model = Scripted([[text("hi")]])
    openai_agents.run(Agent(name="plain", model=model), "go", env(max_steps="1"))
    model2 = Scripted([[text("hi")]])
    openai_agents.run(agent(model2), "go", env(max_steps="1", last_turn="none"))
    assert model.inputs == model2.inputs == [[{"content": "go", "role": "user"}]]


def test_a_response_past_the_token_budget_stops_before_its_tools_run() -> None:
    model = Scripted(tokens=40)
    result = openai_agents.run(agent(model), "go", env(max_tokens="100"))
    assert (result.stop_reason, result.turns, model.calls, len(ran)) == ("max_tokens", 3, 3, 2)
    assert result.message.startswith("stopped: hit max_tokens (100): limits.max_tokens = 100")
    assert result.output == "working 3"  # the crossing response's text is kept


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run() -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: failed, before the response's tools."""
    model = Scripted(tokens=2**63 - 1)
    result = openai_agents.run(agent(model), "go", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith("failed: malformed model response: usage.")
    assert "more tokens than one response can use" in result.message
    assert (model.calls, len(ran)) == (1, 0)


def test_a_spent_token_budget_stops_before_the_next_call() -> None:
    """Exactly at the cap the response's tools run; no further call is made."""
    model = Scripted(tokens=50)
    result = openai_agents.run(agent(model), "go", env(max_tokens="100"))
    assert (result.stop_reason, model.calls, len(ran)) == ("max_tokens", 2, 2)


def test_the_run_wide_tool_call_budget_stops_before_a_batch_that_would_pass_it() -> None:
    model = Scripted([[call("a", 1), call("b", 2)], [call("c", 3), call("d", 4)]])
    result = openai_agents.run(agent(model), "go", env(max_tool_calls="3"))
    assert (result.stop_reason, ran, result.turns) == ("max_tool_calls", [1, 2], 2)
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls")


def test_a_response_over_the_per_response_cap_is_rejected_whole_and_the_run_goes_on() -> None:
    """As in the executor (over_cap = reject): none of its calls runs, each is answered with
    why, and the model is asked again."""
    model = Scripted([[call("a", 1), call("b", 2), call("c", 3)], [text("fewer then")]])
    result = openai_agents.run(agent(model), "go", env(max_tool_calls_per_turn="2"))
    assert (result.stop_reason, result.stop_kind, ran, model.calls) == (
        "completed",
        StopReason.COMPLETED,
        [],
        2,
    )
    answers = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    assert (
        answers
        == [
            "not executed: this response has 3 tool calls and at most 2 are accepted in one"
            " response (loop.max_tool_calls_per_turn = 2), so none ran. Send at most 2 calls in a"
            " response."
        ]
        * 3
    )
    assert [e["type"] for e in result.events].count("batch_rejected") == 1


def test_handoffs_are_not_counted_as_tool_calls() -> None:
    handed: list[str] = []

    class Seen(RunHooks[Any]):
        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            handed.append(to_agent.name)

    helper = Agent[Any](name="helper", model=Scripted([[text("helped")]]))
    model = Scripted([[call("h", name="transfer_to_helper"), call("a", 1)]])
    result = openai_agents.run(
        agent(model, handoffs=[helper]), "go", env(max_tool_calls_per_turn="1"), hooks=Seen()
    )
    assert (result.stop_reason, result.output, handed) == ("completed", "helped", ["helper"])
    helper = Agent[Any](name="helper", model=Scripted([[text("again")]]))
    model = Scripted([[call("h", name="transfer_to_helper")]])
    assert openai_agents.run(agent(model, handoffs=[helper]), "go", env()).output == "again"


def test_the_deadline_stops_a_sync_run_in_the_middle_of_a_call() -> None:
    model = Scripted(sleep=0.2)
    result = openai_agents.run(agent(model), "go", env(timeout_seconds="0.3"))
    assert (result.stop_reason, model.calls, result.turns) == ("timeout", 2, 2)  # as the executor
    assert result.output == "working 1"
    assert result.message.startswith("stopped: hit timeout_seconds (0.3)")


def test_the_deadline_stops_an_async_run_and_not_the_callers_task() -> None:
    async def main() -> tuple[Any, bool]:
        model = Scripted(sleep=0.2)
        result = await openai_agents.arun(agent(model), "go", env(timeout_seconds="0.3"))
        await asyncio.sleep(0)  # the caller's task goes on: it was not cancelled
        task = asyncio.current_task()
        return result, task is not None and task.cancelling() == 0

    result, alive = asyncio.run(main())
    assert (result.stop_reason, result.turns, alive) == ("timeout", 2, True)


def test_arun_completes_and_stops_like_run() -> None:
    model = Scripted([[text("answer")]])
    done = asyncio.run(openai_agents.arun(agent(model), "go", env(max_steps="2")))
    stop = asyncio.run(openai_agents.arun(agent(Scripted()), "go", env(max_steps="2")))
    assert (done.stop_reason, done.output) == ("completed", "answer")
    assert (stop.stop_reason, stop.turns) == ("max_steps", 2)


def test_a_cost_budget_for_a_model_with_no_name_is_refused_and_warned_about() -> None:
    """openai-agents reports no cost, and a model with no name has no price (but the price
    fields'): refused, or run without it after one warning."""
    with pytest.raises(budgetconf.UsageError, match="cannot be enforced by openai-agents: it"):
        openai_agents.run(agent(Scripted()), "go", env(max_cost_usd="1"))
    model = Scripted([[text("ok")]])
    with pytest.warns(budgetconf.BudgetConfWarning, match="running without it"):
        result = openai_agents.run(agent(model), "go", env(max_cost_usd="1"), unenforced="warn")
    assert result.output == "ok"


class Named(Scripted):
    """A scripted model with a name, as an OpenAIChatCompletionsModel has one (no client)."""

    model = "house-model"


#: the price fields' price, $0.15 / $0.60 per million tokens
PRICED = {"price_input_per_mtok": "0.15", "price_output_per_mtok": "0.6"}
FIELDS = "env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK"


def test_a_cost_budget_stops_the_run_after_the_call_that_crosses_it() -> None:
    """10 input and 1,000 output tokens a response, $0.0006015 at the fields' price: the third
    passes $0.0015, its call is answered as not executed and the run stops, as the
    executor's does."""
    model = Named(tokens=1010)
    result = openai_agents.run(agent(model), "go", env(max_cost_usd="0.0015", **PRICED))
    assert (result.stop_reason, result.turns, model.calls, len(ran)) == ("max_cost", 3, 3, 2)
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.0018045, "priced")
    assert result.message == (
        "stopped: hit max_cost_usd (0.0015): limits.max_cost_usd = 0.0015 from"
        " env:BUDGETCONF_MAX_COST_USD; raise it with BUDGETCONF_MAX_COST_USD or --max-cost-usd;"
        f" spent $0.00180 at house-model's price ({FIELDS}: $0.15 / $0.60 per Mtok)"
    )
    (started,) = [e for e in result.events if e["type"] == "run_started"]
    assert (started["prices"]["model"], started["prices"]["locator"]) == ("house-model", FIELDS)


def test_the_run_configs_model_is_the_one_priced() -> None:
    """RunConfig(model=...) serves every call of the run, whatever the agent's: its name is
    the one looked up, and the one each response is priced by."""
    config = RunConfig(model=Named(tokens=1010))
    unpriced = env(max_cost_usd="1", price_table="none")
    with pytest.raises(budgetconf.UsageError, match="no price for the model 'house-model'"):
        openai_agents.run(agent(Scripted()), "go", unpriced, run_config=config)
    result = openai_agents.run(
        agent(Scripted()), "go", env(max_cost_usd="0.0015", **PRICED), run_config=config
    )
    assert (result.stop_reason, result.turns) == ("max_cost", 3)
    costs = [e for e in result.events if e["type"] == "model_response"]
    assert {e["model"] for e in costs} == {"house-model"}


def test_a_named_model_with_no_price_is_refused_whatever_unenforced_says() -> None:
    model = Named()
    with pytest.raises(budgetconf.UsageError, match="no price for the model 'house-model'"):
        openai_agents.run(
            agent(model), "go", env(max_cost_usd="1", price_table="none"), unenforced="warn"
        )
    assert model.calls == 0


def test_the_model_priced_is_the_one_the_framework_would_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Model by its ``model`` and its client's base URL; a name as the default provider
    makes it (an ``openai/`` prefix dropped, another prefix the provider); no model, the
    framework's default."""
    from agents import OpenAIChatCompletionsModel
    from agents.models import get_default_model
    from openai import AsyncOpenAI

    from budgetconf.integrations._openai_agents_run import agent_model

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    chat = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    found = agent_model(Agent(name="a", model=chat), RunConfig())
    assert (found.name, found.provider, found.url) == (
        "gpt-4o-mini",
        "openai",
        "http://127.0.0.1:9/v1/",
    )
    named = [
        agent_model(Agent(name="a", model=m), RunConfig())
        for m in ("gpt-4o", "openai/gpt-4o", "litellm/anthropic/claude-3-5-haiku")
    ]
    assert [(m.name, m.provider) for m in named] == [
        ("gpt-4o", "openai"),
        ("gpt-4o", "openai"),
        ("anthropic/claude-3-5-haiku", "litellm"),
    ]
    assert agent_model(Agent(name="a"), RunConfig()).name == get_default_model()
    assert agent_model(Agent(name="a", model=chat), RunConfig(model="o3")).name == "o3"
    assert agent_model(Agent(name="a", model=Scripted()), RunConfig()).name is None


def test_limits_gives_max_turns_and_refuses_what_only_run_enforces() -> None:
    assert openai_agents.limits(env={"BUDGETCONF_MAX_STEPS": "4"}) == {"max_turns": 4}
    with pytest.raises(budgetconf.UsageError, match=r"through limits\(\)"):
        openai_agents.limits(env(max_tokens="10"))
    model = Scripted()
    with pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(agent(model), "go", **openai_agents.limits(env(max_steps="2")))
    assert model.calls == 2


def test_a_conflicting_keyword_and_a_resumed_state_are_refused() -> None:
    with pytest.raises(budgetconf.UsageError, match="max_turns= would set openai-agents"):
        openai_agents.run(agent(Scripted()), "go", env(max_steps="2"), max_turns=9)
    state: RunState[Any, Agent[Any]] = RunState(
        RunContextWrapper(None), "go", agent(Scripted()), max_turns=7
    )
    with pytest.raises(budgetconf.UsageError, match=r"RunState keeps its own max_turns \(7\)"):
        openai_agents.run(agent(Scripted()), state, env(max_steps="2"))


def test_the_callers_hooks_filter_and_config_still_work() -> None:
    seen: list[str] = []

    class Seen(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append("llm")

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            seen.append("tool")

    def tag(data: Any) -> Any:
        seen.append("filter")
        return data.model_data

    config = RunConfig(call_model_input_filter=tag, tracing_disabled=True)
    model = Scripted([[call("a")], [text("ok")]])
    result = openai_agents.run(agent(model), "go", env(), hooks=Seen(), run_config=config)
    assert result.output == "ok"
    assert seen == ["filter", "llm", "tool", "filter", "llm"]
    assert config.call_model_input_filter is tag  # the caller's config is not changed


def test_a_max_turns_error_handler_is_refused_since_the_budget_stops_the_run_first() -> None:
    """The Meter ends the run before the framework's max_turns: such a handler would never run."""

    def handle(data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
        return RunErrorHandlerResult(final_output="handled")

    with pytest.raises(budgetconf.UsageError, match=r'error_handlers\["max_turns"\] would never'):
        openai_agents.run(
            agent(Scripted()), "go", env(max_steps="2"), error_handlers={"max_turns": handle}
        )


def test_a_model_that_fails_fails_the_run_as_in_the_executor() -> None:
    """Failed, stop reason error, the framework's exception as native; never re-raised."""

    class Broken(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise AgentsException("provider down")

    result = openai_agents.run(agent(Broken()), "go", env(max_steps="2"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message == "failed: AgentsException: provider down (turn 1)"
    assert isinstance(result.native, AgentsException)


def test_a_nested_runs_max_turns_is_a_failure_not_the_budgets_stop() -> None:
    """A MaxTurnsExceeded that is not the bridge's own (it set none that fires) fails the run."""

    class Nested(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise MaxTurnsExceeded("Max turns (10) exceeded")

    result = openai_agents.run(agent(Nested()), "go", env(max_steps="2"))
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.FAILED, "error", None)
    assert isinstance(result.native, MaxTurnsExceeded)


def test_a_caller_error_of_the_framework_is_raised() -> None:
    """A UserError is the caller's own mistake: raised, as the framework raises it."""

    class Misused(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise UserError("the model was set up wrong")

    with pytest.raises(UserError, match="set up wrong"):
        openai_agents.run(agent(Misused()), "go", env(max_steps="2"))


def test_a_secret_cap_stays_masked_in_the_stop(place: Place) -> None:
    """A per-response cap whose field is secret shows as *** in the message and the limit."""
    path = preset_file(
        place.work,
        fields={
            "agent.turns": {"type": "int", "default": 3},
            "agent.cap": {"type": "int", "default": 2, "secret": True},
        },
        loop={"max_steps": "agent.turns", "max_tool_calls_per_turn": "agent.cap"},
    )
    model = Scripted([[call("a", 1), call("b", 2), call("c", 3)]])
    result = openai_agents.run(agent(model), "go", budgetconf.resolve(str(path)))
    assert result.stop_reason == "max_steps"  # the batch was rejected, each call answered
    answers = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    assert answers
    assert all("at most *** are accepted" in a for a in answers)
    assert not any("2" in a.replace("agent.cap", "") for a in answers)
    (rejected,) = [e for e in result.events if e["type"] == "batch_rejected"]
    assert rejected["cap"] == "***"


def test_the_callers_config_is_unchanged_when_the_run_raises() -> None:
    """The bridge borrows nothing: it passes a copy of the caller's run_config."""

    class Broken(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise ValueError("bad model")

    config = RunConfig(tracing_disabled=True)
    hooks = RunHooks[Any]()
    result = openai_agents.run(agent(Broken()), "go", env(), run_config=config, hooks=hooks)
    assert (result.stop_reason, str(result.native)) == ("error", "bad model")
    assert config.call_model_input_filter is None


def test_without_the_framework_the_import_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # what Python does for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.openai_agents")
    with pytest.raises(ImportError) as raised:
        importlib.import_module("budgetconf.integrations.openai_agents")
    assert str(raised.value) == (
        "budgetconf.integrations.openai_agents needs the openai-agents package: pip install"
        " 'budgetconf[openai-agents]' (from a checkout: pip install -e '.[openai-agents]')"
    )
    assert raised.value.name == "openai-agents"


@function_tool
async def slow(a: int, b: int) -> int:
    """Add two numbers, slowly."""
    await asyncio.sleep(1.0)
    return a + b


@function_tool
def blocking(a: int, b: int) -> int:
    """Add two numbers, holding the thread."""
    time.sleep(0.3)
    return a + b


def test_the_deadline_cancels_a_tool_and_the_loop_is_reused_for_the_next_run() -> None:
    """The deadline cancels the run on the loop run_sync reuses; the next run finds it again."""
    for _ in range(2):
        model = Scripted([[text("calling"), call("s", name="slow")]])
        tool_agent = Agent[Any](name="slow", model=model, tools=[slow])
        # far from both ends: the first response comes well before it, the tool well after
        result = openai_agents.run(tool_agent, "go", env(timeout_seconds="0.4"))
        assert (result.stop_reason, result.turns, result.output) == ("timeout", 1, "calling")


def test_a_deadline_passed_while_the_loop_was_held_stops_before_the_next_call() -> None:
    model = Scripted([[call("s", name="blocking")], [text("late")]])
    tool_agent = Agent[Any](name="blocking", model=model, tools=[blocking])
    result = openai_agents.run(tool_agent, "go", env(timeout_seconds="0.1"))
    assert (result.stop_reason, model.calls) == ("timeout", 1)


def test_a_timeout_error_that_is_not_the_deadline_fails_the_run() -> None:
    """The provider's own timeout is the model's failure, not the budget's deadline."""

    class Slow(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise TimeoutError("provider timed out")

    result = asyncio.run(openai_agents.arun(agent(Slow()), "go", env(timeout_seconds="60")))
    assert (result.stop_reason, result.limit) == ("error", None)
    assert isinstance(result.native, TimeoutError)


def test_a_deadline_passed_in_the_callers_hook_stops_before_the_tools_run() -> None:
    """Time the loop spends in the caller's own code is the run's: checked before the tools."""

    class Holding(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            time.sleep(0.15)

    model = Scripted()
    result = openai_agents.run(agent(model), "go", env(timeout_seconds="0.1"), hooks=Holding())
    assert (result.stop_reason, model.calls, ran) == ("timeout", 1, [])


def test_a_deadline_passed_in_the_callers_filter_stops_before_the_call() -> None:
    def holding(data: Any) -> Any:
        time.sleep(0.15)
        return data.model_data

    model = Scripted()
    config = RunConfig(call_model_input_filter=holding)
    result = openai_agents.run(agent(model), "go", env(timeout_seconds="0.1"), run_config=config)
    assert (result.stop_reason, model.calls) == ("timeout", 0)


def test_an_error_before_any_model_call_is_the_callers_and_is_raised() -> None:
    """run() inside a running event loop: the framework refuses it before any call, and so
    the bridge raises that, rather than report a failed run."""

    async def inside() -> None:
        openai_agents.run(agent(Scripted()), "go", env(max_steps="2"))

    with pytest.raises(RuntimeError, match="event loop is already running"):
        asyncio.run(inside())


def test_a_sync_run_with_a_deadline_that_stops_at_its_step_budget_returns_the_stop() -> None:
    """A deadline and a step stop together: the stop is a result (it once raised RuntimeError:
    no running event loop, reading the deadline's loop outside it)."""
    result = openai_agents.run(agent(Scripted()), "go", env(max_steps="2", timeout_seconds="30"))
    assert (result.stop_reason, result.turns, len(ran)) == ("max_steps", 2, 1)


def test_a_run_config_given_as_a_dict_is_taken_as_the_framework_takes_it() -> None:
    model = Scripted([[text("hi")]])
    result = openai_agents.run(
        agent(model), "go", env(max_steps="2"), run_config={"tracing_disabled": True}
    )
    assert (result.stop_reason, result.output) == ("completed", "hi")


def test_an_agent_as_a_tool_is_refused_by_name() -> None:
    """Its nested run's model calls are not the bridged run's: the budget could not count
    them, so such a tool is refused, naming it and the way round."""
    inner = Agent[Any](name="helper", model=Scripted([[text("helped")]]))
    nested = inner.as_tool(tool_name="helper", tool_description="help")
    outer = Agent[Any](name="lead", model=Scripted(), tools=[nested])
    with pytest.raises(budgetconf.UsageError, match=r"agents as tools \(helper\).*carve"):
        openai_agents.run(outer, "go", env(max_steps="2"))


def test_a_hosted_tool_is_refused_by_name() -> None:
    from agents import WebSearchTool

    outer = Agent[Any](name="web", model=Scripted(), tools=[WebSearchTool()])
    with pytest.raises(budgetconf.UsageError, match=r"tools the framework or the provider runs"):
        openai_agents.run(outer, "go", env(max_steps="2"))


def test_a_wrapped_tool_sees_the_bridged_run_and_may_carve_from_it() -> None:
    """current_run() inside a tool is the bridged run: a sub-agent carved from it is charged
    to it (its child_start and child_end are the bridged run's events)."""
    from budgetconf.loop import LoopExecutor, ScriptedModel, current_run

    seen: list[Any] = []

    @function_tool
    def delegate(a: int, b: int) -> int:
        """Delegate."""
        handle = current_run()
        seen.append(handle)
        assert handle is not None
        LoopExecutor(ScriptedModel([{"content": "ok"}]), budget=handle.carve()).run("go")
        return a + b

    model = Scripted([[call("d", name="delegate")], [text("done")]])
    result = openai_agents.run(Agent(name="lead", model=model, tools=[delegate]), "go", env())
    assert result.stop_reason == "completed"
    assert seen[0] is not None
    kinds = [e["type"] for e in result.events]
    assert kinds.count("child_start") == kinds.count("child_end") == 1
    assert seen[0].ended  # the run is over: what a tool kept of it carves no more
    with pytest.raises(budgetconf.UsageError, match="carve: the run has ended"):
        seen[0].carve()


def test_the_result_carries_usage_the_events_and_the_runs_name() -> None:
    heard: list[dict[str, Any]] = []
    model = Scripted([[call("c1")], [text("3")]], tokens=40)
    result = openai_agents.run(agent(model), "go", env(), on_event=heard.append, name="calc")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 60)
    assert result.usage.total_tokens == 80
    assert result.events == heard
    assert heard[0]["type"] == "run_started"
    assert (heard[0]["name"], heard[0]["framework"]) == ("calc", "openai_agents")
    assert heard[-1]["type"] == "stopped"
    assert result.run_id == heard[0]["run_id"]


def test_runs_of_one_agent_may_overlap_and_leave_it_as_it_was() -> None:
    """Each run wraps a copy of the agent: the caller's agent is never changed."""

    async def both() -> list[Any]:
        first = agent(Scripted(sleep=0.05))
        tools = list(first.tools)
        results = await asyncio.gather(
            openai_agents.arun(first, "go", env(max_steps="2")),
            openai_agents.arun(first, "go", env(max_steps="3")),
        )
        assert first.tools == tools
        return list(results)

    two, three = asyncio.run(both())
    assert (two.turns, three.turns) == (2, 3)


def test_an_object_that_is_not_an_agent_is_refused_by_its_type() -> None:
    """run() takes an openai-agents Agent: anything else is a UsageError naming its type."""
    with pytest.raises(budgetconf.UsageError) as caught:
        openai_agents.run(object(), "go", env(max_steps="2"))
    assert str(caught.value) == "agent: expected an openai-agents Agent, got object"


def test_an_agent_with_mcp_servers_is_refused_since_their_tools_cannot_be_answered() -> None:
    """The framework lists and runs an MCP server's tools: the bridge refuses the agent."""
    from agents.mcp import MCPServerStdio

    server = MCPServerStdio(params={"command": sys.executable, "args": ["-c", "pass"]})
    lead = Agent[Any](name="lead", model=Scripted(), mcp_servers=[server])
    with pytest.raises(budgetconf.UsageError) as caught:
        openai_agents.run(lead, "go", env(max_steps="2"))
    assert str(caught.value).startswith(
        "the agent 'lead' has MCP servers, whose tools the framework lists and runs itself:"
    )


def test_a_handoff_objects_target_has_its_tools_counted_by_the_run() -> None:
    """handoff(helper) is followed too: the agent it hands to runs with its tools metered."""
    from agents import handoff

    helper = Agent[Any](
        name="helper", model=Scripted([[call("a", 2)], [text("helped")]]), tools=[add]
    )
    model = Scripted([[call("h", name="transfer_to_helper")]])
    result = openai_agents.run(agent(model, handoffs=[handoff(helper)]), "go", env())
    assert (result.stop_reason, result.output, result.tool_calls_executed) == (
        "completed",
        "helped",
        1,
    )
    assert ran == [2]


def test_handoffs_that_lead_back_reuse_the_runs_copy_of_the_agent() -> None:
    """lead -> helper -> lead: the lead handed back to is the run's copy, its tools metered."""
    lead_model = Scripted([[call("h", name="transfer_to_helper")], [call("a", 3)], [text("back")]])
    lead = agent(lead_model)
    helper = Agent[Any](
        name="helper", model=Scripted([[call("b", name="transfer_to_calc")]]), handoffs=[lead]
    )
    lead.handoffs = [helper]
    result = openai_agents.run(lead, "go", env(max_tool_calls="1"))
    assert (result.stop_reason, result.output, result.tool_calls_executed) == (
        "completed",
        "back",
        1,
    )
    assert ran == [3]


def test_arun_raises_a_caller_error_of_the_framework() -> None:
    """arun, like run, raises a UserError as the framework raises it."""

    class Misused(Scripted):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            raise UserError("the model was set up wrong")

    with pytest.raises(UserError, match="set up wrong"):
        asyncio.run(openai_agents.arun(agent(Misused()), "go", env(max_steps="2")))
