"""The agno bridge's refusals, failures and lifecycle: real agno Agents on agno's own OpenAI
chat model and its real OpenAI client against the chat-completions server on 127.0.0.1 (or its
model playing a script), with agno's telemetry off."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from typing import Any, cast

import pytest
from agno.agent import Agent
from agno.exceptions import RunCancelledException
from agno.models.base import Model
from agno.models.openai import OpenAIChat
from agno.run.base import RunStatus as AgnoStatus
from agno.tools import Toolkit
from pydantic import BaseModel, field_validator

import budgetconf
from budgetconf.integrations import agno as bridge
from budgetconf.loop import RunStatus
from budgetconf.testing import agno_model

from helpers import BENCH
from helpers.agno_bridged import SERVER_ERROR, Tools, agent, calls, python, tool_answers
from helpers.bridged import env
from helpers.chat_server import reply, serving


@pytest.fixture(autouse=True)
def no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    """agno's telemetry off, as it reads it at each run."""
    monkeypatch.setenv("AGNO_TELEMETRY", "false")


def test_a_keyword_or_an_agent_setting_its_own_limit_or_streaming_is_refused() -> None:
    with serving(calls(1)) as chat:
        made = agent(chat)
        with pytest.raises(budgetconf.UsageError, match="tool_call_limit= would set agno"):
            bridge.run(made, "add", tool_call_limit=3)
        with pytest.raises(budgetconf.UsageError, match="call stream"):
            bridge.run(made, "add", stream=True)
        own = agent(chat, tool_call_limit=3)
        with pytest.raises(budgetconf.UsageError, match="tool_call_limit = 3"):
            bridge.run(own, "add")
        with pytest.raises(budgetconf.UsageTypeError, match="an agno Agent"):
            bridge.run(object(), "add")
        assert chat.received == []


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"output_model": "openai:gpt-4o-mini"}, "an output model"),
        ({"enable_session_summaries": True}, "session summaries"),
        ({"fallback_models": ["openai:gpt-4o-mini"]}, "fallback models"),
        ({"retries": 2}, "retries = 2"),
    ],
)
def test_an_agent_whose_model_calls_the_bridge_cannot_see_is_refused(
    options: dict[str, Any], said: str
) -> None:
    with serving(calls(1)) as chat:
        with pytest.raises(budgetconf.UsageError, match=said):
            bridge.run(agent(chat, **options), "add")
        assert chat.received == []


def test_an_agent_without_a_model_is_refused_and_a_model_string_is_agnos_model() -> None:
    with pytest.raises(budgetconf.UsageError, match=r"agent\.model is unset"):
        bridge.run(Agent(telemetry=False), "add")
    named = Agent(model="openai:gpt-4o-mini", telemetry=False)
    with pytest.raises(budgetconf.UsageError, match="gpt-4o-mini"):  # no price: refused
        bridge.run(named, "add", env(max_cost_usd="0.01", price_table="none"))
    assert isinstance(named.model, Model)
    assert named.model.id == "gpt-4o-mini"


def test_the_agents_model_and_limit_are_back_after_the_run_also_when_it_raises() -> None:
    with serving(calls(9)) as chat:
        made = agent(chat)
        model = made.model

        def interrupt(**_: Any) -> None:
            raise SystemExit(3)

        made.pre_hooks = [interrupt]
        with pytest.raises(SystemExit):
            bridge.run(made, "add", env(max_steps="2"))
        assert made.model is model
        assert made.tool_call_limit is None
        made.pre_hooks = None
        bridge.run(made, "add", env(max_steps="2"))
        assert made.model is model


def test_a_model_that_fails_fails_the_run_after_the_clients_own_retries() -> None:
    with serving([*calls(1), SERVER_ERROR]) as chat:
        made = agent(chat)
        assert isinstance(made.model, OpenAIChat)
        made.model.max_retries = 1
        result = bridge.run(made, "add", env(max_steps="5"))
        requests = len(chat.received)
    assert (result.status, result.stop_reason, requests) == (RunStatus.FAILED, "error", 3)
    assert "the model is down" in result.message
    assert result.native.status == AgnoStatus.error


def test_a_failure_of_agno_before_any_model_call_is_raised() -> None:
    """agno raises an input its schema refuses, and ends a run whose tools it cannot make
    with an error it logs: both are raised, as the caller's own, before any request."""

    class Wanted(BaseModel):
        x: int

    class Broken(Toolkit):
        def get_functions(self) -> Any:
            raise RuntimeError("no tools today")

    with serving(calls(1)) as chat:
        with pytest.raises(ValueError, match="Failed to parse dict"):
            bridge.run(agent(chat, input_schema=Wanted), {"y": 1})
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        with pytest.raises(Exception, match="no tools today"):
            bridge.run(Agent(model=model, tools=[Broken()], telemetry=False), "add")
        assert chat.received == []


def test_a_tool_that_raises_is_answered_with_its_error_and_the_run_goes_on() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        raise RuntimeError("the adder is broken")

    with serving([*calls(1), reply("done", usage=(10, 5))]) as chat:
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made = Agent(model=model, tools=[add], telemetry=False)
        result = bridge.run(made, "add", env(max_steps="5"))
        answers = tool_answers(chat, 1)
    assert (result.stop_reason, result.tool_calls_executed) == ("completed", 1)
    assert "the adder is broken" in answers[0]
    assert [e["error"] for e in result.events if e["type"] == "tool_executed"] == [
        "RuntimeError: the adder is broken"
    ]


def test_a_tool_that_cancels_agnos_run_ends_it_cancelled() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        raise RunCancelledException("not today")

    with serving(calls(9)) as chat:
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made = Agent(model=model, tools=[add], telemetry=False)
        result = bridge.run(made, "add", env(max_steps="5"))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "cancelled")
    assert result.native.status == AgnoStatus.cancelled


