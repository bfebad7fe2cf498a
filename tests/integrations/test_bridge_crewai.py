"""The CrewAI bridge: real Agents on CrewAI's own LLMs, a scripted one in process
(`budgetconf.testing.crewai_llm`) and its OpenAI-native one against the chat-completions
server on 127.0.0.1.

CrewAI's own telemetry is off (``CREWAI_DISABLE_TELEMETRY``), and a socket guard fails the
test if anything dials a host other than the loopback.
"""

from __future__ import annotations

import pytest

pytest.importorskip("crewai", reason="the CrewAI bridge is tested where CrewAI is installed")

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before CrewAI's first import

from crewai import LLM, Agent, Crew, Task
from crewai.hooks.dispatch import InterceptionPoint, get_hooks, scoped_hooks
from crewai.tools import tool

import budgetconf
from budgetconf._usage import Unreadable
from budgetconf.integrations import crewai as bridge
from budgetconf.integrations._crewai_run import _usage
from budgetconf.loop import RunStatus, current_run
from budgetconf.testing._crewai import crewai_llm

from helpers import conformance, conformance_crewai
from helpers.bridged import env, loopback_only
from helpers.chat_server import Failure, reply, serving
from helpers.conformance import KEY, MODEL, asking, offered
from helpers.conformance_crewai import DEPRECATED

# CrewAI 1.15 warns in every Agent() of deprecated fields of its own, which it reads itself
pytestmark = pytest.mark.filterwarnings(f"ignore::DeprecationWarning:{DEPRECATED}")

#: a response that asks for add(1, 2), 10 + 5 tokens
ASKS = {
    "content": "adding",
    "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5},
}
DONE = {"content": "3", "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No socket to anything but 127.0.0.1."""
    dialled = loopback_only(monkeypatch)
    yield
    assert dialled == []


class Adder:
    """The agent's tool, and its runs (``then`` runs inside each)."""

    def __init__(self, then: Callable[[], object] | None = None) -> None:
        self.ran: list[int] = []
        self.then = then

    def tool(self) -> Any:
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.ran.append(a)
            if self.then is not None:
                self.then()
            return a + b

        return tool("add")(add)


def _agent(llm: Any, adder: Adder, **options: Any) -> Any:
    return Agent(
        role="adder", goal="Add.", backstory="You add.", llm=llm, tools=[adder.tool()], **options
    )


def test_a_step_stop_is_a_result_with_its_provenance() -> None:
    adder = Adder()
    llm = crewai_llm([ASKS])
    agent = _agent(llm, adder)
    own_llm, own_iter = agent.llm, agent.max_iter
    result = bridge.run(agent, "What is 1 + 2?", env(max_steps="3"))
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_steps",
        3,
    )
    assert result.message == (
        "stopped: hit max_steps (3): loop.max_steps = 3 from env:BUDGETCONF_MAX_STEPS;"
        " raise it with BUDGETCONF_MAX_STEPS or --max-steps"
    )
    assert result.limit is not None
    assert result.limit["field"] == "loop.max_steps"
    assert llm.calls == 3
    assert adder.ran == [1, 1]
    assert (result.usage.total_tokens, result.tool_calls_executed) == (45, 2)
    assert result.framework == "crewai"
    assert result.output == ""
    assert agent.llm is own_llm
    assert agent.max_iter == own_iter
    assert [e["type"] for e in result.events][-1] == "stopped"


def test_a_final_answer_completes_with_its_text() -> None:
    adder = Adder()
    result = bridge.run(_agent(crewai_llm([ASKS, DONE]), adder), "Add.", env(max_steps="5"))
    assert (result.status, result.stop_reason, result.output, result.turns) == (
        RunStatus.OK,
        "completed",
        "3",
        2,
    )
    assert adder.ran == [1]
    assert result.native.raw == "3"


def test_budget_none_reads_the_default_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "2")
    result = bridge.run(_agent(crewai_llm([ASKS]), Adder()), "Add.")
    assert (result.stop_reason, result.turns) == ("max_steps", 2)


