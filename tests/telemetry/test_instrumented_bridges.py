"""A bridged run whose framework an OpenInference instrumentation traces is one trace: the
framework's spans sit under budgetconf's run span, and budgetconf adds no chat or
execute_tool span of its own, so no model call is on the trace twice (docs/telemetry.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import budgetconf
from budgetconf.integrations.openai_agents import run as run_agent

from .conftest import Traced
from helpers.agents_double import _default_loop_closed  # noqa: F401  (a fixture)
from helpers.chat_server import serving
from helpers.conformance import DRIVERS, KEY, MODEL, Adder, asking
from helpers.conformance_langgraph import with_middleware  # registers the driver

#: always a tool, three steps: three model calls, two tool runs
BUDGET = {"BUDGETCONF_OTEL": "true", "BUDGETCONF_MAX_STEPS": "3"}
#: OpenInference's attribute naming a span's kind
KIND = "openinference.span.kind"


def _instrumented(instrumentor: Any) -> Iterator[None]:
    instrumentor.instrument(tracer_provider=trace.get_tracer_provider())
    try:
        yield
    finally:
        instrumentor.uninstrument()


@pytest.fixture
def openai_agents_traced() -> Iterator[None]:
    """OpenInference's processor in place of the SDK's (it displaces them while active)."""
    from agents import set_tracing_disabled
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_tracing_disabled(False)
    yield from _instrumented(OpenAIAgentsInstrumentor())
    set_tracing_disabled(True)


@pytest.fixture
def langchain_traced() -> Iterator[None]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    yield from _instrumented(LangChainInstrumentor())


def one_trace(spans: tuple[ReadableSpan, ...]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    """The run span, and the framework's spans, each shown to descend from it in one trace."""
    runs = [s for s in spans if getattr(s.instrumentation_scope, "name", None) == "budgetconf"]
    assert [s.name for s in runs] == ["invoke_agent budgetconf"]  # no chat or tool span of ours
    (run,) = runs
    assert run.parent is None
    assert len({s.context.trace_id for s in spans}) == 1
    by_id = {s.context.span_id: s for s in spans}
    framework = [s for s in spans if s is not run]
    for span in framework:
        parent = span.parent
        while parent is not None and parent.span_id != run.context.span_id:
            parent = by_id[parent.span_id].parent
        assert parent is not None, f"{span.name} is not under the run span"
    return run, framework


def kinds(spans: list[ReadableSpan]) -> list[str]:
    return sorted(
        str((s.attributes or {}).get(KIND)) for s in spans if KIND in (s.attributes or {})
    )


