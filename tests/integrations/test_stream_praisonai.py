"""The PraisonAI bridge's stream() against the real praisonaiagents, over loopback HTTP with
its own OpenAI client: `budgetconf.testing.LoopbackServer`, and the tests' chat server for
replies that fail."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import pytest
from praisonaiagents import Agent  # type: ignore[import-untyped]

import budgetconf
from budgetconf.integrations import BridgeStream
from budgetconf.integrations.praisonai import run, stream
from budgetconf.loop import RunStatus, StopReason, current_run
from budgetconf.testing import LoopbackServer

from helpers.bridged import env, same_run
from helpers.chat_server import Failure, Silence, Trickle, reply, serving
from helpers.conformance import drained

RAN: list[tuple[int, int]] = []
USAGE = {"prompt_tokens": 10, "completion_tokens": 5}
ANSWER = {"content": "the sum is 3", "usage": USAGE}


def calling(tool: str) -> dict[str, Any]:
    """A response that calls ``tool`` to add 1 and 2, 15 tokens."""
    call = {"name": tool, "arguments": {"a": 1, "b": 2}}
    return {"content": "adding", "tool_calls": [call], "usage": USAGE}


#: a call of ``add`` on every response
LOOPING = [calling("add")]
SERVER_ERROR = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No telemetry, a fake key, and the model's name; each test sets OPENAI_BASE_URL."""
    monkeypatch.setenv("PRAISONAI_TELEMETRY_DISABLED", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MODEL_NAME", "test-model")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    RAN.clear()


def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append((a, b))
    return a + b


def agent(url: str, monkeypatch: pytest.MonkeyPatch, *tools: Any) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    return Agent(name="calc", instructions="You add numbers.", tools=list(tools or [add]))


def test_the_items_are_the_text_start_streams_and_the_result_is_the_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What agent.start(stream=True) yields for an answer, and then run()'s result."""
    with LoopbackServer([ANSWER]) as server:
        own = list(agent(server.url, monkeypatch).start("add", stream=True, output="silent"))
        streamed = stream(agent(server.url, monkeypatch), "add", env(max_steps="5"))
        items = list(streamed)
    assert items == own == ["the sum is 3"]
    result = streamed.result
    assert (result.status, result.stop_reason, result.output, result.turns) == (
        RunStatus.OK,
        "completed",
        "the sum is 3",
        1,
    )


@pytest.mark.parametrize(
    ("budget", "stop", "turns", "ran"),
    [
        ({"max_steps": "3"}, "max_steps", 3, 2),
        ({"max_tokens": "30"}, "max_tokens", 2, 2),
        ({"max_tool_calls": "1", "max_steps": "5"}, "max_tool_calls", 2, 1),
    ],
)
def test_a_stop_ends_the_stream_without_raising_with_the_runs_result(
    monkeypatch: pytest.MonkeyPatch, budget: dict[str, str], stop: str, turns: int, ran: int
) -> None:
    """Every request is streamed and asks for its usage, which the budgets count."""
    with LoopbackServer(LOOPING) as server:
        ag = agent(server.url, monkeypatch)
        own = ag.execution, ag.execute_tool
        streamed = stream(ag, "add", env(**budget))
        items = list(streamed)  # no exception: the stop is the result
        bodies = list(server.received)
        assert (ag.execution, ag.execute_tool) == own
        RAN.clear()
        ran_alone = run(agent(server.url, monkeypatch), "add", env(**budget))
    assert items == ["adding"] * turns
    assert [(b["stream"], b["stream_options"]) for b in bodies] == [
        (True, {"include_usage": True})
    ] * turns
    result = streamed.result
    assert (result.status, result.stop_reason, result.turns) == (
        RunStatus.TRUNCATED,
        stop,
        turns,
    )
    assert result.usage.total_tokens == 15 * turns
    same_run(result, ran_alone)
    assert len(RAN) == ran


def test_each_response_is_yielded_as_it_comes_not_at_the_runs_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tool of the first response runs once the caller has its text: the stream is live."""
    seen = threading.Event()
    heard: list[bool] = []

    def waits(a: int, b: int) -> int:
        """Add two integers."""
        heard.append(seen.wait(10))
        return a + b

    with LoopbackServer([calling("waits"), ANSWER]) as server:
        streamed = stream(agent(server.url, monkeypatch, waits), "add", env(max_steps="5"))
        for _ in streamed:
            seen.set()
    assert heard == [True]
    assert streamed.result.output == "the sum is 3"


def test_a_tool_sees_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run's thread has the caller's context: current_run() in a tool is the run."""
    runs: list[Any] = []

    def looks(a: int, b: int) -> int:
        """Add two integers."""
        runs.append(current_run())
        return a + b

    with LoopbackServer([calling("looks"), ANSWER]) as server:
        streamed = stream(agent(server.url, monkeypatch, looks), "add", env(max_steps="5"))
        list(streamed)
    (seen,) = runs
    assert seen is not None
    assert seen.ended  # the run the tool saw is the one that has ended
    assert streamed.result.tool_calls_executed == 1


def test_a_model_that_fails_ends_the_stream_with_a_failed_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving(
        [reply("adding", calls=[("c1", "add", {"a": 1, "b": 2})], usage=(10, 5)), SERVER_ERROR]
    ) as chat:
        streamed = stream(agent(chat.url, monkeypatch), "add", env(max_steps="3"))
        items = list(streamed)
    result = streamed.result
    assert items == ["adding"]
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 2)
    assert result.message.startswith("failed: InternalServerError")
    assert RAN == [(1, 2)]


