"""The pydantic-ai bridge against the real framework, offline, through its own FunctionModel."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, UsageLimits
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    AgentRunError,
    CostNotFoundWarning,
    RunCancelled,
    RunTimedOut,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.usage import RequestUsage

import budgetconf
from budgetconf.events import COMMON, TYPES
from budgetconf.integrations import pydantic_ai as bridge
from budgetconf.integrations._bridge import BridgeResult
from budgetconf.loop import RunStatus, StopReason, current_run

from helpers import BENCH
from helpers.ledgers import (
    MOST,
    PER_CALL,
    SCOPE,
    assert_stopped_before_the_third_call,
    budget,
    sqlite_url,
    status_and_runs,
)


@dataclass
class Script:
    """A fake model: a tool call (with a line of text) per response until ``final_at``."""

    final_at: int = 1_000
    calls_per_response: int = 1
    tokens: int = 15  # per response: 10 in, the rest out
    cost: Decimal | None = None
    delay: float = 0.0
    same_id: bool = False
    calls: int = 0
    tools_run: list[int] = field(default_factory=list)
    sent: list[list[ModelMessage]] = field(default_factory=list)

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        self.sent.append(messages)
        n = self.calls
        if self.delay:
            await asyncio.sleep(self.delay)
        usage = RequestUsage(
            input_tokens=10, output_tokens=self.tokens - 10, cache_read_tokens=4, cost=self.cost
        )
        if n >= self.final_at:
            return ModelResponse(parts=[TextPart(f"final answer {n}")], usage=usage)
        parts: list[Any] = [TextPart(f"working {n}")]
        ids = ["same" if self.same_id else f"c{n}-{i}" for i in range(self.calls_per_response)]
        parts += [ToolCallPart("add", {"a": n, "b": i}, tool_call_id=c) for i, c in enumerate(ids)]
        return ModelResponse(parts=parts, usage=usage)

    def answers(self, n: int) -> list[str]:
        """What the tool calls of response ``n`` were answered with, as the next call sent it."""
        request = self.sent[n][-1]
        assert isinstance(request, ModelRequest)
        return [str(p.content) for p in request.parts if isinstance(p, ToolReturnPart)]

    def notices(self) -> list[list[str]]:
        """The user prompts each call's last request carried."""
        found = []
        for messages in self.sent:
            last = messages[-1]
            assert isinstance(last, ModelRequest)
            found.append([str(p.content) for p in last.parts if isinstance(p, UserPromptPart)])
        return found


def scripted(script: Script, **kwargs: Any) -> Agent[None, str]:
    agent = Agent(FunctionModel(script.respond), name="calc", **kwargs)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        script.tools_run.append(a)
        return a + b

    return agent


def env_budget(**env: str) -> budgetconf.Resolution:
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in env.items()})


def kinds(result: BridgeResult) -> list[str]:
    return [e["type"] for e in result.events]


WRAP_UP = budgetconf.resolve().loop


def test_a_step_stop_names_the_setting_and_counts_every_model_call() -> None:
    """max_steps=3 allows three responses; the tools of the first two run, the last's are answered
    as not executed, as in the executor; the stop says where 3 was set."""
    script = Script()
    result = bridge.run(scripted(script), "go", env_budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.stop_kind) == (
        RunStatus.TRUNCATED,
        "max_steps",
        StopReason.MAX_STEPS,
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS;"
        " raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit == {
        "field": "loop.max_steps",
        "value": 3,
        "source": "env",
        "locator": "env:BUDGETCONF_MAX_STEPS",
        "raise_with": ["BUDGETCONF_MAX_STEPS", "--max-steps"],
    }
    assert script.calls == result.turns == 3
    assert script.tools_run == [1, 2]
    assert result.tool_calls_executed == 2
    assert result.output == "working 3"  # the last text the Meter saw
    assert result.framework == "pydantic_ai"
    assert isinstance(result.native, AgentRunError)
    assert str(result.native) == result.message
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert (refused["turn"], refused["ids"], refused["reason"]) == (
        3,
        ["c3-0"],
        "this was the last turn the step budget allows",
    )


def test_a_completed_run_keeps_the_answer_and_its_turns() -> None:
    """A final answer before the last turn completes the run, with its usage."""
    script = Script(final_at=3)
    result = bridge.run(scripted(script), "go", {"loop.max_steps": 4})
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.OK, "completed", None)
    assert (result.output, result.turns, result.message) == (
        "final answer 3",
        3,
        "completed in 3 turns",
    )
    assert result.native.output == "final answer 3"
    usage = result.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (30, 12, 15)
    assert (usage.total_tokens, usage.cost_usd, usage.cost_source) == (45, 0.0, "none")
    models = {e["model"] for e in result.events if e["type"] == "model_response"}
    assert models == {"function:respond:"}


def test_a_structured_output_is_given_as_json_text() -> None:
    """The output is always a str: a model's output as its JSON; its output tool is no call."""

    class Sum(BaseModel):
        total: int

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, {"total": 5}, tool_call_id="o")])

    agent = Agent(FunctionModel(answer), output_type=Sum)
    result = bridge.run(agent, "go", {"loop.max_steps": 2})
    assert (result.output, result.turns, result.status) == ('{"total":5}', 1, RunStatus.OK)
    assert result.tool_calls_executed == 0


