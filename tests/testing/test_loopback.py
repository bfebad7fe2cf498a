"""budgetconf.testing.LoopbackServer, through the real openai client over loopback HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

import budgetconf
from budgetconf import UsageError
from budgetconf.integrations.openai import OpenAIModel
from budgetconf.loop import LoopExecutor
from budgetconf.testing import LoopbackServer, ScriptedModel

CALL = {"id": "c1", "name": "echo", "arguments": {"text": "again"}}
SCRIPT: dict[str, Any] = {
    "responses": [
        {"tool_calls": [CALL], "usage": {"prompt_tokens": 30, "completion_tokens": 10}},
        {"content": "done", "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
    ]
}
ALWAYS = {"responses": [SCRIPT["responses"][0]]}


def echo(text: str) -> str:
    return text


def outcome(result: Any) -> tuple[Any, ...]:
    return (result.status, result.stop_reason, result.turns, result.tokens, result.output)


@pytest.mark.parametrize("script", [SCRIPT, ALWAYS], ids=["answers", "always a tool"])
def test_a_run_through_the_server_is_the_scripted_models_run(script: dict[str, Any]) -> None:
    """The executor on OpenAIModel against the server, and on ScriptedModel: one outcome."""
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "3"})
    scripted = LoopExecutor(ScriptedModel(script["responses"]), {"echo": echo}, res).run("go")
    with LoopbackServer(script) as server:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        served = LoopExecutor(OpenAIModel("scripted", client=client), {"echo": echo}, res)
        result = served.run("go")
    assert outcome(result) == outcome(scripted)
    assert len(server.received) == scripted.turns
    assert server.received[0]["messages"][-1] == {"role": "user", "content": "go"}


def test_a_completion_carries_the_scripts_calls_usage_and_model() -> None:
    script = [{"tool_calls": [CALL], "usage": {"prompt_tokens": 30, "completion_tokens": 10}}]
    script.append({"content": "hi", "model": "gpt-4o-mini", "finish_reason": "length"})
    with LoopbackServer(script) as server:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        first, second, third = (
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            for _ in range(3)
        )
    (call,) = first.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "c1",
        "echo",
        {"text": "again"},
    )
    assert first.usage is not None
    assert (first.usage.total_tokens, first.choices[0].finish_reason) == (40, "tool_calls")
    assert (second.model, second.choices[0].finish_reason, second.usage) == (
        "gpt-4o-mini",
        "length",
        None,
    )
    assert third.choices[0].message.content == "hi"  # the last response repeats


def test_a_streamed_request_gets_the_response_in_chunks_and_its_usage_when_asked() -> None:
    with LoopbackServer(SCRIPT) as server:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "x"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        quiet = list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
    calls = [
        c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or ()
    ]
    assert [(c.id, c.function.name if c.function else None) for c in calls] == [("c1", "echo")]
    assert [choice.finish_reason for chunk in chunks for choice in chunk.choices] == [
        None,
        "tool_calls",
    ]
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 40
    text = "".join(choice.delta.content or "" for chunk in quiet for choice in chunk.choices)
    assert (text, [chunk.usage for chunk in quiet]) == ("done", [None, None])


def test_a_script_is_a_file_a_document_a_list_or_a_scripted_model(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    responses: list[dict[str, Any]] = SCRIPT["responses"]
    scripts: tuple[Any, ...] = (path, str(path), SCRIPT, responses, ScriptedModel(responses))
    for script in scripts:
        assert LoopbackServer(script).script.responses == responses


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ({"replies": []}, r'a model script is \{"responses": \[\.\.\.\]\}'),
        ([], "a scripted model needs a non-empty list of responses"),
        (["hi"], r"responses\[0\]: expected an object"),
    ],
)
def test_a_script_that_is_not_one_is_a_usage_error(script: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        LoopbackServer(script)


def post(url: str, data: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_another_path_or_a_body_that_is_not_json_is_an_api_error() -> None:
    with LoopbackServer(SCRIPT) as server:
        assert server.url.startswith("http://127.0.0.1:")
        missing = post(f"{server.url}/embeddings", b"{}")
        garbled = post(f"{server.url}/chat/completions", b"{not json")
        listed = post(f"{server.url}/chat/completions", b"[]")
        assert server.received == []
    assert missing == (404, {"error": {"message": "no such path: /v1/embeddings"}})
    assert garbled == (400, {"error": {"message": "the request body is not JSON"}})
    assert listed == (400, {"error": {"message": "the request body is not an object"}})


def test_the_server_stops_with_its_block_and_at_the_end_of_its_lifetime() -> None:
    with LoopbackServer(SCRIPT) as server:
        url = server.url
        assert repr(server) == f"<LoopbackServer {url}, 0 requests>"
    with pytest.raises(urllib.error.URLError):
        post(f"{url}/chat/completions", b"{}")
    with LoopbackServer(SCRIPT, lifetime=0.05) as short:
        deadline = time.monotonic() + 10
        while True:  # its lifetime ends it while the block still runs
            try:
                post(f"{short.url}/chat/completions", b"{}")
            except OSError:  # refused, or reset by a server stopping as it answered
                break
            assert time.monotonic() < deadline, "the server outlived its lifetime"
            time.sleep(0.05)


def test_a_scripts_turn_shows_its_response_and_an_unknown_model_is_no_attribute() -> None:
    """The shared script: each call's turn, as a test's failure would print it; and the
    module offers the frameworks' models it names, no other."""
    import budgetconf.testing
    from budgetconf.testing._script import Script

    script = Script(SCRIPT)
    first, second = script.next(), script.next()
    assert repr(first) == ("Turn(1, content=None, calls=[('c1', 'echo', '{\"text\": \"again\"}')])")
    assert repr(second) == "Turn(2, content='done', calls=[])"
    with pytest.raises(AttributeError, match="has no attribute 'autogen_model'"):
        _ = budgetconf.testing.autogen_model
