"""A bridged run streamed from a thread of its own: for a framework whose own stream is not
the loop the budget runs (PraisonAI's is another loop; CrewAI's is a flag of its LLM).

``stream()`` then runs `run()`'s own run on a thread, in a copy of the caller's
context (so ``current_run()`` and a parent's budget are the caller's), its model
calls streamed: each piece of text goes through a `Relay` to the caller's thread
as it arrives, and the run reads each response whole, as in `run()`. A caller
that closes the stream closes the relay; the bridge's run ends ``cancelled`` on
its thread, which the close waits for.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from budgetconf.integrations._stream import Closed

if TYPE_CHECKING:
    from budgetconf.integrations._bridge import BridgeResult

#: what the run's thread puts last on the queue
END: Final = object()


class Relay:
    """What passes between a streamed run's thread and its caller's: the text as it comes,
    the run's end (`END`), and the caller's close (``closed``, set by `close`)."""

    __slots__ = ("closed", "pieces")

    def __init__(self) -> None:
        self.pieces: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.closed = threading.Event()

    def piece(self, text: object) -> None:
        """A piece of a streamed call's text, for the caller; `Closed` once the caller has
        closed the stream, so that the call streaming is abandoned."""
        if self.closed.is_set():
            raise Closed
        if isinstance(text, str) and text:
            self.pieces.put(text)

    def close(self) -> None:
        """The caller closed the stream: the run ends at its next piece or model call."""
        self.closed.set()


Relayed = TypeVar("Relayed", bound=Relay)


class Streamed(Generic[Relayed]):
    """A streamed run: ``run(relay)`` (the bridge's run, on a thread named ``name``) and the
    text it relays, for a `BridgeStream`'s items and ``finish``."""

    __slots__ = ("context", "name", "outcome", "relay", "run", "thread")

    def __init__(self, run: Callable[[Relayed], BridgeResult], relay: Relayed, name: str) -> None:
        self.run = run
        self.relay = relay
        self.name = name
        self.context = contextvars.copy_context()  # stream()'s: a parent run there is its
        self.thread: threading.Thread | None = None
        self.outcome: BridgeResult | BaseException | None = None

    def _work(self) -> None:
        try:
            self.outcome = self.run(self.relay)
        except BaseException as exc:  # the caller's mistake, raised on the caller's thread
            self.outcome = exc
        finally:
            self.relay.pieces.put(END)

    def items(self) -> Iterator[str]:
        """The run's text as it streams; the run's own exception, raised, at its end."""
        thread = self.thread = threading.Thread(
            target=self.context.run, args=(self._work,), name=self.name, daemon=True
        )
        thread.start()
        pieces = self.relay.pieces
        try:
            while (piece := pieces.get()) is not END:
                yield str(piece)
        finally:  # closed or interrupted: the run ends cancelled, on its thread
            self.relay.close()
            thread.join()
        if isinstance(self.outcome, BaseException):
            raise self.outcome

    def finish(self, exc: BaseException | None) -> BridgeResult:
        """The run's result; the caller's own mistake, raised again."""
        if exc is not None and not isinstance(exc, Closed):
            raise exc
        if self.thread is None:  # closed before its first item: the run ends on turn 0
            self.relay.close()
            self.context.run(self._work)
        outcome = self.outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome
