"""The smolagents bridge's stream() against the real smolagents, offline: on
`budgetconf.testing.smolagents_model`, on models of its own kind that fail, and over
loopback HTTP with smolagents' own OpenAI client."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from smolagents import Model, OpenAIServerModel, ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.memory import ActionStep, FinalAnswerStep  # type: ignore[import-untyped]
from smolagents.memory import ToolCall as StepToolCall
from smolagents.models import ChatMessageStreamDelta  # type: ignore[import-untyped]
from smolagents.monitoring import LogLevel  # type: ignore[import-untyped]
from smolagents.utils import AgentError, AgentGenerationError  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations import BridgeStream
from budgetconf.integrations.smolagents import run, stream
from budgetconf.loop import RunStatus, StopReason
from budgetconf.testing import LoopbackServer, smolagents_model

from helpers.bridged import env, same_run

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


USAGE = {"prompt_tokens": 10, "completion_tokens": 5}
ADDS = {"content": "adding", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}
ANSWER = {"content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": "3"}}]}
#: a call of ``add`` on every response, 15 tokens each
LOOPING = [{**ADDS, "usage": USAGE}]
#: ``add`` once, then the answer
ONCE = [{**ADDS, "usage": USAGE}, {**ANSWER, "usage": USAGE}]


def agent(model: Any, **options: Any) -> ToolCallingAgent:
    return ToolCallingAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF, **options)


@pytest.mark.parametrize("outputs", [False, True], ids=["generate", "generate_stream"])
def test_the_items_are_smolagents_own_and_the_result_is_the_runs(outputs: bool) -> None:
    """What agent.run(stream=True) yields on the same script, and then run()'s result."""
    own = list(agent(smolagents_model(ONCE), stream_outputs=outputs).run("go", stream=True))
    RAN.clear()
    ag = agent(smolagents_model(ONCE), stream_outputs=outputs)
    streamed = stream(ag, "go", env(max_steps="5"))
    items = list(streamed)
    assert [type(i) for i in items] == [type(i) for i in own]
    assert (ChatMessageStreamDelta in map(type, items)) is outputs
    assert isinstance(items[-1], FinalAnswerStep)
    result = streamed.result
    assert (result.status, result.stop_reason, result.output, result.turns) == (
        RunStatus.OK,
        "completed",
        "3",
        2,
    )
    assert result.native is items[-1]  # smolagents' own end of its stream
    assert RAN == [(1, 2)]
    RAN.clear()
    same_run(
        result, run(agent(smolagents_model(ONCE), stream_outputs=outputs), "go", env(max_steps="5"))
    )


@pytest.mark.parametrize(
    ("budget", "stop", "turns", "ran"),
    [
        ({"max_steps": "3"}, "max_steps", 3, 2),
        ({"max_tokens": "30"}, "max_tokens", 2, 2),
        ({"max_tool_calls": "1", "max_steps": "5"}, "max_tool_calls", 2, 1),
    ],
)
@pytest.mark.parametrize("outputs", [False, True], ids=["generate", "generate_stream"])
def test_a_stop_ends_the_stream_without_raising_with_the_runs_result(
    budget: dict[str, str], stop: str, turns: int, ran: int, outputs: bool
) -> None:
    model = smolagents_model(LOOPING)
    ag = agent(model, stream_outputs=outputs)
    own = ag.model, ag.tools, ag.max_steps
    streamed = stream(ag, "go", env(**budget))
    items = list(streamed)  # no exception: the stop is the result
    assert isinstance(items[-1], ActionStep)
    result = streamed.result
    assert (result.status, result.stop_reason, result.turns, result.native) == (
        RunStatus.TRUNCATED,
        stop,
        turns,
        None,
    )
    assert (len(RAN), model.calls) == (ran, turns)
    assert (ag.model, ag.tools, ag.max_steps) == own
    RAN.clear()
    same_run(
        result, run(agent(smolagents_model(LOOPING), stream_outputs=outputs), "go", env(**budget))
    )
    assert len(RAN) == ran


