"""The LangGraph bridge against the real framework, offline, with langchain-core's fake model."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError, InvalidUpdateError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import budgetconf
from budgetconf.integrations.langgraph import arun, limits, middleware, run
from budgetconf.loop import Budget, RunStatus, current_run

from conftest import Place

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
RAN: list[int] = []  # the add tool's calls, in order


class ToolFake(GenericFakeChatModel):
    """The stock fake, able to be bound to tools (the stock one raises there)."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self


class SlowFake(ToolFake):
    """A fake whose every call takes a while: sync calls finish, async ones can be cancelled."""

    delay: float = 0.0

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay)
        return super()._generate(*args, **kwargs)


class Broken(ToolFake):
    """A model whose every call fails."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise LookupError("model broke")


@tool
def add(a: int, b: int) -> int:
    """Add two ints."""
    RAN.append(a)
    return a + b


def call(i: int, calls: int = 1) -> AIMessage:
    return AIMessage(
        content=f"step {i}",
        tool_calls=[
            {"name": "add", "args": {"a": i, "b": 1}, "id": f"c{i}_{j}"} for j in range(calls)
        ],
        usage_metadata=USAGE,
    )


class Script:
    """Responses made on demand, counted: ``finals`` tool-call turns, then an answer (or none)."""

    def __init__(self, turns: int | None = None, calls: int = 1) -> None:
        self.made = 0
        self.turns, self.calls = turns, calls

    def __iter__(self) -> Iterator[AIMessage]:
        while True:
            self.made += 1
            if self.turns is not None and self.made > self.turns:
                yield AIMessage(content="done", usage_metadata=USAGE)
            else:
                yield call(self.made, self.calls)


def graph(model: ToolFake, checkpointer: Any = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent-tools loop: two graph steps per turn."""
    bound = model.bind_tools([add])
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [bound.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def async_graph(model: ToolFake) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The same loop with an async model node, which a deadline can cancel."""
    bound = model.bind_tools([add])

    async def agent(state: Any) -> Any:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def scripted(turns: int | None = None, calls: int = 1) -> tuple[Script, ToolFake]:
    RAN.clear()
    script = Script(turns, calls)
    return script, ToolFake(messages=iter(script))


def hi() -> dict[str, Any]:
    return {"messages": [HumanMessage("hi")]}


def env(**values: str) -> dict[str, Any]:
    return {"env": {f"BUDGETCONF_{k.upper()}": v for k, v in values.items()}}


def budget(**values: str) -> budgetconf.Resolution:
    return budgetconf.resolve(**env(**values))


def test_a_step_stop_has_its_provenance_and_the_exact_number_of_model_calls() -> None:
    """max_steps = 3 on a graph without middleware(): three model calls, the tools of the first
    two run and the stream ends before the third's tools node, as the executor's last turn."""
    script, model = scripted()
    result = run(graph(model), hi(), budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.framework) == (
        RunStatus.TRUNCATED,
        "max_steps",
        "langgraph",
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS;"
        " raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit is not None
    assert result.limit["locator"] == "env:BUDGETCONF_MAX_STEPS"
    assert (result.turns, script.made, RAN) == (3, 3, [1, 2])  # the last turn's did not run
    assert result.output == "step 3"  # kept from the last streamed state
    assert isinstance(result.native, dict)  # the last state: its last message is the response
    assert result.native["messages"][-1].content == "step 3"
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert (refused["turn"], refused["ids"]) == (3, ["c3_0"])


def test_a_run_that_ends_by_itself_is_completed_with_its_answer() -> None:
    script, model = scripted(turns=2)
    result = run(graph(model), hi(), budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.output) == (RunStatus.OK, "completed", "done")
    assert (result.message, result.turns, result.limit, script.made) == (
        "completed in 3 turns",
        3,
        None,
        3,
    )
    assert isinstance(result.native, dict)
    assert result.native["messages"][-1].content == "done"


def test_a_final_answer_on_the_last_turn_completes() -> None:
    _, model = scripted(turns=1)
    result = run(graph(model), hi(), budget(max_steps="2"))
    assert (result.stop_reason, result.turns, result.message) == (
        "completed",
        2,
        "completed in 2 turns",
    )


def test_the_recursion_limit_the_bridge_set_is_a_step_stop() -> None:
    """steps_per_turn too small for the graph: its own limit fires first, and is the budget's."""
    script, model = scripted()
    result = run(graph(model), hi(), budget(max_steps="3"), steps_per_turn=1)
    assert isinstance(result.native, GraphRecursionError)
    assert (result.stop_reason, result.turns, script.made) == ("max_steps", 2, 2)
    assert result.output == "step 2"


def test_a_response_whose_calls_pass_the_tool_budget_stops_before_they_run() -> None:
    script, model = scripted(calls=2)
    result = run(graph(model), hi(), budget(max_tool_calls="3"))
    assert (result.stop_reason, result.turns, script.made) == ("max_tool_calls", 2, 2)
    assert RAN == [1, 1]  # the second response's two calls would make 4: none ran
    assert result.message.startswith("stopped: hit max_tool_calls (3): limits.max_tool_calls = 3")


def test_the_token_budget_stops_before_a_call_once_reached_and_after_a_response_over_it() -> None:
    script, model = scripted()
    reached = run(graph(model), hi(), budget(max_tokens="30"))
    assert (reached.stop_reason, reached.turns, script.made, RAN) == ("max_tokens", 2, 2, [1, 2])
    script, model = scripted()
    over = run(graph(model), hi(), budget(max_tokens="20"))
    assert (over.stop_reason, over.turns, script.made, RAN) == ("max_tokens", 2, 2, [1])


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run() -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: failed, before the response's tools."""
    RAN.clear()
    huge = call(1)
    huge.usage_metadata = {
        "input_tokens": 10,
        "output_tokens": 2**63 - 11,
        "total_tokens": 2**63 - 1,
    }
    result = run(graph(ToolFake(messages=iter([huge, call(2)]))), hi(), budget(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith(
        "failed: malformed model response: usage_metadata.total_tokens: more tokens than one"
    )
    assert RAN == []


def test_a_final_answer_over_the_token_budget_completes() -> None:
    _, model = scripted(turns=1)
    result = run(graph(model), hi(), budget(max_tokens="20"))
    assert (result.stop_reason, result.output) == ("completed", "done")


def test_the_deadline_is_checked_between_steps() -> None:
    RAN.clear()
    model = SlowFake(messages=iter(Script()), delay=0.15)
    result = run(graph(model), hi(), budget(timeout_seconds="0.1"))
    assert (result.stop_reason, result.turns, RAN) == ("timeout", 1, [])


def test_arun_cancels_a_step_still_running_at_the_deadline() -> None:
    """The call in flight is cancelled; it was started, so it is a turn, as in the executor."""
    model = SlowFake(messages=iter(Script()), delay=5.0)
    started = time.monotonic()
    result = asyncio.run(arun(async_graph(model), hi(), budget(timeout_seconds="0.2")))
    assert time.monotonic() - started < 2
    assert (result.stop_reason, result.turns, result.output) == ("timeout", 1, "")
    assert isinstance(result.native, TimeoutError)


def test_arun_stops_and_completes_as_run_does() -> None:
    script, model = scripted()
    result = asyncio.run(arun(graph(model), hi(), budget(max_steps="2")))
    assert (result.stop_reason, result.turns, script.made, result.output) == (
        "max_steps",
        2,
        2,
        "step 2",
    )
    _, model = scripted(turns=1)
    done = asyncio.run(arun(graph(model), hi(), budget(max_steps="4")))
    assert (done.stop_reason, done.turns, done.output) == ("completed", 2, "done")


def test_a_budget_langgraph_cannot_enforce_is_refused_or_warned_about() -> None:
    _, model = scripted(turns=0)
    with pytest.raises(budgetconf.UsageError, match=r"limits\.max_cost_usd = 1\.0 from env:"):
        run(graph(model), hi(), budget(max_cost_usd="1"))
    with pytest.warns(budgetconf.BudgetConfWarning, match="running without it") as caught:
        result = run(graph(model), hi(), budget(max_cost_usd="1"), unenforced="warn")
    assert len(caught) == 1
    assert result.stop_reason == "completed"
    with pytest.raises(budgetconf.UsageError, match="max_tool_calls_per_turn = 3 from env:"):
        run(graph(model), hi(), budget(max_tool_calls_per_turn="3"))


def test_a_budget_the_policy_clamps_that_langgraph_cannot_enforce_is_refused_even_to_warn(
    place: Place,
) -> None:
    """The env's cost limit clamped by the policy: refused with unenforced="warn" too."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{"limits": {"max_cost_usd": {"max": 0.5}}}', encoding="utf-8")
    _, model = scripted(turns=0)
    with pytest.raises(budgetconf.UsageError) as caught:
        run(graph(model), hi(), budget(max_cost_usd="3"), unenforced="warn")
    assert str(caught.value) == (
        f"limits.max_cost_usd = 0.5 from the policy {place.policy}:1 cannot be enforced by"
        " langgraph: it reports no cost, and no price is known for a model with no name (set"
        " prices.input_per_mtok and prices.output_per_mtok); a budget the policy sets is never"
        " run without"
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"config": {"recursion_limit": 5}}, {"recursion_limit": 5}, {"stream_mode": "updates"}],
)
def test_a_keyword_that_would_set_a_limit_or_the_stream_is_refused(kwargs: Any) -> None:
    _, model = scripted(turns=0)
    with pytest.raises(
        budgetconf.UsageError, match=r"=.* (langgraph's own limit|set by the bridge)"
    ):
        run(graph(model), hi(), budget(max_steps="3"), **kwargs)


def test_bad_steps_per_turn_and_config_are_usage_errors() -> None:
    _, model = scripted(turns=0)
    with pytest.raises(budgetconf.UsageError, match="steps_per_turn: expected a whole number"):
        run(graph(model), hi(), steps_per_turn=0)
    with pytest.raises(budgetconf.UsageError, match="steps_per_turn"):
        limits(steps_per_turn=True)
    with pytest.raises(budgetconf.UsageError, match="config: expected a mapping, got list"):
        run(graph(model), hi(), config=[])  # type: ignore[arg-type]
    with pytest.raises(budgetconf.UsageError, match="graph: expected a compiled LangGraph graph"):
        run(object(), hi())


def test_nothing_of_the_callers_is_changed_also_when_the_run_fails() -> None:
    """The bridge borrows nothing: the caller's config and graph are as they were; a failing
    node fails the run, its exception the result's native, never raised."""

    def broken(state: Any) -> Any:
        raise ValueError("tool broke")

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", broken)
    g.add_edge(START, "agent")
    compiled = g.compile()
    config = {"configurable": {"thread_id": "t"}, "tags": ["mine"]}
    before = (dict(compiled.config or {}), compiled.step_timeout)
    result = run(compiled, hi(), budget(max_steps="3"), config=config)
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.FAILED, "error", None)
    assert result.message == "failed: ValueError: tool broke (turn 1)"
    assert isinstance(result.native, ValueError)
    assert config == {"configurable": {"thread_id": "t"}, "tags": ["mine"]}
    assert (dict(compiled.config or {}), compiled.step_timeout) == before


def test_a_resumed_thread_gets_the_budget_not_the_limit_plus_two() -> None:
    script, model = scripted()
    compiled = graph(model, InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = run(compiled, hi(), budget(max_steps="2"), config=config)
    assert (first.stop_reason, first.turns, script.made) == ("max_steps", 2, 2)
    again = run(compiled, None, budget(max_steps="2"), config=config)
    assert (again.stop_reason, again.turns, script.made) == ("max_steps", 2, 4)


def test_the_recursion_default_variable_set_after_import_decides_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LANGGRAPH_DEFAULT_RECURSION_LIMIT is read at import only: run() passes its own limit."""
    monkeypatch.setenv("LANGGRAPH_DEFAULT_RECURSION_LIMIT", "1")
    script, model = scripted()
    result = run(graph(model), hi(), budget(max_steps="3"))
    assert (result.stop_reason, result.turns, script.made) == ("max_steps", 3, 3)


def test_limits_gives_the_recursion_limit_in_graph_steps() -> None:
    assert limits(None, **env(max_steps="3")) == {"config": {"recursion_limit": 6}}
    assert limits(budget(max_steps="3"), steps_per_turn=4) == {"config": {"recursion_limit": 12}}
    script, model = scripted()
    with pytest.raises(GraphRecursionError):
        graph(model).invoke(hi(), **limits(budget(max_steps="3")))
    assert (script.made, RAN) == (3, [1, 2, 3])


def test_limits_refuses_what_only_run_enforces() -> None:
    with pytest.raises(budgetconf.UsageError, match=r"by langgraph through limits\(\)"):
        limits(budget(max_tokens="100"))


def agent(script: Script, *, middle: list[Any], model: type[ToolFake] = ToolFake) -> Any:
    return create_agent(model(messages=iter(script)), [add], middleware=middle)


INPUTS: list[list[Any]] = []  # the messages of each call a Recorded model gets


class Recorded(ToolFake):
    """A fake that keeps the messages of every call it gets."""

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        INPUTS.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def answers(result: Any) -> list[str]:
    """The contents of the tool messages of a run's last state."""
    return [m.content for m in result.native["messages"] if m.type == "tool"]


def test_the_middleware_stops_at_the_exact_model_call_count() -> None:
    """Middleware adds graph steps per turn; the Meter stops the run before a sixth call, and
    the fifth's calls are answered in the graph as not executed."""
    res = budget(max_steps="5")
    script = Script()
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert (result.stop_reason, result.turns, script.made, RAN) == ("max_steps", 5, 5, [1, 2, 3, 4])
    assert result.message.startswith("stopped: hit max_steps (5): loop.max_steps = 5 from env:")
    assert result.output == "step 5"
    assert answers(result)[-1] == "not executed: this was the last turn the step budget allows"


def test_the_middleware_sends_the_last_turn_notice_with_the_last_call_only() -> None:
    """wrap_up: the notice goes with the last permitted call, and an answer to it is truncated."""
    res = budget(max_steps="2")
    INPUTS.clear()
    script = Script(turns=1)
    result = run(agent(script, middle=middleware(res), model=Recorded), hi(), res)
    loop = res.loop
    assert loop is not None
    first, last = INPUTS
    assert [m.content for m in first] == ["hi"]
    assert (last[-1].type, last[-1].content) == ("human", loop.wrap_up_message)
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.TRUNCATED,
        "max_steps",
        "done",
    )


def test_the_middleware_tool_cap_is_a_tool_call_stop() -> None:
    """The calls past max_tool_calls are answered as not executed, and the run stops there."""
    res = budget(max_tool_calls="3")
    script = Script(calls=2)
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert (result.stop_reason, result.turns, RAN) == ("max_tool_calls", 2, [1, 1])
    assert (
        answers(result)[-2:] == ["not executed: the run's tool-call budget would be exceeded"] * 2
    )
    assert result.tool_calls_executed == 2


def test_the_middleware_rejects_a_response_over_the_per_response_cap_and_goes_on() -> None:
    """over_cap = reject: none of its calls runs, each is answered with why, the model is
    asked again, as in the executor."""
    res = budget(max_steps="4", max_tool_calls_per_turn="2")
    script = Script(turns=1, calls=3)
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert (result.status, result.stop_reason, result.turns, RAN) == (
        RunStatus.OK,
        "completed",
        2,
        [],
    )
    assert (
        answers(result)
        == [
            "not executed: this response has 3 tool calls and at most 2 are accepted in one"
            " response (loop.max_tool_calls_per_turn = 2), so none ran. Send at most 2 calls in a"
            " response."
        ]
        * 3
    )
    assert [e["type"] for e in result.events].count("batch_rejected") == 1


def test_the_middleware_truncates_a_response_over_the_cap_when_the_preset_says_so() -> None:
    """over_cap = truncate: the first calls run, the rest are answered as skipped."""
    res = budget(max_steps="4", max_tool_calls_per_turn="2", over_cap="truncate")
    script = Script(turns=1, calls=3)
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert (result.stop_reason, RAN, result.tool_calls_executed) == ("completed", [1, 1], 2)
    assert answers(result)[2] == (
        "skipped: only the first 2 calls of a response run (loop.max_tool_calls_per_turn = 2)"
    )


def test_the_middleware_enforces_tokens_before_the_call_and_after_a_response() -> None:
    """Reached: no further call; passed by a response: its calls do not run."""
    res = budget(max_tokens="30")
    script = Script()
    RAN.clear()
    reached = run(agent(script, middle=middleware(res)), hi(), res)
    assert (reached.stop_reason, script.made, RAN) == ("max_tokens", 2, [1, 2])
    res = budget(max_tokens="20")
    script = Script()
    RAN.clear()
    over = run(agent(script, middle=middleware(res)), hi(), res)
    assert (over.stop_reason, script.made, RAN) == ("max_tokens", 2, [1])


def test_the_middleware_enforces_the_deadline_before_the_next_call() -> None:
    """A turn that outlasts the deadline: its calls do not run, and no call follows."""
    res = budget(timeout_seconds="0.1")
    RAN.clear()
    model = SlowFake(messages=iter(Script()), delay=0.15)
    result = run(create_agent(model, [add], middleware=middleware(res)), hi(), res)
    assert (result.stop_reason, result.turns, RAN) == ("timeout", 1, [])
    assert result.message.startswith("stopped: hit timeout_seconds (0.1)")


def test_a_wrapped_tool_sees_the_bridged_run_as_current_run() -> None:
    """A tool the middleware runs sees the bridged run, and may carve a sub-agent's budget."""
    handles: list[Any] = []

    @tool
    def probe(a: int) -> int:
        """Note the current run."""
        handle = current_run()
        assert handle is not None
        handles.append((handle.totals.turns, handle.carve(max_steps=1)))
        return a

    res = budget(max_steps="3")
    calls = [{"name": "probe", "args": {"a": 1}, "id": "p"}]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    result = run(create_agent(model, [probe], middleware=middleware(res)), hi(), res)
    assert result.stop_reason == "completed"
    ((turns, carved),) = handles
    assert turns == 1
    assert carved.limits["max_steps"].value == 1
    assert current_run() is None  # only while the tool runs


def test_events_name_and_usage_are_the_executors() -> None:
    """on_event hears the executor's vocabulary under the run's name; usage is the sum of the
    responses' usage_metadata, cached tokens included."""
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "input_token_details": {"cache_read": 4},
    }
    meta = {"model_name": "fake-1", "finish_reason": "tool_calls"}
    first = AIMessage(
        "", tool_calls=[{"name": "add", "args": {"a": 1, "b": 1}, "id": "a"}],
        usage_metadata=usage, response_metadata=meta,
    )  # fmt: skip
    model = ToolFake(messages=iter([first, AIMessage("2", usage_metadata=usage)]))
    heard: list[dict[str, Any]] = []
    res = budget(max_steps="3")
    result = run(
        create_agent(model, [add], middleware=middleware(res)),
        hi(),
        res,
        on_event=heard.append,
        name="adder",
    )
    assert heard == result.events
    assert [e["type"] for e in heard] == [
        "run_started", "turn_started", "model_response", "tool_started", "tool_executed",
        "turn_started", "model_response", "stopped",
    ]  # fmt: skip
    assert (heard[0]["name"], heard[0]["framework"]) == ("adder", "langgraph")
    assert {e["run_id"] for e in heard} == {result.run_id}
    assert (heard[2]["model"], heard[2]["finish_reason"], heard[2]["cached_input_tokens"]) == (
        "fake-1",
        "tool_calls",
        4,
    )
    assert (result.usage.input_tokens, result.usage.cached_input_tokens) == (20, 8)
    assert (result.usage.output_tokens, result.usage.total_tokens) == (10, 30)
    assert result.tool_calls_executed == 1


class Endless(ToolFake):
    """Asks for the tool on every call, a while after it, from any number of threads at once."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.02)
        return ChatResult(generations=[ChatGeneration(message=call(1))])


def test_one_graph_serves_overlapping_runs_each_within_its_own_budget() -> None:
    """The middleware finds each run's Meter in its own context: two runs of one graph at once,
    on two threads, stop at their own step budgets; the graph is left as it was."""
    built = create_agent(Endless(messages=iter([])), [add], middleware=middleware())
    nodes = dict(built.nodes)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        two = pool.submit(run, built, hi(), budget(max_steps="2"))
        four = pool.submit(run, built, hi(), budget(max_steps="4"))
        results = two.result(), four.result()
    assert [(r.stop_reason, r.turns, r.tool_calls_executed) for r in results] == [
        ("max_steps", 2, 1),
        ("max_steps", 4, 3),
    ]
    assert results[0].run_id != results[1].run_id
    assert dict(built.nodes) == nodes


def test_overlapping_async_runs_of_one_graph_each_keep_their_own_budget() -> None:
    """arun() in two tasks at once on one graph: each task's context holds its own run."""

    async def both() -> list[Any]:
        built = create_agent(Endless(messages=iter([])), [add], middleware=middleware())
        runs = arun(built, hi(), budget(max_steps="2")), arun(built, hi(), budget(max_steps="5"))
        return list(await asyncio.gather(*runs))

    assert [(r.stop_reason, r.turns) for r in asyncio.run(both())] == [
        ("max_steps", 2),
        ("max_steps", 5),
    ]


def test_a_create_agent_graph_nested_in_another_is_metered_by_its_middleware() -> None:
    """The bridge finds its middleware in a subgraph: the outer graph's run is the Meter's."""
    res = budget(max_steps="3")
    inner = agent(Script(), middle=middleware(res))
    outer: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    RAN.clear()
    result = run(outer.compile(), hi(), res)
    assert (result.stop_reason, result.turns, RAN, result.output) == (
        "max_steps",
        3,
        [1, 2],
        "step 3",
    )


def test_a_call_of_a_tool_the_graph_lacks_is_answered_by_it_and_not_counted() -> None:
    """The tool node answers a call of no tool of its own with its error; the Meter counts only
    the calls it could run."""
    calls = [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "a"},
        {"name": "nowhere", "args": {}, "id": "n"},
    ]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    res = budget(max_tool_calls="1")
    RAN.clear()
    result = run(create_agent(model, [add], middleware=middleware(res)), hi(), res)
    assert (result.stop_reason, RAN, result.tool_calls_executed) == ("completed", [1], 1)
    assert "nowhere is not a valid tool" in answers(result)[1]


