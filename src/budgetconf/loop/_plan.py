"""What may become of one response's calls: the rules a `Meter` judges it by, its `Plan`,
and the calls as they run.

In the executor's order: a final answer ends the run; a token or cost budget
the response took past its limit, the step budget's last turn, and a block
(``content_filter``, ``refusal``, ``length``) answer every call as not
executed and stop it; a response over the per-response cap is rejected whole
or truncated; calls past ``max_tool_calls``, or past the deadline, stop it;
the rest run.
"""

from __future__ import annotations

import time
from collections.abc import Container, Mapping
from typing import TYPE_CHECKING, Any

from budgetconf._loop_table import OverCap, StopReason
from budgetconf._usage import NO_USAGE, Usage
from budgetconf.events import (
    BATCH_REJECTED,
    BATCH_TRUNCATED,
    CALLS_NOT_EXECUTED,
    MODEL_RESPONSE,
    TOOL_ABANDONED,
    TOOL_EXECUTED,
    TOOL_STARTED,
)
from budgetconf.loop._faults import describe
from budgetconf.loop._reasons import BLOCKS, blocked_message
from budgetconf.loop._response import Call
from budgetconf.loop._result import Event, RunResult

if TYPE_CHECKING:
    from budgetconf._prices._pricing import Pricing
    from budgetconf.loop._budget import Budget
    from budgetconf.loop._ledger import Draw
    from budgetconf.loop._limit import Limit

_now = time.time
_monotonic = time.monotonic


class Plan:
    """What may become of one response's calls: which run, which are answered, and the stop.

    ``run`` are the calls to run, in order: admitted against every tool-call
    budget (a call the run has no tool for, or whose arguments cannot be
    read, is the driver's to answer). ``answers`` holds, for each call of the
    response, None when it is in ``run`` or the text it is answered with
    instead (not executed, rejected, skipped); it is None itself when every
    call runs. ``skipped`` are the calls past the per-response cap, answered
    once the others have run. ``stop`` is the run's result when the response
    ends it (its calls answered); ``final`` is True for a response with nothing
    to run that ends the run by itself (`Meter.completed`).
    """

    __module__ = "budgetconf.loop"
    __slots__ = ("_taken", "admitted", "answers", "calls", "final", "run", "skipped", "stop")

    def __init__(
        self,
        calls: tuple[Call, ...],
        run: tuple[Call, ...],
        answers: tuple[str | None, ...] | None,
        stop: RunResult | None,
        final: bool = False,
        skipped: tuple[Call, ...] = (),
        admitted: int = 0,
    ) -> None:
        self.calls = calls
        self.run = run
        self.answers = answers
        self.stop = stop
        self.final = final
        self.skipped = skipped
        self.admitted = admitted  # the calls of ``run`` counted against the tool-call budgets
        self._taken: list[bool] | None = None

    def __repr__(self) -> str:
        ran = [c.name for c in self.run]
        return f"<Plan {len(self.calls)} calls, run {ran}, stop={self.stop is not None}>"

    def answer(self, index: int) -> str | None:
        """The answer of the response's call at ``index``, or None when it runs."""
        return None if self.answers is None else self.answers[index]

    def decide(self, call_id: str | None, name: str) -> tuple[Call, str | None] | None:
        """The call a framework is about to run, and its answer (None: it runs).

        Found by its id when the framework gives one that names exactly one
        call of the response, else as the first call of that name not yet
        decided; None when the response holds no such call.
        """
        taken = self._taken
        if taken is None:
            taken = self._taken = [False] * len(self.calls)
        calls = self.calls
        found = -1
        if call_id is not None:
            matches = [i for i, c in enumerate(calls) if c.id == call_id and not taken[i]]
            if len(matches) == 1:
                found = matches[0]
        if found < 0:
            found = next((i for i, c in enumerate(calls) if c.name == name and not taken[i]), -1)
        if found < 0:
            return None
        taken[found] = True
        return calls[found], self.answer(found)