def test_a_tool_call_budget_stops_the_run() -> None:
    adder = Adder()
    calls = [{"name": "add", "arguments": {"a": a, "b": 1}} for a in (1, 2, 3)]
    three = {**ASKS, "tool_calls": calls}
    agent = _agent(crewai_llm([three]), adder, cache=False)  # its cache answers a repeat itself
    result = bridge.run(agent, "Add.", env(max_tool_calls="4"))
    assert (result.stop_reason, result.limit and result.limit["field"]) == (
        "max_tool_calls",
        "limits.max_tool_calls",
    )
    assert len(adder.ran) == 3
    assert result.turns == 2


def test_a_token_budget_stops_the_run() -> None:
    result = bridge.run(_agent(crewai_llm([ASKS]), Adder()), "Add.", env(max_tokens="40"))
    assert (result.stop_reason, result.turns, result.usage.total_tokens) == ("max_tokens", 3, 45)


def test_cached_tokens_are_read() -> None:
    cached = {**ASKS, "usage": {**ASKS["usage"], "prompt_tokens_details": {"cached_tokens": 4}}}  # type: ignore[dict-item]
    result = bridge.run(_agent(crewai_llm([cached]), Adder()), "Add.", env(max_steps="2"))
    assert result.usage.cached_input_tokens == 8


def test_a_failing_tool_is_answered_and_counted() -> None:
    def fail() -> None:
        raise ValueError("no adding today")

    adder = Adder(fail)
    result = bridge.run(_agent(crewai_llm([ASKS, DONE]), adder), "Add.", env(max_steps="5"))
    assert result.status is RunStatus.OK
    assert adder.ran == [1]
    ended = [e for e in result.events if e["type"] == "tool_executed"]
    assert [(e["ok"], e["error"]) for e in ended] == [(False, "RuntimeError: no adding today")]
    assert result.tool_calls_executed == 1


def test_the_tool_sees_the_bridged_run() -> None:
    seen: list[object] = []
    adder = Adder(lambda: seen.append(current_run()))
    result = bridge.run(_agent(crewai_llm([ASKS, DONE]), adder), "Add.", env(max_steps="5"))
    assert len(seen) == 1
    assert seen[0] is not None
    assert result.status is RunStatus.OK


def test_a_deadline_abandons_the_run_in_flight() -> None:
    adder = Adder(lambda: time.sleep(1.5))
    started = time.monotonic()
    result = bridge.run(_agent(crewai_llm([ASKS]), adder), "Add.", env(timeout_seconds="0.5"))
    assert time.monotonic() - started < 1.4
    assert (result.status, result.stop_reason) == (RunStatus.TRUNCATED, "timeout")
    assert isinstance(result.native, TimeoutError)


def test_a_deadline_between_calls_stops_at_the_next_call() -> None:
    adder = Adder(lambda: time.sleep(0.3))
    result = bridge.run(
        _agent(crewai_llm([ASKS]), adder), "Add.", env(timeout_seconds="0.5", max_steps="9")
    )
    assert result.stop_reason == "timeout"
    assert 1 <= len(adder.ran) <= 2


def test_inside_an_event_loop_the_run_has_a_thread_of_its_own() -> None:
    async def main() -> Any:
        return bridge.run(_agent(crewai_llm([ASKS, DONE]), Adder()), "Add.", env(max_steps="5"))

    assert asyncio.run(main()).status is RunStatus.OK


