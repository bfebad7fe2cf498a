"""What the agno bridge's tests share: an agent with the tool ``add`` on agno's own OpenAI chat
model against the loopback server, its replies, what it answered, a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.models.openai import OpenAIChat

import budgetconf

from helpers.chat_server import ChatServer, Failure, Reply, reply

SERVER_ERROR = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})


class Tools:
    """The agent's tool, and how often it ran."""

    def __init__(self) -> None:
        self.ran = 0

    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        self.ran += 1
        return a + b


def agent(chat: ChatServer, tools: Tools | None = None, **options: Any) -> Agent:
    """An agent with the tool ``add`` on ``OpenAIChat`` against ``chat``."""
    counted = tools or Tools()

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counted.add(a, b)

    model = OpenAIChat(id="gpt-test", base_url=chat.url, api_key="sk-test", max_retries=0)
    return Agent(model=model, tools=[add], telemetry=False, **options)


def calls(n: int, *, each: int = 1, usage: tuple[int, int] = (10, 5)) -> list[Reply]:
    return [
        reply(
            f"step {i}",
            calls=[(f"call_{i}_{j}", "add", {"a": i, "b": j}) for j in range(each)],
            usage=usage,
        )
        for i in range(n)
    ]


def tool_answers(chat: ChatServer, request: int) -> list[str]:
    """What the tool messages of one request (0 for the first) said."""
    return [m["content"] for m in chat.bodies[request]["messages"] if m["role"] == "tool"]


def python(code: str) -> str:
    """What ``code`` prints in a fresh interpreter that imports this budgetconf."""
    source = str(Path(budgetconf.__file__).resolve().parents[1])
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ
    )
    return done.stdout
