"""Per-turn overhead of the praisonaiagents bridge against the same Agent run without it.

Both runs drive the same fake model, a chat-completions server on 127.0.0.1
that asks for a tool on every call, so each run ends at its step budget of
``TURNS`` model calls: ``agent.start`` under ``ExecutionConfig(max_steps=…)``
alone, and `budgetconf.integrations.praisonai.run` with the same budget, whose
Meter asks before each request and decides each tool call (the last turn's
call is answered without running, as in the executor: the tool is an addition,
so that saves next to nothing). Repetitions run in alternating pairs
(`_paired`): the rows are the medians of each (ns a turn, measured with
time.perf_counter_ns) and of the pairs' differences. The loopback round trip is
in both.

    python bench/bridge_praisonai.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _paired import paired

TURNS = 5
ALONE = "praisonai: framework alone, per turn"
BRIDGED = "praisonai: through the bridge, per turn"
COST = "praisonai: the bridge's cost per turn"


class _Model(BaseHTTPRequestHandler):
    served = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        _Model.served += 1  # new arguments each call: identical ones trip its doom-loop check
        args = json.dumps({"a": _Model.served, "b": 1})
        call = {
            "id": f"c{_Model.served}",
            "type": "function",
            "function": {"name": "add", "arguments": args},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        data = {"id": "x", "object": "chat.completion", "created": 0, "model": "fake"}
        body = json.dumps({**data, "choices": [choice], "usage": usage}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def rows(quick: bool) -> dict[str, float]:
    """Nanoseconds per turn: the framework alone, through the bridge, and the bridge's cost."""
    with served():
        alone, bridged = sides().values()
        found = paired(alone, bridged, 3 if quick else 41, TURNS)
    return dict(zip((ALONE, BRIDGED, COST), found, strict=True))


@contextlib.contextmanager
def served() -> Iterator[None]:
    """The fake model on a loopback port, named by the variables PraisonAI reads, and its
    loop-guard warnings (once a turn, to its own logger and to the root one) quiet."""
    import praisonaiagents  # noqa: F401 - it configures the root logger as it loads: first

    names = (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL_NAME",
        "PRAISONAI_TELEMETRY_DISABLED",
    )
    saved = {name: os.environ.get(name) for name in names}
    quiet = [logging.getLogger("praisonaiagents"), logging.getLogger()]
    levels = [each.level for each in quiet]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(
        OPENAI_BASE_URL=f"http://127.0.0.1:{server.server_port}/v1",
        OPENAI_API_KEY="sk-bench",
        OPENAI_MODEL_NAME="fake",
        PRAISONAI_TELEMETRY_DISABLED="true",
    )
    for each in quiet:
        each.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for each, level in zip(quiet, levels, strict=True):
            each.setLevel(level)
        server.shutdown()
        server.server_close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def sides() -> dict[str, Callable[[], int]]:
    """One run alone and one through the bridge, each timed (ns), of one agent (`served`)."""
    from praisonaiagents import Agent, ExecutionConfig

    from budgetconf.integrations import praisonai

    agent = Agent(
        name="b", instructions="Add.", tools=[add], execution=ExecutionConfig(max_steps=TURNS)
    )
    budget = {"loop.max_steps": TURNS}
    agent.start("warm up", stream=False, output="silent")  # first use loads its client

    # the agent keeps its chat history from run to run, and each request sends it whole:
    # every run starts from none, or the later run would send the longer conversation
    def alone() -> int:
        agent.clear_history()
        began = time.perf_counter_ns()
        agent.start("add", stream=False, output="silent")
        return time.perf_counter_ns() - began

    def bridged() -> int:
        agent.clear_history()
        began = time.perf_counter_ns()
        praisonai.run(agent, "add", budget)
        return time.perf_counter_ns() - began

    return {"alone": alone, "bridged": bridged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    found = rows(parser.parse_args().quick)
    for name, ns in found.items():
        print(f"{name:45} {ns / 1e6:9.3f} ms")


if __name__ == "__main__":
    main()