def test_the_last_turn_carries_the_wrap_up_notice_and_an_answer_to_it_is_truncated() -> None:
    """As in the executor: the notice goes with the last call only (a copy of its input, not the
    run's history), and a final answer to it ends the run truncated, with that answer."""
    assert WRAP_UP is not None
    script = Script(final_at=3)
    result = bridge.run(scripted(script), "go", {"loop.max_steps": 3})
    assert script.notices() == [["go"], [], [WRAP_UP.wrap_up_message]]
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.TRUNCATED,
        "max_steps",
        "final answer 3",
    )
    history = result.native.all_messages()
    assert WRAP_UP.wrap_up_message not in str(history)


def test_warn_sends_the_presets_warning_and_a_final_answer_to_it_completes() -> None:
    """The last turn's calls are answered as not executed, so the preset's own warning holds."""
    assert WRAP_UP is not None
    script = Script(final_at=2)
    result = bridge.run(scripted(script), "go", env_budget(max_steps="2", last_turn="warn"))
    assert script.notices()[-1] == [WRAP_UP.warn_message]
    assert (result.status, result.output) == (RunStatus.OK, "final answer 2")


def test_no_notice_without_tools_or_with_last_turn_none() -> None:
    """A request that offers no tools, or a preset that sends none, carries no notice."""
    plain = Script(final_at=1)
    bridge.run(Agent(FunctionModel(plain.respond)), "go", env_budget(max_steps="1"))
    script = Script(final_at=1)
    bridge.run(scripted(script), "go", env_budget(max_steps="1", last_turn="none"))
    assert plain.notices() == script.notices() == [["go"]]


def test_a_response_past_the_token_budget_stops_before_its_tools_run() -> None:
    """Each response's usage is read before its tools run: the one that crosses stops the run."""
    script = Script()
    result = bridge.run(scripted(script), "go", {"limits.max_tokens": 40})
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_tokens",
        3,
    )
    assert result.message.startswith("stopped: hit max_tokens (40): limits.max_tokens = 40")
    assert result.output == "working 3"  # the crossing response's text is kept
    assert script.tools_run == [1, 2]


def test_a_final_answer_past_the_token_budget_completes_the_run() -> None:
    """As in the executor (pydantic-ai's own check would stop it): the answer is the run's."""
    script = Script(final_at=3)
    result = bridge.run(scripted(script), "go", {"limits.max_tokens": 40})
    assert (result.status, result.output, result.turns) == (RunStatus.OK, "final answer 3", 3)
    assert script.tools_run == [1, 2]


def test_a_spent_token_budget_stops_before_the_next_call() -> None:
    """Exactly at the cap the response's tools run; no further call is made."""
    script = Script(tokens=20)
    result = bridge.run(scripted(script), "go", {"limits.max_tokens": 40})
    assert (result.stop_reason, script.calls, script.tools_run) == ("max_tokens", 2, [1, 2])


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run() -> None:
    """2**63 - 1 tokens (or a cost of $10**7) is unreadable, as in the executor: the run fails at
    that response, before its tools run."""
    script = Script(tokens=2**63 - 1)
    result = bridge.run(scripted(script), "go", env_budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith(
        "failed: malformed model response: usage.total_tokens: more tokens than one response"
    )
    assert (script.calls, script.tools_run) == (1, [])
    script = Script(cost=Decimal(10**7))
    result = bridge.run(scripted(script), "go", env_budget(max_steps="3"))
    assert (result.status, result.stop_reason, script.tools_run) == (RunStatus.FAILED, "error", [])
    assert "usage.cost: more than one response can cost" in result.message


def test_a_cost_stop_counts_the_cost_responses_report() -> None:
    """The cost on each response's usage is reported cost: 0.3 passes 0.25 at the third."""
    script = Script(cost=Decimal("0.1"))
    result = bridge.run(scripted(script), "go", {"limits.max_cost_usd": 0.25})
    assert (result.stop_reason, result.turns, script.tools_run) == ("max_cost", 3, [1, 2])
    assert result.message.startswith("stopped: hit max_cost_usd (0.25): limits.max_cost_usd")
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.3, "reported")


def test_a_cost_budget_without_priced_usage_is_said_with_pydantic_ais_own_warning() -> None:
    """No response could be priced: the run warns, as pydantic-ai's cost_limit would."""
    with pytest.warns(CostNotFoundWarning, match="cannot be enforced"):
        result = bridge.run(scripted(Script(final_at=2)), "go", {"limits.max_cost_usd": 1.0})
    assert result.status == RunStatus.OK


#: the price fields' price: $0.15 / $0.60 per million tokens (cached input at the input rate)
PRICED = {"prices.input_per_mtok": 0.15, "prices.output_per_mtok": 0.6}
FIELDS = "explicit: $0.15 / $0.60 per Mtok"


def test_a_response_pydantic_ai_cannot_price_is_priced_at_the_fields_price() -> None:
    """A FunctionModel reports no cost: at the fields' price each response of 10 input (4 of
    them cached) and 1,000 output tokens costs $0.0006015, so the third passes $0.0015 and
    stops the run before its tools, as in the executor."""
    script = Script(tokens=1010)
    budget = {"limits.max_cost_usd": 0.0015, **PRICED}
    result = bridge.run(scripted(script), "go", budget)
    assert (result.stop_reason, result.turns, script.tools_run) == ("max_cost", 3, [1, 2])
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.0018045, "priced")
    assert result.usage.cached_input_tokens == 12
    # each response names the FunctionModel's own name, which the fields price
    assert result.message.endswith(f"; spent $0.00180 at function:respond:'s price ({FIELDS})")


class House(FunctionModel):
    """A model with a name and a provider of its own, as a real pydantic-ai model has."""

    @property
    def system(self) -> str:
        return "house"


