"""A bridged run: a framework's hooks driving a `Meter`, as the executor's loop drives its own.

A bridge makes one `Bridged` per run and calls it where its framework lets it:

- `call` before each model call: None lets the call go, a result ends the run
  there (the bridge stops the framework, its way);
- `notice` for the last-turn notice that call may carry;
- `answered` with each response's usage, text and calls: the `Plan` of them;
- `tool` (or `atool`) around each tool call the framework makes, through the
  wrapper the bridge put in the tool's place: it runs the tool when the plan
  says so, else returns the plan's answer (not executed, rejected, skipped)
  without running it; the tool sees the bridged run as ``current_run()``
  (`tool_started` and `tool_ended`, where the framework's hooks come before
  and after the call);
- `result`, `failed`, `stopped` when the framework's run ends (`cancelled` when the
  caller closed its stream first).

So every budget means in a bridge what it means in the executor, decided by
the same rules, with the same events, stops and messages.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import NAMELESS, AgentModel, BridgeResult
from budgetconf.integrations._stream import Closed
from budgetconf.loop import Call, Meter, Plan, RunResult, StopReason, Usage, meter_for, running

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Container, Sequence

    from budgetconf.events import Sink
    from budgetconf.integrations._frameworks import Framework
    from budgetconf.loop import Budget

#: the answer of a call the framework makes that no response the bridge saw asked for
UNSEEN = "not executed: no model response this run has seen asked for this call"


#: the agents in a bridged run now (by id), of every framework
_claimed: set[int] = set()
_claims = threading.Lock()


@contextmanager
def claimed(agent: object, name: object, why: str) -> Iterator[None]:
    """While the block runs, ``agent`` (``name``, as its framework names it) is in this bridged
    run: a second run of it is refused (a `UsageError` saying ``why``), since the first lends
    it what the budget needs for the whole run."""
    with _claims:
        if id(agent) in _claimed:
            raise UsageError(f"the agent {name!r} is in a bridged run already: {why}")
        _claimed.add(id(agent))
    try:
        yield
    finally:
        with _claims:
            _claimed.discard(id(agent))


#: why a bridge that lends an agent its model for a run refuses a second run of it
LENT = (
    "run() lends it the budget's {} for the whole run, so one agent runs one at a time (make"
    " another Agent for a run that overlaps)"
)


def instrumented(framework: Framework) -> bool:
    """Whether an instrumentation that traces ``framework``'s model and tool calls is active
    (docs/telemetry.md): one not imported is not instrumenting, and nothing is imported here."""
    for name in framework.instrumented_by:
        module, _, instrumentor = name.partition(":")
        found = sys.modules.get(module)
        if found is not None and getattr(found, instrumentor)().is_instrumented_by_opentelemetry:
            return True
    return False


class Bridged:
    """One bridged run of ``framework`` within ``budget`` (see above).

    ``tools`` names the tools the bridge wraps (the calls it can run);
    ``on_event`` and ``name`` are the run's, as `LoopExecutor`'s; ``model`` is
    the agent's, whose price prices each response that reports no cost. ``traced``
    says the agent traces its own model and tool calls (pydantic-ai's instrumentation);
    an active instrumentation of the framework (its ``instrumented_by``) says so too.
    """

    __slots__ = ("first_turn", "framework", "lock", "meter", "plan", "started", "stop")

    def __init__(
        self,
        framework: Framework,
        budget: Budget,
        *,
        tools: Container[str] = (),
        on_event: Sink | None = None,
        name: str | None = None,
        model: AgentModel = NAMELESS,
        traced: bool = False,
    ) -> None:
        self.framework = framework
        self.meter: Meter = meter_for(
            budget,
            tools=tools,
            on_event=on_event,
            name=name,
            framework=framework.name,
            model=model.name,
            provider=model.provider_for(budget),
            traced=traced or instrumented(framework),
        )
        self.first_turn = self.meter.turns  # a resumed conversation's turns come before
        # a framework may run one response's calls on threads at once: their plan and counts
        # are kept under this lock (a tree with children has the Meter's own lock too)
        self.lock = threading.Lock()
        self.plan: Plan | None = None
        self.started = 0  # the calls of the plan the framework has started
        self.stop: RunResult | None = None  # the run's end, once the Meter has decided it

    # -- the model calls -------------------------------------------------------------------

    def call(self) -> RunResult | None:
        """Before a model call: None when it may go, else the run's end (the framework's run
        must end here, without the call)."""
        self._batch_ended()
        stop = self.meter.next_call()
        if stop is not None:
            self.stop = stop
        return stop

    def notice(self, has_tools: bool = True) -> str | None:
        """The last-turn notice the call carries, if any (the driver adds it to the input)."""
        notice = self.meter.notice(has_tools)
        return None if notice is None else notice[1]

    def answered(
        self,
        usage: Usage,
        content: str | None,
        calls: Sequence[Call] = (),
        finish_reason: str | None = None,
    ) -> Plan:
        """After a model call: the `Plan` of its response's calls."""
        finish = finish_reason or ("tool_calls" if calls else "stop")
        plan = self.meter.response(usage, content, tuple(calls), finish)
        self.plan, self.started = plan, 0
        if plan.stop is not None:
            self.stop = plan.stop
        return plan

    def unreadable(self, exc: BaseException) -> RunResult:
        """A response's usage no response can report (`Unreadable`): the run failed, as the
        executor's fails on a response it cannot read."""
        return self._end(self.meter.fail(f"malformed model response: {exc}"))

    def call_failed(self, exc: BaseException) -> RunResult:
        """The model call raised ``exc`` (after the framework's own retries): the run failed."""
        return self._end(self.meter.raised(exc))

    # -- the tool calls --------------------------------------------------------------------

    def tool(
        self,
        call_id: str | None,
        name: str,
        invoke: Callable[[], Any],
        seen: Callable[[Any], object] | None = None,
    ) -> Any:
        """Run ``invoke`` (the tool the framework called) if the plan runs the call, else its
        answer; what the tool returns or raises is the framework's. ``seen`` gives, of what
        ``invoke`` returned, what the tool itself returned (without what the framework
        added), which `loop.max_repeats` compares."""
        call = self.tool_started(call_id, name)
        if isinstance(call, str):
            return call
        try:
            with running(self.meter):
                value = invoke()
        except BaseException as exc:
            self.tool_ended(call, exc)
            raise
        self.tool_ended(call, None, value if seen is None else seen(value))
        return value

    async def atool(
        self, call_id: str | None, name: str, invoke: Callable[[], Awaitable[Any]]
    ) -> Any:
        """`tool`, awaiting an async tool."""
        call = self.tool_started(call_id, name)
        if isinstance(call, str):
            return call
        try:
            with running(self.meter):
                value = await invoke()
        except BaseException as exc:
            self.tool_ended(call, exc)
            raise
        self.tool_ended(call, None, value)
        return value

    def tool_ended(self, call: Call, error: BaseException | None, value: object = None) -> None:
        """The call `tool_started` started returned ``value``, or raised ``error``."""
        content = getattr(value, "content", None)  # a message, as LangChain's tool node's
        with self.lock:
            self.meter.tool_returned(call, error, content if isinstance(content, str) else value)

    def tool_started(self, call_id: str | None, name: str) -> Call | str:
        """The call to run, started; or the answer to give the framework in its place: what
        `tool` does before the tool runs, for a framework whose hooks come before and after
        a tool call rather than around it (`tool_ended` after)."""
        with self.lock:
            plan = self.plan
            decided = None if plan is None else plan.decide(call_id, name)
            if decided is None:
                return UNSEEN
            call, answer = decided
            if answer is not None:
                return answer
            self.started += 1
            self.meter.tool_started(call)
        return call

    def _batch_ended(self) -> None:
        """The calls of the last plan the framework did not start will not run."""
        plan = self.plan
        if plan is not None:
            self.meter.batch_ended(plan, self.started)
            self.plan = None

    # -- the end ---------------------------------------------------------------------------

    def result(self, native: object, output: str | None = None) -> BridgeResult:
        """The framework ended its run (``native``, its answer ``output``): completed, or the
        end the Meter decided on the way."""
        self._batch_ended()
        end = self.stop or self.meter.ended or self.meter.completed(output)
        return self._returned_with(end, native, output)

    def failed(self, exc: BaseException) -> BridgeResult:
        """The framework's run raised ``exc``: the end the Meter decided, else failed.

        An exception raised before any model call began is the caller's own (the framework
        refusing how it was called): it is raised again, as it came, once the run's events
        have ended with it (a sink hears the run close, a parent gets its remainder back).
        A stream its caller closed (`Closed`) ends the run cancelled.
        """
        if isinstance(exc, Closed):
            return self.cancelled(exc)
        end = self.stop or self.meter.ended
        if end is None:
            end = self._end(self.meter.raised(exc))
            if self.meter.turns == self.first_turn:
                self.meter.release()
                raise exc
        return self._returned_with(self._end(end), exc)

    def cancelled(self, native: object = None) -> BridgeResult:
        """The caller ended the run (closed its stream) before its end: cancelled, unless the
        Meter had ended it already."""
        meter = self.meter
        end = self.stop or meter.ended
        if end is None:
            end = meter.finish(StopReason.CANCELLED, f"cancelled on turn {meter.turns}")
        return self._returned_with(self._end(end), native)

    def stopped(self, reason: StopReason, native: object) -> BridgeResult:
        """A budget the bridge enforces by other means (a deadline) stopped the run."""
        end = self.stop or self.meter.ended or self.meter.budget_stop(reason)
        return self._returned_with(self._end(end), native)

    def _returned_with(
        self, end: RunResult, native: object, output: str | None = None
    ) -> BridgeResult:
        """The result the bridge returns to its caller, in whose context each sink now gives
        back what it made current when the run opened (the run may have ended in a hook)."""
        self.meter.release()
        return BridgeResult.of(end, self.framework, native, output)

    def _end(self, end: RunResult) -> RunResult:
        self._batch_ended()
        self.stop = end
        return end