def test_an_openai_agents_run_traced_by_openinference_is_one_trace(
    traced: Traced, openai_agents_traced: None
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    adder = Adder()

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    with serving(asking()) as chat:
        client = AsyncOpenAI(base_url=chat.url, api_key=KEY, max_retries=0)
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
        result = run_agent(
            Agent(name="adder", model=model, tools=[add]), "Add.", budgetconf.resolve(env=BUDGET)
        )
        requests = len(chat.received)
    assert (result.stop_reason, requests, adder.runs) == ("max_steps", 3, 2)
    run, framework = one_trace(traced.spans())
    assert kinds(framework).count("LLM") == requests  # each model call once
    # a call answered as not executed is the framework's call all the same: a tool span
    assert kinds(framework).count("TOOL") == adder.runs + 1
    assert [e.name for e in run.events].count("budgetconf.tool_call_refused") == 1
    assert (run.attributes or {})["budgetconf.stop.field"] == "loop.max_steps"


def test_a_langgraph_run_traced_by_openinference_is_one_trace(
    traced: Traced, langchain_traced: None, tmp_path: Any
) -> None:
    adder = Adder()
    with serving(asking()) as chat:
        result = DRIVERS["langgraph_middleware"](
            chat.url, budgetconf.resolve(env=BUDGET), adder, MODEL
        )
        requests = len(chat.received)
    assert (result.stop_reason, requests, adder.runs) == ("max_steps", 3, 2)
    run, framework = one_trace(traced.spans())
    assert kinds(framework).count("LLM") == requests
    assert kinds(framework).count("TOOL") == adder.runs
    assert (run.attributes or {})["budgetconf.used.steps"] == 3


def test_without_the_instrumentation_the_bridge_traces_the_calls_itself(traced: Traced) -> None:
    """The same run uninstrumented: budgetconf's own chat and execute_tool spans."""
    adder = Adder()
    with serving(asking()) as chat:
        with_middleware(chat.url, budgetconf.resolve(env=BUDGET), adder, MODEL)
    names = sorted(s.name for s in traced.spans())
    assert names == [f"chat {MODEL}"] * 3 + ["execute_tool add"] * 2 + ["invoke_agent budgetconf"]


def pydantic_ai_agent(url: str, adder: Adder, *, instrument: bool, wrap: bool) -> Any:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentedModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
    chat: Any = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agent = Agent(InstrumentedModel(chat) if wrap else chat, name="adder")
    if instrument:
        agent.instrument = True

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    return agent


@pytest.mark.parametrize(
    ("instrument", "wrap"), [(True, False), (False, True)], ids=["instrument", "InstrumentedModel"]
)
def test_a_pydantic_ai_run_that_traces_itself_is_one_trace(
    traced: Traced, instrument: bool, wrap: bool
) -> None:
    """pydantic-ai's own instrumentation (agent.instrument, or an InstrumentedModel) makes its
    chat and execute_tool spans: budgetconf's run span holds them, and adds none of its own."""
    from budgetconf.integrations import pydantic_ai

    adder = Adder()
    with serving(asking()) as chat:
        agent = pydantic_ai_agent(chat.url, adder, instrument=instrument, wrap=wrap)
        result = pydantic_ai.run(agent, "Add.", budgetconf.resolve(env=BUDGET))
        requests = len(chat.received)
    assert (result.stop_reason, requests, adder.runs) == ("max_steps", 3, 2)
    _, framework = one_trace(traced.spans())
    chats = [s for s in framework if s.name == f"chat {MODEL}"]
    # the model calls made, each once; and the call the step budget stopped, which pydantic-ai
    # began and budgetconf ended before its request (an error span, with no usage)
    assert [s.status.status_code for s in chats] == [StatusCode.UNSET] * requests + [
        StatusCode.ERROR
    ]
    # each call of the responses, the one answered as not executed too
    assert [s.name for s in framework].count("execute_tool add") == adder.runs + 1


def test_a_child_carved_in_a_traced_run_is_under_the_frameworks_tool_span(traced: Traced) -> None:
    """With pydantic-ai tracing its own calls, a sub-agent's run span sits under pydantic-ai's
    execute_tool span, in the same trace."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from budgetconf.integrations import pydantic_ai
    from budgetconf.loop import LoopExecutor, ScriptedModel, current_run

    def lead(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("spawn", {}, "s1")])
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(lead), name="lead")
    agent.instrument = True

    @agent.tool_plain
    def spawn() -> str:
        """Run a sub-agent."""
        handle = current_run()
        assert handle is not None
        child = LoopExecutor(
            ScriptedModel([{"content": "done"}]), budget=handle.carve(), name="child"
        )
        return child.run("go").output

    result = pydantic_ai.run(agent, "Go.", budgetconf.resolve(env=BUDGET))
    assert result.status.value == "ok"
    spans = traced.spans()
    (child,) = [s for s in spans if s.name == "invoke_agent child"]
    (tool,) = [s for s in spans if s.name == "execute_tool spawn"]
    assert child.parent is not None
    assert child.parent.span_id == tool.context.span_id
    assert getattr(tool.instrumentation_scope, "name", None) == "pydantic-ai"