def test_a_named_model_is_priced_by_its_name_or_refused_without_a_price() -> None:
    """A named model pydantic-ai cannot price: its cost budget is refused before the first
    call when no price is known for it (prices.unknown = refuse, unenforced="warn" or not);
    with the fields' price, each response is priced at it, by the model's name."""
    script = Script(tokens=1010)
    agent = Agent(House(script.respond, model_name="house-model"), name="calc")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        script.tools_run.append(a)
        return a + b

    unpriced = {"limits.max_cost_usd": 0.0015, "prices.table": "none"}
    with pytest.raises(budgetconf.UsageError, match="no price for the model 'house-model'"):
        bridge.run(agent, "go", unpriced, unenforced="warn")
    assert script.calls == 0
    result = bridge.run(agent, "go", {"limits.max_cost_usd": 0.0015, **PRICED})
    assert (result.stop_reason, result.turns) == ("max_cost", 3)
    assert result.message.endswith(f"; spent $0.00180 at house-model's price ({FIELDS})")


def test_the_model_priced_is_the_one_pydantic_ai_would_call() -> None:
    """A model by its name and system, its base URL's host first; a ``provider:name``
    string as pydantic-ai reads one; its own test doubles and a FallbackModel by none."""
    from openai import AsyncOpenAI
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from budgetconf.integrations._pydantic_ai_meter import agent_model

    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    chat = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    found = agent_model(chat)
    assert (found.name, found.provider, found.url) == (
        "gpt-4o-mini",
        "openai",
        "http://127.0.0.1:9/v1/",
    )
    named = agent_model("anthropic:claude-3-5-haiku-latest")
    assert (named.name, named.provider) == ("claude-3-5-haiku-latest", "anthropic")
    assert (agent_model("gpt-4o").name, agent_model("gpt-4o").provider) == ("gpt-4o", None)
    doubles = (TestModel(), FunctionModel(Script().respond), FallbackModel(chat, TestModel()))
    assert [agent_model(m).name for m in doubles] == [None, None, None]
    assert agent_model(None).name is None


@pytest.mark.parametrize(
    ("finish", "stop"), [("length", "length_truncated"), ("content_filter", "content_filtered")]
)
def test_a_response_cut_short_or_filtered_ends_the_run_as_in_the_executor(
    finish: str, stop: str
) -> None:
    """pydantic-ai's finish reason is the executor's: the run is blocked, its calls not run."""
    ran: list[int] = []

    def cut(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="x")
        return ModelResponse(parts=[TextPart("cut sh"), call], finish_reason=finish)  # type: ignore[arg-type]

    agent = Agent(FunctionModel(cut))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a)
        return a + b

    result = bridge.run(agent, "go", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.output, ran) == (
        RunStatus.BLOCKED,
        stop,
        "cut sh",
        [],
    )
    assert result.message.startswith("blocked: ")


def test_a_timeout_stop_keeps_what_was_done() -> None:
    """The deadline cuts the call in flight short; that call counts as a turn, as in the
    executor, and the last text is kept."""
    script = Script(delay=0.3)  # the second call, started at 0.3 s, is in flight at 0.5 s
    result = bridge.run(scripted(script), "go", {"limits.timeout_seconds": 0.5})
    assert (result.status, result.stop_reason) == (RunStatus.TRUNCATED, "timeout")
    assert result.message.startswith("stopped: hit timeout_seconds (0.5)")
    assert isinstance(result.native, RunTimedOut)
    responses = [m for m in result.native.all_messages() if isinstance(m, ModelResponse)]
    assert (result.turns, script.calls, len(responses)) == (2, 2, 1)
    assert (result.output, script.tools_run) == ("working 1", [1])


def test_the_deadline_cancels_a_tool_in_flight_and_no_further_call_is_made() -> None:
    """A sync tool that holds its thread past the deadline: pydantic-ai's own timeout, set to
    what is left of the Meter's, ends the run there; the call counts as run."""
    script = Script()
    agent = Agent(FunctionModel(script.respond))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers, slowly."""
        time.sleep(0.8)
        return a + b

    result = bridge.run(agent, "go", {"limits.timeout_seconds": 0.3})
    assert (result.stop_reason, result.turns, script.calls) == ("timeout", 1, 1)
    assert result.tool_calls_executed == 1
    assert isinstance(result.native, RunTimedOut)


def test_a_shorter_deadline_from_an_enclosing_run_is_not_the_budgets() -> None:
    """A run inside a tool inherits the outer run's deadline: its RunTimedOut is re-raised."""
    inner = scripted(Script(delay=0.05))
    seen: list[BaseException] = []
    over = threading.Event()

    def outer_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("delegate", {}, tool_call_id="d")])

    outer = Agent(FunctionModel(outer_model))

    @outer.tool_plain
    def delegate() -> str:
        # a sync tool runs in a thread the outer deadline cannot cancel, so the inner run
        # meets the deadline it inherited, not a cancellation
        try:
            asyncio.run(bridge.arun(inner, "go", {"limits.timeout_seconds": 30}))
        except RunTimedOut as exc:
            seen.append(exc)
            raise
        finally:
            over.set()
        return "done"

    with pytest.raises(RunTimedOut):
        outer.run_sync("go", timeout=0.2)
    assert over.wait(5)  # the outer run does not wait for its tool's thread
    assert len(seen) == 1


