"""The praisonaiagents bridge: real Agents against the chat-completions server on 127.0.0.1.

The agent is pointed at the server through OPENAI_BASE_URL and friends (an
``Agent(base_url=…)`` would take the LiteLLM path, which is not installed),
telemetry is switched off by its own variables, and a socket guard fails the
test if anything dials a host other than the loopback.
"""

from __future__ import annotations

import importlib
import importlib.util
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from praisonaiagents import Agent, ExecutionConfig  # type: ignore[import-untyped]
from praisonaiagents import main as display

import budgetconf
from budgetconf.integrations import praisonai as bridge
from budgetconf.loop import Budget, RunStatus, StopReason

from chat_server import ChatServer, Reply, reply, serving

WRAP_UP = "You are approaching the maximum number of tool-use steps"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """No telemetry, a fake key, and no socket to anything but 127.0.0.1."""
    monkeypatch.setenv("PRAISONAI_TELEMETRY_DISABLED", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MODEL_NAME", "test-model")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    dialled: list[object] = []
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] != "127.0.0.1":
            dialled.append(address)
            raise OSError(f"test is offline: refused {address!r}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
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


def _calls(n: int, text: str | None = None) -> list[Reply]:
    return [
        reply(text, calls=[(f"call_{i}", "add", {"a": i, "b": 1})], usage=(10, 5)) for i in range(n)
    ]


def test_a_step_stop_names_the_field_and_counts_each_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = Tools()
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", {"execution.max_steps": 3})
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
    assert (result.turns, len(chat.received), tools.ran) == (3, 3, 3)  # its tools ran
    assert (result.output, result.framework) == ("", "praisonai")
    # praisonaiagents sends its own wrap-up notice on the last permitted step
    assert WRAP_UP in chat.bodies[-1]["messages"][-1]["content"]
    assert WRAP_UP not in str(chat.bodies[-2]["messages"])


def test_a_completed_run_under_the_praisonai_preset(monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_a_token_budget_stops_before_the_tools_of_the_response_that_spends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"BUDGETCONF_MAX_TOKENS": "40"}
    tools = Tools()
    with serving(_calls(9, "adding")) as chat:
        agent = _agent(chat, monkeypatch, tools)
        result = bridge.run(agent, "add", budgetconf.resolve(env=env))
    assert (result.stop_reason, result.status) == ("max_tokens", RunStatus.TRUNCATED)
    assert result.message.startswith("stopped: hit max_tokens (40): limits.max_tokens = 40 from")
    assert (result.turns, len(chat.received), tools.ran) == (3, 3, 2)  # 45 tokens at turn 3
    assert result.output == "adding"


def test_a_final_answer_that_crosses_the_token_budget_stops_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"BUDGETCONF_MAX_TOKENS": "20"}
    with serving([*_calls(1), reply("done", usage=(10, 5))]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", budgetconf.resolve(env=env))
    assert (result.stop_reason, result.output, result.turns) == ("max_tokens", "done", 2)


def test_a_response_reporting_more_tokens_than_a_response_can_use_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2**63 - 1 tokens is unreadable, as in the executor: failed, before the response's tools."""
    tools = Tools()
    huge = reply("adding", calls=[("call_0", "add", {"a": 1, "b": 1})], usage=(10, 2**63 - 11))
    with serving([huge, *_calls(3)]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, tools), "add", {"execution.max_steps": 3})
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 1)
    assert "more tokens than one response can use" in result.message
    assert (len(chat.received), tools.ran) == (1, 0)


def test_the_text_sent_with_earlier_tool_calls_is_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [*_calls(1, "first I add"), *_calls(5)]
    with serving(script) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add", {"execution.max_steps": 3})
    assert (result.stop_reason, result.output) == ("max_steps", "first I add")


