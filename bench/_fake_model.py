"""The fake model the benches of a framework on its own OpenAI client run against: a
chat-completions server on 127.0.0.1 that asks for the tool ``add`` on every call offering
tools (new arguments each call: identical ones trip the frameworks' repeat checks) and
answers a call offering none with text; streamed where asked, its usage last where asked
for (``stream_options.include_usage``), as a server streams it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class FakeModel(BaseHTTPRequestHandler):
    """One request answered; ``served`` counts them, across servers."""

    served = 0

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.served += 1
        message: dict[str, Any] = {"role": "assistant", "content": "adding"}
        if asked.get("tools"):
            args = json.dumps({"a": FakeModel.served, "b": 1})
            call = {"id": f"c{FakeModel.served}", "type": "function"}
            message["tool_calls"] = [{**call, "function": {"name": "add", "arguments": args}}]
        finish = "tool_calls" if "tool_calls" in message else "stop"
        data = {"id": "x", "created": 0, "model": "fake"}
        if asked.get("stream"):
            usage = (asked.get("stream_options") or {}).get("include_usage") is True
            self._events(data, message, finish, usage)
            return
        choice = {"index": 0, "message": message, "finish_reason": finish}
        completion = {**data, "object": "chat.completion", "choices": [choice], "usage": USAGE}
        body = json.dumps(completion).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _events(
        self, data: dict[str, Any], message: dict[str, Any], finish: str, usage: bool
    ) -> None:
        head = {**data, "object": "chat.completion.chunk"}
        delta = dict(message)
        if "tool_calls" in delta:
            delta["tool_calls"] = [{"index": 0, **delta["tool_calls"][0]}]
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
        if usage:
            chunks.append({**head, "choices": [], "usage": USAGE})
        sent = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(f"{sent}data: [DONE]\n\n".encode())
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def fake_model() -> Iterator[str]:
    """The fake model on a free loopback port while the block runs: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
