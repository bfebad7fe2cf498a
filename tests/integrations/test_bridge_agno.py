"""The agno bridge: real agno Agents on agno's own OpenAI chat model and its real OpenAI client,
against the chat-completions server on 127.0.0.1, with agno's telemetry off."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from agno.run.base import RunStatus as AgnoStatus
from pydantic import BaseModel

import budgetconf
from budgetconf.integrations import agno as bridge
from budgetconf.loop import RunStatus, StopReason, current_run
from budgetconf.testing import agno_model

from helpers.agno_bridged import Tools, agent, calls, tool_answers
from helpers.bridged import env
from helpers.chat_server import reply, serving
from helpers.ledgers import MOST, PER_CALL, assert_stopped_before_the_third_call, sqlite_url
from helpers.ledgers import budget as ledger_budget


@pytest.fixture(autouse=True)
def no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    """agno's telemetry off, as it reads it at each run."""
    monkeypatch.setenv("AGNO_TELEMETRY", "false")


def test_a_step_stop_names_the_field_and_answers_the_last_turns_call_as_not_executed() -> None:
    """Three model calls under a budget of 3; the third one's call is answered, not run, and
    StopAgentRun ends agno's loop there: no fourth request, agno's own run completed."""
    tools = Tools()
    with serving(calls(9)) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_steps="3"))
        bodies = len(chat.received)
        answered = tool_answers(chat, 2)
    assert (result.status, result.stop_reason, result.stop_kind) == (
        RunStatus.TRUNCATED,
        "max_steps",
        StopReason.MAX_STEPS,
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS; raise it"
        " with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit == {
        "field": "loop.max_steps",
        "value": 3,
        "source": "env",
        "locator": "env:BUDGETCONF_MAX_STEPS",
        "raise_with": ["BUDGETCONF_MAX_STEPS", "--max-steps"],
    }
    assert (bodies, tools.ran, result.turns, result.tool_calls_executed) == (3, 2, 3, 2)
    assert answered == ["0", "1"]  # the two calls that ran
    last = [m for m in result.native.messages if m.role == "tool"][-1]
    assert str(last.content).startswith("not executed: ")
    assert (result.native.status, result.output, result.framework) == (
        AgnoStatus.completed,
        "step 2",
        "agno",
    )
    assert result.usage.total_tokens == 45


def test_the_last_turn_carries_the_wrap_up_notice_for_that_call_only() -> None:
    with serving(calls(9)) as chat:
        bridge.run(agent(chat), "add", env(max_steps="2"))
        last = chat.bodies[-1]["messages"]
        first = chat.bodies[0]["messages"]
    assert "step budget" in last[-1]["content"]
    assert last[-1]["role"] == "user"
    assert all("step budget" not in str(m.get("content")) for m in first)


def test_a_completed_run_keeps_the_last_responses_text_and_agnos_output() -> None:
    tools = Tools()
    with serving([*calls(1), reply("the sum is 1", usage=(10, 5))]) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_steps="5"))
    assert (result.status, result.stop_reason, result.turns, tools.ran) == (
        RunStatus.OK,
        "completed",
        2,
        1,
    )
    assert result.output == "the sum is 1"  # agno's content joins every response's text
    assert result.native.content == "step 0the sum is 1"


def test_agnos_tool_call_limit_is_soft_and_the_budget_is_hard() -> None:
    """agno alone answers the calls past its limit with an error and calls the model again,
    as long as the model asks; the bridge stops the run at the budget."""
    alone = Tools()
    with serving([*calls(4), reply("done", usage=(10, 5))]) as chat:
        made = agent(chat, alone, tool_call_limit=2)
        made.run("add")
        soft = len(chat.received)
    assert (soft, alone.ran) == (5, 2)
    tools = Tools()
    with serving([*calls(4), reply("done", usage=(10, 5))]) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_tool_calls="2"))
        hard = len(chat.received)
    assert (result.stop_reason, result.limit and result.limit["field"]) == (
        "max_tool_calls",
        "limits.max_tool_calls",
    )
    assert (hard, tools.ran) == (3, 2)