def test_a_per_response_cap_set_by_the_user_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI-native loop never reads max_tool_calls_per_turn: one response ran 5 calls."""
    res = budgetconf.resolve("praisonai-code", env={"PRAISONAI_CODE_MAX_STEPS": "3"})
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge.run(object(), "add", res)
    assert str(caught.value) == (
        "execution.max_tool_calls_per_turn = 3 from env:PRAISONAI_CODE_MAX_STEPS cannot be"
        " enforced by praisonaiagents; unset it, or pass unenforced='warn' to run without it"
    )
    with pytest.raises(budgetconf.UsageError, match="max_tool_calls_per_turn = 3"):
        bridge.limits(res)
    five = reply(None, calls=[(f"c{i}", "add", {"a": i, "b": 1}) for i in range(5)])
    tools = Tools()
    with serving([five, reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, tools)
        with pytest.warns(budgetconf.BudgetConfWarning, match="running without it") as warned:
            result = bridge.run(agent, "add", res, unenforced="warn")
    assert len(warned) == 1
    assert (result.stop_reason, result.turns, tools.ran) == ("completed", 2, 5)


def test_a_budget_only_the_bridge_enforces_is_refused_through_limits() -> None:
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_TOKENS": "40"})
    with pytest.raises(budgetconf.UsageError, match=r"by praisonaiagents through limits\(\)"):
        bridge.limits(res)
    with pytest.raises(budgetconf.UsageError, match="max_tool_calls = 4 from env"):
        bridge.run(object(), "add", budgetconf.resolve(env={"BUDGETCONF_MAX_TOOL_CALLS": "4"}))


def test_limits_are_the_presets_values_as_explain_shows_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert bridge.limits() == {
        "execution": ExecutionConfig(max_steps=20, max_tool_calls_per_turn=10)
    }
    given = bridge.limits(explicit={"execution.max_steps": 2})["execution"]
    assert (given.max_steps, given.max_tool_calls_per_turn) == (2, 10)
    code = bridge.limits("praisonai-code")["execution"]
    assert (code.max_steps, code.max_tool_calls_per_turn) == (200, 200)
    with serving(_calls(9)) as chat:
        agent = _agent(
            chat, monkeypatch, Tools(), **bridge.limits(explicit={"execution.max_steps": 2})
        )
        agent.start("add", stream=False, output="silent")
    assert (agent.last_stop_reason, len(chat.received)) == ("max_steps", 2)


def test_a_keyword_that_sets_a_limit_of_its_own_is_refused() -> None:
    with pytest.raises(budgetconf.UsageError, match="execution= would set praisonaiagents's own"):
        bridge.run(object(), "add", execution=ExecutionConfig(max_steps=50))
    with pytest.raises(budgetconf.UsageError, match="stream=True: run"):
        bridge.run(object(), "add", stream=True)


def test_a_resumed_durable_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    own = ExecutionConfig(durable=True, resume_run_id="run-1")
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools(), execution=own)
    with pytest.raises(budgetconf.UsageError, match=r"execution\.resume_run_id: a resumed durable"):
        bridge.run(agent, "add")
    assert agent.execution is own


def test_the_agents_own_execution_and_callbacks_are_back_after_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own = ExecutionConfig(max_steps=7, output_continuation=True)
    heard: list[int] = []

    def theirs(tokens_in: int) -> None:
        heard.append(tokens_in)

    display.register_display_callback("llm_end", theirs)
    try:
        with serving(_calls(9)) as chat:
            agent = _agent(chat, monkeypatch, Tools(), execution=own)
            seen: list[tuple[int | None, bool]] = []
            real_start = agent.start

            def start(*args: Any, **kwargs: Any) -> Any:
                seen.append((agent.execution.max_steps, agent.execution.output_continuation))
                return real_start(*args, **kwargs)

            monkeypatch.setattr(agent, "start", start)
            result = bridge.run(agent, "add", {"execution.max_steps": 2})
        assert seen == [(2, False)]  # the budget, and no uncounted continuation calls
        assert (agent.execution, agent._execution_config) == (own, own)
        assert heard == [10, 10]  # the callback registered before still hears every call
        assert result.turns == 2
        assert display.sync_display_callbacks["llm_end"] is theirs
        assert "llm_content" not in display.sync_display_callbacks
    finally:
        display.sync_display_callbacks.pop("llm_end")


def test_the_agents_own_execution_is_back_when_the_run_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving([reply("done")]) as chat:
        agent = _agent(chat, monkeypatch, Tools())
        own = agent.execution
        with pytest.raises(TypeError, match="no_such_keyword"):
            bridge.run(agent, "add", no_such_keyword=1)
    assert agent.execution is own
    assert agent._execution_config is own
    assert "llm_end" not in display.sync_display_callbacks


@pytest.mark.parametrize(
    ("answer", "stop", "status", "message"),
    [
        (
            reply(None, finish="content_filter"),
            "content_filtered",
            RunStatus.BLOCKED,
            "blocked: the provider's content filter stopped the answer on turn 1",
        ),
        (
            reply(None, refusal="I won't"),
            "refused",
            RunStatus.BLOCKED,
            "blocked: the model refused on turn 1",
        ),
        (
            reply("cut o", finish="length"),
            "length_truncated",
            RunStatus.BLOCKED,
            "blocked: the answer was cut off at the model's length limit on turn 1",
        ),
        (
            {"id": "x", "object": "chat.completion", "choices": "not a list"},
            "error",
            RunStatus.FAILED,
            "failed: the model call or its handling failed after 1 turn (see the log)",
        ),
    ],
)
def test_the_frameworks_own_stops_are_reported(
    monkeypatch: pytest.MonkeyPatch, answer: Reply, stop: str, status: RunStatus, message: str
) -> None:
    with serving([answer, reply("more")]) as chat:
        result = bridge.run(_agent(chat, monkeypatch, Tools()), "add")
    assert (result.stop_reason, result.status, result.message) == (stop, status, message)
    assert result.limit is None
    assert isinstance(result.output, str)
    if stop == "length_truncated":  # no continuation call past the budget's count
        assert (len(chat.received), result.output) == (1, "cut o")


def test_the_callers_cancel_token_still_cancels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bridge's own token, for the token budget, also answers for the caller's."""
    token = threading.Event()

    class Cancelling(Tools):
        def add(self, a: int, b: int) -> int:
            token.set()  # a /stop while the first tool runs
            return super().add(a, b)

    env = {"BUDGETCONF_MAX_TOKENS": "1000"}
    with serving(_calls(9)) as chat:
        agent = _agent(chat, monkeypatch, Cancelling())
        result = bridge.run(agent, "add", budgetconf.resolve(env=env), cancel_token=token)
    assert (result.stop_reason, result.status, result.turns, len(chat.received)) == (
        "cancelled",
        RunStatus.FAILED,
        1,
        1,
    )
    assert result.message == "cancelled: the run's cancel token was set after 1 turn"


