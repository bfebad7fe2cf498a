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

`streamed_rows` times two streamed runs of ``STREAMED_TURNS`` requests each,
iterated to their end: ``agent.start(task, stream=True)`` alone (its own stream
runs one round of tools, then asks for the answer: two requests), and the
bridge's ``stream(agent, task, budget)`` under a step budget of two, every
request streamed by each.

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
STREAMED = (
    "praisonai, streamed: framework alone, per turn",
    "praisonai, streamed: through the bridge, per turn",
    "praisonai, streamed: the bridge's cost per turn",
)
#: the requests of agent.start(stream=True) when every response asks for a tool
STREAMED_TURNS = 2


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class _Model(BaseHTTPRequestHandler):
    served = 0

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Model.served += 1  # new arguments each call: identical ones trip its doom-loop check
        args = json.dumps({"a": _Model.served, "b": 1})
        call = {
            "id": f"c{_Model.served}",
            "type": "function",
            "function": {"name": "add", "arguments": args},
        }
        message = {"role": "assistant", "content": "adding", "tool_calls": [call]}
        data = {"id": "x", "created": 0, "model": "fake"}
        if asked.get("stream"):  # server-sent events, the usage only if asked for
            self._events(
                data, message, (asked.get("stream_options") or {}).get("include_usage") is True
            )
            return
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        completion = {**data, "object": "chat.completion", "choices": [choice], "usage": _USAGE}
        body = json.dumps(completion).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _events(self, data: dict[str, Any], message: dict[str, Any], usage: bool) -> None:
        head = {**data, "object": "chat.completion.chunk"}
        delta = {**message, "tool_calls": [{"index": 0, **message["tool_calls"][0]}]}
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
        if usage:
            chunks.append({**head, "choices": [], "usage": _USAGE})
        sent = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(f"{sent}data: [DONE]\n\n".encode())
        self.close_connection = True

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


def streamed_rows(quick: bool) -> dict[str, float]:
    """`rows`, of two runs streamed."""
    with served():
        alone, bridged = streamed_sides().values()
        found = paired(alone, bridged, 3 if quick else 41, STREAMED_TURNS)
    return dict(zip(STREAMED, found, strict=True))


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


def streamed_sides() -> dict[str, Callable[[], int]]:
    """`sides`, streamed: two requests each (the fake model's count tells)."""
    from praisonaiagents import Agent

    from budgetconf.integrations import praisonai

    agent = Agent(name="b", instructions="Add.", tools=[add])
    budget = {"loop.max_steps": STREAMED_TURNS}
    for _ in agent.start("warm up", stream=True):  # first use loads its client
        pass

    def timed(run: Callable[[], object]) -> int:
        agent.clear_history()
        served = _Model.served
        began = time.perf_counter_ns()
        run()
        elapsed = time.perf_counter_ns() - began
        assert _Model.served - served == STREAMED_TURNS, _Model.served - served
        return elapsed

    def alone() -> int:
        return timed(lambda: list(agent.start("add", stream=True)))

    def bridged() -> int:
        return timed(lambda: list(praisonai.stream(agent, "add", budget)))

    return {"alone": alone, "bridged": bridged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    quick = parser.parse_args().quick
    found = {**rows(quick), **streamed_rows(quick)}
    for name, ns in found.items():
        print(f"{name:45} {ns / 1e6:9.3f} ms")


if __name__ == "__main__":
    main()