def test_the_hooks_are_the_runs_only() -> None:
    """Registered in CrewAI's execution scope: the global lists never hold them, another
    run on another thread at the same time meets none of them, and the caller's own scoped
    hooks still run."""
    before = {p: get_hooks(p) for p in InterceptionPoint}
    theirs: list[str] = []
    other_llm = crewai_llm([ASKS] * 4 + [DONE])
    other = _agent(other_llm, Adder(), max_iter=10)
    plain: list[Any] = []

    def alongside() -> None:
        plain.append(other.kickoff("Add."))

    def in_a_tool() -> None:
        worker = threading.Thread(target=alongside)
        worker.start()
        worker.join()

    adder = Adder(in_a_tool)
    with scoped_hooks({InterceptionPoint.PRE_MODEL_CALL: [lambda c: theirs.append("x")]}):
        result = bridge.run(_agent(crewai_llm([ASKS]), adder), "Add.", env(max_steps="2"))
    assert {p: get_hooks(p) for p in InterceptionPoint} == before
    assert result.turns == 2
    assert len(theirs) == 2  # their hook ran before each call
    assert plain[0].raw == "3"
    assert other_llm.calls == 5


def test_the_hooks_and_the_llm_are_put_back_when_the_run_raises() -> None:
    agent = _agent(crewai_llm([DONE]), Adder())
    own = agent.llm
    with pytest.raises(TypeError):
        bridge.run(agent, "Add.", env(max_steps="3"), no_such_keyword=1)
    assert agent.llm is own
    assert {p: get_hooks(p) for p in InterceptionPoint} == {p: [] for p in InterceptionPoint}
    assert bridge.run(agent, "Add.", env(max_steps="3")).status is RunStatus.OK


def test_one_agent_is_in_one_bridged_run_at_a_time() -> None:
    raised: list[BaseException] = []

    def again() -> None:
        try:
            bridge.run(agent, "Add.", env(max_steps="3"))
        except budgetconf.UsageError as exc:
            raised.append(exc)

    agent = _agent(crewai_llm([ASKS, DONE]), Adder(again))
    assert bridge.run(agent, "Add.", env(max_steps="3")).status is RunStatus.OK
    assert raised
    assert "is in a bridged run already" in str(raised[0])


# -- limits() and the refusals ----------------------------------------------------------------


def test_limits_give_crewais_own_keywords() -> None:
    """CrewAI makes max_iter calls with tools, then its forced final one without: the step
    budget's calls (kickoff reads no max_execution_time; a task in a Crew does)."""
    given = bridge.limits(env(max_steps="4", timeout_seconds="2.5"))
    assert given == {"max_iter": 3, "max_execution_time": 3}
    adder = conformance.Adder()
    with serving(asking()) as chat, conformance_crewai.quiet():
        conformance_crewai.agent(chat.url, adder, MODEL, **given).kickoff("Add.")
    assert [bool(offered(r.body)) for r in chat.received] == [True, True, True, False]
    assert adder.runs == 3


def test_limits_refuse_what_crewais_keywords_do_not_enforce() -> None:
    with pytest.raises(budgetconf.UsageError, match="max_tokens"):
        bridge.limits(env(max_tokens="100"))


@pytest.mark.parametrize("keyword", ["max_iter", "max_execution_time"])
def test_crewais_own_limit_keywords_are_refused(keyword: str) -> None:
    given: dict[str, Any] = {keyword: 3}
    with pytest.raises(budgetconf.UsageError, match=f"{keyword}= would set crewai's own limit"):
        bridge.run(_agent(crewai_llm([DONE]), Adder()), "Add.", env(max_steps="3"), **given)


def test_a_resumed_run_and_streaming_are_refused() -> None:
    agent = _agent(crewai_llm([DONE]), Adder())
    with pytest.raises(budgetconf.UsageError, match="from_checkpoint"):
        bridge.run(agent, "Add.", env(max_steps="3"), from_checkpoint=None)
    with pytest.raises(budgetconf.UsageError, match="stream"):
        bridge.run(agent, "Add.", env(max_steps="3"), stream=True)


def test_a_crew_and_other_objects_are_refused() -> None:
    agent = _agent(crewai_llm([DONE]), Adder())
    crew = Crew(
        agents=[agent], tasks=[Task(description="Add.", expected_output="a sum", agent=agent)]
    )
    with pytest.raises(budgetconf.UsageError, match="a Crew runs its tasks' agents"):
        bridge.run(crew, "Add.", env(max_steps="3"))
    with pytest.raises(budgetconf.UsageError, match="expected a crewai Agent, got str"):
        bridge.run("agent", "Add.", env(max_steps="3"))