def test_the_middlewares_graph_invoked_inside_another_run_is_refused() -> None:
    """A tool of a bridged run invoking a graph that carries middleware() itself: refused, not
    charged to the run around it."""
    inner = agent(Script(), middle=middleware())

    @tool
    def nested(a: int) -> int:
        """Run an agent of its own."""
        inner.invoke(hi())
        return a

    res = budget(max_steps="3")
    calls = [{"name": "nested", "args": {"a": 1}, "id": "n"}]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls)]))
    with pytest.raises(budgetconf.UsageError, match=r"only when it runs through .*run\(\)"):
        run(create_agent(model, [nested], middleware=middleware(res)), hi(), res)


def test_middleware_leaves_a_cost_budget_to_run_which_knows_the_graphs_model() -> None:
    """middleware() is made before its graph, so before its model is known: it takes a cost
    budget, and run() judges it at the price of the graph's model (a fake with no name has
    none: refused there, as any budget the bridge cannot enforce)."""
    assert [type(m).__name__ for m in middleware(budget(max_tokens="9", timeout_seconds="5"))] == [
        "MeterMiddleware"
    ]
    res = budget(max_cost_usd="9")
    built = agent(Script(), middle=middleware(res))
    with pytest.raises(
        budgetconf.UsageError, match=r"max_cost_usd = 9\.0 .* cannot be enforced by langgraph: it"
    ):
        run(built, hi(), res)


