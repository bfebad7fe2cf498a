"""The praisonaiagents bridge: real Agents against the chat-completions server on 127.0.0.1.

The agent is pointed at the server through OPENAI_BASE_URL and friends (an
``Agent(base_url=…)`` would take the LiteLLM path, which is not installed),
telemetry is switched off by its own variables, and a socket guard fails the
test if anything dials a host other than the loopback.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from praisonaiagents import Agent, ExecutionConfig  # type: ignore[import-untyped]
from praisonaiagents import main as display
from praisonaiagents.errors import ToolExecutionError  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations import praisonai as bridge
from budgetconf.integrations._praisonai_run import Watch
from budgetconf.loop import Budget, Call, RunStatus, StopReason, Usage, current_run

from helpers import BENCH
from helpers.bridged import loopback_only
from helpers.chat_server import ChatServer, Failure, Reply, reply, serving
from helpers.ledgers import MOST, PER_CALL, assert_stopped_before_the_third_call, sqlite_url
from helpers.ledgers import budget as ledger_budget

WRAP_UP = "You are approaching the maximum number of tool-use steps"
SERVER_ERROR = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """No telemetry, a fake key, and no socket to anything but 127.0.0.1."""
    monkeypatch.setenv("PRAISONAI_TELEMETRY_DISABLED", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MODEL_NAME", "test-model")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_MAX_RETRIES", raising=False)
    dialled = loopback_only(monkeypatch)
    yield dialled
    assert dialled == []


class Tools:
    """The agent's tool, and how often it ran."""

    def __init__(self) -> None:
        self.ran = 0

    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        self.ran += 1
        return a + b


def _agent(chat: ChatServer, monkeypatch: pytest.MonkeyPatch, tools: Tools, **options: Any) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", chat.url)

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return tools.add(a, b)

    return Agent(name="calc", instructions="You add numbers.", tools=[add], **options)


def _calls(n: int, text: str | None = None, *, each: int = 1) -> list[Reply]:
    return [
        reply(
            text,
            calls=[(f"call_{i}_{j}", "add", {"a": i, "b": j}) for j in range(each)],
            usage=(10, 5),
        )
        for i in range(n)
    ]


def _tool_answers(chat: ChatServer, request: int) -> list[str]:
    """What the tool messages of one request (0 for the first) said."""
    return [m["content"] for m in chat.bodies[request]["messages"] if m["role"] == "tool"]


def _python(code: str, *options: str) -> str:
    """What ``code`` prints in a fresh interpreter that imports this budgetconf (tests run in a
    directory of their own, so a relative PYTHONPATH would not find it)."""
    source = str(Path(budgetconf.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, *options, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def _env(**values: str) -> budgetconf.Resolution:
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})


def test_a_step_stop_names_the_field_and_answers_the_last_turns_calls_as_not_executed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three model calls under a budget of 3; the third one's call is answered, not run. The
    PraisonAI contract, named: its field, and its own wrap-up notice on the last turn."""
    tools = Tools()
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, tools)
        contract = budgetconf.resolve("praisonai", explicit={"execution.max_steps": 3})
        result = bridge.run(agent, "add", contract)
    assert (result.status, result.stop_reason, result.stop_kind) == (
        RunStatus.TRUNCATED,
        "max_steps",
        StopReason.MAX_STEPS,
    )
    assert result.message == (
        "stopped: hit max_steps (3): execution.max_steps = 3 from explicit; raise it where it"
        " is set"
    )
    assert result.limit == {
        "field": "execution.max_steps",
        "value": 3,
        "source": "explicit",
        "locator": "explicit",
        "raise_with": [],
    }
    assert (result.turns, len(chat.received), tools.ran) == (3, 3, 2)
    assert (result.output, result.framework, result.tool_calls_executed) == ("", "praisonai", 2)
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert (refused["ids"], refused["reason"]) == (
        ["call_2_0"],
        "this was the last turn the step budget allows",
    )
    # the praisonai preset's wrap-up notice goes with the last permitted call, once
    last = chat.bodies[-1]["messages"]
    assert last[-1]["role"] == "user"
    assert last[-1]["content"].startswith(WRAP_UP)
    assert [m for m in last if WRAP_UP in str(m.get("content"))] == [last[-1]]
    assert WRAP_UP not in str(chat.bodies[-2]["messages"])


def test_a_completed_run_under_the_praisonai_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    """A final answer completes the run; its usage is the responses' summed."""
    tools = Tools()
    with serving([*_calls(1), reply("the sum is 1", usage=(10, 5))]) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add")
    assert (result.status, result.stop_reason, result.message) == (
        RunStatus.OK,
        "completed",
        "completed in 2 turns",
    )
    assert (result.output, result.turns, len(chat.received), tools.ran) == ("the sum is 1", 2, 2, 1)
    assert result.limit is None
    assert result.usage == Usage(20, 0, 10, 30)
    models = [e["model"] for e in result.events if e["type"] == "model_response"]
    assert models == ["test-model", "test-model"]