def test_a_response_over_the_per_response_cap_is_rejected_and_the_run_goes_on() -> None:
    tools = Tools()
    with serving([*calls(1, each=3), reply("done", usage=(10, 5))]) as chat:
        result = bridge.run(
            agent(chat, tools), "add", env(max_steps="5", max_tool_calls_per_turn="2")
        )
        answers = tool_answers(chat, 1)
    assert (result.stop_reason, tools.ran) == ("completed", 0)
    assert len(answers) == 3
    assert all("at most 2" in a for a in answers)


def test_a_token_budget_stops_before_the_tools_of_the_response_that_spends_it() -> None:
    tools = Tools()
    with serving(calls(9, usage=(60, 40))) as chat:
        result = bridge.run(agent(chat, tools), "add", env(max_tokens="250"))
        requests = len(chat.received)
    assert (result.stop_reason, requests, tools.ran) == ("max_tokens", 3, 2)


def test_the_cost_agno_reports_counts_as_reported_cost() -> None:
    """A response whose usage carries ``cost`` (as OpenRouter's do): agno's metrics.cost, the
    run's reported cost, stops it at the budget with no price looked up."""
    priced = [
        {**r, "usage": {**r["usage"], "cost": 0.001}} for r in calls(9) if isinstance(r, dict)
    ]
    budget = budgetconf.resolve(
        env={"BUDGETCONF_MAX_COST_USD": "0.0025", "BUDGETCONF_PRICE_UNKNOWN": "warn"}
    )
    with serving(priced) as chat, pytest.warns(budgetconf.BudgetConfWarning, match="gpt-test"):
        result = bridge.run(agent(chat), "add", budget)
    assert (result.stop_reason, result.turns) == ("max_cost", 3)
    assert result.usage.cost_usd == pytest.approx(0.003)
    assert result.usage.cost_source == "reported"


def test_a_cost_budget_holds_at_the_price_fields_and_refuses_a_model_with_no_price() -> None:
    fields = {"BUDGETCONF_PRICE_INPUT_PER_MTOK": "1000", "BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0"}
    budget = budgetconf.resolve(env={"BUDGETCONF_MAX_COST_USD": "0.025", **fields})
    with serving(calls(9)) as chat:
        result = bridge.run(agent(chat), "add", budget)
    assert (result.stop_reason, result.turns, result.usage.cost_source) == (
        "max_cost",
        3,
        "priced",
    )
    with serving(calls(9)) as chat:
        with pytest.raises(budgetconf.UsageError, match="gpt-test"):
            bridge.run(agent(chat), "add", env(max_cost_usd="0.01"))
        assert chat.received == []


def test_limits_carries_agnos_tool_call_limit_and_refuses_what_it_cannot() -> None:
    assert bridge.limits(env(max_tool_calls="4")) == {"tool_call_limit": 4}
    assert bridge.limits() == {}
    with pytest.raises(budgetconf.UsageError, match=r"loop\.max_steps = 3 .* through limits"):
        bridge.limits(env(max_steps="3"))


def test_an_agent_with_its_own_limit_at_the_budgets_value_runs_within_the_budget() -> None:
    tools = Tools()
    with serving(calls(9)) as chat:
        made = agent(chat, tools, **bridge.limits(env(max_tool_calls="2")))
        result = bridge.run(made, "add", env(max_tool_calls="2"))
    assert (result.stop_reason, tools.ran, made.tool_call_limit) == ("max_tool_calls", 2, 2)


def test_the_deadline_abandons_a_model_call_in_flight_run_or_awaited() -> None:
    """As the executor abandons a call it cannot cancel: the run ends at its deadline, not at
    the reply, agno's run cancelled with the message."""
    for bridged in (bridge.run, lambda *a: asyncio.run(bridge.arun(*a))):
        with serving(calls(9), delay=1.5) as chat:
            began = time.monotonic()
            result = bridged(agent(chat), "add", env(timeout_seconds="0.5"))
            took = time.monotonic() - began
        assert (result.stop_reason, result.turns) == ("timeout", 1)
        assert result.limit is not None
        assert result.limit["field"] == "limits.timeout_seconds"
        assert took < 1.3
        assert result.native.status == AgnoStatus.cancelled


