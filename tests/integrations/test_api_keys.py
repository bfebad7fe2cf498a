"""API keys: one that no HTTP header can hold is refused by name; any form of a key is masked.

Against the real openai client and the chat server on 127.0.0.1: a key read
from a CRLF file ends in a carriage return, and the HTTP library quotes such a
header, escaped, in its error, where masking the exact key would miss it.
"""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

import openai
import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.integrations._keys import forms, key_flaw, masked
from budgetconf.integrations.openai import AsyncOpenAIModel, OpenAIModel
from budgetconf.loop import LoopExecutor

from helpers.chat_server import Failure, reply, serving

KEY = "sk-hostile-KEY7"
#: what no output may hold: the key, and each piece a line end would leave of it
PIECES = ("sk-hostile", "hostile-KEY7", "KEY7")

FLAWED = [
    (KEY + "\r", "holds a carriage return (a file with CRLF line ends?)"),
    ("sk-hostile\nKEY7", "holds a line feed"),
    ("sk-hostile KEY7", "holds white space"),
    (KEY + "\t", "holds white space"),
    (KEY + "\x00", "holds a control character"),
    (KEY + "\x7f", "holds a control character"),
    (KEY + "é", "holds a character outside printable ASCII"),
]


def _hidden(*texts: str) -> None:
    for text in texts:
        for piece in PIECES:
            assert piece not in text, text


@pytest.mark.parametrize(("key", "flaw"), FLAWED, ids=[f for _, f in FLAWED])
def test_a_key_no_header_can_hold_is_refused_before_any_request(key: str, flaw: str) -> None:
    """The adapter refuses it at once, naming the field and the fault, never the key."""
    with serving([reply("ok")]) as chat:
        with (
            openai.OpenAI(base_url=chat.url, api_key=key, max_retries=0) as client,
            pytest.raises(budgetconf.UsageError) as sync,
        ):
            OpenAIModel("m", client=client)
        with pytest.raises(budgetconf.UsageError) as async_:
            AsyncOpenAIModel("m", client=openai.AsyncOpenAI(base_url=chat.url, api_key=key))
    expected = f"api_key: the client's API key {flaw}; strip it where it is read"
    assert str(sync.value) == str(async_.value) == expected
    assert chat.received == []


def test_a_key_changed_on_the_client_is_checked_at_each_request() -> None:
    """A key set after the model was made is refused at the request: the run fails, saying why."""
    with (
        serving([reply("ok")]) as chat,
        openai.OpenAI(base_url=chat.url, api_key=KEY, max_retries=0) as client,
    ):
        model = OpenAIModel("m", client=client)
        client.api_key = KEY + "\r\n"
        result = LoopExecutor(model).run("hi")
    assert result.status == "failed"
    assert "api_key: the client's API key holds a carriage return" in result.message
    _hidden(result.message, repr(result))
    assert chat.received == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_key_from_a_provider_is_masked_in_every_form_the_error_holds(mode: str) -> None:
    """A provider's key is known only at the request; the library's error shows it escaped."""

    def provider() -> str:
        return KEY + "\r"

    async def async_provider() -> str:
        return KEY + "\r"

    with serving([reply("ok")]) as chat:
        settings: dict[str, Any] = {"base_url": chat.url, "max_retries": 0}
        if mode == "sync":
            with openai.OpenAI(api_key=provider, **settings) as client:
                result = LoopExecutor(OpenAIModel("m", client=client)).run("hi")
        else:

            async def go() -> Any:
                async with openai.AsyncOpenAI(api_key=async_provider, **settings) as client:
                    return await LoopExecutor(AsyncOpenAIModel("m", client=client)).arun("hi")

            result = asyncio.run(go())
    assert result.status == "failed"
    assert result.message.startswith(f"failed: cannot reach {chat.url}: ")
    assert "***" in result.message
    _hidden(result.message, *(str(e) for e in result.events))


def test_a_model_error_does_not_chain_the_librarys_error() -> None:
    """Called directly, the model's error and its traceback hold no form of the key."""

    def provider() -> str:
        return "sk-hostile\nKEY7"

    with (
        serving([reply("ok")]) as chat,
        openai.OpenAI(base_url=chat.url, api_key=provider, max_retries=0) as client,
        pytest.raises(budgetconf.ModelError) as caught,
    ):
        OpenAIModel("m", client=client)([{"role": "user", "content": "hi"}], [])
    assert caught.value.__cause__ is None
    _hidden("".join(traceback.format_exception(caught.value)))


def test_a_key_the_server_quotes_escaped_is_masked() -> None:
    """A server that repeats the key as Python or JSON quote it: the escaped form is masked too."""
    key = 'sk-"quoted"\\KEY7'
    said = {"error": {"message": f"Incorrect API key provided: {key!r} / {key}."}}
    with (
        serving([Failure(401, said)]) as chat,
        openai.OpenAI(base_url=chat.url, api_key=key, max_retries=0) as client,
    ):
        result = LoopExecutor(OpenAIModel("m", client=client)).run("hi")
    assert result.message == (
        f"failed: {chat.url} answered HTTP 401: Incorrect API key provided: '***' / ***. (turn 1)"
    )


def test_the_forms_of_a_key_are_the_key_its_escapes_and_its_pieces() -> None:
    """Whole, stripped, escaped as Python and JSON do, and each piece of 4 or more characters."""
    assert forms("sk-ab\r\ncd-efgh ") == [
        "sk-ab\\r\\ncd-efgh ",
        "sk-ab\r\ncd-efgh ",
        "sk-ab\r\ncd-efgh",
        "cd-efgh",
        "sk-ab",
    ]
    assert masked("b'Bearer sk-ab\\r\\ncd-efgh'", "sk-ab\r\ncd-efgh") == "b'Bearer ***'"
    assert masked("no key: fine", None, "", 5) == "no key: fine"
    assert key_flaw(KEY) is None
    assert key_flaw("") is None  # no key at all is the client's to handle


def test_the_command_line_refuses_a_key_by_its_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --base-url with a CRLF key in $OPENAI_API_KEY: a usage error naming the variable."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\r")
    with serving([reply("ok")]) as chat:
        code = main(["run", "--base-url", chat.url, "--model-name", "m", "go"])
    out, err = capsys.readouterr()
    assert code == 64
    assert err == (
        "budgetconf: usage error: --base-url: the API key in $OPENAI_API_KEY holds a carriage"
        " return (a file with CRLF line ends?); strip it\n"
    )
    _hidden(out, err)
    assert chat.received == []