def test_the_runs_budget_governs_whatever_the_middleware_was_built_from() -> None:
    """middleware() carries no caps of its own: the budget is the run's."""
    script = Script()
    built = agent(script, middle=middleware(budget(max_steps="5")))
    result = run(built, hi(), budget(max_steps="2"))
    assert (result.stop_reason, result.turns, script.made) == ("max_steps", 2, 2)


def test_a_limit_the_bridge_did_not_set_fails_the_run() -> None:
    """The caller's own ModelCallLimitMiddleware is not the budget's: failed, its error native."""
    own = ModelCallLimitMiddleware(run_limit=2, exit_behavior="error")
    result = run(agent(Script(), middle=[own]), hi(), budget(max_steps="9"), steps_per_turn=4)
    assert (result.status, result.stop_reason, result.limit) == (RunStatus.FAILED, "error", None)
    assert isinstance(result.native, ModelCallLimitExceededError)


def test_the_deadline_passed_in_a_tool_step_stops_before_the_next_call() -> None:
    """Without middleware(): the next model call is asked for after the tools node, and the
    passed deadline stops the run there."""

    @tool
    def slow(a: int) -> int:
        """Take a while."""
        time.sleep(0.15)
        return a

    model = ToolFake(
        messages=iter([AIMessage("", tool_calls=[{"name": "slow", "args": {"a": 1}, "id": "s"}])])
    )
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([slow]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    result = run(g.compile(), hi(), budget(timeout_seconds="0.1"))
    assert (result.stop_reason, result.turns, result.output) == ("timeout", 1, "")


def test_a_failure_of_the_graph_fails_the_run_from_arun_and_with_middleware() -> None:
    """A node's own TimeoutError (not the deadline) and a model that fails: failed results,
    the exception native, as the executor's; never raised."""

    def raises(state: Any) -> Any:
        raise TimeoutError("its own")

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", raises)
    g.add_edge(START, "agent")
    own = asyncio.run(arun(g.compile(), hi(), budget(timeout_seconds="30")))
    assert (own.status, own.stop_reason, own.message) == (
        RunStatus.FAILED,
        "error",
        "failed: TimeoutError: its own (turn 1)",
    )
    assert isinstance(own.native, TimeoutError)
    broken = create_agent(Broken(messages=iter([])), [add])
    result = asyncio.run(arun(broken, hi(), budget()))
    assert (result.stop_reason, result.turns, str(result.native)) == ("error", 1, "model broke")
    res = budget(max_steps="3")
    carried = create_agent(Broken(messages=iter([])), [add], middleware=middleware(res))
    result = run(carried, hi(), res)
    assert (result.status, result.message) == (
        RunStatus.FAILED,
        "failed: LookupError: model broke (turn 1)",
    )
    assert isinstance(result.native, LookupError)


def test_a_tool_that_raises_fails_the_run_and_counts() -> None:
    """create_agent's tool node raises a tool's error: the run fails, the call counted as run."""

    @tool
    def fails(a: int) -> int:
        """Fail."""
        raise ArithmeticError("no sum")

    res = budget(max_steps="3")
    calls = [{"name": "fails", "args": {"a": 1}, "id": "f"}]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls)]))
    result = run(create_agent(model, [fails], middleware=middleware(res)), hi(), res)
    assert (result.status, result.tool_calls_executed) == (RunStatus.FAILED, 1)
    assert isinstance(result.native, ArithmeticError)
    (ran,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert (ran["ok"], ran["error"]) == (False, "ArithmeticError: no sum")


def test_an_error_of_the_callers_own_is_raised() -> None:
    """A node's update the graph cannot take is the caller's mistake: raised, as LangGraph
    raises it, once the run's Meter has ended."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda state: 3)  # an update is a mapping
    g.add_edge(START, "agent")
    heard: list[dict[str, Any]] = []
    with pytest.raises(InvalidUpdateError):
        run(g.compile(), hi(), budget(max_steps="2"), on_event=heard.append)
    assert heard[-1]["type"] == "stopped"


def test_a_graph_without_middleware_counts_a_tools_error_as_a_call_that_ran() -> None:
    """A tool node that answers a failure itself: the call ran, and failed, as the event says."""

    @tool
    def fails(a: int) -> int:
        """Fail."""
        raise ArithmeticError("no sum")

    calls = [{"name": "fails", "args": {"a": 1}, "id": "f"}]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([fails], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    result = run(g.compile(), hi(), budget(max_tool_calls="1"))
    assert (result.stop_reason, result.tool_calls_executed) == ("completed", 1)
    (ran,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert ran["ok"] is False
    assert ran["error"].startswith("ToolFailed: Error: ArithmeticError")


def test_the_default_per_response_cap_is_left_to_a_graph_without_middleware() -> None:
    """Its tool node runs every call: the preset's default cap of 10 is not enforced there."""
    _, model = scripted(turns=1, calls=11)
    result = run(graph(model), hi(), budget(max_steps="3"))
    assert (result.stop_reason, len(RAN), result.tool_calls_executed) == ("completed", 11, 11)


def test_without_a_step_budget_limits_sets_no_recursion_limit_and_run_refuses() -> None:
    """limits() passes nothing; run() needs the step budget its Meter counts turns against."""
    full = Budget.from_resolution(budget())
    unbounded = replace(full, limits={k: v for k, v in full.limits.items() if k != "max_steps"})
    assert limits(unbounded) == {}
    _, model = scripted()
    with pytest.raises(budgetconf.UsageError, match=r"the budget sets no loop\.max_steps"):
        run(graph(model), hi(), unbounded)


def test_text_is_read_from_content_blocks_and_a_message_without_usage_counts_none() -> None:
    blocks = AIMessage(content=[{"type": "text", "text": "a"}, {"type": "image", "url": "u"}, "b"])
    _, model = scripted()
    model.messages = iter([blocks])
    result = run(graph(model), hi(), budget(max_tokens="5"))
    assert (result.stop_reason, result.output, result.turns) == ("completed", "ab", 1)


def test_a_missing_package_is_named_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    with pytest.raises(ImportError, match="needs the langchain package: pip install 'budgetconf"):
        middleware(budget())
    monkeypatch.setitem(sys.modules, "langgraph", None)  # what Python does for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.langgraph")
    with pytest.raises(ImportError, match="needs the langgraph package: pip install 'budgetconf"):
        importlib.import_module("budgetconf.integrations.langgraph")


def test_without_langgraph_the_import_error_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n import budgetconf.integrations.langgraph\n"
        "except ImportError as e: print(e)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == (
        "budgetconf.integrations.langgraph needs the langgraph package: pip install"
        " 'budgetconf[langgraph]' (from a checkout: pip install -e '.[langgraph]')\n"
    )


