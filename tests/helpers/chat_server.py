"""A chat-completions server on 127.0.0.1 for the OpenAI adapter's tests.

It plays a script of replies, one per request (the last one repeats), or
asks a function for each reply (`Respond`: the request's number and body), and
records every request it receives: its path, its headers and its JSON body. A
request with ``"stream": true`` gets its reply as `LoopbackServer` streams one:
server-sent chunks, with a usage chunk when the request asks for it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from budgetconf.testing._loopback import events


@dataclass(frozen=True)
class Failure:
    """A reply that is an HTTP error: the status and the JSON body."""

    status: int
    body: dict[str, Any]


class Silence:
    """A reply never sent: the request is held until the server stops."""


@dataclass(frozen=True)
class Trickle:
    """A reply sent one byte at a time, ``gap`` seconds apart, until it is whole or the server
    stops: no read ever waits long, yet the whole reply takes ``gap`` times its length. A
    streamed request gets its events so."""

    answer: dict[str, Any]
    gap: float = 0.02


Reply = dict[str, Any] | Failure | Silence | Trickle
#: a reply made for each request: its number (1 for the first) and its JSON body
Respond = Callable[[int, dict[str, Any]], Reply]


def reply(
    content: str | None = None,
    *,
    calls: Sequence[tuple[str, str, dict[str, Any] | str]] = (),
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    refusal: str | None = None,
) -> dict[str, Any]:
    """A chat.completion: ``calls`` are (id, name, arguments); arguments go as JSON text."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for call_id, name, args in calls
        ]
    if finish is None:
        finish = "tool_calls" if calls else "stop"
    completion: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        prompt, completion_tokens = usage
        completion["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        }
    return completion


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ChatServer:
    """The script of replies and what the server received; ``url`` is the base URL (``/v1``)."""

    replies: list[Reply] | Respond
    url: str = ""
    received: list[Received] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    delay: float = 0.0  # seconds before each reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.received]

    def _next(self) -> Reply:
        replies = self.replies
        if callable(replies):
            return replies(len(self.received), self.received[-1].body)
        return replies[min(len(self.received), len(replies)) - 1]


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.received.append(Received(self.path, headers, body))
                answer = server._next()
            if isinstance(answer, Silence):
                server.stopping.wait(30)
                return
            if server.delay and server.stopping.wait(server.delay):
                return  # the test is over
            if isinstance(answer, Trickle):
                self._trickle(answer, body)
                return
            if self.path != "/v1/chat/completions":
                status, data = 404, {"error": {"message": f"no route {self.path}"}}
            elif isinstance(answer, Failure):
                status, data = answer.status, answer.body
            elif body.get("stream"):
                self._stream(events(answer, body))
                return
            else:
                status, data = 200, answer
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def _trickle(self, answer: Trickle, body: dict[str, Any]) -> None:
            if body.get("stream"):  # its events, to the end of the connection
                payload = events(answer.answer, body)
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            else:
                payload = json.dumps(answer.answer).encode()
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\n\r\n"
                ).encode()
            self.close_connection = True
            for at in range(len(head + payload)):
                if server.stopping.wait(answer.gap):
                    return  # the test is over: stop sending, and let the server close
                try:
                    self.wfile.write((head + payload)[at : at + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up and closed the connection
                    return

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a test's output is its own

    return Handler


@contextmanager
def serving(replies: Sequence[Reply] | Respond, *, delay: float = 0.0) -> Iterator[ChatServer]:
    """A `ChatServer` listening on a free port of 127.0.0.1 while the block runs."""
    chat = ChatServer(replies if callable(replies) else list(replies), delay=delay)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(chat))
    httpd.daemon_threads = True
    chat.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    # a short poll, so that stopping the server does not wait half a second
    thread = threading.Thread(
        target=httpd.serve_forever, args=(0.02,), name="chat-server", daemon=True
    )
    thread.start()
    try:
        yield chat
    finally:
        chat.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
