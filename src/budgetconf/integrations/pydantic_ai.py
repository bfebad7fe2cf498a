"""Run a pydantic-ai agent within a budgetconf budget, and report its stop the budgetconf way.

``pip install 'budgetconf[pydantic-ai]'`` (from a checkout ``pip install -e
'.[pydantic-ai]'``). `limits(res)` gives the keywords of ``agent.run`` /
``agent.run_sync`` (``agent.run_sync(prompt, **limits(res))``), for code that
keeps its own call; `run()` and `arun()` run the agent through the executor's
`Meter` and return a `BridgeResult` whose ``message``, ``limit``, ``usage`` and
``events`` are the executor's; `stream()` and `astream()` run it the same way
through ``agent.run_stream_events`` and return a `BridgeStream` of pydantic-ai's
own events, whose ``result`` is then the same `BridgeResult`.

In `run()` every budget is the Meter's, through a capability the bridge adds
to the run (``capabilities=``; the caller's agent is not changed): each model
that serves a request is wrapped, so the Meter allows each call first and
reads each response before pydantic-ai runs any of its tools; the run's
toolset is wrapped, so the Meter decides each tool call.

=========================  ===========================================  ===================
budget                     `run()` / `arun()`: the Meter                `limits()`
=========================  ===========================================  ===================
loop.max_steps             before each model call; the calls of the     ``request_limit``
                           last permitted response are answered as
                           not executed, as in the executor
loop.max_tool_calls_per_   the wrapped toolset: a response over it is   refused when set
turn                       rejected whole (``over_cap = reject``) or
                           truncated, each call answered, and the run
                           goes on
limits.max_tool_calls      the wrapped toolset: a response whose        ``tool_calls_limit``
                           calls would pass it stops the run, none of
                           them run
limits.max_tokens          each response's usage, before its tools      ``total_tokens_``
                           run: one past the cap stops the run (a       ``limit``
                           final answer past it completes it, as in
                           the executor); a spent cap stops the next
                           call
limits.max_cost_usd        as the tokens, from the cost pydantic-ai     ``cost_limit``
                           prices each response at, else at the price   (at pydantic-ai's
                           of the run's model (a named model with no    own prices)
                           price is refused as ``prices.unknown``
                           says; a run with no response priced warns
                           ``CostNotFoundWarning``)
limits.timeout_seconds     before each call and each response's         ``timeout``
                           tools, and pydantic-ai's own ``timeout=``
                           set to what is left (it cancels a call or
                           a tool in flight)
ledger.url                 reserved before each model call, settled     refused
                           with the response's tokens and cost
=========================  ===========================================  ===================

``run()`` refuses ``usage_limits=`` and ``timeout=`` (they would set the same
limits) and sets pydantic-ai's own ``request_limit`` one above the budget, so
the Meter always stops first. A ``conversation=``, ``usage=`` or
``message_history=`` carries earlier turns; the budget bounds this run, as the
executor's does (the Meter counts this run's own responses). A
``RunTimedOut`` is the budget's only when the Meter's deadline has passed: a
shorter deadline inherited from an enclosing run, and a ``RunCancelled`` of
the caller's, are re-raised once the run is recorded as cancelled. A model
or tool failure is a ``failed`` result whose ``native`` is the exception; a
``UserError`` (the caller's own) is raised, and so is anything raised before
the first model call (a toolset that cannot start, say). The last-turn notice
goes with the last permitted call, added to that request's input when it
offers tools.

`stream()` (``for event in ...``) and `astream()` (``async for``) yield what
``agent.run_stream_events`` yields: each ``AgentStreamEvent`` of the run, every
model request streamed, and its ``AgentRunResultEvent`` once the agent has
answered. A budget stop ends the stream without that last event and without
raising; the result says why. They take `run()`'s keywords and refuse the same
ones, and ``event_stream_handler=`` (the stream is the events). `stream()` pumps
the run's events on the thread's event loop, one by one, as ``run_sync`` runs a
run; closing the stream early cancels pydantic-ai's run and the run is
``cancelled``.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from types import FrameType
from typing import Any, Final

from budgetconf._loop_table import StopReason
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    refuse_conflicting,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._metered import Bridged

try:
    import pydantic_core
    from pydantic_ai import AgentRunResultEvent, AgentStreamEvent, UsageLimits
    from pydantic_ai._utils import check_no_nested_sync_run, run_until_complete
    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.exceptions import CostNotFoundWarning, RunCancelled, RunTimedOut, UserError

    from budgetconf.integrations._pydantic_ai_meter import (
        Ended,
        Metering,
        agent_model,
        traces_itself,
    )
except ImportError:
    raise missing("pydantic_ai", "pydantic-ai-slim", "pydantic-ai") from None

__all__ = ["arun", "astream", "limits", "run", "stream"]

#: what a bridged stream yields: pydantic-ai's own events of the run, its result's last
Event = AgentStreamEvent | AgentRunResultEvent[Any]

_FRAMEWORK: Final = FRAMEWORKS["pydantic_ai"]
#: how much later than the Meter's deadline pydantic-ai's own may fall (its clock is the
#: wall's, the Meter's monotonic): a RunTimedOut that late is still the budget's
_CLOCKS: Final = 0.01


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"usage_limits": UsageLimits(...)}``, plus ``"timeout"`` when the budget sets one.

    For ``agent.run_sync(prompt, **limits(res))``. ``budget=None`` resolves
    the default preset with ``resolve_kwargs``. A budget set that
    pydantic-ai's own keywords cannot carry (a per-response cap, a shared
    ledger: only `run()` enforces those) is a `UsageError`.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    plain = _FRAMEWORK.keywords(checked, {})
    given = plain["usage_limits"]
    fields = {name: value for name, value in given.items() if name != "cost_limit"}
    if "cost_limit" in given:
        from decimal import Decimal

        fields["cost_limit"] = Decimal(str(given["cost_limit"]))
    native: dict[str, Any] = {"usage_limits": UsageLimits(**fields)}
    if "timeout" in plain:
        native["timeout"] = plain["timeout"]
    return native


def run(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """``agent.run_sync(input, **framework_kwargs)`` within ``budget``.

    A budget stop is a result (``truncated``), never an exception; so is a
    model or tool failure (``failed``, the exception as ``native``). An error
    of the caller's own (a pydantic-ai ``UserError``, or anything raised before the first
    model call) is raised. ``on_event``
    hears the run's events (a `budgetconf.events.Sink`); ``name`` names the
    run, as in `LoopExecutor`.
    """
    refuse_streaming(framework_kwargs)
    caller = sys._getframe(1)
    bridged = _Bridging(agent, budget, unenforced, on_event, name, framework_kwargs, caller)
    try:
        done = agent.run_sync(input, **bridged.kwargs)
    except BaseException as exc:
        return bridged.ended(exc)
    return bridged.finished(done)


async def arun(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run()` with ``await agent.run(...)``, for code already in an event loop."""
    refuse_streaming(framework_kwargs)
    caller = sys._getframe(1)
    bridged = _Bridging(agent, budget, unenforced, on_event, name, framework_kwargs, caller)
    try:
        done = await agent.run(input, **bridged.kwargs)
    except BaseException as exc:
        return bridged.ended(exc)
    return bridged.finished(done)


