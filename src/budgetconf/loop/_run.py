"""One run of the loop as a state machine that does no I/O of its own.

`Run.steps` is a generator: it yields an `Invoke` for every model or tool call
and is sent the call's return value, or has the call's exception thrown in.
The sync and async drivers in ``_executor`` differ only in how they make the
calls, so both paths share every rule below. A `Run` is a `Meter` with a
conversation: every budget is judged by the Meter's rules, as in each bridge.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from budgetconf._loop_table import StopReason
from budgetconf._prices import needs_prices
from budgetconf.errors import ModelError
from budgetconf.events import STOPPED, TOOL_REFUSED, RunInfo
from budgetconf.loop._budget import Budget
from budgetconf.loop._child_meter import ChildMeter
from budgetconf.loop._faults import PASSING, Deadline, Interrupted, Raised, describe
from budgetconf.loop._meter import Meter
from budgetconf.loop._plan import Plan
from budgetconf.loop._response import Call, Malformed, Response, read_response, tool_text
from budgetconf.loop._result import Event, Message, RunResult, Totals


@dataclass(slots=True)
class Invoke:
    """A call the run asks its driver to make: ``fn(*args, **kwargs)``."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


class Run(Meter):
    """The state of one run: the conversation so far, and the Meter's counts and events."""

    __slots__ = ("first", "messages", "model", "specs")

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
        *,
        name: str | None = None,
        resumed_from: str | None = None,
        parent: RunInfo | None = None,
    ) -> None:
        self.model = model
        self.specs = specs
        self.messages = messages
        self.first = len(messages)  # where this run's own messages begin
        named, provider = _model_of(model, budget)
        super().__init__(
            budget,
            steps=steps,
            totals=totals,
            tools=tools,
            on_event=on_event,
            name=name,
            resumed_from=resumed_from,
            parent=parent,
            model=named,
            provider=provider,
        )
        self.tools: Mapping[str, Callable[..., Any]] = tools

    def steps(self) -> Generator[Invoke, Any, RunResult]:
        """The run, one call at a time; returns the result."""
        while True:
            stop = self.next_call()
            if stop is not None:
                return stop
            turn = self.turns
            send = self._request()
            if self.sink_fault is not None:
                return self._sink_failed()
            try:
                raw = yield Invoke(self.model, (send, self.specs), {})
            except Exception as exc:  # Deadline, Interrupted or Raised: the drivers throw no other
                return self._model_raised(exc, turn)
            response = self._read(raw, turn)
            if isinstance(response, RunResult):
                return response
            self.messages.append(response.message())
            plan = self.response(
                response.usage, response.content, response.calls, response.finish_reason
            )
            if plan.final:
                return self.completed(response.content or None)
            if plan.stop is None:  # a stopping plan's answers are given: see _unanswered
                plan.stop = yield from self._batch(plan, turn)
            if plan.stop is not None:
                return plan.stop

    def _read(self, raw: object, turn: int) -> Response | RunResult:
        """The response the model returned; the failed result if it cannot be read."""
        try:
            return read_response(raw, turn)
        except Malformed as exc:
            return self.fail(f"malformed model response: {exc}")
        except PASSING:
            raise
        except BaseException as exc:  # its attributes are the model's code: a lazy property
            return self.fail(f"malformed model response: reading it raised {describe(exc)}")

    def _model_raised(self, exc: Exception, turn: int) -> RunResult:
        """The result of a model call that raised, or was abandoned or interrupted."""
        if isinstance(exc, Deadline):
            return self.budget_stop(StopReason.TIMEOUT)
        if isinstance(exc, Interrupted):
            return self.finish(StopReason.CANCELLED, f"cancelled on turn {turn}")
        if isinstance(exc, Raised) and isinstance(exc.exc, ModelError):  # says what failed
            return self.fail(describe(exc, named=False))
        return self.fail(f"the model raised {describe(exc)}")

    def _request(self) -> list[Message]:
        """The messages the model receives this turn: the last carries the notice, if any."""
        if self.turns < self.last_turn and not self.warnings_due:
            return self.messages
        notice = self.notice(bool(self.specs))
        if notice is None:
            return self.messages
        # only the copy the model receives carries the notice
        return [*self.messages, {"role": "user", "content": notice[1]}]

    def _batch(self, plan: Plan, turn: int) -> Generator[Invoke, Any, RunResult | None]:
        """Run the plan's calls; answer the others. A result when that ends the run."""
        batch = plan.run
        tools = self.tools
        for index, call in enumerate(batch):
            tool = tools.get(call.name)
            if tool is None or call.arguments is None:
                self._refuse_call(call, tool is None, turn)
                continue
            if self.sink_fault is not None:
                self._release(self._runnable(batch[index:]))
                return self._sink_failed()
            self.tool_started(call)
            try:
                value = yield Invoke(tool, (), call.arguments)
            except Exception as exc:  # Deadline, Interrupted or Raised: the drivers throw no other
                stop = self._tool_raised(exc, call, batch[index + 1 :], plan.skipped, turn)
                if stop is not None:
                    return stop
                continue
            self._returned(call, value)
        if plan.answers is not None:  # past the cap: answered after the calls that ran
            self._answer_all(plan)
        return None

    def _answer_all(self, plan: Plan) -> None:
        """Answer the calls the plan does not run."""
        assert plan.answers is not None
        for call, answer in zip(plan.calls, plan.answers, strict=True):
            if answer is not None:
                self._answer(call, answer)

    def _unanswered(self, calls: tuple[Call, ...], answers: tuple[str, ...]) -> None:
        for call, answer in zip(calls, answers, strict=True):
            self._answer(call, answer)

    def _returned(self, call: Call, value: object) -> None:
        """Answer a call that returned ``value`` with its text, or with why it has none."""
        try:
            text = tool_text(value)
        except PASSING:
            raise
        except BaseException as exc:  # the value's own methods (__str__, say) are the tool's code
            error = f"its return value cannot be written as text: {describe(exc)}"
            self._answer(call, f"error: {error}")
            self.tool_returned(call, error)
            return
        self._answer(call, text)
        self.tool_returned(call, None, text)

    def _refuse_call(self, call: Call, unknown: bool, turn: int) -> None:
        """Answer a call that cannot run: its tool is ``unknown``, or its arguments unreadable."""
        if unknown:
            why = f"no tool named {call.name!r}{self._tool_names()}"
        else:
            why = call.problem or "the arguments cannot be read"
        self._answer(call, f"error: {why}")
        self.emit(TOOL_REFUSED, turn=turn, id=call.id, name=call.name, reason=why)

    def _tool_raised(
        self,
        exc: Exception,
        call: Call,
        rest: tuple[Call, ...],
        skipped: tuple[Call, ...],
        turn: int,
    ) -> RunResult | None:
        """Record a tool call that raised, or was abandoned; a result when that ends the run.

        A tool's own exception is its answer and the batch goes on; an abandoned
        or interrupted call ends the run, and the calls after it (``rest``) do not run.
        """
        if isinstance(exc, Deadline):
            self._abandon(call, "still running at the run's deadline")
            self._answer_not_run(rest, skipped, turn, "the run's deadline passed")
            return self.budget_stop(StopReason.TIMEOUT)
        if isinstance(exc, Interrupted):
            self._abandon(call, "interrupted while it ran")
            self._answer_not_run(rest, skipped, turn, "the run was cancelled")
            return self.finish(StopReason.CANCELLED, f"cancelled on turn {turn}")
        error = describe(exc)
        self._answer(call, f"error: {error}")
        self.tool_returned(call, error)
        return None

    def _abandon(self, call: Call, why: str) -> None:
        """A call that started and was left running: it counts, and its outcome is unknown."""
        self._answer(call, f"abandoned: {why}; it started, and its outcome is unknown")
        self.tool_abandoned(call, why)

    def _answer_not_run(
        self, rest: tuple[Call, ...], skipped: tuple[Call, ...], turn: int, why: str
    ) -> None:
        """The calls after an abandoned one: admitted (``rest``) or past the cap, none runs."""
        self._release(self._runnable(rest))
        calls = (*rest, *skipped)
        for call, answer in zip(calls, self._refuse(calls, turn, why), strict=True):
            self._answer(call, answer)

    def _tool_names(self) -> str:
        names = ", ".join(self.tools)
        return f"; the tools are {names}" if names else "; no tools are offered"

    def _answer(self, call: Call, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})

    def cancelled(self) -> RunResult:
        """The result of a run interrupted between calls: its state is whole, so it ends there."""
        if self.events and self.events[-1]["type"] == STOPPED:  # interrupted as it was told
            self.events.pop()
            self.ended = None
        return self.finish(StopReason.CANCELLED, f"cancelled on turn {self.turns}")

    def _ending(self, stop: str) -> None:
        """Answer the last response's calls that have no answer yet (an interrupt between calls).

        Every call id in the conversation must have its tool message, or the
        conversation cannot be sent to a model again.
        """
        why = f"the run stopped ({stop})"
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

    def _transcript(self) -> list[Message]:
        return self.messages


class ChildRun(ChildMeter, Run):
    """A run of the executor on a budget carved from a running parent: a child `Meter` with a
    conversation."""

    __slots__ = ()


def _model_of(model: object, budget: Budget) -> tuple[str | None, str | None]:
    """The name of a run's model (its ``model`` attribute, as `OpenAIModel` has), and when the
    run prices its responses, whose price table prices it (its ``provider``)."""
    name = getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return None, None  # a model with no name: it reports its own cost (docs/prices.md)
    provider = getattr(model, "provider", None) if needs_prices(budget) else None
    return name, provider if isinstance(provider, str) else None
