"""A bridged LangGraph run's stream: the items ``graph.stream`` yields, and how the run ends.

`run()`, `arun()`, `stream()` and `astream()` share it: `run()` is its stream
drained. LangGraph is asked for the caller's stream modes and ``"values"``
(`Shape`), each root state goes to the run (`GraphRun.see`), and only the
caller's modes are yielded, in the shape ``graph.stream`` gives them for those
modes alone. The framework's stream steps in a context of its own, where
`METERING` names the run: the caller may iterate in any context (a context
variable set in a generator the caller iterates would be reset in another one),
and no code of the caller's between two items sees the run as running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from contextvars import Context, copy_context
from typing import Any, Final

from budgetconf._loop_table import StopReason
from budgetconf.errors import UsageError
from budgetconf.integrations._langgraph_run import METERING, Ended, GraphRun

#: what a stream's ``next`` gives once it has run out
_END: Final = object()


class Deadline(Exception):
    """The Meter's deadline passed while an async step was running: it was cancelled."""


class Shape:
    """The stream modes asked of LangGraph for the caller's ``stream_mode`` (``"values"``
    among them), and the items of the caller's modes as ``graph.stream`` yields them."""

    __slots__ = ("asked", "listed", "subgraphs", "theirs")

    def __init__(self, stream_mode: str | Sequence[str], subgraphs: bool) -> None:
        theirs = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
        if not theirs or not all(isinstance(m, str) for m in theirs):
            raise UsageError(f"stream_mode: expected a mode or a list of modes, got {theirs!r}")
        self.theirs = frozenset(theirs)
        self.asked = ["values", *(m for m in theirs if m != "values")]
        self.listed = isinstance(stream_mode, list)  # LangGraph's test: a list gives (mode, item)
        self.subgraphs = subgraphs

    def parts(self, item: Any) -> tuple[tuple[str, ...], str, Any]:
        """An item of the modes asked: its namespace, its mode and its payload."""
        if self.subgraphs:
            return item  # type: ignore[no-any-return]
        mode, payload = item
        return (), mode, payload

    def theirs_of(self, item: Any, ns: tuple[str, ...], payload: Any) -> Any:
        """The item as ``graph.stream`` yields it for the caller's modes."""
        if self.listed:
            return item
        return (ns, payload) if self.subgraphs else payload


def context_of(graph_run: GraphRun) -> Context:
    """The context the graph's stream steps in: the caller's, with the run in `METERING`."""
    context = copy_context()
    context.run(METERING.set, graph_run)
    return context


def items(
    graph_run: GraphRun, context: Context, start: Callable[[], Generator[Any]], shape: Shape
) -> Iterator[Any]:
    """The caller's items of the stream ``start`` makes; it ends where the run stops."""
    stream = context.run(start)
    see = graph_run.see
    theirs = shape.theirs
    try:
        while True:
            item = context.run(next, stream, _END)
            if item is _END:
                return
            ns, mode, payload = shape.parts(item)
            stop = mode == "values" and not ns and see(payload)
            if mode in theirs:
                yield shape.theirs_of(item, ns, payload)
            if stop:  # a stop between two steps: the next one does not run
                return
    finally:
        context.run(stream.close)


async def aitems(
    graph_run: GraphRun, context: Context, start: Callable[[], AsyncIterator[Any]], shape: Shape
) -> AsyncIterator[Any]:
    """`items`, of an async stream: each step runs as a task in the run's context, cancelled
    at the deadline (the deadline cancels the run, not the caller's task)."""
    import asyncio  # here: importing it costs more than the rest of the bridge

    stream: Any = context.run(start)
    see = graph_run.see
    theirs = shape.theirs
    try:
        while True:
            step = _step(stream, graph_run.seconds_left())
            item = await asyncio.create_task(step, context=context)
            if item is _END:
                return
            ns, mode, payload = shape.parts(item)
            stop = mode == "values" and not ns and see(payload)
            if mode in theirs:
                yield shape.theirs_of(item, ns, payload)
            if stop:
                return
    finally:
        await asyncio.create_task(stream.aclose(), context=context)


async def _step(stream: AsyncIterator[Any], seconds: float | None) -> Any:
    """The stream's next item, within ``seconds``; `Deadline` when they run out."""
    import asyncio

    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await anext(stream, _END)
    except TimeoutError as exc:
        if scope.expired():
            raise Deadline("the deadline passed during a graph step") from exc
        raise  # a timeout of the graph's own: its failure


def finished(graph_run: GraphRun, exc: BaseException | None) -> Any:
    """The run's `BridgeResult` once its stream ran out (None) or raised ``exc``: the recursion
    limit the bridge set is the step budget's stop, the deadline the time budget's, any other
    failure fails the run; the caller's own error (and an interrupt) is raised, once the Meter
    has ended the run."""
    if exc is None or isinstance(exc, Ended):  # Ended: the Meter's end, decided in the graph
        return graph_run.result()
    from langgraph.errors import EmptyInputError, GraphRecursionError, InvalidUpdateError

    bridged = graph_run.bridged
    if isinstance(exc, Deadline):
        return bridged.stopped(StopReason.TIMEOUT, exc.__cause__)
    if isinstance(exc, GraphRecursionError):  # the bridge always sets the limit
        return bridged.stopped(StopReason.MAX_STEPS, exc)
    ended = bridged.failed(exc)
    caller = isinstance(exc, UsageError | EmptyInputError | InvalidUpdateError)
    if caller or not isinstance(exc, Exception):  # the caller's own mistake, or an interrupt
        raise exc
    return ended


def drained(graph_run: GraphRun, found: Iterator[Any]) -> Any:
    """The result of a run whose items nobody reads (`run()`)."""
    try:
        for _ in found:
            pass
    except BaseException as exc:
        return finished(graph_run, exc)
    return finished(graph_run, None)


async def adrained(graph_run: GraphRun, found: AsyncIterator[Any]) -> Any:
    """`drained`, of an async stream (`arun()`)."""
    try:
        async for _ in found:
            pass
    except BaseException as exc:
        return finished(graph_run, exc)
    return finished(graph_run, None)