def test_a_cancel_of_the_callers_own_is_raised_and_the_run_recorded_cancelled() -> None:
    """A tool that cancels the run (RunContext.cancel): pydantic-ai's RunCancelled is raised,
    and the run's last event says it was cancelled."""
    script = Script()
    agent = Agent(FunctionModel(script.respond))

    @agent.tool
    async def add(ctx: RunContext[object], a: int, b: int) -> int:
        """Add two numbers, and cancel."""
        ctx.cancel()
        await asyncio.sleep(0)
        return a + b

    heard: list[dict[str, Any]] = []
    with pytest.raises(RunCancelled):
        bridge.run(agent, "go", {"loop.max_steps": 3}, on_event=heard.append)
    assert (heard[-1]["type"], heard[-1]["stop_reason"]) == ("stopped", "cancelled")


def test_a_nested_agents_own_limit_fails_the_run_as_a_tool_failure() -> None:
    """A delegate's own UsageLimits, raised through a tool, is not the budget: the run failed."""
    inner = scripted(Script())

    def outer_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("delegate", {}, tool_call_id="d")])

    outer = Agent(FunctionModel(outer_model))

    @outer.tool_plain
    async def delegate() -> str:
        await inner.run("go", usage_limits=UsageLimits(request_limit=3))
        return "done"

    result = bridge.run(outer, "go", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.FAILED, "error", None)
    assert isinstance(result.native, UsageLimitExceeded)
    assert result.message.startswith("failed: UsageLimitExceeded: The next request would exceed")
    assert result.tool_calls_executed == 1  # the call that raised counts


def test_a_model_that_fails_fails_the_run_as_in_the_executor() -> None:
    """Failed, stop reason error, the framework's exception as native; never re-raised."""
    boom = RuntimeError("the model broke")

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise boom

    agent = Agent(FunctionModel(broken), name="broken")
    result = bridge.run(agent, "go", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message == "failed: RuntimeError: the model broke (turn 1)"
    assert result.native is boom
    assert agent.name == "broken"


def test_a_tool_that_fails_fails_the_run() -> None:
    """pydantic-ai ends its run on a tool's exception: a failed result, the call counted."""
    script = Script()
    agent = Agent(FunctionModel(script.respond))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers, badly."""
        raise ValueError("no adding today")

    result = bridge.run(agent, "go", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.tool_calls_executed) == (
        RunStatus.FAILED,
        "error",
        1,
    )
    assert result.message == "failed: ValueError: no adding today (turn 1)"
    (executed,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert (executed["ok"], executed["error"]) == (False, "ValueError: no adding today")


def test_a_caller_error_of_the_framework_is_raised() -> None:
    """A UserError is the caller's own mistake (here: an agent without a model): raised."""
    with pytest.raises(UserError, match="`model` must either be set"):
        bridge.run(Agent(), "go", {"loop.max_steps": 2})


def test_a_raised_caller_error_still_ends_the_runs_events() -> None:
    """The events of a run that raised before any model call end with its stop, and a sink
    hears the run close, as after any other end."""

    class Sink:
        def __init__(self) -> None:
            self.events: list[dict[str, Any]] = []
            self.closed: list[str] = []

        def __call__(self, event: dict[str, Any]) -> None:
            self.events.append(event)

        def close_run(self, run: Any) -> None:
            self.closed.append(run.run_id)

    sink = Sink()
    with pytest.raises(UserError):
        bridge.run(Agent(), "go", {"loop.max_steps": 2}, on_event=sink)
    first, last = sink.events[0], sink.events[-1]
    assert (first["type"], last["type"], last["status"]) == ("run_started", "stopped", "failed")
    assert last["message"].startswith("failed: UserError: `model` must either be set")
    assert sink.closed == [first["run_id"]]


def test_an_error_before_the_first_model_call_is_raised_as_it_came() -> None:
    """A toolset that cannot start fails the run before any model call: raised, not a result."""
    from pydantic_ai.toolsets import FunctionToolset

    class Unreachable(FunctionToolset[None]):
        async def __aenter__(self) -> Unreachable:
            raise ConnectionError("the tool server is down")

    script = Script(final_at=1)
    with pytest.raises(ConnectionError, match="the tool server is down"):
        bridge.run(scripted(script), "go", {"loop.max_steps": 3}, toolsets=[Unreachable()])
    assert script.calls == 0


def test_a_conversation_carrying_usage_gets_the_whole_budget_again() -> None:
    """pydantic-ai counts limits over a conversation; the budget bounds each run."""
    first = Script(final_at=3)
    done = bridge.run(scripted(first), "go", {"loop.max_steps": 4})
    assert done.native.conversation.usage.requests == 3
    script = Script()
    agent = scripted(script)
    again = bridge.run(agent, "more", {"loop.max_steps": 2}, conversation=done.native.conversation)
    assert (again.stop_reason, again.turns, script.calls) == ("max_steps", 2, 2)
    usage = done.native.conversation.usage  # a RunUsage to start from works the same way
    script.calls = 0
    history = done.native.all_messages()
    more = bridge.run(agent, "more", {"loop.max_steps": 2}, message_history=history, usage=usage)
    assert (more.stop_reason, more.turns, script.calls) == ("max_steps", 2, 2)


def test_a_response_over_the_per_response_cap_is_rejected_whole_and_the_run_goes_on() -> None:
    """As in the executor (over_cap = reject): none of its calls runs, each is answered with
    why, and the model is asked again."""
    script = Script(calls_per_response=3, final_at=2)
    result = bridge.run(scripted(script), "go", env_budget(max_tool_calls_per_turn="2"))
    assert (result.status, result.stop_reason, script.tools_run) == (
        RunStatus.OK,
        "completed",
        [],
    )
    assert (
        script.answers(1)
        == [
            "not executed: this response has 3 tool calls and at most 2 are accepted in one"
            " response (loop.max_tool_calls_per_turn = 2), so none ran. Send at most 2 calls in a"
            " response."
        ]
        * 3
    )
    assert kinds(result).count("batch_rejected") == 1


def test_truncate_runs_the_first_calls_of_a_response_and_skips_the_rest() -> None:
    """over_cap = truncate: the first two run, the third is answered as skipped."""
    script = Script(calls_per_response=3, final_at=2)
    res = env_budget(max_tool_calls_per_turn="2", over_cap="truncate")
    result = bridge.run(scripted(script), "go", res)
    assert (result.status, script.tools_run, result.tool_calls_executed) == (
        RunStatus.OK,
        [1, 1],
        2,
    )
    assert script.answers(1)[2] == (
        "skipped: only the first 2 calls of a response run (loop.max_tool_calls_per_turn = 2)"
    )
    (truncated,) = [e for e in result.events if e["type"] == "batch_truncated"]
    assert truncated["skipped"] == ["c1-2"]


def test_the_run_wide_tool_call_budget_refuses_a_batch_that_would_pass_it() -> None:
    """With batches of 2 and max_tool_calls=3, the second batch would make 4: none of it runs."""
    script = Script(calls_per_response=2)
    result = bridge.run(scripted(script), "go", env_budget(max_tool_calls="3"))
    assert (result.stop_reason, result.turns, script.calls) == ("max_tool_calls", 2, 2)
    assert script.tools_run == [1, 1]
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls")
    assert result.output == "working 2"


def test_every_call_is_counted_even_when_the_model_reuses_its_id() -> None:
    """The Meter counts calls, never distinct ids: one id in every response still counts each."""
    script = Script(same_id=True)
    result = bridge.run(scripted(script), "go", env_budget(max_tool_calls="2"))
    assert (result.stop_reason, script.calls, script.tools_run) == ("max_tool_calls", 3, [1, 2])


def test_calls_pydantic_ai_cannot_run_take_no_room_in_the_tool_call_budget() -> None:
    """Unreadable arguments and an unknown tool are pydantic-ai's to answer (it asks again):
    neither runs, so the one call of max_tool_calls=1 is left for the call that can."""
    made = [0]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made[0] += 1
        if made[0] > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[
                ToolCallPart("add", '{"a": 1', tool_call_id="broken"),
                ToolCallPart("subtract", {"a": 1}, tool_call_id="unknown"),
                ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="fine"),
            ]
        )

    script = Script()
    agent = scripted(script)
    result = bridge.run(agent, "go", env_budget(max_tool_calls="1"), model=FunctionModel(model))
    assert (result.status, result.tool_calls_executed, script.tools_run) == (RunStatus.OK, 1, [1])


