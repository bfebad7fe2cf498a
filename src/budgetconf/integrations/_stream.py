"""`BridgeStream`: a bridged run, streamed, as each bridge's ``stream()`` returns it.

A bridge hands it the framework's stream items as it lets them through (an
iterator, or an async one) and ``finish``, which makes the run's `BridgeResult`
once they have run out (None) or raised (the exception: a failure the result
reports, or the caller's own mistake, raised again). Iterating the stream
yields the items and ends without raising at a stop; ``result`` is then the
result, with the budgets, stops and usage of the run not streamed. A stream
closed before its end (`close`, or leaving its ``with`` block) closes the
framework's and ends the run as cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from budgetconf.errors import UsageError

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from budgetconf.integrations._bridge import BridgeResult

Item = TypeVar("Item")


class Closed(Exception):
    """What ``finish`` is given for a stream its caller closed before its end."""

    def __init__(self, message: str = "the stream was closed before its end") -> None:
        super().__init__(message)


class BridgeStream(Generic[Item]):
    """A bridged run, streamed (docs/frameworks.md, "Streaming").

    ``for item in stream`` (``async for``, for a bridge's ``astream``) yields
    the framework's own stream items; once they end (the run's end, a budget
    stop among them), ``stream.result`` is the run's `BridgeResult`.
    """

    __module__ = "budgetconf.integrations"
    __slots__ = ("_finish", "_items", "_result")

    def __init__(
        self,
        items: Iterator[Item] | AsyncIterator[Item],
        finish: Callable[[BaseException | None], BridgeResult],
    ) -> None:
        self._items = items
        self._finish = finish
        self._result: BridgeResult | None = None

    def __repr__(self) -> str:
        state = "running" if self._result is None else self._result.status.value
        return f"<BridgeStream {state}>"

    @property
    def result(self) -> BridgeResult:
        """How the run ended; a `UsageError` while the stream has items left."""
        if self._result is None:
            raise UsageError(
                "the stream has not ended: iterate it to its end (or close() it) before"
                " reading its result"
            )
        return self._result

    def _end(self, exc: BaseException | None) -> None:
        if self._result is None:
            self._result = self._finish(exc)

    # -- a stream iterated with ``for`` --------------------------------------------------------

    def __iter__(self) -> Self:
        if not isinstance(self._items, Iterator):
            raise UsageError("this stream is async: iterate it with async for")
        return self

    def __next__(self) -> Item:
        if self._result is None:
            items = self._items
            assert isinstance(items, Iterator)
            try:
                return next(items)
            except StopIteration:
                self._end(None)
            except Exception as exc:
                self._end(exc)
        raise StopIteration

    def close(self) -> None:
        """End the stream before its end: the framework's stream is closed, the run cancelled."""
        if self._result is None:
            close: Any = getattr(self._items, "close", None)
            if close is not None:
                close()
            self._end(Closed())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- a stream iterated with ``async for`` --------------------------------------------------

    def __aiter__(self) -> Self:
        if not isinstance(self._items, AsyncIterator):
            raise UsageError("this stream is not async: iterate it with for")
        return self

    async def __anext__(self) -> Item:
        if self._result is None:
            items = self._items
            assert isinstance(items, AsyncIterator)
            try:
                return await anext(items)
            except StopAsyncIteration:
                self._end(None)
            except Exception as exc:
                self._end(exc)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """`close`, for an async stream."""
        if self._result is None:
            close: Any = getattr(self._items, "aclose", None)
            if close is not None:
                await close()
            self._end(Closed())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
