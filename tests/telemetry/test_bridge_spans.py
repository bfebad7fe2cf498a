"""Every bridge puts its run on the trace as the executor does (docs/telemetry.md): through
each framework's real OpenAI client and one loopback server, the same spans, attributes,
span events and metrics as the executor's in the scenarios of the conformance suite."""

from __future__ import annotations

import warnings
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from budgetconf import BudgetConfWarning

from .conftest import Traced
from helpers.chat_server import serving
from helpers.conformance import (
    DIFFERENCES,
    DRIVERS,
    MODEL,
    REFUSALS,
    SCENARIOS,
    Adder,
    Scenario,
    executor,
    register_every_driver,
)

register_every_driver()
if find_spec("agents") is not None:  # its runs leave a loop and tracing to put back
    from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)

#: the scenarios whose traces differ in kind: a tool, a step stop, calls over the per-turn
#: cap, a failed run, a ledger's maximum, calls past a tool's own limit, a stop for no
#: progress, a budget warning
TRACED = (
    "a tool once, then an answer",
    "always a tool",
    "three calls a response, two allowed",
    "server errors from the second",
    "100 tokens a reply, a ledger's maximum",
    "add three times allowed, the model asks six times",
    "the same call, the same answer every turn under max_repeats = 3",
    "warned at 60 % of the steps, and told",
)
#: what differs from run to run: the ids
IDS = {"budgetconf.run.id", "gen_ai.conversation.id", "gen_ai.tool.call.id"}
Attributes = dict[str, Any]


def _no_cap(attributes: Attributes) -> Attributes:
    cap = "budgetconf.limit.max_tool_calls_per_turn"
    return {k: v for k, v in attributes.items() if k not in (cap, f"{cap}.source")}


def _asked_model(attributes: Attributes) -> Attributes:
    if "gen_ai.response.model" in attributes:
        return {**attributes, "gen_ai.response.model": attributes["gen_ai.request.model"]}
    return attributes


def _no_response_model(attributes: Attributes) -> Attributes:
    return {k: v for k, v in attributes.items() if k != "gen_ai.response.model"}


def _answer_tool(attributes: Attributes) -> Attributes:
    if attributes.get("gen_ai.response.finish_reasons") == ("stop",):
        return {**attributes, "gen_ai.response.finish_reasons": ("tool_calls",)}
    return attributes


#: driver -> what its trace says where the executor's says otherwise, for the framework's
#: reason docs/telemetry.md gives
DIFFERS = {
    # a graph without middleware() enforces no per-turn cap: none is in force
    "langgraph": _no_cap,
    "langgraph, streamed": _no_cap,
    # its ModelResponse does not carry the model the completion names, streamed or not
    "openai_agents": _asked_model,
    "openai_agents, streamed": _asked_model,
    # its final answer is a call of its final_answer tool
    "smolagents": _answer_tool,
    # its stream's deltas do not carry the model the completion names
    "smolagents, streamed": _asked_model,
    # its response keeps no model name, streamed or not
    "agno": _asked_model,
    "agno, streamed": _asked_model,
    # its report of a finished call names no model at all
    "crewai": _no_response_model,
    "crewai, streamed": _no_response_model,
}


def _attributes(attributes: Any, adjust: Any = None) -> tuple[tuple[str, Any], ...]:
    found = {k: v for k, v in dict(attributes or {}).items() if k not in IDS}
    return tuple(sorted((adjust(found) if adjust else found).items()))


def outline(spans: tuple[ReadableSpan, ...], adjust: Any = None) -> list[tuple[Any, ...]]:
    """Each span by its name, its parent's, kind, status, attributes and events, in order;
    ``adjust`` turns the attributes of each span into what a bridge's trace says."""
    names = {span.context.span_id: span.name for span in spans if span.context is not None}
    return sorted(
        (
            span.name,
            None if span.parent is None else names.get(span.parent.span_id),
            span.kind.name,
            span.status.status_code.name,
            _attributes(span.attributes, adjust),
            tuple((e.name, _attributes(e.attributes)) for e in span.events),
        )
        for span in spans
    )


def measured(traced: Traced) -> dict[str, list[tuple[Any, ...]]]:
    """Each metric's points by their attributes and value (a sum's, or a histogram's sum)."""
    return {
        name: sorted(
            (_attributes(p.attributes), getattr(p, "value", None), getattr(p, "sum", None))
            for p in points
        )
        for name, points in traced.metrics().items()
    }


def traced_run(
    scenario: Scenario, drive: Any, traced: Traced, tmp_path: Path, adjust: Any = None
) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    on = replace(scenario, env={**scenario.env, "BUDGETCONF_OTEL": "true"})
    tmp_path.mkdir()
    with (
        serving(on.respond, delay=on.delay) as chat,
        warnings.catch_warnings(),  # a budget warning's, which the conformance suite checks
    ):
        warnings.simplefilter("ignore", BudgetConfWarning)
        drive(chat.url, on.budget(tmp_path), Adder(), on.model)
    # the run's span was current in the caller's context, and is no more: a run that ended
    # inside its framework (a hook that decided the stop) gave the context back as it returned
    assert not trace.get_current_span().get_span_context().is_valid
    return outline(traced.spans(), adjust), measured(traced)


@pytest.mark.parametrize("name", sorted(DRIVERS))
@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if s.name in TRACED], ids=lambda s: s.name
)
def test_a_bridged_run_is_traced_as_the_executor_traces_it(
    name: str, scenario: Scenario, traced: Traced, tmp_path: Path
) -> None:
    if scenario.name in REFUSALS[name] or scenario.name in DIFFERENCES[name]:
        pytest.skip(f"{name} does otherwise here, as docs/frameworks.md says")
    expected = traced_run(scenario, executor, traced, tmp_path / "executor", DIFFERS.get(name))
    traced.clear()
    assert traced_run(scenario, DRIVERS[name], traced, tmp_path / name) == expected
    spans, _ = expected
    assert {s[0] for s in spans} >= {"invoke_agent budgetconf", f"chat {MODEL}"}


def test_a_bridged_run_named_by_its_caller_names_its_span(traced: Traced) -> None:
    """run(..., name=...) names the span, as LoopExecutor(name=...) does."""
    pytest.importorskip("langgraph", reason="the bridge it names runs LangGraph")
    from budgetconf import resolve
    from budgetconf.integrations import langgraph

    from helpers.conformance import once
    from helpers.conformance_langgraph import _agent

    res = resolve(env={"BUDGETCONF_OTEL": "true"})
    with serving(once) as chat:
        agent = _agent(chat.url, Adder(), [], MODEL)
        langgraph.run(agent, {"messages": [{"role": "user", "content": "Add."}]}, res, name="adder")
    (run,) = [s for s in traced.spans() if s.name.startswith("invoke_agent")]
    assert run.name == "invoke_agent adder"
    assert (run.attributes or {})["gen_ai.agent.name"] == "adder"
