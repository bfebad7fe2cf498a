"""The OpenAI adapter: the real openai client against a chat-completions server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import importlib
import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import openai
import pytest

import budgetconf
from budgetconf.integrations.openai import AsyncOpenAIModel, OpenAIModel
from budgetconf.loop import LoopExecutor, RunResult

from helpers.chat_server import ChatServer, Failure, Reply, Silence, Trickle, reply, serving
from helpers.loops import Echo


def _loop(
    mode: str,
    chat: ChatServer,
    budget: Mapping[str, object] | None = None,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    timeout: float = 10.0,
    **options: Any,
) -> RunResult:
    """A run against ``chat``: `run` with `OpenAIModel`, or `arun` with `AsyncOpenAIModel`."""
    settings: dict[str, Any] = {
        "base_url": chat.url,
        "api_key": "sk-test",
        "max_retries": 0,
        "timeout": timeout,
    }
    if mode == "sync":
        with openai.OpenAI(**settings) as client:
            model = OpenAIModel("test-model", client=client, **options)
            return LoopExecutor(model, tools, budget).run("hi")

    async def go() -> RunResult:
        async with openai.AsyncOpenAI(**settings) as client:
            model = AsyncOpenAIModel("test-model", client=client, **options)
            return await LoopExecutor(model, tools, budget).arun("hi")

    return asyncio.run(go())


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    """Each test runs with the sync client through `run` and the async one through `arun`."""
    return str(request.param)


def test_a_tool_call_goes_round_the_loop(mode: str) -> None:
    """The call runs; the next request carries the assistant's call and the tool's answer."""
    echo = Echo()
    script: list[Reply] = [
        reply(calls=[("call_1", "echo", {"text": "ping"})], usage=(10, 5)),
        reply("pong it is", usage=(20, 3)),
    ]
    with serving(script) as chat:
        result = _loop(mode, chat, tools={"echo": echo}, temperature=0)

    assert (result.status, result.output, result.turns, result.tokens) == (
        "ok",
        "pong it is",
        2,
        38,
    )
    assert echo.seen == ["ping"]
    first, second = chat.bodies
    assert (first["model"], first["temperature"]) == ("test-model", 0)
    assert first["messages"] == [{"role": "user", "content": "hi"}]
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
                "description": "A tool that records what it was called with.",
            },
        }
    ]
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "ping"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "ping"},
    ]
    assert chat.received[0].path == "/v1/chat/completions"
    assert chat.received[0].headers["authorization"] == "Bearer sk-test"


def test_without_tools_no_tools_parameter_is_sent(mode: str) -> None:
    """A run with no tools sends no ``tools`` at all, which some servers refuse when empty."""
    with serving([reply("just text")]) as chat:
        result = _loop(mode, chat)

    assert (result.status, result.output) == ("ok", "just text")
    assert "tools" not in chat.bodies[0]


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [("length", "length_truncated"), ("content_filter", "content_filtered")],
)
def test_a_blocking_finish_reason_blocks_the_run(mode: str, finish: str, stop_reason: str) -> None:
    """``length`` and ``content_filter`` from the server end the run ``blocked``."""
    with serving([reply("half an ans", finish=finish)]) as chat:
        result = _loop(mode, chat)

    assert (result.status, result.stop_reason) == ("blocked", stop_reason)


def test_a_refusal_is_refused(mode: str) -> None:
    """A message with ``refusal`` text and nothing else ends the run as ``refused``."""
    with serving([reply(refusal="I can't help with that.")]) as chat:
        result = _loop(mode, chat)

    assert (result.status, result.stop_reason) == ("blocked", "refused")
    assert result.messages[-1]["content"] == "I can't help with that."


def test_usage_counts_against_max_tokens(mode: str) -> None:
    """A response whose usage takes the run past ``limits.max_tokens`` stops it; no call runs."""
    echo = Echo()
    script = [reply(calls=[("c1", "echo", {"text": "x"})], usage=(900, 200))]
    with serving(script) as chat:
        result = _loop(mode, chat, {"limits.max_tokens": 1000}, {"echo": echo})

    assert (result.status, result.stop_reason, result.tokens) == ("truncated", "max_tokens", 1100)
    assert echo.seen == []
    assert len(chat.received) == 1


def test_the_per_turn_cap_rejects_the_whole_batch(mode: str) -> None:
    """Two calls over a cap of one: none runs, and the server is told why for each call id."""
    echo = Echo()
    script = [
        reply(calls=[("a", "echo", {"text": "1"}), ("b", "echo", {"text": "2"})]),
        reply("fine"),
    ]
    with serving(script) as chat:
        result = _loop(mode, chat, {"loop.max_tool_calls_per_turn": 1}, {"echo": echo})

    assert (result.status, result.output, echo.seen) == ("ok", "fine", [])
    answers = [m for m in chat.bodies[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["a", "b"]
    assert all(m["content"].startswith("not executed: this response has 2") for m in answers)


def test_the_step_budget_ends_a_run_that_keeps_calling(mode: str) -> None:
    """A server that only ever calls tools is stopped at ``loop.max_steps``, truncated."""
    with serving([reply(calls=[("c", "echo", {"text": "again"})])]) as chat:
        result = _loop(mode, chat, {"loop.max_steps": 2}, {"echo": Echo()})

    assert (result.status, result.stop_reason, result.turns) == ("truncated", "max_steps", 2)
    assert len(chat.received) == 2


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (500, {"error": {"message": "the model fell over"}}, "HTTP 500: the model fell over"),
        (401, {"error": {"message": "bad key"}}, "HTTP 401: bad key"),
        (503, {}, "HTTP 503: Service Unavailable"),
    ],
)
def test_an_http_error_fails_the_run_with_one_line(
    mode: str, status: int, body: dict[str, Any], said: str
) -> None:
    """The server's error ends the run ``failed``, its message naming the server and status."""
    with serving([Failure(status, body)]) as chat:
        result = _loop(mode, chat)

    assert (result.status, result.stop_reason) == ("failed", "error")
    assert result.message == f"failed: {chat.url} answered {said} (turn 1)"
    assert "sk-test" not in result.message


