"""A LangGraph graph (or a langchain ``create_agent`` agent) run within a budget.

>>> from budgetconf.integrations.langgraph import limits, middleware, run
>>> graph.invoke(state, **limits(res))  # doctest: +SKIP
>>> result = run(graph, state, res)  # doctest: +SKIP
>>> agent = create_agent(model, tools, middleware=middleware(res))  # doctest: +SKIP

A turn is one model response: an AI message the graph adds to its state's
``messages``. `run()` streams the graph with ``stream_mode="values"``, so it
sees the state after every graph step, keeps the last one (its last AI text
is the output, also when a limit stops the run) and can stop between two
steps, before the next one runs.

============================  ==================================================
budget                        enforced by
============================  ==================================================
``max_steps``                 ``config["recursion_limit"]`` =
                              ``steps_per_turn x max_steps`` (graph steps; 2 for
                              an agent-tools loop), and in `run()` the count of
                              AI messages: no model call after the last turn;
                              with `middleware()`, langchain's
                              ``ModelCallLimitMiddleware`` (exact)
``max_tool_calls``            `run()`: a response whose calls would pass the
                              limit stops the run before they run; with
                              `middleware()`, ``ToolCallLimitMiddleware``
``max_tokens``                `run()`: the ``usage_metadata`` of the AI messages;
                              no model call once the total reached the limit, no
                              tool run after a response that passed it
``timeout_seconds``           `run()`: checked between graph steps; `arun()` also
                              cancels a step still running at the deadline
``max_tool_calls_per_turn``   cannot be (the default of 10 is left unenforced)
``max_cost_usd``              cannot be: LangGraph reports no cost
``ledger.url``                with ``create_agent`` and `middleware()`, in
                              `run()`: its ``wrap_model_call`` reserves before
                              each model call (a refusal stops the run before
                              it) and settles with the response's
                              ``usage_metadata``; any other graph refuses it,
                              and so does a ``ledger.max_cost_usd`` (no cost)
============================  ==================================================

`limits()` carries ``max_steps`` only, `middleware()` ``max_steps`` and
``max_tool_calls``: any other budget set is refused (`UsageError`), or run
without and warned about with ``unenforced="warn"``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager

try:
    import langgraph  # noqa: F401  (cheap: the heavy modules are imported when used)
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("langgraph", "langgraph", "langgraph") from None

from budgetconf._loop_table import BudgetName, StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    ended,
    refuse_conflicting,
    stopped,
    unreadable,
)
from budgetconf.integrations._frameworks import FRAMEWORKS, Framework

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from typing import Any

    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._draw import Tally
    from budgetconf.loop._budget import Budget

__all__ = ["arun", "limits", "middleware", "run"]

_FRAMEWORK: Framework = FRAMEWORKS["langgraph"]
#: what middleware() carries: the framework's knob and the two caps langchain enforces
_MIDDLEWARE = Framework(
    "langgraph",
    package="langgraph's middleware()",  # as a refusal names it
    extra="langgraph",
    knobs={
        BudgetName.MAX_STEPS: "ModelCallLimitMiddleware",
        BudgetName.MAX_TOOL_CALLS: "ToolCallLimitMiddleware",
    },
    bridged={},
    conflicting=(),
    keywords=_FRAMEWORK.keywords,
    ledger=_FRAMEWORK.ledger,
)
#: a graph without the bridge's middleware: it cannot draw on the shared ledger
_UNDRAWN = Framework(
    "langgraph",
    package="langgraph",
    extra="langgraph",
    knobs=_FRAMEWORK.knobs,
    bridged=_FRAMEWORK.bridged,
    conflicting=_FRAMEWORK.conflicting,
    keywords=_FRAMEWORK.keywords,
)
#: the attribute that marks a middleware as the bridge's, holding the budget it was built from
_MARK = "_budgetconf_budget"
#: keywords of ``graph.stream`` the bridge sets itself
_OWN = ("recursion_limit", "stream_mode")


def limits(
    budget: object = None, *, steps_per_turn: int = 2, **resolve_kwargs: Any
) -> dict[str, Any]:
    """``{"config": {"recursion_limit": steps_per_turn * max_steps}}``, for ``graph.invoke``.

    ``steps_per_turn`` is the number of graph steps one model response takes
    (2 for an agent-tools loop; more with ``create_agent`` middleware, where
    `middleware()` is exact). Without a step budget, ``{}``.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    per_turn = _per_turn(steps_per_turn)
    limit = _FRAMEWORK.keywords(checked, {"steps_per_turn": per_turn})["config"]["recursion_limit"]
    return {} if limit is None else {"config": {"recursion_limit": limit}}


