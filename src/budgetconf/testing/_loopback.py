"""`LoopbackServer`: a model script served as an OpenAI-compatible chat-completions API.

Each request gets the script's next response (the last one repeats), as a
``chat.completion`` or, for a request with ``"stream": true``, as its chunks
(server-sent events, with a usage chunk when the request asks for one). The
server listens on 127.0.0.1 only, on a free port, until the ``with`` block ends
or its ``lifetime`` runs out.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final

from budgetconf.testing._script import Script, Turn

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from budgetconf.testing._script import ScriptLike

#: the model a completion names when its response names none
MODEL: Final = "scripted"
_PATH: Final = "/v1/chat/completions"


def completion(turn: Turn) -> dict[str, Any]:
    """The ``chat.completion`` of one scripted response."""
    calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in turn.calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if calls:
        message["tool_calls"] = calls
    made: dict[str, Any] = {
        "id": f"chatcmpl-{turn.number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": turn.model or MODEL,
        "choices": [
            {"index": 0, "message": message, "finish_reason": turn.finish_reason, "logprobs": None}
        ],
    }
    if turn.usage is not None:
        made["usage"] = turn.usage
    return made


def chunks(made: Mapping[str, Any], usage: bool) -> list[dict[str, Any]]:
    """A completion as the chunks a streamed request gets: its message, its finish reason,
    and its usage when the request asked for it (``stream_options.include_usage``)."""
    choice = made["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    head = {k: made[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    found = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
    ]
    if usage and "usage" in made:
        found.append({**head, "choices": [], "usage": made["usage"]})
    return found


def events(made: Mapping[str, Any], body: Mapping[str, Any]) -> bytes:
    """The server-sent events a streamed request (``body``) gets for the completion ``made``."""
    options = body.get("stream_options")
    usage = isinstance(options, dict) and options.get("include_usage") is True
    sent = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks(made, usage))
    return f"{sent}data: [DONE]\n\n".encode()


class LoopbackServer:
    """A model script served on 127.0.0.1 as an OpenAI-compatible API (docs/testing.md).

    ``with LoopbackServer(script) as server:`` starts it; ``server.url`` is the
    base URL to give a client (``http://127.0.0.1:PORT/v1``), ``server.received``
    the JSON body of each request so far. It stops when the block ends, or after
    ``lifetime`` seconds, whichever comes first.
    """

    __module__ = "budgetconf.testing"

    def __init__(self, script: ScriptLike, *, lifetime: float = 600.0) -> None:
        self.script = Script(script)
        self.lifetime = lifetime
        self.received: list[dict[str, Any]] = []
        self.url = ""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None

    def __repr__(self) -> str:
        return f"<LoopbackServer {self.url or 'stopped'}, {len(self.received)} requests>"

    def __enter__(self) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        self._timer = threading.Timer(self.lifetime, self._stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._timer is not None, "exited without being entered"
        self._timer.cancel()
        self._stop()

    def _stop(self) -> None:
        """Stop serving and close the port, once: at the block's end or the lifetime's."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()  # returns once serve_forever has
            server.server_close()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.received.append(body)
        return completion(self.script.next())


def _handler(loopback: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.split("?")[0] != _PATH:
                self._send(404, {"error": {"message": f"no such path: {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            except ValueError:
                self._send(400, {"error": {"message": "the request body is not JSON"}})
                return
            if not isinstance(body, dict):
                self._send(400, {"error": {"message": "the request body is not an object"}})
                return
            made = loopback._answer(body)
            if body.get("stream"):
                self._stream(events(made, body))
            else:
                self._send(200, made)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a test's output is its own."""

    return Handler