def test_limits_refuse_what_only_run_enforces() -> None:
    """A per-response cap has no pydantic-ai keyword: limits() refuses it, run() enforces it."""
    res = env_budget(max_tool_calls_per_turn="4")
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge.limits(res)
    assert str(caught.value) == (
        "loop.max_tool_calls_per_turn = 4 from env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN cannot be"
        " enforced by pydantic-ai-slim through limits(); unset it, or run the agent through"
        " run(), which enforces it"
    )
    assert bridge.run(scripted(Script(final_at=1)), "go", res).status == RunStatus.OK


@pytest.mark.parametrize("keyword", ["usage_limits", "timeout"])
def test_a_keyword_that_sets_pydantic_ais_own_limit_is_refused(keyword: str) -> None:
    script = Script(final_at=1)
    with pytest.raises(budgetconf.UsageError, match=f"^{keyword}= would set pydantic-ai-slim"):
        bridge.run(scripted(script), "go", {"loop.max_steps": 3}, **{keyword: None})  # type: ignore[arg-type]
    assert script.calls == 0


def test_an_agent_that_is_none_is_refused() -> None:
    """run() takes a pydantic-ai agent, and says so."""
    with pytest.raises(budgetconf.UsageError, match="expected a pydantic-ai agent, got dict"):
        bridge.run({}, "go", {"loop.max_steps": 3})  # type: ignore[arg-type]


def test_limits_always_give_a_request_limit() -> None:
    """pydantic-ai's request_limit defaults to 50, and None means unlimited: neither is given."""
    given = bridge.limits(env={})
    assert given == {"usage_limits": UsageLimits(request_limit=40)}
    every = {
        "loop.max_steps": 4,
        "limits.max_tool_calls": 5,
        "limits.max_tokens": 600,
        "limits.max_cost_usd": 0.5,
        "limits.timeout_seconds": 9,
    }
    native = bridge.limits(every)
    assert native == {
        "usage_limits": UsageLimits(
            request_limit=4, tool_calls_limit=5, total_tokens_limit=600, cost_limit=Decimal("0.5")
        ),
        "timeout": 9.0,
    }


def test_a_budget_without_a_step_budget_sets_no_request_limit() -> None:
    """A budget made in code may leave the step budget out: no turn is the last, so neither
    run() nor limits() leaves pydantic-ai its default of 50 requests."""
    import dataclasses

    from budgetconf.loop import Budget

    base = Budget.of(env_budget(max_tokens="910"))
    stepless = dataclasses.replace(
        base, limits={k: v for k, v in base.limits.items() if k != "max_steps"}
    )
    script = Script()
    result = bridge.run(scripted(script), "go", stepless)
    assert (result.stop_reason, result.turns, script.calls) == ("max_tokens", 61, 61)
    assert len(script.tools_run) == 60  # the call of the response past the cap did not run
    assert bridge.limits(stepless)["usage_limits"] == UsageLimits(
        request_limit=None, total_tokens_limit=910
    )


def test_limits_carry_the_budget_into_the_frameworks_own_call() -> None:
    script = Script()
    with pytest.raises(UsageLimitExceeded, match="request_limit of 2"):
        scripted(script).run_sync("go", **bridge.limits({"loop.max_steps": 2}))
    assert script.calls == 2


def test_the_agent_is_named_after_the_callers_variable() -> None:
    """run_sync names a nameless agent after its caller's variable, not the bridge's."""
    my_helper = Agent(FunctionModel(Script(final_at=1).respond))
    bridge.run(my_helper, "go", {"loop.max_steps": 2})
    assert my_helper.name == "my_helper"
    unnamed = Agent(FunctionModel(Script(final_at=1).respond))
    bridge.run(unnamed, "go", {"loop.max_steps": 2}, infer_name=False)
    assert unnamed.name is None
    done = bridge.run(Agent(FunctionModel(Script(final_at=1).respond)), "go", {"loop.max_steps": 2})
    assert done.status == RunStatus.OK  # no variable holds it: it stays nameless, as without


GLOBAL_AGENT = Agent(FunctionModel(Script(final_at=1).respond))


def _run_the_global() -> None:
    bridge.run(GLOBAL_AGENT, "go", {"loop.max_steps": 2})


def test_a_module_level_agent_is_named_after_its_global() -> None:
    _run_the_global()
    assert GLOBAL_AGENT.name == "GLOBAL_AGENT"


def _on_own_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on a loop of its own, leaving the thread's current loop alone.

    run_sync keeps the thread's current loop open for later runs; asyncio.run would unset
    it when done, and the loop would then be collected unclosed (a ResourceWarning).
    """
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def test_arun_runs_in_an_event_loop() -> None:
    script = Script()
    result = _on_own_loop(bridge.arun(scripted(script), "go", {"loop.max_steps": 2}))
    assert (result.stop_reason, result.turns, script.calls) == ("max_steps", 2, 2)
    done = _on_own_loop(bridge.arun(scripted(Script(final_at=2)), "go", {"loop.max_steps": 3}))
    assert (done.status, done.output) == (RunStatus.OK, "final answer 2")


def test_overlapping_runs_of_one_agent_each_keep_their_own_budget() -> None:
    """The bridge borrows nothing of the agent: runs at once, each its Meter and its capability."""
    script = Script(delay=0.01)
    agent = scripted(script)
    before = (agent.name, agent.model, list(agent.toolsets))

    async def both() -> list[BridgeResult]:
        return list(
            await asyncio.gather(
                bridge.arun(agent, "go", {"loop.max_steps": 2}),
                bridge.arun(agent, "go", {"loop.max_steps": 4}),
            )
        )

    first, second = _on_own_loop(both())
    assert (first.turns, second.turns, script.calls) == (2, 4, 6)
    assert (first.tool_calls_executed, second.tool_calls_executed) == (1, 3)
    assert len(script.tools_run) == 4
    assert first.run_id != second.run_id
    assert (agent.name, agent.model, list(agent.toolsets)) == before


def test_a_stopped_run_leaves_the_agent_as_it_was() -> None:
    """A second run through the same agent gets its own budget; the agent is unchanged."""
    script = Script()
    agent = scripted(script)
    before = (agent.name, agent.model, list(agent.toolsets))
    first = bridge.run(agent, "go", {"loop.max_steps": 2})
    second = bridge.run(agent, "go", {"loop.max_steps": 3})
    assert (first.turns, second.turns, script.calls) == (2, 3, 5)
    assert (agent.name, agent.model, list(agent.toolsets)) == before


def test_a_wrapped_tool_sees_the_bridged_run_and_carves_a_sub_agents_budget() -> None:
    """current_run() in a tool is the bridged run; a nested bridged run on a budget carved from
    it is its child, whose tokens the parent counts."""
    seen: list[Any] = []
    inner_script = Script(final_at=2)
    inner = scripted(inner_script)

    def outer_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("all done")], usage=usage)
        return ModelResponse(parts=[ToolCallPart("delegate", {}, tool_call_id="d")], usage=usage)

    outer = Agent(FunctionModel(outer_model))

    @outer.tool_plain
    async def delegate() -> str:
        handle = current_run()
        seen.append(handle)
        assert handle is not None
        child = await bridge.arun(inner, "go", handle.carve(max_steps=3))
        seen.append(child)
        return child.output

    result = bridge.run(outer, "go", {"loop.max_steps": 4, "limits.max_tokens": 1_000})
    assert (result.status, result.output) == (RunStatus.OK, "all done")
    handle, child = seen
    assert handle is not None
    assert (child.status, child.output, child.turns) == (RunStatus.OK, "final answer 2", 2)
    assert result.usage.total_tokens == 15 + 15 + 30  # its own two responses and the child's
    assert {"child_start", "child_end"} <= set(kinds(result))
    assert current_run() is None


def test_a_sync_tool_on_a_worker_thread_sees_the_bridged_run() -> None:
    """pydantic-ai runs a sync tool on a thread of its own: it still sees the run."""
    seen: list[Any] = []
    script = Script(final_at=2)
    agent = Agent(FunctionModel(script.respond))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen.append((threading.current_thread() is threading.main_thread(), current_run()))
        return a + b

    result = bridge.run(agent, "go", {"loop.max_steps": 3})
    ((on_main, handle),) = seen
    assert (on_main, handle is not None, result.status) == (False, True, RunStatus.OK)


def test_on_event_hears_the_executors_vocabulary_and_name_names_the_run() -> None:
    """Each event's type is the executor's, with its keys; the run is named and framed."""
    heard: list[dict[str, Any]] = []
    script = Script(calls_per_response=3, final_at=3)
    res = env_budget(max_steps="4", max_tool_calls_per_turn="2")
    result = bridge.run(scripted(script), "go", res, on_event=heard.append, name="scout")
    assert heard == result.events
    started = heard[0]
    assert (started["type"], started["name"], started["framework"]) == (
        "run_started",
        "scout",
        "pydantic_ai",
    )
    assert {e["run_id"] for e in heard} == {result.run_id}
    common = {key for key, _ in COMMON}
    for event in heard:
        declared = {key for key, _ in TYPES[event["type"]].keys}
        if "…" not in declared:
            assert set(event) - common - declared == set(), event["type"]
    assert heard[-1]["type"] == "stopped"


def test_budgetconf_report_draws_a_bridged_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The events an EventsFile writes of a bridged run are a page `budgetconf report` draws."""
    from budgetconf.cli import main
    from budgetconf.events import EventsFile

    path = tmp_path / "events.jsonl"
    with EventsFile(str(path)) as sink:
        result = bridge.run(scripted(Script()), "go", {"loop.max_steps": 3}, on_event=sink)
    assert main(["report", str(path)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'events.html'}: 1 run\n"
    page = (tmp_path / "events.html").read_text(encoding="utf-8")
    assert result.message in page


def test_a_sink_that_raises_fails_the_run_before_its_next_call() -> None:
    """As in the executor: on_event's exception fails the run, and the model is not called."""
    script = Script()

    def broken(event: dict[str, Any]) -> None:
        if event["type"] == "tool_executed":
            raise OSError("disk full")

    result = bridge.run(scripted(script), "go", {"loop.max_steps": 3}, on_event=broken)
    assert (result.status, script.calls) == (RunStatus.FAILED, 1)
    assert result.message == "failed: on_event raised OSError: disk full (turn 1)"


def test_streamed_requests_are_metered_too() -> None:
    """With event_stream_handler= pydantic-ai streams each request: the Meter reads it whole."""
    made = [0]

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        made[0] += 1
        yield f"working {made[0]}"
        yield {0: DeltaToolCall("add", '{"a": 1, "b": 2}', tool_call_id=f"s{made[0]}")}

    agent = Agent(FunctionModel(stream_function=stream))
    ran: list[int] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a)
        return a + b

    streamed: list[object] = []

    async def handler(ctx: RunContext[None], events: AsyncIterator[object]) -> None:
        async for event in events:
            streamed.append(event)

    result = bridge.run(agent, "go", {"loop.max_steps": 3}, event_stream_handler=handler)
    assert (result.stop_reason, result.turns, made[0], ran) == ("max_steps", 3, 3, [1, 1])
    assert result.output == "working 3"
    assert streamed


