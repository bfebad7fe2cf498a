"""One run of the loop as a state machine that does no I/O of its own.

`Run.steps` is a generator: it yields an `Invoke` for every model or tool call
and is sent the call's return value, or has the call's exception thrown in.
The sync and async drivers in ``_executor`` differ only in how they make the
calls, so both paths share every rule below.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from budgetconf._loop_table import LastTurn, OverCap
from budgetconf.errors import ModelError
from budgetconf.loop._budget import Budget, Limit
from budgetconf.loop._faults import PASSING, Deadline, Interrupted, Raised, describe
from budgetconf.loop._reasons import BLOCKS, StopReason, blocked_message
from budgetconf.loop._response import Call, Malformed, Response, read_response, tool_text
from budgetconf.loop._result import Event, Message, RunResult, Totals

if TYPE_CHECKING:
    from budgetconf.loop._ledger import Draw

__all__ = ["Event", "Invoke", "Message", "Run", "RunResult", "Totals"]

_now = time.time  # an event's time: seconds since the epoch (a global lookup, not two)


@dataclass(slots=True)
class Invoke:
    """A call the run asks its driver to make: ``fn(*args, **kwargs)``."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


class Run:
    """The state of one run: the conversation so far, the counters and the events."""

    def __init__(
        self,
        budget: Budget,
        model: Callable[..., Any],
        tools: Mapping[str, Callable[..., Any]],
        specs: list[dict[str, Any]],
        messages: list[Message],
        totals: Totals,
        steps: int,
        on_event: Callable[[Event], None] | None,
    ) -> None:
        self.budget = budget
        self.model = model
        self.tools = tools
        self.specs = specs
        self.messages = messages
        self.first = len(messages)  # where this run's own messages begin
        self.turns = totals.turns
        self.executed = totals.tool_calls_executed
        self.tokens = totals.tokens
        self.cost = totals.cost_usd
        self.last_turn = totals.turns + steps  # the last permitted turn
        timeout = budget.value("timeout_seconds")
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.events: list[Event] = []
        self.on_event = on_event
        self.sink_fault: BaseException | None = None  # what on_event raised, if it did
        self.output = ""  # the last non-empty assistant text
        # the batch being run and the call at which it is: what is admitted and not finished
        self.batch: tuple[Call, ...] = ()
        self.at = 0
        # the stop a sub-agent handed up (a budget it found spent in this run's remainder, or
        # an interrupt): the run stops with it at its next check
        self.stop_next: StopReason | None = None
        self.limits = {name: limit.value for name, limit in budget.limits.items()}
        self.run_id = os.urandom(16).hex()  # as random as a uuid4, without importing uuid
        self.draw: Draw[RunResult] | None = None
        if budget.ledger is not None:
            from budgetconf.loop._ledger import Draw  # only a run with a ledger loads it

            self.draw = Draw(self, budget.ledger)
        limits = budget.limits.items()
        self.emit(
            "run_started",
            preset=budget.preset,
            limits={name: limit.public_value for name, limit in limits},
            budgets={name: limit.to_dict() for name, limit in limits},
            last_turn=budget.last_turn,
            over_cap=budget.over_cap,
            carried_over=asdict(totals),  # what a resumed run starts from
        )

    def emit(self, event_type: str, /, **data: Any) -> None:
        # every event says which run it belongs to and when (seconds since the epoch, UTC)
        event = {"type": event_type, "run_id": self.run_id, "time": _now(), **data}
        self.events.append(event)
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except BaseException as exc:
            self.on_event = None  # a callback that raised is not called again
            if isinstance(exc, PASSING):
                raise
            self.sink_fault = exc  # the run fails before its next call (see `finish`)

    def steps(self) -> Generator[Invoke, Any, RunResult]:
        """The run, one call at a time; returns the result."""
        while True:
            if self._sink_broke():
                return self._sink_failed()
            spent = self._spent()
            if spent is not None:
                return self._budget_stop(spent)
            if self.draw is not None:  # the shared ledger: a reservation, or the stop
                stop = self.draw.reserve()
                if stop is not None:
                    return stop
            self.turns += 1
            turn = self.turns
            self.emit("turn_started", turn=turn)
            last = turn >= self.last_turn
            send, notice = self._request(last)
            if self._sink_broke():
                return self._sink_failed()
            try:
                raw = yield Invoke(self.model, (send, self.specs), {})
            except Exception as exc:  # Deadline, Interrupted or Raised: the drivers throw no other
                return self._model_raised(exc, turn)
            response = self._read(raw, turn)
            if isinstance(response, RunResult):
                return response
            stop = self._judge(response, turn, last, notice)
            if stop is None:
                stop = yield from self._batch(response.calls, turn)
            if stop is not None:
                return stop

    def _read(self, raw: object, turn: int) -> Response | RunResult:
        """The response the model returned, recorded; the failed result if it cannot be read."""
        try:
            response = read_response(raw, turn)
        except Malformed as exc:
            return self._fail(f"malformed model response: {exc}")
        except PASSING:
            raise
        except BaseException as exc:  # its attributes are the model's code: a lazy property
            return self._fail(f"malformed model response: reading it raised {describe(exc)}")
        self._record(response, turn)
        return response

    def _judge(
        self, response: Response, turn: int, last: bool, notice: str | None
    ) -> RunResult | None:
        """The result when this response ends the run: a final answer, a budget, a block."""
        calls = response.calls
        blocked = BLOCKS.get(response.finish_reason)
        if not calls and blocked is None:  # a final answer
            if notice == "wrap_up":  # an empty wrap-up leaves the last text as the output
                return self._budget_stop(StopReason.MAX_STEPS, output=response.content or None)
            return self.finish(StopReason.COMPLETED, output=response.content or "")
        # a budget stop is sticky: it is judged before a provider block
        over = self._over()
        if over is not None:
            self._refuse(calls, turn, f"the run's {over.budget} budget is spent")
            return self._budget_stop(over)
        if last:
            self._refuse(calls, turn, "this was the last turn the step budget allows")
            return self._budget_stop(StopReason.MAX_STEPS)
        if blocked is not None:
            self._refuse(calls, turn, f"the response ended with {response.finish_reason}")
            message = blocked_message(response.finish_reason, turn, bool(response.content))
            return self.finish(blocked, message)
        return None

    def _model_raised(self, exc: Exception, turn: int) -> RunResult:
        """The result of a model call that raised, or was abandoned or interrupted."""
        if isinstance(exc, Deadline):
            return self._budget_stop(StopReason.TIMEOUT)
        if isinstance(exc, Interrupted):
            return self.finish(StopReason.CANCELLED, f"cancelled on turn {turn}")
        if isinstance(exc, Raised) and isinstance(exc.exc, ModelError):  # says what failed
            return self._fail(describe(exc, named=False))
        return self._fail(f"the model raised {describe(exc)}")

    def _request(self, last: bool) -> tuple[list[Message], str | None]:
        """The messages the model receives this turn, and the notice they carry, if any."""
        budget = self.budget
        if not (last and self.specs) or budget.last_turn is LastTurn.NONE:
            return self.messages, None
        spec = budget.spec
        text = spec.wrap_up_message if budget.last_turn is LastTurn.WRAP_UP else spec.warn_message
        self.emit("last_turn_notice", turn=self.turns, kind=budget.last_turn, content=text)
        # only the copy the model receives carries the notice
        return [*self.messages, {"role": "user", "content": text}], budget.last_turn

    def _record(self, response: Response, turn: int) -> None:
        self.tokens += response.tokens
        if response.cost:  # summed to the picodollar: three at 0.1 reach a limit of 0.3 exactly
            self.cost = round(self.cost + response.cost, 12)
        self.messages.append(response.message())
        if response.content:
            self.output = response.content
        self.emit(
            "model_response",
            turn=turn,
            finish_reason=response.finish_reason,
            content=response.content,
            tool_calls=[{"id": c.id, "name": c.name} for c in response.calls],
            tokens=response.tokens,
            cost_usd=response.cost,
        )
        if self.draw is not None:  # the response replaces what the call held in the ledger
            self.draw.settle(response.tokens, response.cost)

    def _batch(
        self, calls: tuple[Call, ...], turn: int
    ) -> Generator[Invoke, Any, RunResult | None]:
        """Run one response's calls within the caps; a result when that ends the run."""
        per_turn = self.budget.limits.get("max_tool_calls_per_turn")
        plan = self._plan(calls, turn, per_turn)
        if not isinstance(plan, tuple):  # the run stops, or the response was rejected (None)
            return plan
        batch, skipped = plan
        self.batch = batch
        for index, call in enumerate(batch):
            self.at = index
            tool = self.tools.get(call.name)
            if tool is None or call.arguments is None:
                self._refuse_call(call, tool is None, turn)
                continue
            if self._sink_broke():
                return self._sink_failed()
            try:
                value = yield Invoke(tool, (), call.arguments)
            except Exception as exc:  # Deadline, Interrupted or Raised: the drivers throw no other
                stop = self._tool_raised(exc, call, batch[index + 1 :] + skipped, turn)
                if stop is not None:
                    return stop
                continue
            self._returned(call, value, turn)
        self.batch = ()
        if skipped and per_turn is not None:  # answered last, after the calls that ran
            self._answer_skipped(skipped, per_turn)
        return None

    def _plan(
        self, calls: tuple[Call, ...], turn: int, per_turn: Limit | None
    ) -> tuple[tuple[Call, ...], tuple[Call, ...]] | RunResult | None:
        """The calls to run and those to skip; None when none may run, or the result of a stop."""
        batch: tuple[Call, ...] = calls
        skipped: tuple[Call, ...] = ()
        if per_turn is not None and len(calls) > int(per_turn.value):
            split = self._over_cap(calls, turn, per_turn)
            if split is None:  # rejected: every call has its answer, and none ran
                return None
            batch, skipped = split
        total_cap = self.limits.get("max_tool_calls")
        if total_cap is not None and self.executed + self._runnable(batch) > total_cap:
            self._refuse(calls, turn, "the run's tool-call budget would be exceeded")
            return self._budget_stop(StopReason.MAX_TOOL_CALLS)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self._refuse(calls, turn, "the run's deadline has passed")
            return self._budget_stop(StopReason.TIMEOUT)
        return batch, skipped

    def _returned(self, call: Call, value: object, turn: int) -> None:
        """Answer a call that returned ``value`` with its text, or with why it has none."""
        self.executed += 1
        try:
            text = tool_text(value)
        except PASSING:
            raise
        except BaseException as exc:  # the value's own methods (__str__, say) are the tool's code
            error = f"its return value cannot be written as text: {describe(exc)}"
            self._answer(call, f"error: {error}")
            self.emit("tool_executed", turn=turn, id=call.id, name=call.name, ok=False, error=error)
            return
        self._answer(call, text)
        self.emit("tool_executed", turn=turn, id=call.id, name=call.name, ok=True)

    def _over_cap(
        self, calls: tuple[Call, ...], turn: int, per_turn: Limit
    ) -> tuple[tuple[Call, ...], tuple[Call, ...]] | None:
        """A response with more calls than one may have: the calls to run and those to skip.

        None when the preset rejects such a response whole; its calls are answered then.
        """
        cap = int(per_turn.value)
        if self.budget.over_cap is OverCap.REJECT:
            shown = per_turn.shown()  # the cap is named, never shown, when its field is secret
            setting = f"{per_turn.field} = {shown}"
            why = (
                f"not executed: this response has {len(calls)} tool calls and at most"
                f" {shown} are accepted in one response ({setting}), so none ran."
                f" Send at most {shown} calls in a response."
            )
            for call in calls:
                self._answer(call, why)
            ids = [c.id for c in calls]
            cap_shown = per_turn.public_value
            self.emit("batch_rejected", turn=turn, calls=len(calls), cap=cap_shown, ids=ids)
            return None
        batch, skipped = calls[:cap], calls[cap:]
        ids = [c.id for c in skipped]
        self.emit(
            "batch_truncated",
            turn=turn,
            calls=len(calls),
            cap=per_turn.public_value,
            skipped=ids,
        )
        return batch, skipped

    def _answer_skipped(self, skipped: tuple[Call, ...], per_turn: Limit) -> None:
        """Answer the calls past the per-turn cap, which a truncated response does not run."""
        shown = per_turn.shown()  # the cap is named, never shown, when its field is secret
        setting = f"{per_turn.field} = {shown}"
        why = f"skipped: only the first {shown} calls of a response run ({setting})"
        for call in skipped:
            self._answer(call, why)

    def _refuse_call(self, call: Call, unknown: bool, turn: int) -> None:
        """Answer a call that cannot run: its tool is ``unknown``, or its arguments unreadable."""
        if unknown:
            why = f"no tool named {call.name!r}{self._tool_names()}"
        else:
            why = call.problem or "the arguments cannot be read"
        self._answer(call, f"error: {why}")
        self.emit("tool_refused", turn=turn, id=call.id, name=call.name, reason=why)

    def _tool_raised(
        self, exc: Exception, call: Call, rest: tuple[Call, ...], turn: int
    ) -> RunResult | None:
        """Record a tool call that raised, or was abandoned; a result when that ends the run.

        A tool's own exception is its answer and the batch goes on; an abandoned
        or interrupted call ends the run, and the calls after it (``rest``) do not run.
        """
        if isinstance(exc, Deadline):
            self._abandon(call, turn, "still running at the run's deadline")
            self._refuse(rest, turn, "the run's deadline passed")
            return self._budget_stop(StopReason.TIMEOUT)
        if isinstance(exc, Interrupted):
            self._abandon(call, turn, "interrupted while it ran")
            self._refuse(rest, turn, "the run was cancelled")
            return self.finish(StopReason.CANCELLED, f"cancelled on turn {turn}")
        self.executed += 1
        self._answer(call, f"error: {describe(exc)}")
        error = describe(exc)
        self.emit("tool_executed", turn=turn, id=call.id, name=call.name, ok=False, error=error)
        return None

    def _tool_names(self) -> str:
        names = ", ".join(self.tools)
        return f"; the tools are {names}" if names else "; no tools are offered"

    def _answer(self, call: Call, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})

    def _runnable(self, calls: tuple[Call, ...]) -> int:
        """How many of ``calls`` would run: a known tool, with readable arguments."""
        return sum(1 for c in calls if c.name in self.tools and c.arguments is not None)

    def _abandon(self, call: Call, turn: int, why: str) -> None:
        """A call that started and was left running: it counts, and its outcome is unknown."""
        self.executed += 1
        self._answer(call, f"abandoned: {why}; it started, and its outcome is unknown")
        self.emit("tool_abandoned", turn=turn, id=call.id, name=call.name, reason=why)

    def _refuse(self, calls: tuple[Call, ...], turn: int, why: str) -> None:
        """Answer calls that will not run, so every call id in the conversation has its answer."""
        if not calls:
            return
        for call in calls:
            self._answer(call, f"not executed: {why}")
        self.emit("calls_not_executed", turn=turn, ids=[c.id for c in calls], reason=why)

    def _spent(self) -> StopReason | None:
        """A budget that leaves no room for another turn."""
        if self.stop_next is not None:
            return self.stop_next
        limits = self.limits
        if "max_tokens" in limits and self.tokens >= limits["max_tokens"]:
            return StopReason.MAX_TOKENS
        if "max_cost_usd" in limits and self.cost >= limits["max_cost_usd"]:
            return StopReason.MAX_COST
        if self.deadline is not None and time.monotonic() >= self.deadline:
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

    def _fail(self, detail: str) -> RunResult:
        return self.finish(StopReason.ERROR, f"failed: {detail} (turn {self.turns})")

    def _sink_broke(self) -> bool:
        """Whether ``on_event`` has raised: the run then makes no further call."""
        return self.sink_fault is not None

    def _sink_failed(self) -> RunResult:
        """The result of a run whose ``on_event`` raised: it failed, whatever it was doing."""
        assert self.sink_fault is not None
        return self._fail(f"on_event raised {describe(self.sink_fault)}")

    def cancelled(self) -> RunResult:
        """The result of a run interrupted between calls: its state is whole, so it ends there."""
        if self.events and self.events[-1]["type"] == "stopped":  # interrupted as it was told
            self.events.pop()
        return self.finish(StopReason.CANCELLED, f"cancelled on turn {self.turns}")

    def _answer_the_rest(self, why: str) -> None:
        """Answer the last response's calls that have no answer yet (an interrupt between calls).

        Every call id in the conversation must have its tool message, or the
        conversation cannot be sent to a model again.
        """
        for at in range(len(self.messages) - 1, self.first - 1, -1):  # this run's messages
            message = self.messages[at]
            if message.get("role") == "assistant":
                asked = message.get("tool_calls") or []
                answered = {m.get("tool_call_id") for m in self.messages[at + 1 :]}
                for call in asked:
                    if call["id"] not in answered:
                        self.messages.append(
                            {
                                "role": "tool",
                                "tool_call_id": call["id"],
                                "content": f"not executed: {why}",
                            }
                        )
                return

    def _budget_stop(self, reason: StopReason, output: str | None = None) -> RunResult:
        if reason is StopReason.CANCELLED:  # handed up by a sub-agent that was interrupted
            return self.finish(reason, f"cancelled on turn {self.turns}: a sub-agent was cancelled")
        stop, message, limit = self.budget.stop(reason)
        self.emit("budget_exhausted", turn=self.turns, stop_reason=stop, **limit)
        return self.finish(reason, message, output, limit)

    def finish(
        self,
        reason: StopReason,
        message: str | None = None,
        output: str | None = None,
        limit: dict[str, Any] | None = None,
    ) -> RunResult:
        """The result of the run, stopped for ``reason``; records the ``stopped`` event."""
        stop = self.budget.stop_name(reason)
        if message is None:
            message = f"completed in {self.turns} turn{'' if self.turns == 1 else 's'}"
        self._answer_the_rest(f"the run stopped ({stop})")
        status = reason.status
        self.emit(
            "stopped",
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
        return RunResult(
            status=status,
            stop_reason=stop,
            stop_kind=reason,
            message=message,
            output=self.output if output is None else output,
            turns=self.turns,
            tool_calls_executed=self.executed,
            tokens=self.tokens,
            cost_usd=self.cost,
            messages=self.messages,
            events=self.events,
            limit=limit,
            run_id=self.run_id,
        )