def stream(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Event]:
    """`run()`, streamed: ``for event in stream(...)`` yields pydantic-ai's events of the run
    (``agent.run_stream_events``), ``.result`` is then `run()`'s result.

    A budget stop ends the stream without raising; a model or tool failure
    too (the result is ``failed``); the caller's own error is raised from the
    iteration. Not inside a running event loop: `astream()` is for that.
    """
    check_no_nested_sync_run()  # as run_sync checks: a sync run inside a sync tool deadlocks
    events = _Events(
        agent,
        input,
        _streamed(agent, budget, unenforced, on_event, name, framework_kwargs, sys._getframe(1)),
    )
    return BridgeStream(_Pumped(events), events.finish)


def astream(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Event]:
    """`stream()`, for code already in an event loop: ``async for event in astream(...)``."""
    events = _Events(
        agent,
        input,
        _streamed(agent, budget, unenforced, on_event, name, framework_kwargs, sys._getframe(1)),
    )
    return BridgeStream(events, events.finish)


def _streamed(
    agent: AbstractAgent[Any, Any],
    budget: object,
    unenforced: Unenforced,
    on_event: Sink | None,
    name: str | None,
    kwargs: dict[str, Any],
    caller: FrameType,
) -> _Bridging:
    """The bridged run a stream runs: `run()`'s, without a handler of the caller's (the
    stream is the run's events: pydantic-ai's ``run_stream_events`` takes none)."""
    if "event_stream_handler" in kwargs:
        raise UsageError(
            "event_stream_handler=: stream() yields the run's events itself; iterate it, or"
            " pass the handler to run()"
        )
    return _Bridging(agent, budget, unenforced, on_event, name, kwargs, caller)