def test_the_callers_capabilities_and_model_override_still_apply() -> None:
    """The bridge adds its capability to the caller's, and meters the model an override picks."""
    hooked: list[str] = []

    @dataclass
    class Counting(AbstractCapability[Any]):
        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            hooked.append("request")
            return request_context

    script = Script()
    agent = scripted(Script(final_at=1))
    with agent.override(model=FunctionModel(script.respond)):
        result = bridge.run(agent, "go", {"loop.max_steps": 2}, capabilities=[Counting()])
    # the hook runs as each request step starts: the third's, too, which the Meter then stops
    assert (result.stop_reason, script.calls, hooked) == ("max_steps", 2, ["request"] * 3)


def test_importing_the_bridge_loads_neither_the_loop_nor_the_ledger() -> None:
    """The loop is loaded by the first run: importing the bridge adds its framework only (the
    ledger's address rules, which `import budgetconf` loads, are not its records)."""
    code = (
        "import sys, budgetconf.integrations.pydantic_ai;"
        "print(sorted(m for m in ('budgetconf.loop', 'budgetconf.ledger._base',"
        " 'budgetconf.ledger._records')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_without_pydantic_ai_the_import_says_how_to_install_it_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # what Python does for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.pydantic_ai")
    with pytest.raises(ImportError) as raised:
        importlib.import_module("budgetconf.integrations.pydantic_ai")
    assert raised.value.name == "pydantic-ai-slim"
    assert "pip install 'budgetconf[pydantic-ai]'" in str(raised.value)


def _without(module: str) -> Callable[[], subprocess.CompletedProcess[str]]:
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "try:\n    import budgetconf.integrations.pydantic_ai\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    return lambda: subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )


def test_without_pydantic_ai_the_import_says_how_to_install_it() -> None:
    done = _without("pydantic_ai")()
    assert done.stdout == (
        "budgetconf.integrations.pydantic_ai needs the pydantic-ai-slim package: pip install"
        " 'budgetconf[pydantic-ai]' (from a checkout: pip install -e '.[pydantic-ai]')\n"
    )


# -- the shared ledger ---------------------------------------------------------------------