def test_a_run_emits_the_executors_events_under_its_name_and_tools_see_it() -> None:
    seen: list[Any] = []
    events: list[dict[str, Any]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append(current_run())
        return a + b

    with serving([*calls(1), reply("done", usage=(10, 5))]) as chat:
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made = Agent(model=model, tools=[add], telemetry=False)
        result = bridge.run(made, "add", env(max_steps="5"), on_event=events.append, name="calc")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "stopped"
    assert "tool_executed" in kinds
    assert kinds.count("model_response") == 2
    assert events == result.events
    assert len(seen) == 1
    assert seen[0] is not None


def test_the_shared_ledger_is_drawn_on_before_each_model_call(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    budget = ledger_budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    with serving(calls(9, usage=(60, 40))) as chat:
        result = bridge.run(agent(chat), "add", budget)
    assert_stopped_before_the_third_call(result, url)
    # a stop before a model call is agno's cancellation, which it keeps in its session
    assert result.native.status == AgnoStatus.cancelled


def test_arun_awaits_async_tools_and_runs_one_responses_calls_at_once() -> None:
    running: list[int] = []
    most = [0]

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        running.append(a)
        most[0] = max(most[0], len(running))
        await asyncio.sleep(0.05)
        running.pop()
        return a + b

    with serving([*calls(1, each=3), *calls(9)]) as chat:
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made = Agent(model=model, tools=[add], telemetry=False)
        result = asyncio.run(bridge.arun(made, "add", env(max_steps="5", max_tool_calls="4")))
    assert (result.stop_reason, result.tool_calls_executed, most[0]) == ("max_tool_calls", 4, 3)


def test_one_agent_runs_one_bridged_run_at_a_time() -> None:
    refused: list[str] = []
    with serving([*calls(1), reply("done", usage=(10, 5))]) as chat:
        made: list[Agent] = []

        def add(a: int, b: int) -> int:
            """Add two integers."""
            try:
                bridge.run(made[0], "again")
            except budgetconf.UsageError as exc:
                refused.append(str(exc))
            return a + b

        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made.append(Agent(model=model, tools=[add], telemetry=False))
        bridge.run(made[0], "add", env(max_steps="5"))
    assert len(refused) == 1
    assert "in a bridged run already" in refused[0]


def test_explain_for_agno_names_what_enforces_each_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from budgetconf.cli import main

    assert main(["explain", "--for", "agno", "--max-tool-calls", "4"]) == 0
    said = capsys.readouterr().out
    assert "tool_call_limit" in said
    assert "budgetconf.integrations.agno" in said


def test_a_structured_answer_is_the_native_and_its_json_the_output() -> None:
    class Sum(BaseModel):
        total: int

    model = agno_model(
        [{"content": '{"total": 3}', "usage": {"prompt_tokens": 1, "completion_tokens": 1}}]
    )
    made = Agent(model=model, output_schema=Sum, telemetry=False)
    result = bridge.run(made, "add", env(max_steps="3"))
    assert result.native.content == Sum(total=3)
    assert json.loads(result.output) == {"total": 3}


def test_the_client_the_run_made_is_the_models_for_the_next_run() -> None:
    """As agno keeps the client its model makes at its first call: one client, run after run."""
    with serving(calls(9)) as chat:
        made = agent(chat)
        model = made.model
        assert isinstance(model, OpenAIChat)
        before = model.client
        bridge.run(made, "add", env(max_steps="1"))
        client = model.client
        bridge.run(made, "add", env(max_steps="1"))
        assert (before, model.client) == (None, client)
        assert client is not None


def test_an_agent_that_streams_by_default_runs_whole_through_run() -> None:
    with serving(calls(9)) as chat:
        result = bridge.run(agent(chat, stream=True), "add", env(max_steps="2"))
        awaited = asyncio.run(bridge.arun(agent(chat, stream=True), "add", env(max_steps="2")))
    for found in (result, awaited):
        assert (found.stop_reason, found.turns) == ("max_steps", 2)
        assert found.native.status == AgnoStatus.completed