BOTH = {"run": run, "stream": lambda *a, **k: drained(stream(*a, **k))}


@pytest.mark.parametrize("call", BOTH.values(), ids=BOTH)
def test_ctrl_c_in_a_tool_ends_the_run_cancelled_as_the_executors_is(
    monkeypatch: pytest.MonkeyPatch, call: Any
) -> None:
    def interrupts(a: int, b: int) -> int:
        """Add two integers."""
        raise KeyboardInterrupt

    with LoopbackServer([calling("interrupts")]) as server:
        result = call(agent(server.url, monkeypatch, interrupts), "add", env(max_steps="3"))
    assert (result.stop_kind, result.message) == (StopReason.CANCELLED, "cancelled on turn 1")
    assert isinstance(result.native, KeyboardInterrupt)


@pytest.mark.parametrize("call", BOTH.values(), ids=BOTH)
def test_a_process_leaving_in_a_tool_records_the_runs_end_and_goes_on_leaving(
    monkeypatch: pytest.MonkeyPatch, call: Any
) -> None:
    seen: list[dict[str, Any]] = []

    def exits(a: int, b: int) -> int:
        """Add two integers."""
        raise SystemExit(3)

    with LoopbackServer([calling("exits")]) as server, pytest.raises(SystemExit):
        call(agent(server.url, monkeypatch, exits), "add", env(max_steps="3"), on_event=seen.append)
    (stopped,) = [e for e in seen if e["type"] == "stopped"]
    assert (stopped["status"], stopped["stop_reason"]) == ("failed", "error")


