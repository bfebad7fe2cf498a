"""The openai-agents bridge's stream() and astream(), against the real framework: the
scripted model budgetconf.testing gives it, or its own chat-completions model on the real
openai client against a loopback server."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    AgentUpdatedStreamEvent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RawResponsesStreamEvent,
    RunConfig,
    RunItemStreamEvent,
    Runner,
    RunState,
    UserError,
    function_tool,
)
from openai import AsyncOpenAI

from budgetconf.errors import UsageError
from budgetconf.integrations import openai_agents
from budgetconf.testing import openai_agents_model

from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)
from helpers.bridged import env
from helpers.chat_server import serving
from helpers.conformance import asking, failing_at

ROOT = Path(__file__).resolve().parents[2]
ran: list[int] = []


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(a)
    return a + b


@function_tool
async def slow(a: int, b: int) -> int:
    """Add two numbers, slowly."""
    await asyncio.sleep(5)
    return a + b


CALL = {"name": "add", "arguments": {"a": 1, "b": 2}}
USAGE = {"prompt_tokens": 60, "completion_tokens": 40}
#: a tool on every turn
ALWAYS = {"responses": [{"content": "adding", "tool_calls": [CALL], "usage": USAGE}]}
#: a tool, then the answer
ONCE = {"responses": [ALWAYS["responses"][0], {"content": "3", "usage": USAGE}]}
#: a call of the slow tool on every turn
SLOW = {"responses": [{"tool_calls": [{**CALL, "name": "slow"}], "usage": USAGE}]}
EVENTS = (RawResponsesStreamEvent, RunItemStreamEvent, AgentUpdatedStreamEvent)


def agent(script: Any = ALWAYS, tool: Any = add) -> Agent[Any]:
    ran.clear()
    return Agent(name="calc", model=openai_agents_model(script), tools=[tool])


def ended(result: Any) -> tuple[Any, ...]:
    """What a stream's result and run()'s must share."""
    return (
        result.status,
        result.stop_reason,
        result.limit,
        result.message,
        result.turns,
        result.output,
        result.usage,
        [event["type"] for event in result.events],
    )


def kinds(events: list[Any]) -> list[str]:
    """Each event's kind: a raw event's type, a run item's name (an agent update's "")."""
    return [
        str(getattr(getattr(e, "data", None), "type", None) or getattr(e, "name", ""))
        for e in events
    ]


def test_the_items_are_the_frameworks_own_stream_events() -> None:
    """stream() yields what Runner.run_streamed's stream_events() yields for the same run."""

    async def own() -> list[Any]:
        streaming = Runner.run_streamed(agent(ONCE), "go")
        return [event async for event in streaming.stream_events()]

    theirs = asyncio.run(own())
    with openai_agents.stream(agent(ONCE), "go", env(max_steps="5")) as stream:
        ours = list(stream)
    assert all(isinstance(e, EVENTS) for e in ours)
    assert kinds(ours) == kinds(theirs)
    assert "response.completed" in kinds(ours)
    assert "tool_output" in kinds(ours)
    assert stream.result.status == "ok"
    assert stream.result.output == "3"
    assert ran == [1]


def test_a_step_stop_ends_the_stream_without_raising_with_runs_result() -> None:
    """The stream ends at the budget's stop; its result is run()'s for the same run."""
    budget = env(max_steps="3")
    stream = openai_agents.stream(agent(), "go", budget)
    with pytest.raises(UsageError, match="has not ended"):
        _ = stream.result
    items = list(stream)
    streamed = stream.result
    assert items
    assert streamed.native is not None
    assert (streamed.status, streamed.stop_reason, streamed.turns) == ("truncated", "max_steps", 3)
    assert ran == [1, 1]  # the last turn's call is answered as not executed
    assert list(stream) == []  # ended: nothing more
    assert ended(openai_agents.run(agent(), "go", budget)) == ended(streamed)
    assert repr(stream) == "<BridgeStream truncated>"


def test_astream_is_run_streamed_and_its_result_is_aruns() -> None:
    """astream() (run_streamed) is a sync call whose stream is iterated with async for."""
    assert openai_agents.run_streamed is openai_agents.astream
    budget = env(max_steps="2")

    async def both() -> tuple[Any, Any, list[Any]]:
        stream = openai_agents.run_streamed(agent(), "go", budget)
        items = [item async for item in stream]
        return stream.result, await openai_agents.arun(agent(), "go", budget), items

    streamed, awaited, items = asyncio.run(both())
    assert all(isinstance(e, EVENTS) for e in items)
    assert streamed.stop_reason == "max_steps"
    assert ended(streamed) == ended(awaited)


def test_a_streamed_request_asks_for_usage_and_a_token_budget_counts_it() -> None:
    """Each streamed chat completion asks for its usage (the caller's settings kept), so
    the token budget stops the stream where it stops run()."""
    budget = env(max_tokens="250")

    def model(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0)
        return OpenAIChatCompletionsModel(model="m", openai_client=client)

    config = RunConfig(model_settings=ModelSettings(temperature=0.25))
    with serving(asking()) as chat:
        calc = Agent(name="calc", model=model(chat.url), tools=[add])
        streamed = list(s := openai_agents.stream(calc, "go", budget, run_config=config))
        bodies = [r.body for r in chat.received]
    assert streamed
    assert all(b["stream"] is True for b in bodies)
    assert all(b["stream_options"] == {"include_usage": True} for b in bodies)
    assert all(b["temperature"] == 0.25 for b in bodies)
    assert config.model_settings == ModelSettings(temperature=0.25)  # the caller's, unchanged
    with serving(asking()) as chat:
        calc = Agent(name="calc", model=model(chat.url), tools=[add])
        run = openai_agents.run(calc, "go", budget, run_config=config)
    assert s.result.stop_reason == "max_tokens"
    assert s.result.usage.total_tokens == 300
    assert ended(s.result)[:5] == ended(run)[:5]