def test_an_unreadable_usage_fails_the_run_before_the_responses_tools() -> None:
    tools = Tools()
    bad = reply("x", calls=[("c", "add", {"a": 1, "b": 2})], usage=(10, 5))
    bad["usage"]["cost"] = -1.0
    with serving([bad]) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_steps="5"))
    assert (result.status, tools.ran) == (RunStatus.FAILED, 0)
    assert "metrics.cost" in result.message


def test_importing_the_bridge_loads_neither_the_loop_nor_agnos_agent() -> None:
    code = (
        "import sys, budgetconf.integrations.agno\n"
        "print(sorted(m for m in sys.modules if m.startswith(('budgetconf.loop', 'agno.agent'))"
        " or m.endswith(('_metered', '_agno_run'))))\n"
    )
    assert python(code) == "[]\n"


def test_without_agno_the_import_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agno", None)
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.agno")
    with pytest.raises(ImportError, match="pip install 'budgetconf\\[agno\\]'") as caught:
        importlib.import_module("budgetconf.integrations.agno")
    assert caught.value.name == "agno"


@pytest.fixture
def bench() -> Iterator[Any]:
    spec = importlib.util.spec_from_file_location("bridge_agno", BENCH / "bridge_agno.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def test_the_benchmark_reports_its_rows_run_and_streamed(bench: Any) -> None:
    rows = {**bench.rows(quick=True), **bench.streamed_rows(quick=True)}
    assert list(rows) == [
        "agno: framework alone, per turn",
        "agno: through the bridge, per turn",
        "agno: the bridge's cost per turn",
        "agno, streamed: framework alone, per turn",
        "agno, streamed: through the bridge, per turn",
        "agno, streamed: the bridge's cost per turn",
    ]
    assert all(ns > 0 for ns in (*list(rows.values())[:2], *list(rows.values())[3:5]))


def test_a_tool_call_budget_with_a_tool_the_provider_runs_is_refused() -> None:
    with serving(calls(1)) as chat:
        hosted = agent(chat)
        own: Any = hosted.tools
        hosted.tools = [*own, {"type": "web_search_preview"}]
        with pytest.raises(budgetconf.UsageError, match=r"limits\.max_tool_calls = 2 .*web_search"):
            bridge.run(hosted, "add", env(max_tool_calls="2"))
        # each budget that needs every call seen: a tool's own limit, the repeats of a call
        with pytest.raises(budgetconf.UsageError, match=r"tools\.max_calls\.add = 2 .*web_search"):
            bridge.run(hosted, "add", env(tools_max_calls="add=2"))
        with pytest.raises(budgetconf.UsageError, match=r"loop\.max_repeats = 3 .*web_search"):
            bridge.run(hosted, "add", env(max_repeats="3"))
        assert bridge.run(hosted, "add", env(max_steps="1")).stop_reason == "max_steps"


def test_a_cancel_of_agnos_own_during_a_model_call_ends_the_run_cancelled() -> None:
    model = agno_model([{"content": "never"}])

    def cancelled(*args: Any, **kwargs: Any) -> Any:
        raise RunCancelledException("cancelled by its caller")

    model.invoke = cancelled
    result = bridge.run(Agent(model=model, telemetry=False), "add", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "cancelled", 1)


def test_arun_fails_as_run_fails_and_raises_the_callers_mistake() -> None:
    class Wanted(BaseModel):
        x: int

    with serving([SERVER_ERROR]) as chat:
        failed = asyncio.run(bridge.arun(agent(chat), "add", env(max_steps="3")))
        with pytest.raises(ValueError, match="Failed to parse dict"):
            asyncio.run(bridge.arun(agent(chat, input_schema=Wanted), {"y": 1}))
    assert (failed.status, failed.stop_reason) == (RunStatus.FAILED, "error")


def test_a_call_whose_arguments_are_not_json_is_answered_by_agno_and_counts_nothing() -> None:
    tools = Tools()
    bad = reply("x", calls=[("c", "add", "{not json")], usage=(10, 5))
    with serving([bad, reply("done", usage=(10, 5))]) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_steps="5"))
    assert (result.stop_reason, result.tool_calls_executed, tools.ran) == ("completed", 0, 0)


def test_a_model_named_by_its_string_is_made_agnos_model_as_agno_makes_it() -> None:
    with serving(calls(9)) as chat:
        made = agent(chat)
        made.model = cast(Any, "openai:gpt-4o-mini")
        with pytest.raises(budgetconf.UsageError, match="gpt-4o-mini"):
            bridge.run(made, "add", env(max_cost_usd="0.01", price_table="none"))
    assert isinstance(made.model, Model)


def test_ctrl_c_before_agnos_run_ends_the_bridged_run_cancelled() -> None:
    class Interrupting(BaseModel):
        x: int

        @field_validator("x")
        @classmethod
        def interrupt(cls, value: int) -> int:
            raise KeyboardInterrupt

    events: list[dict[str, Any]] = []
    made = Agent(model=agno_model([{"content": "x"}]), input_schema=Interrupting, telemetry=False)
    result = bridge.run(made, {"x": 1}, on_event=events.append)
    assert (result.stop_reason, result.turns, events[-1]["stop_reason"]) == (
        "cancelled",
        0,
        "cancelled",
    )


def test_a_model_that_times_out_itself_under_a_deadline_fails_the_run() -> None:
    """A TimeoutError of the model's own, not the deadline's: the run failed, as any."""
    model = agno_model([{"content": "never"}])

    def timed_out(*args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("the model's own")

    model.invoke = timed_out
    made = Agent(model=model, telemetry=False)
    result = bridge.run(made, "add", env(timeout_seconds="30"))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert "the model's own" in result.message