@pytest.mark.parametrize("at", [1, 2], ids=["the first response", "the second"])
def test_a_stream_closed_early_ends_the_run_cancelled_and_frees_the_agent(
    monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    seen: list[dict[str, Any]] = []
    with LoopbackServer(LOOPING) as server:
        ag = agent(server.url, monkeypatch)
        own = ag.execution, ag.execute_tool
        with stream(ag, "add", env(max_steps="5"), on_event=seen.append) as streamed:
            for n, _ in enumerate(streamed, 1):
                if n == at:
                    break
        made = len(server.received)
        result = streamed.result
        assert (result.status, result.stop_kind) == (RunStatus.FAILED, StopReason.CANCELLED)
        assert result.message == f"cancelled on turn {result.turns}"
        # the next turn may have begun, its request abandoned before or after it was sent
        assert at <= made <= result.turns <= at + 1
        assert (seen[-1]["type"], seen[-1]["stop_reason"]) == ("stopped", "cancelled")
        assert (ag.execution, ag.execute_tool) == own
        assert run(ag, "add", env(max_steps="2")).turns == 2  # free once it was closed


def test_the_deadline_abandons_a_request_held_mid_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request the model never answers is abandoned at the deadline, on the run's thread,
    and the stream ends with the timeout stop and no item."""
    with serving([Silence()]) as chat:
        streamed = stream(agent(chat.url, monkeypatch), "add", env(timeout_seconds="0.5"))
        assert list(streamed) == []
        made = len(chat.received)
    result = streamed.result
    assert (result.status, result.stop_kind, made) == (RunStatus.TRUNCATED, StopReason.TIMEOUT, 1)
    assert RAN == []


def test_a_stream_closed_mid_response_abandons_its_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The text comes first and the usage some seconds later: closing the stream at the text
    abandons the request there, so its usage never comes and its tool never runs."""
    adding = reply("adding", calls=[("c1", "add", {"a": 1, "b": 2})], usage=(10, 5))
    with (
        serving([Trickle(adding, gap=0.005)]) as chat,
        stream(agent(chat.url, monkeypatch), "add", env(max_steps="3")) as streamed,
    ):
        assert next(streamed) == "adding"
    result = streamed.result
    assert (result.stop_kind, result.turns, result.usage.total_tokens) == (
        StopReason.CANCELLED,
        1,
        0,
    )
    assert RAN == []


def test_a_stream_closed_while_a_tool_runs_runs_none_of_the_responses_other_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop reads its cancel token only before a response's calls: the bridge's
    execute_tool reads the close before each call, so the call after the running one never
    runs, and the run ends cancelled once the running one returns."""
    started, release = threading.Event(), threading.Event()

    def waits(a: int, b: int) -> int:
        """Add two integers, slowly."""
        started.set()
        release.wait(10)
        return a + b

    both = {
        **calling("waits"),
        "tool_calls": [*calling("waits")["tool_calls"], *LOOPING[0]["tool_calls"]],
    }
    with LoopbackServer([both]) as server:
        streamed = stream(agent(server.url, monkeypatch, waits, add), "add", env(max_steps="5"))
        assert next(streamed) == "adding"
        assert started.wait(10)
        threading.Timer(0.2, release.set).start()  # once close() has said so
        streamed.close()
        made = len(server.received)
    result = streamed.result
    assert (result.stop_kind, result.turns, made) == (StopReason.CANCELLED, 1, 1)
    assert (result.tool_calls_executed, RAN) == (1, [])


def test_a_sub_agent_a_streamed_runs_tool_runs_charges_the_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tool of the streamed run carves from it (current_run() on the run's thread): the
    sub-agent's request counts in the stream's usage."""

    def delegate(a: int, b: int) -> str:
        """Ask a helper to add two integers."""
        handle = current_run()
        assert handle is not None
        helper = agent(server.url, monkeypatch)
        return str(run(helper, "help", handle.carve(max_steps=3)).output)

    sub, done = {"content": "sub", "usage": USAGE}, {"content": "ok", "usage": USAGE}
    with LoopbackServer([calling("delegate"), sub, done]) as server:
        streamed = stream(agent(server.url, monkeypatch, delegate), "go", env(max_steps="5"))
        items = list(streamed)
    result = streamed.result
    assert items == ["adding", "ok"]  # the helper's text is its own run's, not the stream's
    assert (result.stop_reason, result.output, result.turns) == ("completed", "ok", 2)
    assert result.usage.total_tokens == 45  # its two responses and the helper's one


def test_the_run_sees_the_context_stream_was_called_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Iterated where another context is current, the run's tools still see stream()'s
    (where a parent's run would be current)."""
    caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="none")
    seen: list[str] = []

    def looks(a: int, b: int) -> int:
        """Add two integers."""
        seen.append(caller.get())
        return a + b

    with LoopbackServer([calling("looks"), ANSWER]) as server:
        token = caller.set("stream()'s")
        streamed = stream(agent(server.url, monkeypatch, looks), "add", env(max_steps="5"))
        caller.reset(token)
        list(streamed)
    assert seen == ["stream()'s"]


def test_a_stream_closed_before_its_first_item_makes_no_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackServer(LOOPING) as server:
        streamed = stream(agent(server.url, monkeypatch), "add", env(max_steps="3"))
        streamed.close()
        assert server.received == []
    assert (streamed.result.stop_kind, streamed.result.message) == (
        StopReason.CANCELLED,
        "cancelled on turn 0",
    )


def test_a_second_stream_of_an_agent_in_one_is_refused_and_the_first_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackServer(LOOPING) as server:
        ag = agent(server.url, monkeypatch)
        first = stream(ag, "add", env(max_steps="3"))
        next(first)
        second = stream(ag, "again", env(max_steps="3"))
        with pytest.raises(budgetconf.UsageError, match="is in a bridged run already"):
            next(second)
        unstarted = stream(ag, "again", env(max_steps="3"))
        with pytest.raises(budgetconf.UsageError, match="is in a bridged run already"):
            unstarted.close()  # closed before its first item, its run is refused as it begins
        list(first)
    assert first.result.turns == 3


@pytest.mark.parametrize(
    ("keywords", "match"),
    [
        ({"stream": True}, r"^stream=: stream\(\) streams"),
        ({"execution": None}, "^execution="),
        ({"output": "verbose"}, r"^output='verbose' leaves the agent verbose"),
    ],
)
def test_stream_refuses_what_run_refuses_before_any_request(
    monkeypatch: pytest.MonkeyPatch, keywords: dict[str, Any], match: str
) -> None:
    with LoopbackServer(LOOPING) as server:
        with pytest.raises(budgetconf.UsageError, match=match):
            stream(agent(server.url, monkeypatch), "add", env(max_steps="3"), **keywords)
        with pytest.raises(TypeError, match="unexpected keyword"):
            stream(agent(server.url, monkeypatch), "add", env(max_steps="3"), colour="red")
        assert server.received == []


def test_run_refuses_stream_true_and_names_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(LOOPING) as server:
        ag = agent(server.url, monkeypatch)
        with pytest.raises(budgetconf.UsageError, match=r"call stream\(\)"):
            run(ag, "add", env(max_steps="3"), stream=True)


def test_the_stream_is_a_bridge_stream_whose_result_waits_for_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackServer(LOOPING) as server:
        streamed = stream(agent(server.url, monkeypatch), "add", env(max_steps="2"))
        assert isinstance(streamed, BridgeStream)
        with pytest.raises(budgetconf.UsageError, match="has not ended"):
            _ = streamed.result
        streamed.close()


def test_a_response_in_pieces_is_assembled_as_the_openai_packages_own_state_does() -> None:
    """Tool calls split over chunks by index, a refusal, reasoning, a second choice and usage:
    the completion the loop reads is the one openai's ChatCompletionStreamState makes of
    the same chunks, but for the second choice, which the loop never reads."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    from budgetconf.integrations._praisonai_stream import _Assembled

    head = {"id": "r1", "object": "chat.completion.chunk", "created": 7, "model": "m"}

    def chunk(
        delta: dict[str, Any], finish: str | None = None, index: int = 0
    ) -> ChatCompletionChunk:
        choice = {"index": index, "delta": delta, "finish_reason": finish}
        return ChatCompletionChunk.model_validate({**head, "choices": [choice]})

    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    chunks = [
        chunk({"role": "assistant", "reasoning_content": "one and "}),
        chunk({"reasoning_content": "two"}),
        chunk({"content": "add"}),
        chunk({"content": "other"}, index=1),
        chunk({"content": "ing"}),
        chunk(call(0, id="c0", type="function", function={"name": "add", "arguments": '{"a"'})),
        chunk(call(1, id="c1", type="function", function={"name": "sub", "arguments": "{}"})),
        chunk(call(0, function={"arguments": ": 1}"})),
        chunk({"refusal": "no "}),
        chunk({"refusal": "more"}, "tool_calls"),
        ChatCompletionChunk.model_validate(
            {
                **head,
                "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
            }
        ),
    ]
    ours, theirs = _Assembled(), ChatCompletionStreamState()
    pieces = [ours.add(each) for each in chunks]
    for each in chunks:
        theirs.handle_chunk(each)
    made, snapshot = ours.completion(), theirs.current_completion_snapshot
    assert pieces == [None, None, "add", None, "ing", None, None, None, None, None, None]
    expected = snapshot.model_dump(exclude_none=True)
    assert len(expected["choices"]) == 2
    del expected["choices"][1]
    assert expected["choices"][0]["message"]["reasoning_content"] == "one and two"
    for each in expected["choices"][0]["message"]["tool_calls"]:
        del each["index"]  # the snapshot's own bookkeeping, not the completion's
    assert made.model_dump(exclude_none=True) == expected
    assert made.choices[0].message.tool_calls[0].function.arguments == '{"a": 1}'
    assert _Assembled().completion() is None  # a response of no chunk
    empty = _Assembled()
    empty.add(chunk({"role": "assistant", "content": ""}, "stop"))
    assert empty.completion().choices[0].message.content == ""  # as sent: not None
