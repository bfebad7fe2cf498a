"""The pydantic-ai bridge against the real framework, offline, through its own FunctionModel."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.exceptions import CostNotFoundWarning, RunTimedOut, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import budgetconf
from budgetconf.integrations import pydantic_ai as bridge
from budgetconf.integrations._bridge import BridgeResult
from budgetconf.loop import RunStatus, StopReason


@dataclass
class Script:
    """A fake model: a tool call (with a line of text) per response until ``final_at``."""

    final_at: int = 1_000
    calls_per_response: int = 1
    tokens: int = 15  # per response: 10 in, the rest out
    cost: Decimal | None = None
    delay: float = 0.0
    calls: int = 0
    tools_run: list[int] = field(default_factory=list)

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        n = self.calls
        if self.delay:
            await asyncio.sleep(self.delay)
        usage = RequestUsage(input_tokens=10, output_tokens=self.tokens - 10, cost=self.cost)
        if n >= self.final_at:
            return ModelResponse(parts=[TextPart(f"final answer {n}")], usage=usage)
        parts: list[Any] = [TextPart(f"working {n}")]
        parts += [
            ToolCallPart("add", {"a": n, "b": i}, tool_call_id=f"c{n}-{i}")
            for i in range(self.calls_per_response)
        ]
        return ModelResponse(parts=parts, usage=usage)


def scripted(script: Script) -> Agent[None, str]:
    agent = Agent(FunctionModel(script.respond), name="calc")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        script.tools_run.append(a)
        return a + b

    return agent


def env_budget(**env: str) -> budgetconf.Resolution:
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in env.items()})


def test_a_step_stop_names_the_setting_and_counts_every_model_call() -> None:
    """max_steps=3 allows three responses (their tools run), and the stop says where 3 was set."""
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
    assert script.tools_run == [1, 2, 3]
    assert result.output == "working 3"  # the last text, from the captured messages
    assert result.framework == "pydantic_ai"
    assert isinstance(result.native, UsageLimitExceeded)


def test_a_completed_run_keeps_the_answer_and_its_turns() -> None:
    script = Script(final_at=3)
    result = bridge.run(scripted(script), "go", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.OK, "completed", None)
    assert (result.output, result.turns, result.message) == (
        "final answer 3",
        3,
        "completed in 3 turns",
    )
    assert result.native.output == "final answer 3"


def test_a_structured_output_is_given_as_json_text() -> None:
    """The output is always a str: a model's output as its JSON."""

    class Sum(BaseModel):
        total: int

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, {"total": 5}, tool_call_id="o")])

    agent = Agent(FunctionModel(answer), output_type=Sum)
    result = bridge.run(agent, "go", {"loop.max_steps": 2})
    assert (result.output, result.turns) == ('{"total":5}', 1)


def test_a_tool_call_stop_refuses_the_crossing_batch_whole() -> None:
    """With batches of 2 and max_tool_calls=3, the second batch would make 4: none of it runs."""
    script = Script(calls_per_response=2)
    result = bridge.run(scripted(script), "go", env_budget(max_tool_calls="3"))
    assert (result.stop_reason, result.turns, script.calls) == ("max_tool_calls", 2, 2)
    assert script.tools_run == [1, 1]
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls")
    assert result.output == "working 2"


def test_a_token_stop_overshoots_and_even_stops_a_final_answer() -> None:
    """Tokens are checked after a response: the one that crosses stops the run, final or not."""
    script = Script(final_at=3)
    result = bridge.run(scripted(script), "go", {"limits.max_tokens": 40})
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_tokens",
        3,
    )
    assert result.output == "final answer 3"  # the crossing response's text is kept
    assert script.tools_run == [1, 2]


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run() -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: the run fails (read at its end, since
    pydantic-ai counts usage itself)."""
    script = Script(final_at=2, tokens=2**63 - 1)
    result = bridge.run(scripted(script), "go", env_budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert result.message.startswith(
        "failed: malformed model response: usage.total_tokens: more tokens than one response"
    )
    script = Script(final_at=2, cost=Decimal(10**7))
    result = bridge.run(scripted(script), "go", env_budget(max_steps="3"))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert "usage.cost: more than one response can cost" in result.message


def test_a_cost_stop_counts_the_cost_responses_report() -> None:
    script = Script(cost=Decimal("0.1"))
    result = bridge.run(scripted(script), "go", {"limits.max_cost_usd": 0.25})
    assert (result.stop_reason, result.turns, script.tools_run) == ("max_cost", 3, [1, 2])
    assert result.message.startswith("stopped: hit max_cost_usd (0.25): limits.max_cost_usd")


def test_a_cost_budget_without_priced_usage_is_pydantic_ais_own_warning() -> None:
    """pydantic-ai says it could not enforce the cost; the bridge leaves its warning be."""
    with pytest.warns(CostNotFoundWarning, match="cannot be enforced"):
        result = bridge.run(scripted(Script(final_at=2)), "go", {"limits.max_cost_usd": 1.0})
    assert result.status == RunStatus.OK


def test_a_timeout_stop_keeps_what_was_done() -> None:
    script = Script(delay=0.05)
    result = bridge.run(scripted(script), "go", {"limits.timeout_seconds": 0.2})
    assert (result.status, result.stop_reason) == (RunStatus.TRUNCATED, "timeout")
    assert isinstance(result.native, RunTimedOut)
    responses = [m for m in result.native.all_messages() if isinstance(m, ModelResponse)]
    assert result.turns == len(responses) >= 1
    assert script.calls - result.turns in (0, 1)  # a call the deadline cut short gave none
    assert result.output == f"working {result.turns}"


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


def test_a_nested_agents_own_limit_is_reraised_unchanged() -> None:
    """The same words from another UsageLimits (a delegate's, through a tool) are not the budget."""
    inner = scripted(Script())

    def outer_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("delegate", {}, tool_call_id="d")])

    outer = Agent(FunctionModel(outer_model))

    @outer.tool_plain
    async def delegate() -> str:
        await inner.run("go", usage_limits=UsageLimits(request_limit=3))
        return "done"

    with pytest.raises(UsageLimitExceeded, match="request_limit of 3"):
        bridge.run(outer, "go", {"loop.max_steps": 3})