def test_a_structured_answer_is_the_native_and_its_text_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``output_pydantic`` start() gives the model instance: the native, as it came."""
    from pydantic import BaseModel

    class Sum(BaseModel):
        total: int

    with serving([reply('{"total": 3}')]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", output_pydantic=Sum)
    assert (result.stop_reason, result.turns, result.native) == ("completed", 1, Sum(total=3))
    assert result.output == "total=3"


def test_a_token_budget_stops_before_the_tools_of_the_response_that_spends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """45 tokens at turn 3 pass a budget of 40: that response's call does not run."""
    env = {"BUDGETCONF_MAX_TOKENS": "40"}
    tools = Tools()
    with serving(_calls(9, "adding")) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", budgetconf.resolve(env=env))
    assert (result.stop_reason, result.status) == ("max_tokens", RunStatus.TRUNCATED)
    assert result.message.startswith("stopped: hit max_tokens (40): limits.max_tokens = 40 from")
    assert (result.turns, len(chat.received), tools.ran) == (3, 3, 2)
    assert result.output == "adding"


def test_a_final_answer_that_crosses_the_token_budget_completes_as_in_the_executor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The executor reads a final answer before the token budget: 30 of 20 tokens, completed."""
    env = {"BUDGETCONF_MAX_TOKENS": "20"}
    with serving([*_calls(1), reply("done", usage=(10, 5))]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", budgetconf.resolve(env=env))
    assert (result.stop_reason, result.output, result.turns) == ("completed", "done", 2)
    assert result.usage.total_tokens == 30


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: failed, before the response's tools."""
    tools = Tools()
    huge = reply("adding", calls=[("call_0", "add", {"a": 1, "b": 1})], usage=(10, 2**63 - 11))
    with serving([huge, *_calls(3)]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add", {"loop.max_steps": 3})
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert result.message.startswith("failed: malformed model response: usage.completion_tokens:")
    assert "more tokens than one response can use" in result.message
    assert (len(chat.received), tools.ran) == (1, 0)


def test_the_text_sent_with_earlier_tool_calls_is_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last text the model sent is the output of a run the budget stopped."""
    script = [*_calls(1, "first I add"), *_calls(5)]
    with serving(script) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", {"loop.max_steps": 3})
    assert (result.stop_reason, result.output) == ("max_steps", "first I add")


def test_a_per_response_cap_truncates_a_response_under_the_praisonai_code_preset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """praisonai-code truncates: of 5 calls under a cap of 3 the first 3 run, the rest are
    answered as skipped, and the run goes on; limits() still refuses the cap it cannot pass."""
    res = budgetconf.resolve("praisonai-code", env={"PRAISONAI_CODE_MAX_STEPS": "3"})
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge.limits(res)
    assert str(caught.value) == (
        "execution.max_tool_calls_per_turn = 3 from env:PRAISONAI_CODE_MAX_STEPS cannot be"
        " enforced by praisonaiagents through limits(); unset it, or run the agent through run(),"
        " which enforces it"
    )
    tools = Tools()
    with serving([*_calls(1, each=5), reply("done")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add", res)
    assert (result.stop_reason, result.turns, tools.ran) == ("completed", 2, 3)
    skipped = (
        "skipped: only the first 3 calls of a response run (execution.max_tool_calls_per_turn = 3)"
    )
    answers = _tool_answers(chat, 1)  # each as praisonaiagents writes it: JSON
    assert (answers[:2], [json.loads(a) for a in answers[3:]]) == (["0", "1"], [skipped, skipped])
    (truncated,) = [e for e in result.events if e["type"] == "batch_truncated"]
    assert truncated["skipped"] == ["call_0_3", "call_0_4"]


def test_a_response_over_the_per_response_cap_is_rejected_whole_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default preset rejects: none of 3 calls over a cap of 2 runs, and the model is told."""
    tools = Tools()
    with serving([*_calls(1, each=3), reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", _env(max_tool_calls_per_turn="2"))
    assert (result.stop_reason, result.turns, tools.ran, len(chat.received)) == (
        "completed",
        2,
        0,
        2,
    )
    answers = [json.loads(a) for a in _tool_answers(chat, 1)]
    assert len(answers) == 3
    assert answers[0].startswith(
        "not executed: this response has 3 tool calls and at most 2 are accepted in one"
        " response (loop.max_tool_calls_per_turn = 2), so none ran."
    )
    assert [e["type"] for e in result.events].count("batch_rejected") == 1


def test_calls_past_the_run_wide_tool_call_budget_are_not_run_and_the_run_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """3 calls a response under a budget of 4: the first 3 run, the next 3 are not executed."""
    tools = Tools()
    with serving(_calls(9, each=3)) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add", _env(max_tool_calls="4"))
    assert (result.status, result.stop_reason, result.limit["field"]) == (  # type: ignore[index]
        RunStatus.TRUNCATED,
        "max_tool_calls",
        "limits.max_tool_calls",
    )
    assert (result.turns, len(chat.received), tools.ran, result.tool_calls_executed) == (2, 2, 3, 3)
    (refused,) = [e for e in result.events if e["type"] == "calls_not_executed"]
    assert refused["reason"] == "the run's tool-call budget would be exceeded"


def test_a_budget_only_run_enforces_is_refused_through_limits_and_cost_without_a_name() -> None:
    """Tokens are the bridge's, in run() only; praisonaiagents reports no cost at all, so a
    cost budget needs the price of the agent's model: one with no name has none."""
    with pytest.raises(budgetconf.UsageError, match=r"by praisonaiagents through limits\(\)"):
        bridge.limits(_env(max_tokens="40"))
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge.run(object(), "add", _env(max_cost_usd="3"))
    assert str(caught.value) == (
        "limits.max_cost_usd = 3.0 from env:BUDGETCONF_MAX_COST_USD cannot be enforced by"
        " praisonaiagents: it reports no cost, and no price is known for a model with no name"
        " (set prices.input_per_mtok and prices.output_per_mtok); unset it, or pass"
        " unenforced='warn' to run without it"
    )


def test_a_cost_budget_stops_the_run_at_the_models_price(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each response reports 1,000 + 1,000 tokens and no cost: $0.00075 at the fields' price,
    so the third request passes $0.002, its call is answered as not executed, and the run
    stops there, named by the agent's model (OPENAI_MODEL_NAME here)."""
    tools = Tools()
    replies = [
        reply(None, calls=[(f"c{i}", "add", {"a": i, "b": 1})], usage=(1000, 1000))
        for i in range(1, 9)
    ]
    priced = {"price_input_per_mtok": "0.15", "price_output_per_mtok": "0.6"}
    with serving(replies) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", _env(max_cost_usd="0.002", **priced))
        requests = len(chat.received)
    assert (result.stop_reason, result.turns, requests, tools.ran) == ("max_cost", 3, 3, 2)
    assert (result.usage.cost_usd, result.usage.cost_source) == (0.00225, "priced")
    assert result.message.endswith(
        "; spent $0.00225 at test-model's price (env:BUDGETCONF_PRICE_INPUT_PER_MTOK,"
        " env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK: $0.15 / $0.60 per Mtok)"
    )


def test_a_named_model_with_no_price_is_refused_before_its_first_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """prices.unknown = refuse: the agent's model has no price (no table to look it up in),
    so run() refuses its cost budget before any request, unenforced="warn" or not."""
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        res = _env(max_cost_usd="1", price_table="none")
        with pytest.raises(budgetconf.UsageError, match="no price for the model 'test-model'"):
            bridge.run(agent, "add", res, unenforced="warn")
        assert chat.received == []


def test_limits_are_the_presets_values_as_explain_shows_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """limits() gives the preset's ExecutionConfig, which the framework itself enforces: the
    default preset's, as every bridge's, or the PraisonAI contract's when it is named."""
    assert bridge.limits() == {
        "execution": ExecutionConfig(max_steps=40, max_tool_calls_per_turn=10)
    }
    named = bridge.limits(preset="praisonai")["execution"]
    assert (named.max_steps, named.max_tool_calls_per_turn) == (20, 10)
    given = bridge.limits(explicit={"loop.max_steps": 2})["execution"]
    assert (given.max_steps, given.max_tool_calls_per_turn) == (2, 10)
    code = bridge.limits("praisonai-code")["execution"]
    assert (code.max_steps, code.max_tool_calls_per_turn) == (200, 200)
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, Tools(), **bridge.limits(explicit={"loop.max_steps": 2}))
        agent.start("add", stream=False, output="silent")
    assert (agent.last_stop_reason, len(chat.received)) == ("max_steps", 2)


def test_budget_none_reads_the_budget_variables_as_every_bridge_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BUDGETCONF_MAX_STEPS bounds a run given no budget, through limits() and run() alike."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "3")
    assert bridge.limits()["execution"].max_steps == 3
    with serving(_calls(9)) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add")
    assert (result.stop_reason, result.turns, len(chat.received)) == ("max_steps", 3, 3)
    assert result.limit is not None
    assert result.limit["locator"] == "env:BUDGETCONF_MAX_STEPS"


def test_limits_warns_nothing_before_any_agent_exists() -> None:
    """ExecutionConfig's notice of a future default is praisonaiagents' own, not the caller's."""
    code = (
        "from budgetconf.integrations import praisonai\n"
        "print(praisonai.limits()['execution'].max_steps)\n"
    )
    assert _python(code, "-W", "error") == "40\n"


def test_a_keyword_that_sets_a_limit_of_its_own_or_streams_is_refused() -> None:
    """execution=, stream=True and what is not an Agent are refused."""
    with pytest.raises(budgetconf.UsageError, match="execution= would set praisonaiagents's own"):
        bridge.run(object(), "add", execution=ExecutionConfig(max_steps=50))
    with pytest.raises(budgetconf.UsageError, match="stream=True: run"):
        bridge.run(object(), "add", stream=True)
    with pytest.raises(budgetconf.UsageError, match="expected a praisonaiagents Agent, got object"):
        bridge.run(object(), "add")


@pytest.mark.parametrize(
    ("options", "output"), [({}, "normal"), ({}, "stream"), ({"output": "verbose"}, "own")]
)
def test_an_output_that_leaves_the_agent_verbose_is_refused(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], output: str
) -> None:
    """A verbose agent streams each response to the console, without usage: refused."""
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools(), **options)
        with pytest.raises(budgetconf.UsageError) as caught:
            bridge.run(agent, "add", output=output)
        assert chat.received == []
    assert str(caught.value).startswith(f"output={output!r} leaves the agent verbose")
    assert "silent" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ({"reflection": True}, "reflection"),
        ({"planning": True}, "planning"),
        (
            {"model": "ollama/llama3"},
            "a model praisonaiagents calls through its LLM class (model='provider/model',"
            " base_url= or a model object)",
        ),
    ],
)
def test_an_agent_whose_model_requests_the_bridge_cannot_see_is_refused(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], what: str
) -> None:
    """Reflection, the planner and the LiteLLM path ask the model outside the native loop."""
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools(), **options)
        with pytest.raises(budgetconf.UsageError) as caught:
            bridge.run(agent, "add")
        assert chat.received == []
    assert str(caught.value).startswith(
        f"the agent 'calc' has {what}, whose model requests run() cannot count"
    )