def test_an_unreachable_server_fails_the_run(mode: str) -> None:
    """A refused connection is one line naming the URL and the cause."""
    with serving([reply()]) as chat:
        pass  # stopped: its port now refuses connections
    result = _loop(mode, chat)

    assert (result.status, result.stop_reason) == ("failed", "error")
    assert f"failed: cannot reach {chat.url}: " in result.message
    assert "\n" not in result.message


def test_a_server_that_does_not_answer_times_out(mode: str) -> None:
    """The client's timeout ends the request; the run fails, saying the server did not answer."""
    with serving([Silence()]) as chat:
        result = _loop(mode, chat, timeout=0.2)

    assert result.message == f"failed: {chat.url} did not answer in time (turn 1)"


@pytest.mark.parametrize(
    "answer",
    [{**reply("x"), "choices": []}, {**reply("x"), "choices": [{"index": 0}]}, "oops"],
    ids=["no-choices", "no-message", "text"],
)
def test_an_answer_that_is_no_completion_is_an_error(mode: str, answer: Any) -> None:
    """An answer without a first choice's message fails the run with a clear line."""
    with serving([answer]) as chat:
        result = _loop(mode, chat)

    assert "failed: the server's answer is not a chat completion: " in result.message


def _message(answer: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``answer`` with its first choice's message changed: keys set, or the message replaced."""
    choice = answer["choices"][0]
    if "message" in changes:
        choice["message"] = changes["message"]
    else:
        choice["message"].update(changes)
    return answer


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            _message(reply(), message="just text"),
            "choices[0].message is 'just text', not an object",
        ),
        (_message(reply(), message=["a"]), "choices[0].message is ['a'], not an object"),
        (_message(reply(), message=42), "choices[0].message is 42, not an object"),
        (_message(reply(), refusal=7), "a refusal that is not text: 7"),
        (_message(reply(), content=5), "malformed model response: content: expected text"),
        (
            _message(reply(), tool_calls={"id": "c1"}),
            "malformed model response: tool_calls: expected a list",
        ),
        (
            _message(
                reply(),
                tool_calls=[
                    {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": 5}}
                ],
            ),
            "tool_calls[0].arguments: expected an object or JSON text, got 5",
        ),
        ({**reply("x"), "usage": {"total_tokens": -3}}, "usage.total_tokens: expected a count"),
        ({**reply("x"), "usage": {"total_tokens": "9"}}, "usage.total_tokens: expected a count"),
        ({**reply("x"), "usage": {"total_tokens": True}}, "usage.total_tokens: expected a count"),
        (reply("x", finish="eos"), "finish_reason: expected one of"),
    ],
    ids=[
        "message-text",
        "message-list",
        "message-number",
        "refusal-number",
        "content-number",
        "tool-calls-object",
        "arguments-number",
        "usage-negative",
        "usage-text",
        "usage-bool",
        "finish-unknown",
    ],
)
def test_an_answer_of_the_wrong_shape_fails_the_run(
    mode: str, answer: dict[str, Any], says: str
) -> None:
    """Nothing of the wrong type passes as an empty answer: the run fails and says what it was."""
    with serving([answer]) as chat:
        result = _loop(mode, chat)

    assert (result.status, result.stop_reason, result.output) == ("failed", "error", "")
    assert says in result.message
    assert "\n" not in result.message