def test_importing_the_bridge_loads_nothing_heavy() -> None:
    code = (
        "import sys, budgetconf.integrations.langgraph;"
        "print(sorted(m for m in ('langgraph.errors', 'langgraph.graph', 'langchain_core',"
        " 'langchain.agents', 'budgetconf.loop') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_the_middleware_fails_a_run_whose_response_reports_more_tokens_than_one_can_use() -> None:
    """With middleware(), 2**63 - 1 tokens is unreadable too: failed on turn 1, no tool run."""
    huge = call(1)
    huge.usage_metadata = {
        "input_tokens": 10,
        "output_tokens": 2**63 - 11,
        "total_tokens": 2**63 - 1,
    }
    model = ToolFake(messages=iter([huge, call(2)]))
    res = budget(max_steps="3")
    RAN.clear()
    result = run(create_agent(model, [add], middleware=middleware(res)), hi(), res)
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith(
        "failed: malformed model response: usage_metadata.total_tokens: more tokens than one"
    )
    assert RAN == []


def test_arun_answers_a_call_of_a_tool_the_graph_lacks_without_counting_it() -> None:
    """The async tool hook, as the sync one, leaves a call of no tool of the graph's to it."""
    calls = [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "a"},
        {"name": "nowhere", "args": {}, "id": "n"},
    ]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    res = budget(max_tool_calls="1")
    RAN.clear()
    result = asyncio.run(arun(create_agent(model, [add], middleware=middleware(res)), hi(), res))
    assert (result.stop_reason, RAN, result.tool_calls_executed) == ("completed", [1], 1)
    assert "nowhere is not a valid tool" in answers(result)[1]