def middleware(
    budget: object = None, *, unenforced: Unenforced = "error", **resolve_kwargs: Any
) -> list[Any]:
    """langchain's call-limit middleware for ``create_agent``, raising at the budget's caps.

    ``ModelCallLimitMiddleware(run_limit=max_steps)`` and, when the budget has
    one, ``ToolCallLimitMiddleware(run_limit=max_tool_calls)``, both with
    ``exit_behavior="error"``; `run()` reports their errors as stops. When
    the budget names a shared ledger, a middleware that draws on it per model
    call, in `run()` and `arun()` only.
    """
    # bridged={}: "run" differs from "limits" only in letting the ledger's middleware draw
    checked = bridge_budget(
        _MIDDLEWARE, budget, resolve_kwargs, through="run", unenforced=unenforced
    )
    try:
        from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
    except ImportError:
        from budgetconf.integrations._install import missing

        raise missing("langgraph", "langchain", "langgraph") from None
    found: list[Any] = []
    steps = checked.value(BudgetName.MAX_STEPS)
    if steps is not None:
        found.append(ModelCallLimitMiddleware(run_limit=int(steps), exit_behavior="error"))
    calls = checked.value(BudgetName.MAX_TOOL_CALLS)
    if calls is not None:
        found.append(ToolCallLimitMiddleware(run_limit=int(calls), exit_behavior="error"))
    if checked.ledger is not None:
        from budgetconf.integrations._langchain_ledger import LedgerMiddleware

        found.append(LedgerMiddleware(checked))
    for each in found:
        setattr(each, _MARK, checked)
    return found


