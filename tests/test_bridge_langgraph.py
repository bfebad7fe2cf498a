"""The LangGraph bridge against the real framework, offline, with langchain-core's fake model."""

from __future__ import annotations

import asyncio
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
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import budgetconf
from budgetconf.integrations.langgraph import arun, limits, middleware, run
from budgetconf.loop import Budget, RunStatus

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
    assert (result.turns, script.made, RAN) == (3, 3, [1, 2, 3])  # the last turn's tools ran
    assert result.output == "step 3"  # kept from the last streamed state


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
    model = SlowFake(messages=iter(Script()), delay=5.0)
    started = time.monotonic()
    result = asyncio.run(arun(async_graph(model), hi(), budget(timeout_seconds="0.2")))
    assert time.monotonic() - started < 2
    assert (result.stop_reason, result.turns, result.output) == ("timeout", 0, "")
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
        " langgraph; a budget the policy sets is never run without"
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


def test_nothing_of_the_callers_is_changed_also_when_the_run_raises() -> None:
    """The bridge borrows nothing: the caller's config and graph are as they were."""

    def broken(state: Any) -> Any:
        raise ValueError("tool broke")

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", broken)
    g.add_edge(START, "agent")
    compiled = g.compile()
    config = {"configurable": {"thread_id": "t"}, "tags": ["mine"]}
    before = (dict(compiled.config or {}), compiled.step_timeout)
    with pytest.raises(ValueError, match="tool broke"):  # not a budget's: raised unchanged
        run(compiled, hi(), budget(max_steps="3"), config=config)
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


def agent(script: Script, *, middle: list[Any]) -> Any:
    return create_agent(ToolFake(messages=iter(script)), [add], middleware=middle)


def test_the_middleware_stops_at_the_exact_model_call_count() -> None:
    """Middleware adds graph steps per turn; run() lets the middleware's cap fire first."""
    res = budget(max_steps="5")
    script = Script()
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert isinstance(result.native, ModelCallLimitExceededError)
    assert (result.stop_reason, result.turns, script.made, len(RAN)) == ("max_steps", 5, 5, 5)
    assert result.message.startswith("stopped: hit max_steps (5): loop.max_steps = 5 from env:")
    assert result.output == "step 5"


def test_the_middleware_tool_cap_is_a_tool_call_stop() -> None:
    res = budget(max_tool_calls="3")
    script = Script(calls=2)
    RAN.clear()
    result = run(agent(script, middle=middleware(res)), hi(), res)
    assert (result.stop_reason, result.turns, RAN) == ("max_tool_calls", 2, [1, 1])


def test_middleware_carries_steps_and_tool_calls_and_refuses_the_rest() -> None:
    found = middleware(budget(max_steps="4", max_tool_calls="7"))
    assert [(type(m).__name__, m.run_limit, m.exit_behavior) for m in found] == [
        ("ModelCallLimitMiddleware", 4, "error"),
        ("ToolCallLimitMiddleware", 7, "error"),
    ]
    with pytest.raises(
        budgetconf.UsageError, match=r"max_tokens = 9 .* by langgraph's middleware\(\);"
    ):
        middleware(budget(max_tokens="9"))


def test_a_graph_whose_middleware_has_other_caps_is_refused() -> None:
    built = agent(Script(), middle=middleware(budget(max_steps="5")))
    with pytest.raises(budgetconf.UsageError, match="middleware\\(\\) has max_steps = 5 but"):
        run(built, hi(), budget(max_steps="6"))


def test_a_limit_the_bridge_did_not_set_is_raised_unchanged() -> None:
    own = ModelCallLimitMiddleware(run_limit=2, exit_behavior="error")
    with pytest.raises(ModelCallLimitExceededError):
        run(agent(Script(), middle=[own]), hi(), budget(max_steps="9"), steps_per_turn=4)


def test_the_deadline_passed_in_a_tool_step_stops_before_the_next_call() -> None:
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


def test_an_error_of_the_graph_is_raised_unchanged_from_arun_and_with_middleware() -> None:
    def raises(state: Any) -> Any:
        raise TimeoutError("its own")

    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", raises)
    g.add_edge(START, "agent")
    with pytest.raises(TimeoutError, match="its own"):
        asyncio.run(arun(g.compile(), hi(), budget(timeout_seconds="30")))
    broken = create_agent(Broken(messages=iter([])), [add])
    with pytest.raises(LookupError, match="model broke"):
        asyncio.run(arun(broken, hi(), budget()))
    res = budget(max_steps="3")
    carried = create_agent(Broken(messages=iter([])), [add], middleware=middleware(res))
    with pytest.raises(LookupError, match="model broke"):
        run(carried, hi(), res)


def test_without_a_step_budget_no_recursion_limit_is_set_nor_attributed() -> None:
    full = Budget.from_resolution(budget())
    unbounded = replace(full, limits={k: v for k, v in full.limits.items() if k != "max_steps"})
    assert limits(unbounded) == {}
    assert middleware(unbounded) == []
    _, model = scripted()
    own = graph(model).with_config(recursion_limit=4)  # the graph's own limit, not the bridge's
    with pytest.raises(GraphRecursionError):
        run(own, hi(), unbounded)


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
        " 'langchain.agents') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