def test_a_resumed_durable_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resumed durable run would count its earlier steps against the budget."""
    own = ExecutionConfig(durable=True, resume_run_id="run-1")
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools(), execution=own)
    with pytest.raises(budgetconf.UsageError, match=r"execution\.resume_run_id: a resumed durable"):
        bridge.run(agent, "add")
    assert agent.execution is own


def _borrowed(agent: Any) -> tuple[Any, ...]:
    """What the bridge lends an agent for a run, as the agent holds it."""
    own = vars(agent)
    return (
        agent.execution,
        agent._execution_config,
        own.get("_Agent__openai_client"),
        own.get("_unified_dispatcher"),
        "execute_tool" in own,
    )


def test_the_agents_own_execution_client_and_tools_are_back_after_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The budget (one step over, the Meter stops first) is lent for the run, and no display
    callback of the framework's is touched: one registered before hears every call."""
    own = ExecutionConfig(max_steps=7, output_continuation=True)
    heard: list[int] = []

    def theirs(tokens_in: int) -> None:
        heard.append(tokens_in)

    display.register_display_callback("llm_end", theirs)
    try:
        with serving(_calls(9)) as chat:
            agent = _agent(chat, monkeypatch, Tools(), execution=own)
            before = _borrowed(agent)
            seen: list[tuple[int | None, bool, bool]] = []
            real_start = agent.start

            def start(*args: Any, **kwargs: Any) -> Any:
                execution = agent.execution
                lent = "execute_tool" in vars(agent)
                seen.append((execution.max_steps, execution.output_continuation, lent))
                return real_start(*args, **kwargs)

            monkeypatch.setattr(agent, "start", start)
            result = bridge.run(agent, "add", {"loop.max_steps": 2})
        assert seen == [(3, False, True)]  # and no uncounted continuation calls
        assert _borrowed(agent) == before
        assert (agent.execution, agent._execution_config) == (own, own)
        assert heard == [10, 10]
        assert result.turns == 2
        assert display.sync_display_callbacks["llm_end"] is theirs
        assert "llm_content" not in display.sync_display_callbacks
    finally:
        display.sync_display_callbacks.pop("llm_end")