def run(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Stream ``graph`` on ``input`` within ``budget`` and report how it ended.

    ``config`` and ``framework_kwargs`` go to ``graph.stream``; a
    ``recursion_limit`` in either is refused: the budget sets it.
    """
    watch, options = _prepare(graph, budget, unenforced, steps_per_turn, config, framework_kwargs)
    with watch.drawing():
        stream = graph.stream(input, stream_mode="values", **options)
        try:
            for chunk in stream:
                if watch.see(chunk):
                    break
        except Exception as exc:
            return watch.failed(exc)
        finally:
            stream.close()  # a stop between two steps: the next one does not run
        return watch.result()


async def arun(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run()` through ``graph.astream``; at the deadline a step still running is cancelled."""
    import asyncio  # here: importing it costs more than the rest of the bridge

    watch, options = _prepare(graph, budget, unenforced, steps_per_turn, config, framework_kwargs)
    with watch.drawing():
        try:
            async with asyncio.timeout(watch.seconds_left()):
                async for chunk in _values(graph.astream(input, stream_mode="values", **options)):
                    if watch.see(chunk):
                        break
        except TimeoutError as exc:
            if not watch.late():
                return watch.failed(exc)
            return watch.stop(StopReason.TIMEOUT, exc)
        except Exception as exc:
            return watch.failed(exc)
        return watch.result()


async def _values(stream: Any) -> AsyncIterator[Any]:
    """The chunks of ``stream``, which is closed when the caller stops early."""
    try:
        async for chunk in stream:
            yield chunk
    finally:
        await stream.aclose()


def _per_turn(steps_per_turn: object) -> int:
    if (
        isinstance(steps_per_turn, bool)
        or not isinstance(steps_per_turn, int)
        or steps_per_turn < 1
    ):
        raise UsageError(f"steps_per_turn: expected a whole number above 0, got {steps_per_turn!r}")
    return steps_per_turn


def _prepare(
    graph: Any,
    budget: object,
    unenforced: Unenforced,
    steps_per_turn: int,
    config: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> tuple[_Watch, dict[str, Any]]:
    """The run's budget, checked, and the keywords of ``graph.stream`` that carry it."""
    per_turn = _per_turn(steps_per_turn)
    if config is not None and not isinstance(config, Mapping):
        raise UsageError(f"config: expected a mapping, got {type(config).__name__}")
    refuse_conflicting(_FRAMEWORK, {**(config or {}), **kwargs})
    if "stream_mode" in kwargs:
        raise UsageError('stream_mode= is set by the bridge ("values"), to keep the last state')
    drawn = any(getattr(m, "draws_ledger", False) for m in _owners(graph))
    framework = _FRAMEWORK if drawn else _UNDRAWN  # only the bridge's middleware draws
    checked = bridge_budget(framework, budget, {}, through="run", unenforced=unenforced)
    carried = _carried(graph, checked)
    options = {**kwargs, "config": dict(config or {})}
    steps = checked.value(BudgetName.MAX_STEPS)
    if steps is not None:
        if carried:  # the middleware's cap is exact: give the graph steps to spare
            nodes = max(len(getattr(graph, "nodes", ())), per_turn)
            options["config"]["recursion_limit"] = nodes * (int(steps) + 1) + 1
        else:
            options["config"]["recursion_limit"] = per_turn * int(steps)
    return _Watch(checked, carried, drawn), options


def _owners(graph: Any) -> list[Any]:
    """The bridge's middleware in ``graph``, each once."""
    found: list[Any] = []
    for node in getattr(graph, "nodes", {}).values():
        owner = getattr(getattr(getattr(node, "bound", None), "func", None), "__self__", None)
        if hasattr(owner, _MARK) and all(owner is not f for f in found):
            found.append(owner)
    return found


def _carried(graph: Any, budget: Budget) -> list[Any]:
    """The bridge's middleware in ``graph``; refused when built with caps other than the run's."""
    found = _owners(graph)
    for each in found:
        theirs: Budget = getattr(each, _MARK)
        for name in (BudgetName.MAX_STEPS, BudgetName.MAX_TOOL_CALLS):
            if theirs.value(name) != budget.value(name):
                raise UsageError(
                    f"the graph's middleware() has {name} = {theirs.value(name)} but the run's"
                    f" budget has {budget.value(name)}: build both from the same budget"
                )
        if getattr(each, "draws_ledger", False) and theirs.ledger != budget.ledger:
            raise UsageError(
                "the graph's middleware() draws on another shared ledger than the run's"
                " budget names: build both from the same budget"
            )
    return found


def _messages(state: object) -> list[Any]:
    found = (
        state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    )
    return found if isinstance(found, list) else []


def _is_ai(message: object) -> bool:
    return getattr(message, "type", None) in ("ai", "AIMessageChunk")


def _text(message: object) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(
        p if isinstance(p, str) else str(p.get("text", ""))
        for p in parts
        if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
    )


def _tokens(message: object) -> int:
    """The tokens an AI message reports (none without ``usage_metadata``), or `Unreadable`."""
    usage = getattr(message, "usage_metadata", None)  # langchain-core requires total_tokens
    total = usage.get("total_tokens") if isinstance(usage, Mapping) else None
    return reported_tokens(total, "usage_metadata.total_tokens") if isinstance(total, int) else 0


class _Watch:
    """What the streamed states say: turns, tool calls and tokens, and whether to stop."""

    def __init__(self, budget: Budget, carried: list[Any], drawn: bool) -> None:
        self.budget = budget
        self.carried = carried  # the bridge's middleware in the graph: it caps steps and calls
        self.tally: Tally | None = None  # the shared ledger's draw, through the middleware
        if drawn and budget.ledger is not None:
            from budgetconf.integrations._draw import Tally  # only a run with a ledger loads it

            self.tally = Tally(budget)
        self.ended = "error"  # the stop reason the run's ledger record is written with
        timeout = budget.value(BudgetName.TIMEOUT_SECONDS)
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.seen: set[object] | None = None  # the AI messages the state held at the start
        self.turns = 0
        self.calls = 0
        self.tokens = 0
        self.state: object = None
        self.reason: StopReason | None = None

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """Within: the graph's ledger middleware draws for this run; after: the run's record."""
        if self.tally is None:
            yield
            return
        from budgetconf.integrations._langchain_ledger import drawing

        try:
            with drawing(self.tally):
                yield
        finally:
            self.tally.end(self.ended)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def late(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def see(self, state: object) -> bool:
        """Count what ``state`` adds; True when a budget stops the run before the next step."""
        self.state = state
        messages = _messages(state)
        if self.seen is None:  # the input (or the resumed thread's state)
            self.seen = {_key(m) for m in messages if _is_ai(m)}
            self.reason = StopReason.TIMEOUT if self.late() else None
            return self.reason is not None
        batch = self._count(messages, self.seen)
        last = messages[-1] if messages else None
        waiting = batch > 0 and _is_ai(last)  # the response's calls have not run yet
        self.reason = self._over(batch) if waiting else self._spent(last)
        return self.reason is not None

    def _count(self, messages: list[Any], seen: set[object]) -> int:
        """Count the AI messages not seen before; the number of calls the last one makes."""
        batch = 0
        for message in messages:
            if _is_ai(message) and _key(message) not in seen:
                seen.add(_key(message))
                self.turns += 1
                self.tokens += _tokens(message)
                batch = len(getattr(message, "tool_calls", None) or ())
                self.calls += batch
        return batch

    def _over(self, batch: int) -> StopReason | None:
        """A budget the response just read takes past its limit: its calls must not run."""
        limit = self.budget.value
        cap = limit(BudgetName.MAX_TOOL_CALLS)
        if cap is not None and not self.carried and self.calls > cap:
            self.calls -= batch  # not run
            return StopReason.MAX_TOOL_CALLS
        tokens = limit(BudgetName.MAX_TOKENS)
        if tokens is not None and self.tokens > tokens:
            self.calls -= batch
            return StopReason.MAX_TOKENS
        return StopReason.TIMEOUT if self.late() else None

    def _spent(self, last: object) -> StopReason | None:
        """A budget that leaves no room for another model call, when one is next."""
        if self.late():
            return StopReason.TIMEOUT
        if last is None or _is_ai(last):  # a final answer: the graph ends, or goes on without
            return None
        tokens = self.budget.value(BudgetName.MAX_TOKENS)
        if tokens is not None and self.tokens >= tokens:
            return StopReason.MAX_TOKENS
        steps = self.budget.value(BudgetName.MAX_STEPS)
        if steps is not None and not self.carried and self.turns >= steps:
            return StopReason.MAX_STEPS
        return None

    def output(self) -> str:
        for message in reversed(_messages(self.state)):
            if _is_ai(message):
                return _text(message)
        return ""

    def stop(self, reason: StopReason, native: object) -> BridgeResult:
        result = stopped(
            _FRAMEWORK,
            self.budget,
            reason,
            output=self.output(),
            turns=self.turns,
            native=native,
        )
        self.ended = result.stop_reason
        return result

    def result(self) -> BridgeResult:
        if self.reason is not None:
            return self.stop(self.reason, self.state)
        turns = self.turns
        message = f"completed in {turns} turn{'' if turns == 1 else 's'}"
        self.ended = StopReason.COMPLETED.value
        return ended(
            _FRAMEWORK,
            StopReason.COMPLETED,
            message,
            output=self.output(),
            turns=turns,
            native=self.state,
        )

    def failed(self, exc: Exception) -> BridgeResult:
        """The stop a limit the bridge set raised; any other error is raised unchanged."""
        from langgraph.errors import GraphRecursionError

        if isinstance(exc, Unreadable):  # a usage no response can report: the run failed
            self.ended = StopReason.ERROR.value
            return unreadable(_FRAMEWORK, exc, output=self.output(), turns=self.turns, native=exc)
        if isinstance(exc, GraphRecursionError) and self.budget.value(BudgetName.MAX_STEPS):
            return self.stop(StopReason.MAX_STEPS, exc)
        if self.tally is not None:
            from budgetconf.integrations._draw import Refused

            if isinstance(exc, Refused):  # the ledger's stop before a model call
                stop = exc.stop
                self.ended = self.budget.stop_name(stop.reason)
                return stop.result(_FRAMEWORK, self.budget, self.output(), self.turns, exc)
        if self.carried:
            reason = self._middleware(exc)
            if reason is not None:
                return self.stop(reason, exc)
        raise exc

    def _middleware(self, exc: Exception) -> StopReason | None:
        """The stop the bridge's middleware raised ``exc`` for, if it did."""
        from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
        from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError

        steps = self.budget.value(BudgetName.MAX_STEPS)
        if isinstance(exc, ModelCallLimitExceededError) and exc.run_limit == steps:
            self.turns = exc.run_count  # the middleware counts the model calls of this run
            return StopReason.MAX_STEPS
        if (
            isinstance(exc, ToolCallLimitExceededError)
            and exc.tool_name is None
            and exc.run_limit == self.budget.value(BudgetName.MAX_TOOL_CALLS)
        ):
            return StopReason.MAX_TOOL_CALLS
        return None


def _key(message: object) -> object:
    found = getattr(message, "id", None)
    return found if found is not None else id(message)