def test_calls_the_hooks_cannot_count_are_refused_by_name() -> None:
    agent = _agent(crewai_llm([DONE]), Adder(), function_calling_llm=crewai_llm([DONE]))
    with pytest.raises(budgetconf.UsageError, match="has a function_calling_llm, whose model"):
        bridge.run(agent, "Add.", env(max_steps="3"))


def test_a_cost_budget_without_a_price_is_refused() -> None:
    with pytest.raises(budgetconf.UsageError, match="max_cost_usd"):
        bridge.run(_agent(crewai_llm([DONE]), Adder()), "Add.", env(max_cost_usd="0.01"))


def test_a_cost_budget_holds_at_the_fields_price() -> None:
    # $0.0002 a response: the second passes $0.0003
    budget = env(max_cost_usd="0.0003", price_input_per_mtok="10", price_output_per_mtok="20")
    result = bridge.run(_agent(crewai_llm([ASKS]), Adder()), "Add.", budget)
    assert (result.stop_reason, result.turns) == ("max_cost", 2)
    assert result.usage.cost_usd == pytest.approx(0.0004)


# -- CrewAI's OpenAI-native LLM, over the loopback ----------------------------------------------


def _openai_llm(url: str) -> Any:
    return LLM(model="gpt-4o-mini", provider="openai", base_url=url, api_key=KEY, max_retries=0)


def test_a_model_failure_is_a_failed_result() -> None:
    answers = [reply(None, calls=[("c1", "add", {"a": 1, "b": 2})], usage=(10, 5))]
    down = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})
    with serving(lambda n, body: answers[0] if n == 1 else down) as chat:
        result = bridge.run(_agent(_openai_llm(chat.url), Adder()), "Add.", env(max_steps="5"))
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert isinstance(result.native, Exception)


def test_the_notice_goes_with_the_last_call_only() -> None:
    """The preset's last-turn notice (its event says what it sent) is in the last request,
    and in no earlier one."""
    bodies: list[Any] = []

    def respond(n: int, body: dict[str, Any]) -> Any:
        bodies.append(body)
        return reply(f"step {n}", calls=[(f"c{n}", "add", {"a": n, "b": 1})], usage=(10, 5))

    with serving(respond) as chat:
        result = bridge.run(_agent(_openai_llm(chat.url), Adder()), "Add.", env(max_steps="2"))
    sent = [e for e in result.events if e["type"] == "last_turn_notice"]
    assert result.turns == 2
    assert len(sent) == 1
    text = sent[0]["content"]
    assert [text in str(b["messages"]) for b in bodies] == [False, True]


def test_unreadable_usage_is_an_error_of_the_response() -> None:
    with pytest.raises(Unreadable):
        _usage({"prompt_tokens": -1})
    assert _usage(None).total_tokens == 0
    assert _usage({"prompt_tokens": 2, "completion_tokens": 3}).total_tokens == 5


def test_a_plain_kickoff_inside_a_tool_is_not_the_runs() -> None:
    """Another agent run in the tool, in the run's own context, meets the run's hooks, which
    leave its model and tool calls alone."""
    inner_llm = crewai_llm([ASKS, DONE])
    inner_adder = Adder()
    inner = _agent(inner_llm, inner_adder)
    answers: list[str] = []
    adder = Adder(lambda: answers.append(inner.kickoff("Add.").raw))
    result = bridge.run(_agent(crewai_llm([ASKS, DONE]), adder), "Add.", env(max_steps="3"))
    assert (result.status, result.turns, result.tool_calls_executed) == (RunStatus.OK, 2, 1)
    assert answers == ["3"]
    assert inner_llm.calls == 2
    assert inner_adder.ran == [1]


