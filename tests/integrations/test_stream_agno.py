"""The agno bridge's `stream()`: agno's own events, as ``agent.run(stream=True)`` yields them,
and at their end the result `run()` gives; against the real agno, its model playing a script
(`budgetconf.testing.agno_model`) or on the loopback server, its telemetry off."""

from __future__ import annotations

from typing import Any

import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from agno.run.agent import RunCancelledEvent, RunCompletedEvent, RunContentEvent, RunOutput
from agno.run.base import RunStatus as AgnoStatus
from pydantic import BaseModel

import budgetconf
from budgetconf.integrations import agno as bridge
from budgetconf.integrations._stream import BridgeStream
from budgetconf.loop import RunStatus, StopReason, current_run
from budgetconf.testing import agno_model

from helpers.bridged import env, same_run
from helpers.chat_server import reply, serving

USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


@pytest.fixture(autouse=True)
def no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGNO_TELEMETRY", "false")


def step(n: int) -> dict[str, Any]:
    made = {"name": "add", "arguments": {"a": n, "b": 1}}
    return {"content": f"step {n}", "tool_calls": [made], "usage": USAGE}


ONCE = [step(1), {"content": "done", "usage": USAGE}]
ALWAYS = [step(1), step(2), step(3)]


def agent(script: list[dict[str, Any]], ran: list[int] | None = None) -> Agent:
    counted = [] if ran is None else ran

    def add(a: int, b: int) -> int:
        """Add two integers."""
        counted.append(a)
        return a + b

    return Agent(model=agno_model(script), tools=[add], telemetry=False)


def test_the_items_are_agnos_own_events_and_the_result_is_the_runs() -> None:
    streamed = bridge.stream(agent(ONCE), "add", env(max_steps="5"), stream_events=True)
    items = list(streamed)
    assert isinstance(items[-1], RunCompletedEvent)
    assert [i.content for i in items if isinstance(i, RunContentEvent) and i.content] == [
        "step 1",
        "done",
    ]
    assert not any(isinstance(i, RunOutput) for i in items)  # its run output is the native
    result = streamed.result
    assert isinstance(result.native, RunOutput)
    assert result.native.status == AgnoStatus.completed
    same_run(result, bridge.run(agent(ONCE), "add", env(max_steps="5")))
    assert (result.output, result.turns) == ("done", 2)


@pytest.mark.parametrize(
    ("budget", "reason", "agnos"),
    [
        (env(max_steps="2"), StopReason.MAX_STEPS, AgnoStatus.completed),
        (env(max_tokens="30"), StopReason.MAX_TOKENS, AgnoStatus.cancelled),
    ],
)
def test_a_stop_ends_the_stream_without_raising_with_the_runs_result(
    budget: budgetconf.Resolution, reason: StopReason, agnos: AgnoStatus
) -> None:
    """A stop after a response's calls is StopAgentRun's (agno completes its run); one before
    a model call agno's cancellation, which its stream says with its own event."""
    ran: list[int] = []
    streamed = bridge.stream(agent(ALWAYS, ran), "add", budget)
    items = list(streamed)
    result = streamed.result
    assert (result.status, result.stop_kind) == (RunStatus.TRUNCATED, reason)
    assert result.native.status == agnos
    assert any(isinstance(i, RunCancelledEvent) for i in items) == (agnos == AgnoStatus.cancelled)
    same_run(result, bridge.run(agent(ALWAYS), "add", budget))


def test_a_stream_over_loopback_http_streams_every_request_and_counts_its_usage() -> None:
    with serving([reply("step", calls=[("c", "add", {"a": 1, "b": 2})], usage=(10, 5))]) as chat:

        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test")
        made = Agent(model=model, tools=[add], telemetry=False)
        streamed = bridge.stream(made, "add", env(max_steps="2"))
        list(streamed)
        asked = [r.body.get("stream") for r in chat.received]
    assert asked == [True, True]
    assert (streamed.result.turns, streamed.result.usage.total_tokens) == (2, 30)