@dataclass
class Metered:
    """A model that reports ``tokens`` per response and, at each call, what the ledger's scope
    holds then; from ``answer_at`` it answers without tools."""

    url: str
    tokens: int = 15
    answer_at: int = 99
    fail_at: int = 0
    cost: Decimal | None = None
    seen: list[tuple[int, int]] = field(default_factory=list)

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from budgetconf.ledger import open_ledger

        n = len(self.seen) + 1
        with open_ledger(self.url) as led:
            status = led.status(SCOPE, window="day")
        self.seen.append((status.spent_tokens, status.reserved_tokens))
        if n == self.fail_at:
            raise RuntimeError("the provider is down")
        usage = RequestUsage(input_tokens=10, output_tokens=self.tokens - 10, cost=self.cost)
        if n >= self.answer_at:
            return ModelResponse(parts=[TextPart(f"answer {n}")], usage=usage)
        call = ToolCallPart("add", {"a": n, "b": 1}, tool_call_id=f"c{n}")
        return ModelResponse(parts=[TextPart(f"working {n}"), call], usage=usage)


def ledger_agent(model: Metered) -> Agent[None, str]:
    agent = Agent(FunctionModel(model.respond), name="calc")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent


def test_each_model_call_is_reserved_before_it_and_settled_with_its_usage(
    tmp_path: Path,
) -> None:
    """The wrapped model reserves before each call and settles with the response's tokens and
    cost; the run leaves one record."""
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, answer_at=3, cost=Decimal("0.01"))
    result = bridge.run(ledger_agent(model), "go", budget(url))
    assert (result.status, result.output) == (RunStatus.OK, "answer 3")
    assert model.seen == [(0, 4096), (15, 4096), (30, 4096)]
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.spent_cost_usd) == (45, 0.03)
    assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (0, 0.0, 1)
    (record,) = runs
    assert (record["turns"], record["tokens"], record["stop_reason"]) == (3, 45, "completed")


def test_the_scopes_maximum_stops_the_run_before_the_call(tmp_path: Path) -> None:
    """100 tokens reserved and used per call, 250 at most: the third call is never made."""
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=PER_CALL)
    res = budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    result = bridge.run(ledger_agent(model), "go", res)
    assert (len(model.seen), result.turns, result.output) == (2, 2, "working 2")
    assert_stopped_before_the_third_call(result, url)


def test_a_failed_call_gives_its_reservation_back_and_the_run_is_recorded(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, fail_at=2)
    result = bridge.run(ledger_agent(model), "go", budget(url))
    assert (result.stop_reason, str(result.native)) == ("error", "the provider is down")
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, status.reserved_cost_usd) == (15, 0, 0.0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(2, 15, "error")]


def test_each_model_a_fallback_tries_is_a_call_and_a_failed_ones_share_goes_back(
    tmp_path: Path,
) -> None:
    """ModelFallback moves a failed request to its next model: each attempt is a model call the
    Meter allows (a turn), and the failed attempt's reservation is given back before the next.
    A FallbackModel is one model to pydantic-ai: its attempts are one call."""
    from pydantic_ai.capabilities import ModelFallback
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.fallback import FallbackModel

    down: list[int] = []

    async def unavailable(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        down.append(len(messages))
        raise ModelHTTPError(503, "primary")

    def add_tool(agent: Agent[None, str]) -> Agent[None, str]:
        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        return agent

    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, answer_at=2)
    fallback = ModelFallback(FunctionModel(model.respond))
    agent = add_tool(Agent(FunctionModel(unavailable), name="calc", capabilities=[fallback]))
    result = bridge.run(agent, "go", budget(url))
    assert (result.status, result.output, result.turns, len(down)) == (
        RunStatus.OK,
        "answer 2",
        4,
        2,
    )
    assert model.seen == [(0, 4096), (15, 4096)]  # one share held at a time: the first went back
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens) == (30, 0)
    assert [(r["turns"], r["tokens"]) for r in runs] == [(4, 30)]

    (tmp_path / "one").mkdir()
    url = sqlite_url(tmp_path / "one")
    model = Metered(url, tokens=15, answer_at=2)
    inside = FallbackModel(FunctionModel(unavailable), FunctionModel(model.respond))
    result = bridge.run(add_tool(Agent(inside, name="calc")), "go", budget(url))
    assert (result.status, result.turns, len(down)) == (RunStatus.OK, 2, 4)
    assert status_and_runs(url)[0].spent_tokens == 30


def test_a_ledger_cost_maximum_is_drawn_on_from_the_cost_pydantic_ai_reports(
    tmp_path: Path,
) -> None:
    """pydantic-ai prices its responses, so ledger.max_cost_usd is settled, not refused."""
    url = sqlite_url(tmp_path)
    model = Metered(url, cost=Decimal("0.02"))
    res = budget(url, ledger_max_cost_usd="0.05", ledger_reserve_cost_usd="0.02")
    result = bridge.run(ledger_agent(model), "go", res)
    assert (result.stop_reason, result.limit and result.limit["field"]) == (
        "max_cost",
        "ledger.max_cost_usd",
    )
    assert len(model.seen) == 2


def test_limits_refuse_a_ledger(tmp_path: Path) -> None:
    """pydantic-ai's own keywords cannot draw on a ledger: only run() does."""
    with pytest.raises(budgetconf.UsageError, match=r"cannot be drawn on by pydantic-ai-slim"):
        bridge.limits(budget(sqlite_url(tmp_path)))


def test_the_bench_measures_both_rows(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/bridge_pydantic_ai.py runs (quick): its times are not judged here."""
    path = BENCH / "bridge_pydantic_ai.py"
    spec = importlib.util.spec_from_file_location("bench_bridge_pydantic_ai", path)
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--quick"]) == 0
    printed = capsys.readouterr().out
    assert "pydantic_ai: framework alone, per turn" in printed
    assert "pydantic_ai: through the bridge, per turn" in printed
    assert "pydantic_ai, streamed: through the bridge, per turn" in printed
    assert list(bench.streamed_rows(True)) == list(bench.STREAMED)