def test_without_middleware_a_call_of_a_tool_the_graph_lacks_is_not_counted() -> None:
    """The tool node answers a call of no tool of its own; the Meter counts only add's."""
    calls = [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "a"},
        {"name": "nowhere", "args": {}, "id": "n"},
    ]
    model = ToolFake(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")]))
    RAN.clear()
    result = run(graph(model), hi(), budget(max_steps="3"))
    assert (result.stop_reason, RAN, result.tool_calls_executed) == ("completed", [1], 1)


def test_a_graph_whose_tools_run_in_a_node_of_its_own_has_every_call_counted() -> None:
    """No ToolNode to read the tools from: every call a tool message answers counts."""
    from langchain_core.messages import ToolMessage

    model = ToolFake(messages=iter([call(1, calls=2), AIMessage("done", usage_metadata=USAGE)]))
    bound = model.bind_tools([add])

    def tools(state: Any) -> Any:
        asked = state["messages"][-1].tool_calls
        return {"messages": [ToolMessage("2", tool_call_id=c["id"]) for c in asked]}

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [bound.invoke(s["messages"])]})
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    result = run(g.compile(), hi(), budget(max_steps="3"))
    assert (result.stop_reason, result.output, result.tool_calls_executed) == (
        "completed",
        "done",
        2,
    )