def test_another_framework_error_is_reraised_unchanged() -> None:
    boom = RuntimeError("the model broke")

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise boom

    agent = Agent(FunctionModel(broken), name="broken")
    with pytest.raises(RuntimeError) as caught:
        bridge.run(agent, "go", {"loop.max_steps": 3})
    assert caught.value is boom
    assert agent.name == "broken"


def test_a_conversation_carrying_usage_gets_the_whole_budget_again() -> None:
    """pydantic-ai counts limits over a conversation; the budget bounds each run."""
    first = Script(final_at=3)
    done = bridge.run(scripted(first), "go", {"loop.max_steps": 3})
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


def test_a_budget_pydantic_ai_cannot_enforce_is_refused_or_warned() -> None:
    res = env_budget(max_tool_calls_per_turn="4")
    script = Script(final_at=1)
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge.run(scripted(script), "go", res)
    assert str(caught.value) == (
        "loop.max_tool_calls_per_turn = 4 from env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN cannot be"
        " enforced by pydantic-ai-slim; unset it, or pass unenforced='warn' to run without it"
    )
    assert script.calls == 0
    with pytest.raises(budgetconf.UsageError, match="max_tool_calls_per_turn"):
        bridge.limits(res)
    with pytest.warns(budgetconf.BudgetConfWarning, match="running without it") as warned:
        result = bridge.run(scripted(script), "go", res, unenforced="warn")
    assert (len(warned), result.status) == (1, RunStatus.OK)


@pytest.mark.parametrize("keyword", ["usage_limits", "timeout"])
def test_a_keyword_that_sets_pydantic_ais_own_limit_is_refused(keyword: str) -> None:
    script = Script(final_at=1)
    with pytest.raises(budgetconf.UsageError, match=f"^{keyword}= would set pydantic-ai-slim"):
        bridge.run(scripted(script), "go", {"loop.max_steps": 3}, **{keyword: None})  # type: ignore[arg-type]
    assert script.calls == 0


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


def _on_own_loop(coro: Coroutine[Any, Any, BridgeResult]) -> BridgeResult:
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
    done = _on_own_loop(bridge.arun(scripted(Script(final_at=2)), "go", {"loop.max_steps": 2}))
    assert (done.status, done.output) == (RunStatus.OK, "final answer 2")


def test_a_stopped_run_leaves_the_agent_as_it_was() -> None:
    """The bridge borrows nothing: a second run through the same agent gets its own budget."""
    script = Script()
    agent = scripted(script)
    before = (agent.name, agent.model, list(agent.toolsets))
    first = bridge.run(agent, "go", {"loop.max_steps": 2})
    second = bridge.run(agent, "go", {"loop.max_steps": 3})
    assert (first.turns, second.turns, script.calls) == (2, 3, 5)
    assert (agent.name, agent.model, list(agent.toolsets)) == before


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


def test_the_bench_measures_both_rows(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/bridge_pydantic_ai.py runs (quick): its times are not judged here."""
    path = Path(__file__).parent.parent / "bench" / "bridge_pydantic_ai.py"
    spec = importlib.util.spec_from_file_location("bench_bridge_pydantic_ai", path)
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--quick"]) == 0
    printed = capsys.readouterr().out
    assert "pydantic_ai: framework alone, per turn" in printed
    assert "pydantic_ai: through the bridge, per turn" in printed