def test_a_step_stop_short_of_the_budget_is_the_frameworks_own() -> None:
    budget = Budget.from_resolution(budgetconf.resolve("praisonai"))
    watch = bridge._Watch(None, None)
    watch.turns = 4
    result = bridge._result(budget, "max_steps", "", watch, None)
    assert (result.stop_reason, result.limit, result.message) == (
        "max_steps",
        None,
        "stopped: praisonaiagents ended the run (max_steps) after 4 turns",
    )
    assert bridge._result(budget, "odd", "", watch, None).stop_reason == "error"


def test_a_callback_registered_during_the_run_stays(monkeypatch: pytest.MonkeyPatch) -> None:
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
        assert (result.stop_reason, result.turns) == ("completed", 1)  # the relay was replaced
    finally:
        display.sync_display_callbacks.pop("llm_end")


def test_the_cancel_token_says_why() -> None:
    mine = bridge._Watch(10, None)
    assert (mine.is_set(), mine.reason) == (False, None)
    mine.response(tokens_in=6, tokens_out=4)
    assert (mine.is_set(), mine.reason) == (True, "the token budget is spent")
    mine.content(content=None)
    assert mine.text == ""
    assert bridge._text(None) == ""
    assert bridge._text(42) == "42"


def test_without_praisonaiagents_the_import_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['praisonaiagents'] = None\n"
        "try:\n    import budgetconf.integrations.praisonai\n"
        "except ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    said = (
        "budgetconf.integrations.praisonai needs the praisonaiagents package: pip install"
        " 'budgetconf[praisonai]' (from a checkout: pip install -e '.[praisonai]')"
    )
    assert done.stdout == said + "\n"


def test_the_missing_import_is_the_bridges_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "praisonaiagents", None)
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.praisonai")
    with pytest.raises(ImportError, match="pip install 'budgetconf\\[praisonai\\]'") as caught:
        importlib.import_module("budgetconf.integrations.praisonai")
    assert caught.value.name == "praisonaiagents"


def test_the_benchmark_reports_both_rows() -> None:
    spec = importlib.util.spec_from_file_location(
        "bridge_praisonai", Path(__file__).parent.parent / "bench" / "bridge_praisonai.py"
    )
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.rows(quick=True)
    assert list(rows) == [
        "praisonai: framework alone, per turn",
        "praisonai: through the bridge, per turn",
    ]
    assert all(ns > 0 for ns in rows.values())