class _Events(AsyncIterator[Event]):
    """pydantic-ai's events of one bridged run (``agent.run_stream_events``), its run started
    with the first; the run's answer kept from its last event, for `finish`."""

    __slots__ = ("agent", "bridging", "done", "events", "input")

    def __init__(self, agent: AbstractAgent[Any, Any], input: Any, bridging: _Bridging) -> None:
        self.agent, self.input, self.bridging = agent, input, bridging
        self.events: AsyncIterator[Event] | None = None
        self.done: Any = None

    async def __anext__(self) -> Event:
        events = self.events
        if events is None:  # opened here, so a keyword pydantic-ai refuses ends the run here
            opened = self.agent.run_stream_events(self.input, **self.bridging.kwargs)
            self.events = events = await opened.__aenter__()
        event = await anext(events)
        if isinstance(event, AgentRunResultEvent):
            self.done = event.result
        return event

    async def aclose(self) -> None:
        """Cancel pydantic-ai's run (its task drained), as leaving its ``async with`` does."""
        events: Any = self.events
        if events is not None:
            await events.aclose()

    def finish(self, exc: BaseException | None) -> BridgeResult:
        """The run's result: its answer's, or that of what ended it (`_Bridging.ended`)."""
        if exc is None:
            return self.bridging.finished(self.done)
        return self.bridging.ended(exc)


class _Pumped(Iterator[Event]):
    """A run's events for ``for``: each pulled on the thread's event loop, as ``run_sync`` runs
    a whole run there (pydantic-ai's run goes on in its own task between pulls)."""

    __slots__ = ("events",)

    def __init__(self, events: _Events) -> None:
        self.events = events

    def __next__(self) -> Event:
        try:
            return run_until_complete(anext(self.events))
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        run_until_complete(self.events.aclose())


