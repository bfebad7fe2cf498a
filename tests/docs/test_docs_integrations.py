"""The examples of docs/integrations.md run, against a chat-completions server on 127.0.0.1."""

from __future__ import annotations

import re
import shlex

import openai
import pytest

from budgetconf.cli import main
from budgetconf.integrations.openai import OpenAIModel
from budgetconf.loop import LoopExecutor

from conftest import Place
from helpers import DOCS
from helpers.chat_server import Failure, reply, serving

PAGE = (DOCS / "integrations.md").read_text()
DOC_URL = "http://127.0.0.1:8000/v1"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.DOTALL)


def test_the_openai_example_runs_against_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    """The Python example asks the server, runs the add tool it calls, and prints the answer."""
    (example, _) = _blocks("python")
    script = [reply(calls=[("c1", "add", {"a": 2, "b": 3})]), reply("5")]
    with serving(script) as chat:
        exec(compile(example.replace(DOC_URL, chat.url), "integrations.md", "exec"), {})

    assert capsys.readouterr().out == "ok 5\n"
    assert chat.bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "5"}
    assert chat.bodies[0]["temperature"] == 0


def test_the_error_lines_are_what_a_failed_run_says() -> None:
    """The page's two failure messages are the messages of real failed runs."""
    shown = [line.strip() for line in PAGE.splitlines() if line.strip().startswith("failed: ")]
    messages = []
    with serving([Failure(500, {"error": {"message": "out of memory"}})]) as chat:
        messages.append(_failed_run(chat.url).replace(chat.url, DOC_URL))
    messages.append(_failed_run(chat.url).replace(chat.url, DOC_URL))  # the server is gone

    assert shown == messages


def _failed_run(url: str) -> str:
    with openai.OpenAI(base_url=url, api_key="local", max_retries=0) as client:
        return LoopExecutor(OpenAIModel("m", client=client)).run("hi").message


def test_the_console_example_prints_what_the_page_shows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``budgetconf run --base-url`` against a server that keeps calling tools: the warning, 2."""
    (example,) = _blocks("console")
    export, command, warning, status, code = example.splitlines()
    name, _, value = export.removeprefix("$ export ").partition("=")
    monkeypatch.setenv(name, value)
    assert status == "$ echo $?"
    with serving([reply(calls=[("c", "echo", {"text": "hi"})])]) as chat:
        args = shlex.split(command.removeprefix("$ ").replace(DOC_URL, chat.url))
        assert args[0] == "budgetconf"
        assert main(args[1:]) == int(code)

    assert capsys.readouterr().err.splitlines() == [warning]


def test_the_dynaconf_example_runs(place: Place) -> None:
    """The preset and the settings file of the page, read through real dynaconf."""
    preset, settings = _blocks("toml")
    place.write("review-bot.toml", preset)
    place.write("config.toml", settings)
    (_, example) = _blocks("python")

    exec(compile(example, "integrations.md", "exec"), {})