class Planning:
    """The half of a `Meter` that judges a response and plans its calls (see above)."""

    __slots__ = ()

    if TYPE_CHECKING:  # the Meter's, which these rules read and count with
        budget: Budget
        limits: dict[str, int | float]
        tools: Container[str]
        turns: int
        last_turn: int
        deadline: float | None
        output: str
        run_id: str
        draw: Draw | None
        pricing: Pricing | None
        tool_limits: Mapping[str, Limit]
        warn_at: float | None

        def _record(self, event: Event) -> None: ...
        def emit(self, event_type: str, /, **data: Any) -> None: ...
        def _count(self, usage: Usage, cost: float, source: str) -> None: ...
        def _over(self) -> StopReason | None: ...

        def _admit(self, need: int) -> str | None: ...
        def _over_tools(
            self, batch: tuple[Call, ...], turn: int
        ) -> tuple[tuple[Call, ...], tuple[str | None, ...] | None]: ...
        def _tool_counted(self, call: Call) -> None: ...
        def _repeated(self, call: Call, error: str | None, value: object) -> None: ...
        def _check_warnings(self) -> None: ...
        def _finished(self) -> None: ...
        def _release(self, count: int) -> None: ...
        def _unanswered(self, calls: tuple[Call, ...], answers: tuple[str, ...]) -> None: ...
        def budget_stop(self, reason: StopReason, output: str | None = None) -> RunResult: ...
        def finish(
            self,
            reason: StopReason,
            message: str | None = None,
            output: str | None = None,
            limit: dict[str, Any] | None = None,
        ) -> RunResult: ...

    def response(
        self,
        usage: Usage,
        content: str | None,
        calls: tuple[Call, ...] = (),
        finish_reason: str = "stop",
    ) -> Plan:
        """Record what the model answered and judge it: the `Plan` of its calls."""
        turn = self.turns
        cost, source = usage.cost_usd, usage.cost_source
        if usage is not NO_USAGE:
            if source == "none" and self.pricing is not None:  # at its model's price
                priced = self.pricing.cost(usage)
                if priced is not None:
                    cost, source = priced, "priced"
            self._count(usage, cost, source)
        if self.warn_at is not None:
            self._check_warnings()  # the turn, and what the response used
        if content:
            self.output = content  # type: ignore[misc]  # a slot of the Meter this half is of
        self._record(
            {
                "type": MODEL_RESPONSE,
                "run_id": self.run_id,
                "time": _now(),
                "turn": turn,
                "finish_reason": finish_reason,
                "content": content,
                "tool_calls": [{"id": c.id, "name": c.name} for c in calls],
                "tokens": usage.total_tokens,
                "input_tokens": usage.input_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": cost,
                "cost_source": source,
                "model": usage.model,
            }
        )
        if self.draw is not None:  # the response replaces what the call held in the ledger
            self.draw.settle(usage.total_tokens, cost)
        blocked = BLOCKS.get(finish_reason)
        if not calls and blocked is None:  # a final answer
            return Plan(calls, (), None, None, True)
        # a budget stop is sticky: it is judged before a provider block
        over = self._over()
        if over is not None:
            return self._refused(calls, turn, f"the run's {over.budget} budget is spent", over)
        if turn >= self.last_turn:
            why = "this was the last turn the step budget allows"
            return self._refused(calls, turn, why, StopReason.MAX_STEPS)
        if blocked is not None:
            answers = self._refuse(calls, turn, f"the response ended with {finish_reason}")
            self._unanswered(calls, answers)
            message = blocked_message(finish_reason, turn, bool(content))
            return Plan(calls, (), answers, self.finish(blocked, message))
        return self._plan(calls, turn)

    def _refused(self, calls: tuple[Call, ...], turn: int, why: str, reason: StopReason) -> Plan:
        """Every call answered as not executed, ``why``; the run stops for ``reason``."""
        answers = self._refuse(calls, turn, why)
        self._unanswered(calls, answers)
        return Plan(calls, (), answers, self.budget_stop(reason))

    def _plan(self, calls: tuple[Call, ...], turn: int) -> Plan:
        """The calls within the caps: run, rejected, skipped; or the stop of a spent budget."""
        batch: tuple[Call, ...] = calls
        skipped: tuple[Call, ...] = ()
        answers: tuple[str | None, ...] | None = None
        per_turn = self.budget.limits.get("max_tool_calls_per_turn")
        if per_turn is not None and len(calls) > int(per_turn.value):
            cap = int(per_turn.value)
            if self.budget.over_cap is OverCap.REJECT:
                return Plan(calls, (), self._reject(calls, turn, per_turn), None)
            batch, skipped = calls[:cap], calls[cap:]
            self.emit(
                BATCH_TRUNCATED,
                turn=turn,
                calls=len(calls),
                cap=per_turn.public_value,
                skipped=[c.id for c in skipped],
            )
            shown = per_turn.shown()  # the cap is named, never shown, when its field is secret
            why = f"skipped: only the first {shown} calls of a response run"
            answers = (None,) * cap + (f"{why} ({per_turn.field} = {shown})",) * len(skipped)
        limited = None
        if self.tool_limits:
            batch, limited = self._over_tools(batch, turn)
        if limited is not None:  # a tool past its own limit: answered, and the run goes on
            rest = (
                (None,) * (len(calls) - len(limited))
                if answers is None
                else answers[len(limited) :]
            )
            answers = (*limited, *rest)
        need = self._runnable(batch)
        full = self._admit(need)
        if full is not None:
            return self._refused(calls, turn, full, StopReason.MAX_TOOL_CALLS)
        if self.deadline is not None and _monotonic() >= self.deadline:
            self._release(need)
            return self._refused(calls, turn, "the run's deadline has passed", StopReason.TIMEOUT)
        return Plan(calls, batch, answers, None, False, skipped, need)

    def _reject(self, calls: tuple[Call, ...], turn: int, per_turn: Limit) -> tuple[str, ...]:
        """The answers of a response over the per-response cap, which the preset rejects whole."""
        shown = per_turn.shown()  # the cap is named, never shown, when its field is secret
        why = (
            f"not executed: this response has {len(calls)} tool calls and at most {shown} are"
            f" accepted in one response ({per_turn.field} = {shown}), so none ran."
            f" Send at most {shown} calls in a response."
        )
        ids = [c.id for c in calls]
        cap = per_turn.public_value
        self.emit(BATCH_REJECTED, turn=turn, calls=len(calls), cap=cap, ids=ids)
        return (why,) * len(calls)

    def _refuse(self, calls: tuple[Call, ...], turn: int, why: str) -> tuple[str, ...]:
        """The answers of calls that will not run: every call id has its answer."""
        if calls:
            self.emit(CALLS_NOT_EXECUTED, turn=turn, ids=[c.id for c in calls], reason=why)
        return (f"not executed: {why}",) * len(calls)

    def _runnable(self, calls: tuple[Call, ...]) -> int:
        """How many of ``calls`` would run: a known tool, with readable arguments."""
        tools = self.tools
        count = 0
        for call in calls:
            if call.name in tools and call.arguments is not None:
                count += 1
        return count

    # ------------------------------------------------------------------ the calls

    # ------------------------------------------------------------------ the calls as they run

    def tool_started(self, call: Call) -> None:
        """A call the plan runs is about to run."""
        if self.tool_limits:
            self._tool_counted(call)
        self._record(
            {
                "type": TOOL_STARTED,
                "run_id": self.run_id,
                "time": _now(),
                "turn": self.turns,
                "id": call.id,
                "name": call.name,
            }
        )

    def tool_returned(
        self, call: Call, error: str | BaseException | None = None, value: object = None
    ) -> None:
        """A call ran: it returned ``value``, or raised (``error`` says what, or is what it
        raised); either way it counts."""
        self._finished()
        if isinstance(error, BaseException):
            error = describe(error)
        if "max_repeats" in self.limits:
            self._repeated(call, error, value)
        if self.warn_at is not None:
            self._check_warnings()
        event = {
            "type": TOOL_EXECUTED,
            "run_id": self.run_id,
            "time": _now(),
            "turn": self.turns,
            "id": call.id,
            "name": call.name,
            "ok": error is None,
        }
        if error is not None:
            event["error"] = error
        self._record(event)

    def tool_abandoned(self, call: Call, why: str) -> None:
        """A call started and was left running (a deadline, an interrupt): it counts."""
        self._finished()
        self.emit(TOOL_ABANDONED, turn=self.turns, id=call.id, name=call.name, reason=why)

    def batch_ended(self, plan: Plan, started: int) -> None:
        """A framework has run ``started`` of the calls ``plan`` admitted, and will run no more
        of them (it stopped, or skipped some): the others are counted no longer."""
        left = plan.admitted - started
        if left > 0:
            self._release(left)