#: a cost budget and the price fields' price, $0.15 / $0.60 per million tokens, for any model
PRICED = {"price_input_per_mtok": "0.15", "price_output_per_mtok": "0.6"}


class Named(ToolFake):
    """A fake chat model with a name, as ChatOpenAI has one: the bridge finds it in the graph."""

    def _get_ls_params(self, *args: Any, **kwargs: Any) -> Any:
        return {**super()._get_ls_params(*args, **kwargs), "ls_model_name": "house-model"}


BIG = {"input_tokens": 1000, "output_tokens": 1000, "total_tokens": 2000}


class BigScript(Script):
    """Every response reports 1,000 + 1,000 tokens: $0.00075 at the fields' price."""

    def __iter__(self) -> Iterator[AIMessage]:
        for message in super().__iter__():
            yield message.model_copy(update={"usage_metadata": BIG})


@pytest.mark.parametrize("with_middleware", [True, False])
def test_a_cost_budget_stops_the_run_after_the_call_that_crosses_it(with_middleware: bool) -> None:
    """$0.00075 a call against $0.002: the third call crosses it and the run stops, through
    middleware() (its calls answered as not executed) or the streamed states (before its
    tools node), at the price of the fields."""
    RAN.clear()
    script = BigScript()
    res = budget(max_cost_usd="0.002", **PRICED)
    model = Named(messages=iter(script))
    graph_ = (
        create_agent(model, [add], middleware=middleware(res)) if with_middleware else graph(model)
    )
    result = run(graph_, hi(), res)
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_cost",
        3,
    )
    assert (script.made, RAN) == (3, [1, 2])
    assert result.limit is not None
    assert result.limit["field"] == "limits.max_cost_usd"
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.00225, "priced")
    assert result.message == (
        "stopped: hit max_cost_usd (0.002): limits.max_cost_usd = 0.002 from"
        " env:BUDGETCONF_MAX_COST_USD; raise it with BUDGETCONF_MAX_COST_USD or --max-cost-usd;"
        " spent $0.00225 at house-model's price (env:BUDGETCONF_PRICE_INPUT_PER_MTOK,"
        " env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK: $0.15 / $0.60 per Mtok)"
    )
    (started,) = [e for e in result.events if e["type"] == "run_started"]
    assert started["prices"]["model"] == "house-model"


def test_a_graphs_named_model_with_no_price_is_refused_before_its_first_call() -> None:
    """prices.unknown = refuse: run() refuses it, with unenforced="warn" too, naming the model
    the bridge found in the graph; under warn, one warning and the run goes on."""
    script = Script(turns=1)
    built = create_agent(Named(messages=iter(script)), [add])
    res = budget(max_cost_usd="1", price_table="none")
    with pytest.raises(budgetconf.UsageError, match="no price for the model 'house-model'"):
        run(built, hi(), res, unenforced="warn")
    assert script.made == 0
    warned = budget(max_cost_usd="1", price_table="none", price_unknown="warn")
    with pytest.warns(budgetconf.BudgetConfWarning, match="'house-model'") as caught:
        result = run(built, hi(), warned)
    assert len(caught) == 1
    assert (result.stop_reason, result.usage.cost_source) == ("completed", "none")