def test_a_stream_over_loopback_http_streams_every_request_and_counts_its_usage() -> None:
    """smolagents' own OpenAI client, streaming: it asks for the usage chunk of each stream."""
    with LoopbackServer(LOOPING) as server:
        chat = OpenAIServerModel(model_id="scripted", api_base=server.url, api_key="sk-test")
        streamed = stream(agent(chat, stream_outputs=True), "go", env(max_steps="3"))
        items = list(streamed)
        bodies = list(server.received)
    assert [(b["stream"], b["stream_options"]) for b in bodies] == [
        (True, {"include_usage": True})
    ] * 3
    assert sum(isinstance(i, StepToolCall) for i in items) == 3
    result = streamed.result
    assert (result.stop_reason, result.turns, len(RAN)) == ("max_steps", 3, 2)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 15)


def test_the_deadline_stops_the_stream_before_the_next_call() -> None:
    @tool  # type: ignore[untyped-decorator]
    def wait() -> str:
        """Take a while."""
        time.sleep(0.4)
        return "waited"

    waits: dict[str, Any] = {"content": "", "tool_calls": [{"name": "wait", "arguments": {}}]}
    script = [waits, *LOOPING]
    model = smolagents_model(script)
    ag = ToolCallingAgent(tools=[wait, add], model=model, verbosity_level=LogLevel.OFF)
    streamed = stream(ag, "go", env(timeout_seconds="0.3"))
    list(streamed)
    result = streamed.result
    assert (result.stop_reason, result.turns, model.calls) == ("timeout", 1, 1)
    assert result.message.startswith("stopped: hit timeout_seconds (0.3)")