def test_the_deadline_cancels_the_streamed_run_and_ends_the_stream() -> None:
    """A tool running at the deadline is cancelled; the stream ends with the timeout stop."""
    started = time.monotonic()
    stream = openai_agents.stream(agent(SLOW, slow), "go", env(timeout_seconds="0.5"))
    items = list(stream)
    assert time.monotonic() - started < 4
    assert items
    assert stream.result.stop_reason == "timeout"
    assert stream.result.limit is not None
    assert stream.result.limit["field"] == "limits.timeout_seconds"


def test_the_deadline_ends_an_async_stream_too() -> None:
    async def streamed() -> Any:
        stream = openai_agents.astream(agent(SLOW, slow), "go", env(timeout_seconds="0.5"))
        async for _ in stream:
            pass
        return stream.result

    started = time.monotonic()
    assert asyncio.run(streamed()).stop_reason == "timeout"
    assert time.monotonic() - started < 4


def test_a_model_failure_is_a_failed_result_not_an_exception() -> None:
    """A model that fails after its first response ends the stream failed, as run() does."""
    with serving(failing_at(after=2)) as chat:
        client = AsyncOpenAI(base_url=chat.url, api_key="sk-test", max_retries=0)
        model = OpenAIChatCompletionsModel(model="m", openai_client=client)
        stream = openai_agents.stream(Agent(name="c", model=model, tools=[add]), "go")
        items = list(stream)
    assert items
    assert stream.result.status == "failed"
    assert stream.result.stop_reason == "error"
    assert isinstance(stream.result.native, Exception)


def test_a_callers_mistake_the_framework_reports_is_raised() -> None:
    """A UserError (here: an input filter that returns no ModelInputData) is raised."""
    wrong: Any = lambda data: "not model input"  # noqa: E731
    config = RunConfig(call_model_input_filter=wrong)
    stream = openai_agents.stream(agent(), "go", env(max_steps="3"), run_config=config)
    with pytest.raises(UserError, match="ModelInputData"):
        list(stream)


def test_closing_the_stream_cancels_the_run() -> None:
    """close() (or leaving the with block) ends the framework's run: cancelled."""
    with openai_agents.stream(agent(), "go", env(max_steps="10")) as stream:
        for n, _ in enumerate(stream):
            if n == 2:
                break
    assert stream.result.stop_reason == "cancelled"
    assert stream.result.turns == 1
    stream.close()  # ended: nothing more to close
    assert stream.result.stop_reason == "cancelled"
    unstarted = openai_agents.stream(agent(), "go", env(max_steps="10"))
    unstarted.close()
    assert unstarted.result.stop_reason == "cancelled"
    assert unstarted.result.turns == 0


def test_closing_an_async_stream_cancels_the_run() -> None:
    async def closed() -> Any:
        async with openai_agents.astream(agent(), "go", env(max_steps="10")) as stream:
            async for _ in stream:
                break
        return stream.result

    assert asyncio.run(closed()).stop_reason == "cancelled"
    assert ran == []


def test_the_refusals_are_runs() -> None:
    """stream() refuses what run() refuses, at the call; run(stream=True) names stream()."""
    budget = env(max_steps="3")
    with pytest.raises(UsageError, match="max_turns"):
        openai_agents.stream(agent(), "go", budget, max_turns=5)
    with pytest.raises(UsageError, match="max_turns"):
        openai_agents.astream(agent(), "go", budget, max_turns=5)
    state: Any = object.__new__(RunState)
    state._max_turns = 4
    with pytest.raises(UsageError, match="RunState"):
        openai_agents.stream(agent(), state, budget)
    with pytest.raises(UsageError, match="expected an openai-agents Agent"):
        openai_agents.stream(object(), "go", budget)
    with pytest.raises(UsageError, match=r"call stream\(\)"):
        openai_agents.run(agent(), "go", budget, stream=True)
    with pytest.raises(UsageError, match=r"call stream\(\)"):
        asyncio.run(openai_agents.arun(agent(), "go", budget, stream=True))


def test_a_sync_stream_in_async_code_is_refused_and_names_astream() -> None:
    async def inside() -> None:
        openai_agents.stream(agent(), "go", env(max_steps="3"))

    with pytest.raises(UsageError, match="astream"):
        asyncio.run(inside())
    with pytest.raises(UsageError, match="async for"):
        iter(openai_agents.astream(agent(), "go", env(max_steps="3")))


def test_streams_on_two_threads_run_apart() -> None:
    """Each thread's stream runs on that thread's default loop."""
    results: list[Any] = []

    def one() -> None:
        stream = openai_agents.stream(agent(), "go", env(max_steps="2"))
        list(stream)
        results.append(stream.result.stop_reason)
        asyncio.get_event_loop_policy().get_event_loop().close()

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["max_steps", "max_steps"]


def test_the_bench_measures_run_and_stream() -> None:
    """bench/bridge_openai_agents.py runs (quick): rows and streamed rows; times not judged."""
    path = ROOT / "bench" / "bridge_openai_agents.py"
    spec = importlib.util.spec_from_file_location("bench_bridge_openai_agents", path)
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = {**bench.rows(quick=True), **bench.streamed_rows(quick=True)}
    assert len(rows) == 6
    assert all(name.startswith("openai_agents") for name in rows)
    assert [name for name in rows if ", streamed:" in name] == list(bench.STREAMED_NAMES)
