"""One praisonaiagents run, streamed: `run()`'s loop, each request streamed to the caller.

praisonaiagents' own ``start(stream=True)`` is another loop than ``start()``'s: one
round of tools and one more request, whatever the step budget says. So the bridge
streams ``start()``'s own loop instead, on a thread of its own (`budgetconf.integrations
._threaded`), exactly as `run()` runs it, but the lent ``acreate_completion`` asks for each response
streamed, with its usage (`Relay.completion`): each piece of text is handed to the
caller's thread as it arrives, as ``start(stream=True)`` yields it, and the chunks make
the one chat completion the loop reads (`_Assembled`), so the Meter decides on it as in
`run()`.

A caller that closes the stream sets `Relay.closed`: the lent client makes no more
request and abandons the one streaming, the cancel token the loop reads is set, and the
run ends ``cancelled`` on its thread, which the close waits for.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Final

from budgetconf.integrations import _threaded as threaded
from budgetconf.integrations._stream import Closed


class Relay(threaded.Relay):
    """`threaded.Relay`, whose close also abandons the request in flight (`close`)."""

    __slots__ = ("_in_flight", "_lock")

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        #: the task streaming a request, and its loop
        self._in_flight: tuple[asyncio.Task[Any], asyncio.AbstractEventLoop] | None = None

    def close(self) -> None:
        """The caller closed the stream: no more requests, and the one in flight abandoned."""
        with self._lock:
            self.closed.set()
            if self._in_flight is not None:
                task, loop = self._in_flight
                loop.call_soon_threadsafe(self._cancel, task)

    async def completion(self, real: Any, messages: Any, args: Any, kwargs: Any) -> Any:
        """``real(messages, …)`` streamed, with its usage: each piece of text goes to the
        caller as it comes; the chunks make the chat completion returned. `Closed` once the
        caller closes the stream, the request abandoned at once."""
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            if self.closed.is_set():  # pragma: no cover - a close since the Watch looked
                raise Closed
            self._in_flight = task, asyncio.get_running_loop()
        try:
            return await self._streamed(real, messages, args, kwargs)
        except asyncio.CancelledError:
            if not self.closed.is_set():
                raise
            task.uncancel()  # the cancel was the close's, answered here
            raise Closed from None
        finally:
            with self._lock:
                self._in_flight = None

    def _cancel(self, task: asyncio.Task[Any]) -> None:
        """On the request's loop: cancel ``task`` if its request is still streaming (a close
        that came as it ended finds it done, and leaves the run's next step its own)."""
        if self._in_flight is not None and self._in_flight[0] is task:
            task.cancel()

    async def _streamed(self, real: Any, messages: Any, args: Any, kwargs: Any) -> Any:
        options = {**(kwargs.get("stream_options") or {}), "include_usage": True}
        response = await real(
            messages, *args, **{**kwargs, "stream": True, "stream_options": options}
        )
        made = _Assembled()
        try:
            async for chunk in response:
                if (piece := made.add(chunk)) is not None:
                    self.pieces.put(piece)
        finally:
            await response.close()
        return made.completion()


#: the text fields of a streamed message, joined piece by piece
_TEXTS: Final = ("content", "refusal", "reasoning_content")


class _Assembled:
    """A streamed response's chunks, made into the chat completion the loop reads: the first
    choice's text, refusal and reasoning (which praisonaiagents reads for ``reasoning_steps``),
    its tool calls (their pieces joined by index), its end and its usage. The openai
    package's own stream state makes the same completion, at some 1 ms a response."""

    __slots__ = ("calls", "finish", "head", "texts", "usage")

    def __init__(self) -> None:
        self.head: Any = None
        #: the pieces of each text field of the message, by its name
        self.texts: dict[str, list[str]] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: Any = None

    def add(self, chunk: Any) -> str | None:
        """Take in one chunk; its text, if it has some."""
        self.head = self.head or chunk
        self.usage = chunk.usage or self.usage
        piece = None
        for choice in chunk.choices:
            if choice.index != 0:
                continue  # the loop reads the first choice only
            delta = choice.delta
            self.finish = choice.finish_reason or self.finish
            for field in _TEXTS:
                value = getattr(delta, field, None)
                if isinstance(value, str):
                    self.texts.setdefault(field, []).append(value)
            for call in delta.tool_calls or ():
                function = {"name": "", "arguments": ""}
                into = self.calls.setdefault(call.index, {"id": "", "function": function})
                into["id"] = call.id or into["id"]
                if call.function is not None:
                    into["function"]["name"] += call.function.name or ""
                    into["function"]["arguments"] += call.function.arguments or ""
            piece = delta.content or None
        return piece

    def completion(self) -> Any:
        """The chat completion, or None for a response of no chunk."""
        from openai.types.chat import ChatCompletion

        head = self.head
        if head is None:
            return None
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        message.update((field, "".join(pieces)) for field, pieces in self.texts.items())
        if self.calls:
            calls = [self.calls[index] for index in sorted(self.calls)]
            message["tool_calls"] = [{**call, "type": "function"} for call in calls]
        choice = {"index": 0, "message": message, "finish_reason": self.finish or "stop"}
        return ChatCompletion.model_validate(
            {
                "id": head.id,
                "object": "chat.completion",
                "created": head.created,
                "model": head.model,
                "choices": [choice],
                "usage": None if self.usage is None else self.usage.model_dump(),
            }
        )