def test_a_keyword_start_does_not_take_is_raised_and_the_agent_is_left_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad keyword is the caller's error: raised, before anything is lent or asked."""
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        before = _borrowed(agent)
        with pytest.raises(TypeError, match="no_such_keyword"):
            bridge.run(agent, "add", no_such_keyword=1)
        assert chat.received == []
    assert _borrowed(agent) == before
    assert "llm_end" not in display.sync_display_callbacks


def test_a_missing_api_key_is_raised_before_the_run_begins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """praisonaiagents builds its client at the first request; run() has it built first, so
    the caller's missing key (no key and no base URL) is raised as the framework raises it,
    before the Meter starts or anything is lent (the socket guard sees no request)."""
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent(name="calc", instructions="You add numbers.", tools=[Tools().add])
    before = _borrowed(agent)
    events: list[dict[str, Any]] = []
    with pytest.raises(ValueError, match="OPENAI_API_KEY environment variable is required"):
        bridge.run(agent, "add", on_event=events.append)
    assert (_borrowed(agent), events) == (before, [])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with serving([reply("done")]) as chat:  # the agent is not left claimed
        monkeypatch.setenv("OPENAI_BASE_URL", chat.url)
        assert bridge.run(agent, "add").stop_reason == "completed"


@pytest.mark.parametrize(
    ("answer", "stop", "status", "message"),
    [
        (
            reply(None, finish="content_filter"),
            "content_filtered",
            RunStatus.BLOCKED,
            "blocked: the provider's content filter stopped the answer on turn 1 (finish_reason"
            " content_filter); rephrase the request, or see the provider's filter settings",
        ),
        (
            reply(None, refusal="I won't"),
            "refused",
            RunStatus.BLOCKED,
            "blocked: the model refused on turn 1 (finish_reason refusal); what it said is the"
            " output",
        ),
        (
            reply("cut o", finish="length"),
            "length_truncated",
            RunStatus.BLOCKED,
            "blocked: the answer on turn 1 was cut off at the model's length limit (finish_reason"
            " length), and its partial text is the output; raise the model's limit on one answer"
            " (max_completion_tokens or max_tokens in an OpenAI-compatible request;"
            " limits.max_tokens is the run's budget, not this) or ask for a shorter answer",
        ),
        (
            {"id": "x", "object": "chat.completion", "choices": "not a list"},
            "error",
            RunStatus.FAILED,
            "failed: malformed model response: the server's answer is not a chat completion:"
            " ChatCompletion(id='x', choices='not a list', created=None, model=None, object='…"
            " (turn 1)",
        ),
        (
            {"id": "x", "object": "chat.completion", "choices": [{"index": 0}]},
            "error",
            RunStatus.FAILED,
            "failed: malformed model response: the server's answer has no message:"
            " Choice(finish_reason=None, index=0, logprobs=None, message=None) (turn 1)",
        ),
    ],
)
def test_a_blocked_or_malformed_response_ends_the_run_as_in_the_executor(
    monkeypatch: pytest.MonkeyPatch, answer: Reply, stop: str, status: RunStatus, message: str
) -> None:
    """The Meter reads each response as the executor reads it, in the executor's words."""
    with serving([answer, reply("more")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add")
    assert (result.stop_reason, result.status, result.message) == (stop, status, message)
    assert result.limit is None
    assert len(chat.received) == 1  # and no continuation call past the budget's count
    assert result.output == {"refused": "I won't", "length_truncated": "cut o"}.get(stop, "")


def test_the_callers_cancel_token_still_cancels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bridge's own token, which the Meter sets, also answers for the caller's."""
    token = threading.Event()

    class Cancelling(Tools):
        def add(self, a: int, b: int) -> int:
            token.set()  # a /stop while the first tool runs
            return super().add(a, b)

    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, Cancelling())
        result = bridge.run(agent, "add", _env(max_tokens="1000"), cancel_token=token)
    assert (result.stop_reason, result.status, result.turns, len(chat.received)) == (
        "cancelled",
        RunStatus.FAILED,
        1,
        1,
    )
    assert result.message == "cancelled: the run's cancel token was set after 1 turn"


def test_the_agents_interrupt_controller_still_interrupts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a token of the caller's, the agent's own controller answers, turn by turn."""
    from praisonaiagents.agent.interrupt import InterruptController  # type: ignore[import-untyped]

    controller = InterruptController()

    class Interrupting(Tools):
        def add(self, a: int, b: int) -> int:
            controller.request("user")
            return super().add(a, b)

    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, Interrupting(), interrupt_controller=controller)
        result = bridge.run(agent, "add")
    assert (result.stop_reason, result.turns, len(chat.received)) == ("cancelled", 1, 1)
    assert not controller.is_set()  # the turn is over: the next one is not interrupted


def test_a_token_set_before_the_run_cancels_it_before_the_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """praisonaiagents raises InterruptedError for it: a cancelled result, no request made."""
    token = threading.Event()
    token.set()
    with serving([reply("done")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", cancel_token=token)
        assert chat.received == []
    assert (result.stop_reason, result.turns) == ("cancelled", 0)
    assert isinstance(result.native, InterruptedError)


def test_a_model_that_fails_fails_the_run_after_the_clients_own_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP 500 after the client's retries: failed, the client's error as native, and none of
    praisonaiagents' own retries or fallbacks, which the budget would not see."""
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "1")
    tools = Tools()
    with serving(lambda n, body: _calls(1)[0] if n == 1 else SERVER_ERROR) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add")
    assert (result.status, result.stop_reason, result.turns, tools.ran) == (
        RunStatus.FAILED,
        "error",
        2,
        1,
    )
    assert len(chat.received) == 3  # the first call, and the second with its one retry
    assert isinstance(result.native, openai.InternalServerError)
    assert result.message == (
        "failed: InternalServerError: Error code: 500 - the model is down (turn 2)"
    )


def test_a_tool_that_raises_fails_the_run_as_praisonaiagents_fails_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """praisonaiagents raises ToolExecutionError once its retries are spent: a failed result
    with it as native, the call counted once, and recorded as failed."""

    class Raising(Tools):
        def add(self, a: int, b: int) -> int:
            super().add(a, b)
            raise RuntimeError("the adder is broken")

    tools = Raising()
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, tools, execution=ExecutionConfig(max_retry_limit=0))
        result = bridge.run(agent, "add")
    assert (result.status, result.stop_reason, result.turns, tools.ran) == (
        RunStatus.FAILED,
        "error",
        1,
        1,
    )
    assert isinstance(result.native, ToolExecutionError)
    (executed,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert executed["ok"] is False
    assert "the adder is broken" in executed["error"]
    assert result.tool_calls_executed == 1


def test_a_tool_that_raises_under_a_deadline_fails_the_run_the_same_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a deadline the tool runs where the bridge can leave it running; what it raises
    still reaches praisonaiagents as it would without one."""

    class Raising(Tools):
        def add(self, a: int, b: int) -> int:
            super().add(a, b)
            raise RuntimeError("the adder is broken")

    tools = Raising()
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, tools, execution=ExecutionConfig(max_retry_limit=0))
        result = bridge.run(agent, "add", _env(timeout_seconds="60"))
    assert (result.status, result.stop_reason, result.turns, tools.ran) == (
        RunStatus.FAILED,
        "error",
        1,
        1,
    )
    assert isinstance(result.native, ToolExecutionError)


def test_a_call_praisonaiagents_refuses_itself_counts_as_a_failed_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its approval refuses the call and answers the model with an error: the tool does not
    run, the call counts (the bridge cannot tell), and the run goes on."""
    from praisonaiagents.approval.backends import CallbackBackend  # type: ignore[import-untyped]
    from praisonaiagents.approval.protocols import ApprovalConfig  # type: ignore[import-untyped]

    refuse = ApprovalConfig(backend=CallbackBackend(lambda name, args, risk: False), all_tools=True)
    tools = Tools()
    with serving([*_calls(1), reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, tools, approval=refuse)
        result = bridge.run(agent, "add")
        (answer,) = _tool_answers(chat, 1)
    assert (result.stop_reason, result.turns, result.tool_calls_executed, tools.ran) == (
        "completed",
        2,
        1,
        0,
    )
    assert json.loads(answer)["approval_denied"] is True
    (executed,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert (executed["ok"], executed["error"]) == (False, "ToolError: Tool execution denied:")


def test_a_budget_without_a_step_budget_runs_past_praisonaiagents_own_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A budget made in code may leave the step budget out: no step limit ends the run, not
    even the framework's own (its max_iter, 20), which the budget did not set."""
    import dataclasses

    base = Budget.from_resolution(_env())
    budget = dataclasses.replace(
        base, limits={k: v for k, v in base.limits.items() if k != "max_steps"}
    )
    tools = Tools()
    with serving([*_calls(22), reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", budget)
    assert (result.stop_reason, result.turns, tools.ran, result.output) == (
        "completed",
        23,
        22,
        "done",
    )
    assert agent.execution.max_steps is None


def test_the_deadline_abandons_a_model_request_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request still unanswered at the deadline is given up there, not waited for."""
    with serving(_calls(9), delay=6.0) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        began = time.monotonic()
        result = bridge.run(agent, "add", _env(timeout_seconds="1.5"))
        took = time.monotonic() - began
        requests = len(chat.received)
    assert (result.status, result.stop_reason, result.limit["field"]) == (  # type: ignore[index]
        RunStatus.TRUNCATED,
        "timeout",
        "limits.timeout_seconds",
    )
    assert (result.turns, requests) == (1, 1)
    assert took < 4.5  # not the server's 6 s


def test_the_deadline_abandons_a_tool_still_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool running at the deadline is left running, counted, and the run stops."""
    release = threading.Event()

    class Slow(Tools):
        def add(self, a: int, b: int) -> int:
            release.wait(10)
            return super().add(a, b)

    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, Slow())
        began = time.monotonic()
        result = bridge.run(agent, "add", _env(timeout_seconds="1.5"))
        took = time.monotonic() - began
        release.set()
    assert (result.stop_reason, result.turns, len(chat.received)) == ("timeout", 1, 1)
    assert took < 6.0  # not the tool's 10 s
    (executed,) = [e for e in result.events if e["type"] == "tool_executed"]
    assert executed["error"] == "Deadline: still running at the run's deadline"
    assert result.tool_calls_executed == 1


def test_a_run_emits_the_executors_events_to_on_event_under_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """on_event hears what the result records, in order; name= names the run."""
    heard: list[dict[str, Any]] = []
    with serving([*_calls(1), reply("done", usage=(10, 5))]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        result = bridge.run(agent, "add", on_event=heard.append, name="adder-run")
    assert heard == result.events
    assert [e["type"] for e in heard] == [
        "run_started",
        "turn_started",
        "model_response",
        "tool_started",
        "tool_executed",
        "turn_started",
        "model_response",
        "stopped",
    ]
    started = heard[0]
    assert (started["name"], started["framework"], started["preset"]) == (
        "adder-run",
        "praisonai",
        "budgetconf",  # budget=None: the default preset, as in every bridge
    )
    assert {e["run_id"] for e in heard} == {result.run_id}


def test_a_tool_sees_the_bridged_run_as_current_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a tool the run is current_run(), on the framework's worker thread too."""
    seen: list[tuple[int, int]] = []

    class Looking(Tools):
        def add(self, a: int, b: int) -> int:
            handle = current_run()
            assert handle is not None
            seen.append((handle.totals.turns, handle.totals.tool_calls_executed))
            return super().add(a, b)

    with serving([*_calls(2), reply("done")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Looking()), "add")
    assert seen == [(1, 0), (2, 1)]
    assert (result.stop_reason, current_run()) == ("completed", None)


def test_one_agent_runs_one_bridged_run_at_a_time_and_two_agents_may_overlap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second run of an agent in a run is refused by name; another agent's run overlaps."""
    refused: list[str] = []
    agents: list[Any] = []

    class Nesting(Tools):
        def add(self, a: int, b: int) -> int:
            try:
                bridge.run(agents[0], "again")
            except budgetconf.UsageError as exc:
                refused.append(str(exc))
            return super().add(a, b)

    results: list[Any] = []
    with serving([*_calls(1), reply("done")]) as first, serving(_calls(9)) as second:
        agents.append(_agent(first, monkeypatch, Nesting()))
        monkeypatch.setenv("OPENAI_BASE_URL", second.url)
        other = _agent(second, monkeypatch, Tools())
        assert other._openai_client is not None  # made now: an agent keeps its first client
        monkeypatch.setenv("OPENAI_BASE_URL", first.url)
        thread = threading.Thread(
            target=lambda: results.append(bridge.run(other, "add", {"loop.max_steps": 4}))
        )
        thread.start()
        result = bridge.run(agents[0], "add")
        thread.join()
    assert refused == [
        "the agent 'calc' is in a bridged run already: run() lends it the budget's client and"
        " tools for the whole run, so one agent runs one at a time (make another Agent for a"
        " run that overlaps)"
    ]
    assert (result.stop_reason, result.turns, len(first.received)) == ("completed", 2, 2)
    (theirs,) = results
    assert (theirs.stop_reason, theirs.turns, len(second.received)) == ("max_steps", 4, 4)


def test_calls_of_tools_the_agent_lacks_or_with_unreadable_arguments_are_not_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """praisonaiagents answers those itself and runs nothing; a name it repairs ('Add') runs."""
    tools = Tools()
    calls: list[tuple[str, str, dict[str, Any] | str]] = [
        ("c1", "add", {"a": 1, "b": 2}),
        ("c2", "Add", {"a": 1, "b": 2}),
        ("c3", "nope", {"a": 1}),
        ("c4", "add", "{not json"),
    ]
    with serving([reply(None, calls=calls), reply("done")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add", _env(max_tool_calls="2"))
    assert (result.stop_reason, tools.ran, result.tool_calls_executed) == ("completed", 2, 2)
    answers = _tool_answers(chat, 1)
    assert answers[:2] == ["3", "3"]
    assert "Tool 'nope' not found" in answers[2]
    assert "Invalid arguments JSON" in answers[3]


def test_the_shared_ledger_is_drawn_on_before_each_model_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """100 tokens a response against a scope's 250: no third request, and one run record."""
    url = sqlite_url(tmp_path)
    res = ledger_budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    script = [
        reply("adding", calls=[(f"c{i}", "add", {"a": i, "b": 1})], usage=(60, 40))
        for i in range(5)
    ]
    with serving(script) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", res)
        assert len(chat.received) == 2
    assert_stopped_before_the_third_call(result, url)


def test_the_last_turn_notice_is_the_presets_and_none_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """last_turn=warn sends the preset's warning with the last permitted call; none, nothing."""
    warned = _env(max_steps="2", last_turn="warn")
    text = Budget.from_resolution(warned).spec.warn_message
    with serving(_calls(9)) as chat:
        bridge.run(_agent(chat, monkeypatch, Tools()), "add", warned)
    assert chat.bodies[-1]["messages"][-1] == {"role": "user", "content": text}
    assert text not in str(chat.bodies[0]["messages"])
    with serving(_calls(9)) as chat:
        bridge.run(_agent(chat, monkeypatch, Tools()), "add", _env(max_steps="2", last_turn="none"))
    assert chat.bodies[-1]["messages"][-1]["role"] == "tool"


def test_a_final_answer_to_the_wrap_up_notice_is_truncated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bridge asked for the wrap-up, as the executor does: its answer ends max_steps."""
    with serving([*_calls(1), reply("what I have so far")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", {"loop.max_steps": 2})
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.TRUNCATED,
        "max_steps",
        "what I have so far",
    )


def test_a_failure_of_the_framework_before_any_request_is_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raised, or logged and swallowed (start() gives None), before the first request: the
    run never began, so the error is the caller's, raised as every bridge raises it."""
    broken = RuntimeError("messages cannot be built")
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        monkeypatch.setattr(agent, "_build_messages", _raising(broken))
        with pytest.raises(RuntimeError) as raised:
            bridge.run(agent, "add")
        assert raised.value is broken
        agent = _agent(chat, monkeypatch, Tools())
        monkeypatch.setattr(agent, "_apply_context_management", _raising(broken))
        with pytest.raises(RuntimeError, match="praisonaiagents ended the run with an error"):
            bridge.run(agent, "add")
        assert agent.last_stop_reason == "error"
        assert chat.received == []
    assert "execute_tool" not in vars(agent)  # what the run lent is back


def test_a_failure_of_the_framework_after_a_request_is_a_failed_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The framework's own failure once the run has begun, which it logs and swallows (start()
    gives None), ends the run failed, as a model or tool failure does."""
    broken = RuntimeError("history cannot be kept")
    with serving([*_calls(1), reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        keep = agent._append_to_chat_history

        def append(message: dict[str, Any]) -> None:
            if message.get("role") == "assistant":  # the answer, once the loop has ended
                raise broken
            keep(message)

        monkeypatch.setattr(agent, "_append_to_chat_history", append)
        result = bridge.run(agent, "add")
        requests = len(chat.received)
    assert (result.status, result.stop_reason, agent.last_stop_reason) == (
        RunStatus.FAILED,
        "error",
        "error",
    )
    assert (result.turns, requests, result.tool_calls_executed) == (2, 2, 1)
    assert result.message == (
        "failed: RuntimeError: praisonaiagents ended the run with an error,"
        " which it logged and did not raise (turn 2)"
    )
    assert result.output == "done"  # the last text the model sent, as the executor keeps it


def _raising(exc: BaseException) -> Any:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return broken


def test_a_callback_registered_during_the_run_does_not_change_the_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Meter counts the requests themselves, whatever the display callbacks are."""

    def later(**kwargs: Any) -> None:
        pass

    class Registering(Tools):
        def add(self, a: int, b: int) -> int:
            display.register_display_callback("llm_end", later)
            return super().add(a, b)

    try:
        with serving([*_calls(1), reply("done", usage=(10, 5))]) as chat:
            agent = _agent(chat, monkeypatch, Registering())
            agent.execution = None  # no config of its own: the budget's is the whole of it
            result = bridge.run(agent, "add")
        assert display.sync_display_callbacks["llm_end"] is later
        assert agent.execution is None
        assert (result.stop_reason, result.turns) == ("completed", 2)
    finally:
        display.sync_display_callbacks.pop("llm_end")


def test_the_cancel_token_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """The token is set once the Meter ends the run, or when the caller's own is."""
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
    budget = Budget.from_resolution(_env(max_steps="1"))
    mine = Watch(agent, budget, None, None, None)
    assert (mine.is_set(), mine.reason) == (False, None)
    assert mine.bridged.call() is None
    mine.bridged.answered(Usage(10, 0, 5), None, [Call("c", "add", {"a": 1, "b": 2})])
    assert (mine.is_set(), mine.reason) == (True, "the budget ended the run")
    theirs = threading.Event()
    theirs.set()
    token = Watch(agent, budget, theirs, None, None)
    assert (token.is_set(), token.reason, token.cancelled) == (True, None, True)


def test_importing_the_bridge_loads_no_loop() -> None:
    """The loop, the Meter and the run's machinery load at the first run."""
    code = (
        "import sys, budgetconf.integrations.praisonai\n"
        "print(sorted(m for m in sys.modules if m.startswith('budgetconf.loop')"
        " or m.endswith(('_metered', '_praisonai_run'))))\n"
    )
    assert _python(code) == "[]\n"


def test_without_praisonaiagents_the_import_says_how_to_install_it() -> None:
    """A missing framework is an ImportError naming the extra."""
    code = (
        "import sys; sys.modules['praisonaiagents'] = None\n"
        "try:\n    import budgetconf.integrations.praisonai\n"
        "except ImportError as e:\n    print(e)\n"
    )
    said = (
        "budgetconf.integrations.praisonai needs the praisonaiagents package: pip install"
        " 'budgetconf[praisonai]' (from a checkout: pip install -e '.[praisonai]')"
    )
    assert _python(code) == said + "\n"


def test_the_missing_import_is_the_bridges_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ImportError names the missing package."""
    monkeypatch.setitem(sys.modules, "praisonaiagents", None)
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.praisonai")
    with pytest.raises(ImportError, match="pip install 'budgetconf\\[praisonai\\]'") as caught:
        importlib.import_module("budgetconf.integrations.praisonai")
    assert caught.value.name == "praisonaiagents"


def test_the_benchmark_reports_both_rows() -> None:
    """bench/bridge_praisonai.py measures the framework alone, through the bridge, and the
    bridge's cost (in quick mode its times are not judged)."""
    spec = importlib.util.spec_from_file_location("bridge_praisonai", BENCH / "bridge_praisonai.py")
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.rows(quick=True)
    assert list(rows) == [
        "praisonai: framework alone, per turn",
        "praisonai: through the bridge, per turn",
        "praisonai: the bridge's cost per turn",
    ]
    assert all(ns > 0 for ns in list(rows.values())[:2])


def test_limits_warns_nothing_under_warnings_as_errors() -> None:
    """``limits()`` raises no DeprecationWarning where every warning is an error, as in
    ``pytest -W error``: the notice of ExecutionConfig it makes is not the caller's."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = bridge.limits({"loop.max_steps": 3})
    assert made["execution"].max_steps == 3


def test_what_the_loop_guard_adds_to_a_result_is_left_out_of_the_repeats_comparison() -> None:
    """praisonaiagents' loop guard appends to a repeated call's text, adds a key to a dict,
    or wraps any other value: what the tool itself returned is what loop.max_repeats sees."""
    from budgetconf.integrations._praisonai_run import _unguarded

    guard = {"message": "Limited progress", "action": "warn"}
    assert _unguarded("3\n\n[loop-guard] Limited progress") == "3"
    assert _unguarded({"value": [1, 2], "_loop_guard": guard}) == [1, 2]
    assert _unguarded({"sum": 3, "_loop_guard": guard}) == {"sum": 3}
    assert _unguarded({"sum": 3}) == {"sum": 3}
    assert _unguarded(3) == 3
