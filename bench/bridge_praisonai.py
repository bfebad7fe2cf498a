"""Per-turn overhead of the praisonaiagents bridge against the same Agent run without it.

Both runs drive the same fake model, a chat-completions server on 127.0.0.1
that asks for a tool on every call, so each run ends at its step budget of
``TURNS`` model calls: ``agent.start`` under ``ExecutionConfig(max_steps=…)``
alone, and `budgetconf.integrations.praisonai.run` with the same budget, whose
Meter asks before each request and decides each tool call (the last turn's
call is answered without running, as in the executor: the tool is an addition,
so that saves next to nothing). Repetitions are interleaved; the medians (ns a
turn, measured with time.perf_counter_ns) are the rows. The loopback round
trip is in both.

    python bench/bridge_praisonai.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TURNS = 5
ALONE = "praisonai: framework alone, per turn"
BRIDGED = "praisonai: through the bridge, per turn"


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
    """The median ns a turn, alone and through the bridge."""
    names = (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL_NAME",
        "PRAISONAI_TELEMETRY_DISABLED",
    )
    saved = {name: os.environ.get(name) for name in names}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    os.environ.update(
        OPENAI_BASE_URL=f"http://127.0.0.1:{server.server_port}/v1",
        OPENAI_API_KEY="sk-bench",
        OPENAI_MODEL_NAME="fake",
        PRAISONAI_TELEMETRY_DISABLED="true",
    )
    try:
        return _measure(3 if quick else 21)
    finally:
        server.shutdown()
        server.server_close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _measure(repeat: int) -> dict[str, float]:
    import logging

    quiet = logging.getLogger("praisonaiagents")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its loop-guard warnings, once a turn
    try:
        return _interleaved(repeat)
    finally:
        quiet.setLevel(level)


def _interleaved(repeat: int) -> dict[str, float]:
    from praisonaiagents import Agent, ExecutionConfig

    from budgetconf.integrations import praisonai

    agent = Agent(
        name="b", instructions="Add.", tools=[add], execution=ExecutionConfig(max_steps=TURNS)
    )
    budget = {"execution.max_steps": TURNS}
    agent.start("warm up", stream=False, output="silent")  # first use loads its client
    alone: list[int] = []
    bridged: list[int] = []
    # the agent keeps its chat history from run to run, and each request sends it whole:
    # every run starts from none, or the later run would send the longer conversation
    for _ in range(repeat):
        agent.clear_history()
        began = time.perf_counter_ns()
        agent.start("add", stream=False, output="silent")
        alone.append(time.perf_counter_ns() - began)
        agent.clear_history()
        began = time.perf_counter_ns()
        praisonai.run(agent, "add", budget)
        bridged.append(time.perf_counter_ns() - began)
    return {
        ALONE: statistics.median(alone) / TURNS,
        BRIDGED: statistics.median(bridged) / TURNS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    found = rows(parser.parse_args().quick)
    for name, ns in found.items():
        print(f"{name:45} {ns / 1e6:9.3f} ms")
    print(f"{'praisonai: overhead per turn':45} {(found[BRIDGED] - found[ALONE]) / 1e6:9.3f} ms")


if __name__ == "__main__":
    main()