def test_a_tool_the_callers_own_hook_blocks_is_not_counted() -> None:
    from crewai.hooks.dispatch import register, unregister

    def block(context: Any) -> bool:
        return False

    register(InterceptionPoint.PRE_TOOL_CALL, block)
    try:
        adder = Adder()
        result = bridge.run(_agent(crewai_llm([ASKS, DONE]), adder), "Add.", env(max_steps="3"))
    finally:
        unregister(InterceptionPoint.PRE_TOOL_CALL, block)
    assert (result.status, result.tool_calls_executed, adder.ran) == (RunStatus.OK, 0, [])


def test_a_response_whose_usage_cannot_be_read_fails_the_run() -> None:
    broken = {**ASKS, "usage": {"prompt_tokens": -3, "completion_tokens": 5}}
    result = bridge.run(_agent(crewai_llm([broken]), Adder()), "Add.", env(max_steps="3"))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert "malformed model response" in result.message


def test_a_keyword_kickoff_does_not_take_is_raised_from_the_runs_thread() -> None:
    agent = _agent(crewai_llm([DONE]), Adder())
    with pytest.raises(TypeError):
        bridge.run(agent, "Add.", env(timeout_seconds="5"), no_such_keyword=1)


def test_arguments_crewai_cannot_read_run_nothing() -> None:
    answers = [
        reply(None, calls=[("c1", "add", "{not json")], usage=(10, 5)),
        reply("3", usage=(10, 5)),
    ]
    adder = Adder()
    with serving(answers) as chat:
        result = bridge.run(_agent(_openai_llm(chat.url), adder), "Add.", env(max_steps="3"))
    assert (result.status, result.output, adder.ran, result.tool_calls_executed) == (
        RunStatus.OK,
        "3",
        [],
        0,
    )


def test_a_model_call_in_flight_at_the_deadline_is_abandoned() -> None:
    answer = reply(None, calls=[("c1", "add", {"a": 1, "b": 2})], usage=(10, 5))
    adder = Adder()
    with serving([answer], delay=1.0) as chat:
        started = time.monotonic()
        agent = _agent(_openai_llm(chat.url), adder)
        result = bridge.run(agent, "Add.", env(timeout_seconds="0.5"))
        assert time.monotonic() - started < 0.9
        time.sleep(1.0)  # the abandoned call returns: it runs nothing and asks for nothing more
        assert len(chat.received) == 1
        assert adder.ran == []
    assert (result.stop_reason, result.turns) == ("timeout", 1)


def test_the_calls_of_a_provider_that_gives_arguments_as_a_mapping() -> None:
    from types import SimpleNamespace

    from budgetconf.integrations._crewai_run import _call

    made = _call(SimpleNamespace(id="toolu_1", name="add", input={"a": 1, "b": 2}))
    assert (made.id, made.name, made.arguments, made.raw_arguments) == (
        "toolu_1",
        "add",
        {"a": 1, "b": 2},
        '{"a": 1, "b": 2}',
    )


def test_one_step_is_one_call_in_run() -> None:
    """limits() cannot give CrewAI a max_iter of 0 (its flow refuses its first step), but
    run() holds a step budget of one: one call, whose tools do not run."""
    adder = Adder()
    llm = crewai_llm([ASKS])
    result = bridge.run(_agent(llm, adder), "Add.", env(max_steps="1"))
    assert (result.stop_reason, result.turns, llm.calls, adder.ran) == ("max_steps", 1, 1, [])


def test_bridged_runs_at_the_same_time_keep_their_own_budgets() -> None:
    results: dict[str, Any] = {}
    both = threading.Barrier(2)

    def bridged(steps: str) -> None:
        adder = Adder(lambda: len(adder.ran) == 1 and both.wait(5))  # both in a tool at once
        results[steps] = bridge.run(_agent(crewai_llm([ASKS]), adder), "Add.", env(max_steps=steps))

    threads = [threading.Thread(target=bridged, args=(s,)) for s in ("2", "3")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {s: (r.turns, r.tool_calls_executed) for s, r in results.items()} == {
        "2": (2, 1),
        "3": (3, 2),
    }