def test_a_tool_sees_the_streamed_run() -> None:
    seen: list[Any] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append(current_run())
        return a + b

    made = Agent(model=agno_model(ONCE), tools=[add], telemetry=False)
    streamed = bridge.stream(made, "add", env(max_steps="5"))
    list(streamed)
    assert len(seen) == 1
    assert seen[0] is not None


def test_a_model_that_fails_ends_the_stream_with_a_failed_result() -> None:
    with serving([]) as chat:  # no reply at all: every request is an error
        model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test", max_retries=0)
        streamed = bridge.stream(Agent(model=model, telemetry=False), "add", env(max_steps="3"))
        list(streamed)
    assert (streamed.result.status, streamed.result.stop_reason) == (RunStatus.FAILED, "error")


def test_a_process_leaving_mid_stream_records_the_failure_and_goes_on_leaving() -> None:
    events: list[dict[str, Any]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        raise SystemExit(2)

    made = Agent(model=agno_model(ALWAYS), tools=[add], telemetry=False)
    streamed = bridge.stream(made, "add", env(max_steps="5"), on_event=events.append)
    with pytest.raises(SystemExit):
        list(streamed)
    assert events[-1]["type"] == "stopped"
    assert events[-1]["stop_reason"] == "error"


@pytest.mark.parametrize("at", [1, 3])
def test_a_stream_closed_early_ends_the_run_cancelled_and_frees_the_agent(at: int) -> None:
    made = agent(ALWAYS)
    model = made.model
    streamed = bridge.stream(made, "add", env(max_steps="5"), stream_events=True)
    for n, _ in enumerate(streamed, 1):
        if n == at:
            break
    streamed.close()
    assert streamed.result.stop_reason == "cancelled"
    assert made.model is model
    assert bridge.run(made, "add", env(max_steps="1")).stop_reason == "max_steps"


def test_a_stream_closed_before_its_first_item_makes_no_call() -> None:
    made = agent(ALWAYS)
    with bridge.stream(made, "add", env(max_steps="5")) as streamed:
        pass
    assert (streamed.result.stop_reason, streamed.result.turns) == ("cancelled", 0)
    assert made.model is not None
    assert getattr(made.model, "calls", None) == 0


def test_the_callers_mistake_is_raised_from_the_stream_and_the_agent_is_free_after() -> None:
    class Wanted(BaseModel):
        x: int

    made = Agent(model=agno_model(ONCE), input_schema=Wanted, telemetry=False)
    with pytest.raises(ValueError, match="Failed to parse dict"):
        list(bridge.stream(made, {"y": 1}, env(max_steps="5")))
    assert bridge.run(made, {"x": 1}, env(max_steps="5")).stop_reason == "completed"


def test_a_second_stream_of_an_agent_in_one_is_refused_and_the_first_goes_on() -> None:
    made = agent(ONCE)
    first = bridge.stream(made, "add", env(max_steps="5"))
    next(iter(first))
    with pytest.raises(budgetconf.UsageError, match="in a bridged run already"):
        list(bridge.stream(made, "again", env(max_steps="5")))
    list(first)
    assert first.result.stop_reason == "completed"


def test_stream_refuses_what_run_refuses_and_its_own_keywords_before_any_call() -> None:
    made = agent(ONCE)
    for keywords, said in (
        ({"tool_call_limit": 2}, "tool_call_limit= would set agno"),
        ({"stream": True}, "stream=: stream"),
        ({"yield_run_output": True}, "yield_run_output="),
    ):
        with pytest.raises(budgetconf.UsageError, match=said):
            bridge.stream(made, "add", **keywords)
    assert getattr(made.model, "calls", None) == 0


def test_the_stream_is_a_bridge_stream_whose_result_waits_for_its_end() -> None:
    streamed = bridge.stream(agent(ONCE), "add", env(max_steps="5"))
    assert isinstance(streamed, BridgeStream)
    with pytest.raises(budgetconf.UsageError, match="has not ended"):
        _ = streamed.result
    list(streamed)
    assert streamed.result.framework == "agno"