class Failing(Model):  # type: ignore[misc]
    """A model of smolagents' kind whose second call raises ``error``; its first asks for add."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(model_id="failing")
        self.script = smolagents_model(LOOPING)
        self.error = error
        self.calls = 0

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 2:
            raise self.error
        return self.script.generate(messages, *args, **kwargs)


def test_a_model_that_fails_ends_the_stream_with_a_failed_result() -> None:
    ag = agent(Failing(RuntimeError("the model is down")))
    streamed = stream(ag, "go", env(max_steps="3"))
    list(streamed)
    result = streamed.result
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert result.message == "failed: RuntimeError: the model is down (turn 2)"
    assert isinstance(result.native, AgentGenerationError)
    assert RAN == [(1, 2)]


def test_ctrl_c_in_the_stream_ends_it_cancelled_as_the_run_is() -> None:
    ag = agent(Failing(KeyboardInterrupt()))
    streamed = stream(ag, "go", env(max_steps="3"))
    list(streamed)
    result = streamed.result
    assert (result.stop_kind, result.turns) == (StopReason.CANCELLED, 2)
    assert isinstance(result.native, KeyboardInterrupt)


def test_a_process_leaving_mid_stream_records_the_failure_and_goes_on_leaving() -> None:
    seen: list[dict[str, Any]] = []
    model = Failing(SystemExit(3))
    ag = agent(model)
    with pytest.raises(SystemExit):
        list(stream(ag, "go", env(max_steps="3"), on_event=seen.append))
    (stopped,) = [e for e in seen if e["type"] == "stopped"]
    assert (stopped["status"], stopped["stop_reason"]) == ("failed", "error")
    assert ag.model is model


def test_an_interrupt_of_the_callers_own_ends_the_stream_cancelled() -> None:
    def stop(step: ActionStep, agent: ToolCallingAgent) -> None:
        agent.interrupt()

    streamed = stream(
        agent(smolagents_model(LOOPING), step_callbacks=[stop]), "go", env(max_steps="5")
    )
    list(streamed)
    result = streamed.result
    assert (result.stop_kind, result.message) == (StopReason.CANCELLED, "cancelled on turn 1")
    assert isinstance(result.native, AgentError)


def test_the_callers_mistake_is_raised_from_the_stream_and_the_agent_is_free_after() -> None:
    """smolagents refuses additional_args that are no mapping before any model call."""
    model = smolagents_model(ONCE)
    ag = agent(model)
    with pytest.raises(TypeError):
        list(stream(ag, "go", env(max_steps="3"), additional_args=5))
    assert model.calls == 0
    assert run(ag, "go", env(max_steps="3")).stop_reason == "completed"


@pytest.mark.parametrize("at", [1, 2, 4], ids=["a tool call", "its output", "a step"])
def test_a_stream_closed_early_closes_smolagents_and_ends_the_run_cancelled(at: int) -> None:
    model = smolagents_model(LOOPING)
    ag = agent(model)
    own = ag.model, ag.tools, ag.max_steps
    seen: list[dict[str, Any]] = []
    with stream(ag, "go", env(max_steps="5"), on_event=seen.append) as streamed:
        for n, _ in enumerate(streamed, 1):
            if n == at:
                break
    result = streamed.result
    assert (result.status, result.stop_kind, result.turns) == (
        RunStatus.FAILED,
        StopReason.CANCELLED,
        1,
    )
    assert (seen[-1]["type"], seen[-1]["stop_reason"]) == ("stopped", "cancelled")
    assert (ag.model, ag.tools, ag.max_steps, model.calls) == (*own, 1)
    assert run(ag, "go", env(max_steps="2")).turns == 2  # free once it was closed


def test_a_stream_closed_before_its_first_item_makes_no_call() -> None:
    model = smolagents_model(LOOPING)
    streamed = stream(agent(model), "go", env(max_steps="3"))
    streamed.close()
    assert (streamed.result.stop_kind, streamed.result.turns, model.calls) == (
        StopReason.CANCELLED,
        0,
        0,
    )


def test_a_second_stream_of_an_agent_in_one_is_refused_and_the_first_goes_on() -> None:
    ag = agent(smolagents_model(LOOPING))
    first = stream(ag, "go", env(max_steps="3"))
    next(first)
    second = stream(ag, "again", env(max_steps="3"))
    with pytest.raises(budgetconf.UsageError, match="is in a bridged run already"):
        next(second)
    list(first)
    assert first.result.turns == 3


@pytest.mark.parametrize(
    ("keywords", "error", "match"),
    [
        ({"max_steps": 3}, budgetconf.UsageError, "^max_steps="),
        ({"stream": True}, budgetconf.UsageError, r"^stream=: stream\(\) streams"),
        ({"image": None}, budgetconf.UsageTypeError, r"^agent\.run: got an unexpected keyword"),
    ],
)
def test_stream_refuses_what_run_refuses_before_any_call(
    keywords: dict[str, Any], error: type[Exception], match: str
) -> None:
    model = smolagents_model(LOOPING)
    with pytest.raises(error, match=match):
        stream(agent(model), "go", env(max_steps="3"), **keywords)
    assert model.calls == 0


def test_stream_refuses_a_budget_it_cannot_see_spent() -> None:
    helper = agent(smolagents_model(LOOPING), name="helper", description="helps")
    boss = ToolCallingAgent(
        tools=[add],
        model=smolagents_model(LOOPING),
        managed_agents=[helper],
        verbosity_level=LogLevel.OFF,
    )
    with pytest.raises(budgetconf.UsageError, match=r"the managed agents \(helper\)"):
        stream(boss, "go", env(max_steps="3"))
    with pytest.raises(budgetconf.UsageTypeError, match="expected a smolagents agent"):
        stream(object(), "go", env(max_steps="3"))


def test_run_refuses_stream_true_and_names_stream() -> None:
    with pytest.raises(budgetconf.UsageError, match=r"call stream\(\)"):
        run(agent(smolagents_model(LOOPING)), "go", env(max_steps="3"), stream=True)


def test_the_stream_is_a_bridge_stream_whose_result_waits_for_its_end() -> None:
    streamed = stream(agent(smolagents_model(LOOPING)), "go", env(max_steps="2"))
    assert isinstance(streamed, BridgeStream)
    with pytest.raises(budgetconf.UsageError, match="has not ended"):
        _ = streamed.result
    streamed.close()


def test_streams_of_two_agents_run_on_threads_at_once() -> None:
    results: list[Any] = []

    def drain() -> None:
        streamed = stream(agent(smolagents_model(LOOPING)), "go", env(max_steps="3"))
        list(streamed)
        results.append(streamed.result.turns)

    threads = [threading.Thread(target=drain) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [3, 3]
