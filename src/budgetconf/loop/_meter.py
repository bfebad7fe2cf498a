"""The Meter: one run's counts, limits, deadline, children and ledger draw, and its rules.

The executor's `Run` is a Meter with a conversation; a framework bridge is an
adapter from its framework's hooks to one. Whoever drives it asks the same
questions and gets the same answers:

- `next_call`: may the next model call go? A budget spent, the shared
  ledger's refusal, an ``on_event`` that failed stop the run first; else the
  turn is counted.
- `notice`: does this call carry the last-turn notice, and which?
- `response`: given what the model answered (its `Usage`, text and calls),
  which calls run and which are answered as not executed, rejected or
  skipped, and why; and does it stop the run (a `Plan`).
- `tool_started`, `tool_returned`, `tool_abandoned`: each call as it runs.
- `completed`, `fail`, `finish`: how the run ends, as a `RunResult`.

It counts calls, never distinct ids. A run on a budget carved from a
running parent is a `ChildMeter` (``_child_meter``), which charges every run
around it and checks their limits too; `meter_for` makes the right one.
Once a child is carved from a run, its tree shares a lock (``lock``), and
every count is changed under it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any, Final

from budgetconf._loop_table import BudgetName, LastTurn, StopReason
from budgetconf._prices import needs_prices
from budgetconf.events import (
    BUDGET_EXHAUSTED,
    LAST_TURN_NOTICE,
    RUN_STARTED,
    STOPPED,
    TURN_STARTED,
    VERSION,
    RunInfo,
)
from budgetconf.loop._faults import PASSING, describe
from budgetconf.loop._plan import Planning
from budgetconf.loop._result import Event, Message, RunResult, Totals
from budgetconf.loop._watching import Watching

if TYPE_CHECKING:
    import threading

    from budgetconf._prices._pricing import Pricing
    from budgetconf.events import Sink
    from budgetconf.loop._budget import Budget
    from budgetconf.loop._ledger import Draw
    from budgetconf.loop._response import Call
    from budgetconf.telemetry import OtelSink

_now = time.time  # an event's time: seconds since the epoch (a global lookup, not two)
_monotonic = time.monotonic
_NO_TOTALS: Final = Totals()
#: the steps of a run whose budget sets none: more than any run makes
_NO_STEP_BUDGET: Final = 2**63
#: what a child's part of a run keeps (`ChildMeter`): set when it is adopted, else never
_CHILD_SLOTS: Final = (
    "blame",
    "chain",
    "cost_by",
    "deadline_by",
    "line",
    "own_deadline",
    "parent",
    "started",
    "tokens_by",
    "used_at_start",
)


class Meter(Watching, Planning):
    """One run's accounting and its rules, for the executor and every bridge (see above).

    ``budget`` bounds it; ``steps`` is its step budget (default the budget's
    ``max_steps``) counted from ``totals``, the conversation it continues.
    ``tools`` names the tools it runs (a call to another is not counted as
    one that would run). ``on_event`` hears each event (a `Sink`); ``name``
    names the run (default the preset's), ``framework`` the bridge driving it,
    ``resumed_from`` the run it continues; ``traced`` says the framework's own
    instrumentation traces its calls (`budgetconf.events.RunInfo`).
    """

    __module__ = "budgetconf.loop"
    # slots: a run has more attributes than an instance dict shares keys for, and every rule
    # reads them each turn
    __slots__ = (
        "budget",
        "deadline",
        "draw",
        "ended",
        "events",
        "handle",
        "info",
        "last_turn",
        "limits",
        "lock",
        "name",
        "noticed",
        "on_event",
        "output",
        "pricing",
        "run_id",
        "sink_fault",
        "stop_next",
        "telemetry",
        "tools",
        *_CHILD_SLOTS,
    )

    def __init__(
        self,
        budget: Budget,
        *,
        steps: int | None = None,
        totals: Totals = _NO_TOTALS,
        tools: Container[str] = (),
        on_event: Sink | None = None,
        name: str | None = None,
        framework: str | None = None,
        resumed_from: str | None = None,
        parent: RunInfo | None = None,
        model: str | None = None,
        provider: str | None = None,
        traced: bool = False,
    ) -> None:
        self.budget = budget
        # how its responses are priced (docs/prices.md); a named model with no price under a
        # cost budget is refused here, before the run has begun
        self.pricing: Pricing | None = None
        if needs_prices(budget):
            from budgetconf._prices._pricing import pricing_for

            self.pricing = pricing_for(budget, model, provider)
        self.tools = tools
        self.turns = totals.turns
        self.executed = totals.tool_calls_executed
        self.pending = 0  # tool calls admitted and not finished (the one running now among them)
        self.tokens = totals.tokens
        self.cost = totals.cost_usd
        self.input_tokens = totals.input_tokens
        self.cached_input_tokens = totals.cached_input_tokens
        self.output_tokens = totals.output_tokens
        self.cost_sources: set[str] = set()
        if steps is None:  # a preset may leave the step budget unset: then no turn is last
            limit = budget.limits.get("max_steps")
            steps = _NO_STEP_BUDGET if limit is None else int(limit.value)
        self.last_turn = totals.turns + steps  # the last permitted turn
        self.limits = {n: limit.value for n, limit in budget.limits.items()}
        self._watch(tools)
        timeout = self.limits.get("timeout_seconds")
        self.deadline = None if timeout is None else _monotonic() + timeout
        self.events: list[Event] = []
        self.sink_fault: BaseException | None = None  # what on_event raised, if it did
        self.output = ""  # the last non-empty assistant text
        # the stop a sub-agent handed up (a budget it found spent in this run's remainder, or
        # an interrupt): the run stops with it at its next check
        self.stop_next: StopReason | None = None
        self.ended: RunResult | None = None
        self.noticed: LastTurn | None = None  # the notice the current turn's call carried
        self.run_id = os.urandom(16).hex()  # as random as a uuid4, without importing uuid
        self.name = budget.preset if name is None else name
        self.lock: threading.Lock | None = None  # a tree's, once a child is carved from it
        # what its tools see as current_run(): a RunHandle, made when the run is entered
        self.handle: Any = None
        self.draw: Draw | None = None
        self.info = RunInfo(
            self.run_id,
            self.name,
            budget.preset,
            framework=framework,
            parent=parent,
            resumed_from=resumed_from,
            model=model,
            budget=budget,
            traced=traced,
        )
        self.on_event = on_event
        # telemetry.otel: the run on the trace, heard before on_event and apart from it, so a
        # sink that fails leaves the trace whole (docs/telemetry.md)
        self.telemetry: OtelSink | None = None
        if budget.otel:
            from budgetconf.telemetry import _otel_for

            self.telemetry = _otel_for(on_event)
            if self.telemetry is not None:
                self.telemetry.open_run(self.info)
        opened = getattr(on_event, "open_run", None)
        if opened is not None:
            self._sink_call(opened, self.info)
        if budget.ledger is not None:
            from budgetconf.loop._ledger import Draw  # only a run with a ledger loads it

            self.draw = Draw(self, budget.ledger)
        limits = budget.limits.items()
        self.emit(
            RUN_STARTED,
            version=VERSION,
            name=self.name,
            preset=budget.preset,
            framework=framework,
            limits={n: limit.public_value for n, limit in limits},
            budgets={n: limit.to_dict() for n, limit in limits},
            tools={name: limit.to_dict() for name, limit in budget.tools.items()},
            warn_at=budget.warn_at,
            last_turn=budget.last_turn,
            over_cap=budget.over_cap,
            carried_over={  # what a resumed run starts from
                "turns": totals.turns,
                "tool_calls_executed": totals.tool_calls_executed,
                "tokens": totals.tokens,
                "cost_usd": totals.cost_usd,
            },
            resumed_from=resumed_from,
            prices=None if self.pricing is None else self.pricing.in_force(),
        )

    def __repr__(self) -> str:
        return f"<Meter {self.name} turn {self.turns}, {len(self.events)} events>"

    # ------------------------------------------------------------------ events

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record an event of the run: every event says whose it is and when."""
        self._record({"type": event_type, "run_id": self.run_id, "time": _now(), **data})

    def _record(self, event: Event) -> None:
        self.events.append(event)
        if self.telemetry is not None:
            self.telemetry(event)
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except BaseException as exc:
            self.on_event = None  # a callback that raised is not called again
            if isinstance(exc, PASSING):
                raise
            self.sink_fault = exc  # the run fails before its next call (see `finish`)

    def _sink_call(self, method: Callable[[RunInfo], object], info: RunInfo) -> None:
        """A sink's ``open_run`` or ``close_run``: what it raises fails the run as an event."""
        try:
            method(info)
        except PASSING:
            raise
        except BaseException as exc:
            self.sink_fault = self.sink_fault or exc

    # ------------------------------------------------------------------ before a model call

    def next_call(self) -> RunResult | None:
        """None when the next model call may go (its turn counted, the ledger reserved); the
        run's result when it has ended, or when a budget, the ledger or a failed sink stops it."""
        if self.ended is not None:
            return self.ended
        if self.sink_fault is not None:
            return self._sink_failed()
        spent = self._spent()
        if spent is not None:
            return self.budget_stop(spent)
        if self.draw is not None:  # the shared ledger: a reservation, or the stop
            stop = self.draw.reserve()
            if stop is not None:
                return stop
        if self.unchecked is not None:
            self._check_tools()
        if self.warn_at is not None:
            self._check_warnings()  # the time a run has used is seen before each call
        self.turns = turn = self.turns + 1
        self.noticed = None
        self._record({"type": TURN_STARTED, "run_id": self.run_id, "time": _now(), "turn": turn})
        return None

    @property
    def last(self) -> bool:
        """Whether the call of the current turn is the last the step budget permits."""
        return self.turns >= self.last_turn

    def notice(self, has_tools: bool = True) -> tuple[LastTurn, str] | None:
        """The last-turn notice the current turn's call carries, and its kind; None when it
        carries none (not the last turn, no tools to warn of, or the preset sends none).

        With ``loop.warn_model``, the budget warnings since the last call come first in
        its place; with no last-turn notice, their kind is ``none``."""
        budget = self.budget
        warned = self._warnings_due() if budget.warn_model else None
        if not (has_tools and self.turns >= self.last_turn) or budget.last_turn is LastTurn.NONE:
            return None if warned is None else (LastTurn.NONE, warned)
        kind = budget.last_turn
        spec = budget.spec
        text = spec.wrap_up_message if kind is LastTurn.WRAP_UP else spec.warn_message
        self.noticed = kind
        self.emit(LAST_TURN_NOTICE, turn=self.turns, kind=kind, content=text)
        return kind, text if warned is None else f"{warned}\n{text}"

    # ------------------------------------------------------------------ the checks

    def _spent(self) -> StopReason | None:
        """A budget that leaves no room for another turn."""
        if self.stop_next is not None:
            return self.stop_next
        limits = self.limits
        if "max_tokens" in limits and self.tokens >= limits["max_tokens"]:
            return StopReason.MAX_TOKENS
        if "max_cost_usd" in limits and self.cost >= limits["max_cost_usd"]:
            return StopReason.MAX_COST
        if self.deadline is not None and _monotonic() >= self.deadline:
            return StopReason.TIMEOUT
        if self.turns >= self.last_turn:
            return StopReason.MAX_STEPS
        return None

    def _over(self) -> StopReason | None:
        """A token or cost budget that the last response took past its limit."""
        limits = self.limits
        if "max_tokens" in limits and self.tokens > limits["max_tokens"]:
            return StopReason.MAX_TOKENS
        if "max_cost_usd" in limits and self.cost > limits["max_cost_usd"]:
            return StopReason.MAX_COST
        return None

    # ------------------------------------------------------------------ the end

    def completed(self, output: str | None = None) -> RunResult:
        """The run's model gave its final answer (``output``, else its last text): completed,
        or truncated at the step budget when it answered the wrap-up notice."""
        if self.noticed is LastTurn.WRAP_UP:  # an empty wrap-up leaves the last text
            return self.budget_stop(StopReason.MAX_STEPS, output=output or None)
        return self.finish(StopReason.COMPLETED, output="" if output is None else output)

    def fail(self, detail: str) -> RunResult:
        """The run failed: ``failed: DETAIL (turn N)``."""
        return self.finish(StopReason.ERROR, f"failed: {detail} (turn {self.turns})")

    def raised(self, exc: BaseException) -> RunResult:
        """The run failed with ``exc`` (its model, or its framework): ``failed: Type: message``."""
        return self.fail(describe(exc))

    def _sink_failed(self) -> RunResult:
        assert self.sink_fault is not None
        return self.fail(f"on_event raised {describe(self.sink_fault)}")

    def budget_stop(self, reason: StopReason, output: str | None = None) -> RunResult:
        """The run stopped at the budget ``reason`` names, in the executor's words."""
        if reason is StopReason.CANCELLED:  # handed up by a sub-agent that was interrupted
            return self.finish(reason, f"cancelled on turn {self.turns}: a sub-agent was cancelled")
        stop, message, limit = self.budget.stop(reason)
        if reason is StopReason.NO_PROGRESS:  # which call, how often
            explained = self.budget.limits[BudgetName.MAX_REPEATS].explain()
            message = f"stopped: no progress: {self.no_progress()}: {explained}"
        if reason is StopReason.MAX_COST:  # how the cost was known
            from budgetconf._prices._pricing import spent

            message += spent(self.pricing, self.cost, self.cost_sources)
        self.emit(BUDGET_EXHAUSTED, turn=self.turns, stop_reason=stop, **limit)
        return self.finish(reason, message, output, limit)

    def finish(
        self,
        reason: StopReason,
        message: str | None = None,
        output: str | None = None,
        limit: dict[str, Any] | None = None,
    ) -> RunResult:
        """The run's result, stopped for ``reason``; records the ``stopped`` event, once."""
        if self.ended is not None:
            return self.ended
        stop = self.budget.stop_name(reason)
        if message is None:
            message = f"completed in {self.turns} turn{'' if self.turns == 1 else 's'}"
        self._ending(stop)
        if self.draw is not None:  # the last response's settle, before the run says it stopped
            self.draw.settle_pending()
        status = reason.status
        self.emit(
            STOPPED,
            stop_reason=stop,
            status=status.value,
            turns=self.turns,
            tool_calls_executed=self.executed,
            tokens=self.tokens,
            cost_usd=self.cost,
            message=message,
        )
        if self.sink_fault is not None and reason is not StopReason.ERROR:
            self.events.pop()  # on_event raised before the run could end: so it failed
            return self._sink_failed()
        if self.draw is not None:  # what the run still holds goes back; its record is written
            self.draw.end(stop)
        result = self._result(reason, stop, message, output, limit)
        self.ended = result
        if self.handle is not None:  # a handle a tool kept carves no more
            self.handle._ended = True
        self._ended(result)
        closed = getattr(self.on_event, "close_run", None)
        if closed is not None:
            self._sink_call(closed, self.info)
        if self.telemetry is not None:
            self.telemetry.close_run(self.info)
        return result

    def release(self) -> None:
        """The run has returned to its caller, which may be after it ended inside its
        framework: each sink gives back what its ``open_run`` made current (`Sink`)."""
        for sink in (self.telemetry, self.on_event):
            release = getattr(sink, "release_run", None)
            if release is not None:
                self._sink_call(release, self.info)

    def _ended(self, result: RunResult) -> None:
        """What happens once the run has its result (a child tells its parent)."""

    def _unanswered(self, calls: tuple[Call, ...], answers: tuple[str, ...]) -> None:
        """What a driver does with the answers of a stopping response's calls, before the
        run ends (the executor adds them to its conversation; a framework answers its own)."""

    def _ending(self, stop: str) -> None:
        """What a driver does as its run ends, before the ``stopped`` event (the executor
        answers the calls left without an answer)."""

    def _transcript(self) -> list[Message]:
        """The conversation a result carries: none of a bridged run's, which its framework
        keeps."""
        return []

    def _result(
        self,
        reason: StopReason,
        stop: str,
        message: str,
        output: str | None,
        limit: dict[str, Any] | None,
    ) -> RunResult:
        return RunResult(
            status=reason.status,
            stop_reason=stop,
            stop_kind=reason,
            message=message,
            output=self.output if output is None else output,
            turns=self.turns,
            tool_calls_executed=self.executed,
            tokens=self.tokens,
            cost_usd=self.cost,
            messages=self._transcript(),
            events=self.events,
            limit=limit,
            run_id=self.run_id,
            usage=self.usage,
        )
