"""The CrewAI bridge's `stream()`: the run of `run()`, each model call streamed by CrewAI's own
OpenAI-native LLM against the chat-completions server on 127.0.0.1, its text as it comes."""

from __future__ import annotations

import pytest

pytest.importorskip("crewai", reason="the CrewAI bridge is tested where CrewAI is installed")

import os
import time
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before CrewAI's first import

from crewai import LLM, Agent
from crewai.tools import tool

import budgetconf
from budgetconf.integrations import crewai as bridge
from budgetconf.loop import RunStatus

from helpers.bridged import env, same_run
from helpers.chat_server import Failure, Trickle, reply, serving
from helpers.conformance import KEY
from helpers.conformance_crewai import DEPRECATED

# CrewAI 1.15 warns in every Agent() and kickoff of deprecated fields of its own
pytestmark = pytest.mark.filterwarnings(f"ignore::DeprecationWarning:{DEPRECATED}")


def _agent(url: str, ran: list[int]) -> Any:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(a)
        return a + b

    llm = LLM(model="gpt-4o-mini", provider="openai", base_url=url, api_key=KEY, max_retries=0)
    return Agent(role="adder", goal="Add.", backstory="You add.", llm=llm, tools=[tool("add")(add)])


def _asks(n: int, body: dict[str, Any]) -> Any:
    return reply(f"adding {n}", calls=[(f"c{n}", "add", {"a": n, "b": 1})], usage=(10, 5))


def test_the_stream_yields_each_calls_text_and_ends_as_the_run_does() -> None:
    ran: list[int] = []
    with serving(_asks) as chat:
        streamed = bridge.stream(_agent(chat.url, ran), "Add.", env(max_steps="3"))
        pieces = list(streamed)
        bodies = [r.body for r in chat.received]
    with serving(_asks) as chat:
        plain = bridge.run(_agent(chat.url, []), "Add.", env(max_steps="3"))
    assert "".join(pieces) == "adding 1adding 2adding 3"
    assert all(b.get("stream") is True for b in bodies)
    assert all(b["stream_options"] == {"include_usage": True} for b in bodies)
    result = streamed.result
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        "max_steps",
        3,
    )
    assert ran == [1, 2]
    assert result.usage.total_tokens == 45
    same_run(result, plain)


def test_a_stream_closed_before_its_end_is_cancelled() -> None:
    ran: list[int] = []
    with (
        serving(_asks) as chat,
        bridge.stream(_agent(chat.url, ran), "Add.", env(max_steps="9")) as streamed,
    ):
        for _ in streamed:
            break
    result = streamed.result
    # no call after the close (the first one's tool may have begun before it)
    assert (result.stop_reason, result.turns, len(chat.received)) == ("cancelled", 1, 1)


def test_a_stream_closed_before_its_first_item_runs_no_call() -> None:
    with serving(_asks) as chat:
        streamed = bridge.stream(_agent(chat.url, []), "Add.", env(max_steps="3"))
        streamed.close()
        assert chat.received == []
    assert streamed.result.stop_reason == "cancelled"
    assert streamed.result.turns == 0


def test_a_stream_closed_while_a_call_streams_abandons_it() -> None:
    """The second answer comes a byte at a time: its text, arriving after the close, ends
    the call, and the run, cancelled."""
    slow = Trickle(reply("done", usage=(10, 5)), gap=0.005)
    with serving([_asks(1, {}), slow]) as chat:
        streamed = bridge.stream(_agent(chat.url, []), "Add.", env(max_steps="3"))
        first = next(iter(streamed))
        time.sleep(0.3)  # the second call is streaming
        streamed.close()
        assert len(chat.received) == 2
    assert first == "adding 1"
    assert (streamed.result.stop_reason, streamed.result.turns) == ("cancelled", 2)


def test_a_model_failure_ends_the_stream_with_a_failed_result() -> None:
    down = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})
    with serving(lambda n, body: _asks(n, body) if n == 1 else down) as chat:
        streamed = bridge.stream(_agent(chat.url, []), "Add.", env(max_steps="3"))
        list(streamed)
    assert (streamed.result.status, streamed.result.turns) == (RunStatus.FAILED, 2)


def test_the_bridges_own_keywords_are_refused() -> None:
    with serving(_asks) as chat:
        agent = _agent(chat.url, [])
    with pytest.raises(budgetconf.UsageError, match="stream="):
        bridge.stream(agent, "Add.", env(max_steps="3"), stream=True)
    with pytest.raises(budgetconf.UsageError, match="max_iter= would set crewai's own limit"):
        bridge.stream(agent, "Add.", env(max_steps="3"), max_iter=3)


def test_a_keyword_kickoff_does_not_take_is_raised_as_the_stream_ends() -> None:
    with serving(_asks) as chat:
        streamed = bridge.stream(_agent(chat.url, []), "Add.", env(max_steps="3"), nope=1)
        with pytest.raises(TypeError):
            list(streamed)