def test_total_timeout_bounds_a_call_however_slowly_the_server_sends(mode: str) -> None:
    """A server that sends a byte every 20 ms never trips a read timeout; total_timeout ends it."""
    with serving([Trickle(reply("x" * 300))]) as chat:  # some ten seconds to send it all
        started = time.monotonic()
        result = _loop(mode, chat, timeout=5.0, total_timeout=0.5)
        took = time.monotonic() - started

    assert result.message == f"failed: {chat.url} did not answer within 0.5 s (turn 1)"
    assert took < 3


def test_total_timeout_far_away_is_no_error(mode: str) -> None:
    """A total_timeout of 1e300 seconds, past any wait Python takes at once, simply holds."""
    with serving([reply("the answer")]) as chat:
        result = _loop(mode, chat, total_timeout=1e300)

    assert (result.status, result.output) == ("ok", "the answer")


@pytest.mark.parametrize("seconds", [0, -1, math.nan, math.inf, True, "5"], ids=repr)
def test_a_total_timeout_that_is_no_number_of_seconds_is_refused(seconds: object) -> None:
    """total_timeout is a finite number of seconds above 0, or None."""
    with (
        openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k") as client,
        pytest.raises(budgetconf.UsageError, match=r"^total_timeout: expected a number"),
    ):
        OpenAIModel("m", client=client, total_timeout=seconds)  # type: ignore[arg-type]


def test_a_strict_clients_validation_error_is_one_line() -> None:
    """Any other error of the openai client is a `ModelError` naming the server too."""
    with serving(["oops"]) as chat:  # type: ignore[list-item]  # a body that is no completion, on purpose
        settings: dict[str, Any] = {"_strict_response_validation": True, "max_retries": 0}
        with openai.OpenAI(base_url=chat.url, api_key="k", **settings) as client:
            result = LoopExecutor(OpenAIModel("m", client=client)).run("hi")

    assert result.message == (
        f"failed: {chat.url}: Data returned by API invalid for expected schema. (turn 1)"
    )


def test_an_unknown_finish_reason_is_a_malformed_response(mode: str) -> None:
    """A finish reason outside the protocol is not guessed at: the run fails and names it."""
    with serving([reply("x", finish="eos")]) as chat:
        result = _loop(mode, chat)

    assert result.message.startswith("failed: malformed model response: finish_reason:")


def test_the_default_client_reads_openais_variables(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``client=``, the adapter builds openai's own client from OPENAI_* variables."""
    with serving([reply("from the environment")]) as chat:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        if mode == "sync":
            model: Any = OpenAIModel("m")
            with model.client:
                result = LoopExecutor(model).run("hi")
        else:
            model = AsyncOpenAIModel("m")

            async def go() -> RunResult:
                async with model.client:
                    return await LoopExecutor(model).arun("hi")

            result = asyncio.run(go())

    assert result.output == "from the environment"
    assert chat.received[0].headers["authorization"] == "Bearer sk-env"


@pytest.mark.parametrize(
    ("name", "options", "problem"),
    [
        ("", {}, "model: expected a model name"),
        ("m", {"messages": []}, "messages: set by the adapter"),
        ("m", {"tools": []}, "tools: set by the adapter"),
    ],
)
def test_bad_arguments_are_usage_errors(name: str, options: dict[str, Any], problem: str) -> None:
    """A missing model name, or an option the adapter sets itself, is refused at once."""
    with (
        openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k") as client,
        pytest.raises(budgetconf.UsageError, match=problem),
    ):
        OpenAIModel(name, client=client, **options)


def test_without_the_extra_the_import_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With openai missing, the import names the extra, from an index and from a checkout."""
    monkeypatch.setitem(sys.modules, "openai", None)  # what Python does for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.openai")

    with pytest.raises(ImportError) as raised:
        importlib.import_module("budgetconf.integrations.openai")
    assert str(raised.value) == (
        "budgetconf.integrations.openai needs the openai package: pip install"
        " 'budgetconf[openai]' (from a checkout: pip install -e '.[openai]')"
    )
    assert raised.value.name == "openai"