class _Bridging:
    """One bridged run: its Meter (a `Bridged`), the keywords that give pydantic-ai the run's
    capability, and how the framework's end becomes the run's result."""

    __slots__ = ("bridged", "kwargs")

    def __init__(
        self,
        agent: AbstractAgent[Any, Any],
        budget: object,
        unenforced: Unenforced,
        on_event: Sink | None,
        name: str | None,
        kwargs: dict[str, Any],
        caller: FrameType,
    ) -> None:
        from budgetconf.integrations._metered import Bridged

        refuse_conflicting(_FRAMEWORK, kwargs)
        if not isinstance(agent, AbstractAgent):
            raise UsageError(f"agent: expected a pydantic-ai agent, got {type(agent).__name__}")
        asked = kwargs.get("model") or agent.model
        model = agent_model(asked)
        checked = bridge_budget(
            _FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
        )
        if kwargs.pop("infer_name", True) and agent.name is None:
            _infer_name(agent, caller)
        tools: set[str] = set()
        self.bridged = bridged = Bridged(
            _FRAMEWORK,
            checked,
            tools=tools,
            on_event=on_event,
            name=name,
            model=model,
            traced=traces_itself(agent, asked),
        )
        conversation = kwargs.get("conversation")
        start = conversation.usage if conversation is not None else kwargs.get("usage")
        requests = 0 if start is None else start.requests
        meter = bridged.meter
        # pydantic-ai counts requests over a conversation, and would stop at 50 unless told
        # otherwise: one above the budget, counted from the conversation's, never fires first;
        # a budget without a step budget has no last turn, and pydantic-ai no request limit
        steps = "max_steps" in meter.limits
        request_limit = requests + meter.last_turn - meter.turns + 1 if steps else None
        native: dict[str, Any] = {
            "usage_limits": UsageLimits(request_limit=request_limit),
            "capabilities": [*(kwargs.get("capabilities") or ()), Metering(bridged, tools)],
            # run_sync would name the agent after this module's own variable: named above instead
            "infer_name": False,
        }
        if meter.deadline is not None:  # pydantic-ai cancels what is in flight at the deadline
            native["timeout"] = max(0.0, meter.deadline - time.monotonic())
        self.kwargs = {**kwargs, **native}

    def finished(self, done: Any) -> BridgeResult:
        """The result of a run pydantic-ai ended with its answer."""
        output = done.output
        text = output if isinstance(output, str) else pydantic_core.to_json(output).decode()
        result = self.bridged.result(done, text)
        self._uncosted()
        return result

    def ended(self, exc: BaseException) -> BridgeResult:
        """The result of a run that raised ``exc``: the Meter's stop, the deadline, or a failure;
        raises what is not this run's to report (the caller's own error, a cancellation)."""
        bridged = self.bridged
        if isinstance(exc, Ended) or (bridged.stop is not None and isinstance(exc, Exception)):
            return bridged.failed(exc)  # the Meter's end, decided already
        if isinstance(exc, RunTimedOut) and self._overdue():
            return bridged.stopped(StopReason.TIMEOUT, exc)
        if isinstance(exc, UserError):
            bridged.failed(exc)  # recorded after a model call (before one, failed raises it)
            raise exc
        if isinstance(exc, RunCancelled) or not isinstance(exc, Exception):
            _cancelled(bridged)  # an enclosing run's deadline, or the caller's own cancel
            raise exc
        return bridged.failed(exc)

    def _overdue(self) -> bool:
        """Whether the Meter's deadline has passed: pydantic-ai's own, set from it, fired."""
        deadline = self.bridged.meter.deadline
        return deadline is not None and time.monotonic() >= deadline - _CLOCKS

    def _uncosted(self) -> None:
        """A cost budget over responses pydantic-ai could price none of cannot have counted
        anything: said with pydantic-ai's own warning, as its ``cost_limit`` would say it."""
        meter = self.bridged.meter
        if "max_cost_usd" in meter.limits and meter.turns and not meter.cost_sources:
            limit = meter.budget.limits["max_cost_usd"]
            warnings.warn(
                f"{limit.field} = {limit.shown()} from {limit.locator} cannot be enforced: no"
                " cost was calculated for this run's responses (no pricing data for the model"
                " or provider in use)",
                CostNotFoundWarning,
                stacklevel=3,
            )


def _cancelled(bridged: Bridged) -> None:
    """Record the run as cancelled from outside (its events and its ledger record end)."""
    meter = bridged.meter
    bridged.stop = meter.finish(StopReason.CANCELLED, f"cancelled on turn {meter.turns}")


def _infer_name(agent: AbstractAgent[Any, Any], caller: FrameType) -> None:
    """Name the agent after the caller's variable, as ``run_sync`` called there would."""
    scopes: tuple[Mapping[str, Any], ...] = (caller.f_locals, caller.f_globals)
    for scope in scopes:
        for name, item in scope.items():
            if item is agent:
                agent.name = name
                return
