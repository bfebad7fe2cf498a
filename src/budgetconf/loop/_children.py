"""Sub-agents: a run's handle, the budget carved from what it has left, and the child's run.

`current_run()` is the handle of the innermost run in the calling context (a
context variable, which the drivers set for the length of a run and which
worker threads inherit). ``handle.carve(**caps)`` gives a `ChildBudget`: for
each shared budget the smaller of the cap asked and what the run (and every
run enclosing it) has left. A `LoopExecutor` given such a budget runs a
`ChildRun`, which charges what it consumes to its parent as it happens and
checks every enclosing run's own limits as well as its own. A run whose
budget was not carved draws from nothing: it is not a child.
"""

from __future__ import annotations

import contextvars
import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from budgetconf._loop_table import BudgetName, StopReason
from budgetconf._schema import MASK, show_value
from budgetconf._spelling import did_you_mean
from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.loop._budget import Budget, Limit
from budgetconf.loop._response import Call, Response
from budgetconf.loop._run import Event, Message, Run, RunResult, Totals

__all__ = ["ChildBudget", "ChildRun", "RunHandle", "current_run", "enter", "leave", "run_class"]

#: the budgets a child shares with its parent: its limit is at most what the parent has left
SHARED: Final = ("max_tokens", "max_cost_usd", "max_tool_calls", "timeout_seconds")
#: the budgets that are the child's own: asked, else the parent's resolution's
OWN: Final = ("max_steps", "max_tool_calls_per_turn")

_CURRENT: Final[contextvars.ContextVar[RunHandle | None]] = contextvars.ContextVar(
    "budgetconf_current_run", default=None
)


def current_run() -> RunHandle | None:
    """The handle of the innermost `LoopExecutor` run in the calling context; None outside any.

    A tool the executor calls sees its run, in `run()` and `arun()` and on the
    worker threads the executor runs sync calls on under a deadline.
    """
    return _CURRENT.get()


def _task() -> object:
    """The asyncio task running now, or None: in a sync program, asyncio is never loaded."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        return None


class RunHandle:
    """A run in progress, as a tool it calls sees it: what it has used, and `carve`."""

    __module__ = "budgetconf.loop"
    __slots__ = ("_ended", "_run", "_task")

    def __init__(self, run: Run) -> None:
        self._run = run
        self._ended = False
        self._task = _task()  # the asyncio task the run is driven in, if any

    def __repr__(self) -> str:
        state = "ended" if self._ended else "running"
        return f"<RunHandle {self._run.budget.preset} {state}, turn {self._run.turns}>"

    @property
    def totals(self) -> Totals:
        """What the run has consumed so far, its children's consumption included."""
        run = self._run
        return Totals(run.turns, run.executed, run.tokens, run.cost)

    @property
    def ended(self) -> bool:
        return self._ended

    def carve(self, **caps: int | float) -> Budget:
        """A budget for a sub-agent, out of what this run has left.

        ``max_tokens``, ``max_cost_usd``, ``max_tool_calls`` and
        ``timeout_seconds`` are at most what this run, and every run around
        it, has left (a cap above that is lowered); ``max_steps`` and
        ``max_tool_calls_per_turn`` are the child's own, asked or else this
        run's. A cap asked has the source ``carve`` and the locator
        ``carve(NAME=V)``, and is held to the policy of this run's
        resolution as `Limit.asked` says: a locked field keeps its value, a
        cap above a ceiling is lowered to it (a `UsageError` where the rule
        rejects).
        """
        if self._ended:
            raise UsageError("carve: the run has ended; carve from current_run() while it runs")
        run = self._run
        budget = run.budget
        asked = _asked(caps, budget)
        limits: dict[str, Limit] = {}
        for name in OWN:
            if name in asked:
                limits[name] = _carved(budget, name, asked[name])
            elif name in budget.limits:
                limits[name] = budget.limits[name]
        inherited = set()
        now = time.monotonic()
        for name in SHARED:
            left = _remainder(run, name, now)
            mine = _carved(budget, name, asked[name]) if name in asked else None
            if mine is not None and (left is None or mine.value <= left[0]):
                limits[name] = mine
            elif left is not None:
                value, owner = left  # the owner's evidence, with what is left of it
                limits[name] = replace(owner.budget.limits[name], value=value)
                inherited.add(name)
        ordered = {name: limits[name] for name in budget.spec.budgets if name in limits}
        return ChildBudget(
            budget.preset,
            ordered,
            budget.last_turn,
            budget.over_cap,
            budget.spec,
            budget.ledger,  # a child draws on the shared ledger itself, and writes its own record
            parent=self,
            inherited=frozenset(inherited),
        )


@dataclass(frozen=True, slots=True, repr=False, kw_only=True)
class ChildBudget(Budget):
    """A `Budget` carved from a running parent: ``inherited`` names the limits that are what
    an enclosing run had left (enforced there, as it is spent), not caps of the child's own."""

    parent: RunHandle
    inherited: frozenset[str]

    def __repr__(self) -> str:
        limits = {str(name): limit.public_value for name, limit in self.limits.items()}
        return f"ChildBudget(preset={self.preset!r}, limits={limits!r}, parent={self.parent!r})"


def _asked(caps: Mapping[str, object], budget: Budget) -> dict[str, int | float]:
    """The caps, checked: a known budget the preset enforces, a number, not negative."""
    names = [*OWN, *SHARED]
    asked: dict[str, int | float] = {}
    for name, value in caps.items():
        if name not in names:
            near = did_you_mean(name, names)
            hint = f"; did you mean {near}?" if near else f"; the budgets are {', '.join(names)}"
            raise UsageError(f"carve: no budget named {name!r}{hint}")
        if name not in budget.spec.budgets:
            raise UsageError(
                f"carve: the preset {budget.preset!r} has no {name} budget:"
                " its [loop] table names no field for it"
            )
        counted = BudgetName(name).counted
        if type(value) is bool or not isinstance(value, int if counted else int | float):
            wanted = "an integer" if counted else "a number"
            raise UsageTypeError(f"carve: {name}: expected {wanted}, got {type(value).__name__}")
        if not math.isfinite(value):
            raise UsageError(f"carve: {name}: expected a finite number, got {value!r}")
        least = 1 if name in OWN else 0
        if value < least:
            raise UsageError(f"carve: {name}: expected at least {least}, got {value!r}")
        asked[name] = value
    return asked


def _carved(budget: Budget, name: str, value: int | float) -> Limit:
    """A cap the child was given: its own, set by ``carve`` and raised where it is set, unless
    the policy's rule for the parent's field decides it (`Limit.asked`)."""
    locator = f"carve({name}={show_value(value)})"
    parent = budget.limits.get(name)
    if parent is None:  # unset in the parent: no rule of the policy bounds it
        return Limit(name, budget.spec.budgets[name], value, "carve", locator, ())
    return parent.asked(value, "carve", locator)


def _chain(run: Run) -> tuple[Run, ...]:
    """``run`` and the runs enclosing it, nearest first."""
    return (run, *run.chain) if isinstance(run, ChildRun) else (run,)


def _own_deadline(run: Run) -> float | None:
    return run.own_deadline if isinstance(run, ChildRun) else run.deadline


def _pending(run: Run) -> int:
    """The calls ``run`` admitted that have not finished: the one running now among them."""
    return _runnable(run, run.batch[run.at :]) if run.batch else 0


def _runnable(run: Run, calls: tuple[Call, ...]) -> int:
    """`Run._runnable` without a generator, which costs a child turn more than the count."""
    tools = run.tools
    count = 0
    for call in calls:
        if call.name in tools and call.arguments is not None:
            count += 1
    return count


def _left(run: Run, name: str, now: float) -> int | float | None:
    """What ``run`` has left of its own limit ``name`` at ``now``; None when it has none."""
    return _left_of(run, name, (run.tokens, run.cost, run.executed + _pending(run)), now)


def _left_of(run: Run, name: str, used: tuple[int, float, int], now: float) -> int | float | None:
    """What ``run``'s own limit ``name`` leaves after ``used`` (tokens, cost, calls) at ``now``."""
    limit = run.limits.get(name)
    if limit is None:
        return None
    tokens, cost, calls = used
    if name == "max_tokens":
        return max(0, int(limit) - tokens)
    if name == "max_cost_usd":
        return max(0.0, round(limit - cost, 12))
    if name == "max_tool_calls":
        return max(0, int(limit) - calls)
    deadline = _own_deadline(run)
    assert deadline is not None
    return max(0.0, round(deadline - now, 6))


def _bounded(runs: tuple[Run, ...], name: str) -> tuple[tuple[Run, int | float], ...]:
    """Each of ``runs`` that has its own limit ``name``, with that limit."""
    return tuple((r, r.limits[name]) for r in runs if name in r.limits)


def _remainder(run: Run, name: str, now: float) -> tuple[int | float, Run] | None:
    """The least that ``run`` or a run around it has left of ``name``, and whose that is."""
    best: tuple[int | float, Run] | None = None
    for r in _chain(run):
        left = _left(r, name, now)
        if left is not None and (best is None or left < best[0]):
            best = (left, r)
    return best


class ChildRun(Run):
    """A run whose budget was carved from a running parent.

    What it consumes (tokens, cost, tool calls executed) is added to its
    parent's counters as it happens, and so on up. Beside its own limits it
    checks, at every check, each enclosing run's own limits against that
    run's counters: the nearest one spent stops it, and its stop names that
    run's limit with ``"scope": "parent"``.
    """

    # slots, not the instance dict: more keys than a dict shares would slow every attribute
    # of the run's, in the base class's code too
    __slots__ = (
        "blame",
        "calls_by",
        "chain",
        "cost_by",
        "deadline_by",
        "handle",
        "own_deadline",
        "parent",
        "reported",
        "started",
        "tokens_by",
        "used_at_start",
    )

    def __init__(
        self,
        budget: ChildBudget,
        model: Callable[..., Any],
        tools: Mapping[str, Callable[..., Any]],
        specs: list[dict[str, Any]],
        messages: list[Message],
        totals: Totals,
        steps: int,
        on_event: Callable[[Event], None] | None,
    ) -> None:
        handle = budget.parent
        if handle.ended:
            raise UsageError("the run this budget was carved from has ended")
        parent = handle._run
        self.handle = handle
        self.parent = parent
        self.chain: tuple[Run, ...] = _chain(parent)
        self.blame: tuple[StopReason, Run] | None = None
        self.reported = False
        now = time.monotonic()
        self.started = now
        self.used_at_start = tuple((r.tokens, r.cost, r.executed + _pending(r)) for r in self.chain)
        shown = {name: limit.public_value for name, limit in budget.limits.items()}
        super().__init__(budget, model, tools, specs, messages, totals, steps, on_event)
        parent.emit("child_start", turn=parent.turns, child_run_id=self.run_id, limits=shown)
        # enforced here: the child's own caps; what an enclosing run has left is checked there
        self.limits = {n: v for n, v in self.limits.items() if n not in budget.inherited}
        # the enclosing runs' own limits, each with its run: what every check goes through
        self.tokens_by = _bounded(self.chain, "max_tokens")
        self.cost_by = _bounded(self.chain, "max_cost_usd")
        # less the calls each has admitted and not finished: that stays so while the child runs,
        # since each is waiting on one of them
        calls_by = _bounded(self.chain, "max_tool_calls")
        self.calls_by = tuple((r, cap - _pending(r)) for r, cap in calls_by)
        own = self.limits.get("timeout_seconds")
        self.own_deadline = None if own is None else now + own
        self.deadline, self.deadline_by = self.own_deadline, None
        outer = parent.deadline
        if outer is not None and (self.own_deadline is None or outer < self.own_deadline):
            self.deadline = outer
            self.deadline_by = next(r for r in self.chain if _own_deadline(r) == outer)

    # the charges: what the child consumes, every enclosing run has consumed too. Each turn
    # goes through these, so they call the base class by name: super() costs more

    def _record(self, response: Response, turn: int) -> None:
        Run._record(self, response, turn)
        if response.tokens:
            for r in self.chain:
                r.tokens += response.tokens
        if response.cost:
            for r in self.chain:
                r.cost = round(r.cost + response.cost, 12)

    def _returned(self, call: Call, value: object, turn: int) -> None:
        Run._returned(self, call, value, turn)
        for r in self.chain:
            r.executed += 1

    def _tool_raised(
        self, exc: Exception, call: Call, rest: tuple[Call, ...], turn: int
    ) -> RunResult | None:
        executed = self.executed
        stop = Run._tool_raised(self, exc, call, rest, turn)
        if self.executed != executed:  # it ran (and raised), or was abandoned: it counts
            for r in self.chain:
                r.executed += 1
        return stop

    # the checks: the run's own first, then each enclosing run's, nearest first

    def _spent(self) -> StopReason | None:
        own = Run._spent(self)
        if own is not None:
            return own
        for r in self.chain:
            if r.stop_next is not None:
                return self._blamed(r.stop_next, r)
        for r, cap in self.tokens_by:
            if r.tokens >= cap:
                return self._blamed(StopReason.MAX_TOKENS, r)
        for r, cap in self.cost_by:
            if r.cost >= cap:
                return self._blamed(StopReason.MAX_COST, r)
        return None

    def _over(self) -> StopReason | None:
        own = Run._over(self)
        if own is not None:
            return own
        for r, cap in self.tokens_by:
            if r.tokens > cap:
                return self._blamed(StopReason.MAX_TOKENS, r)
        for r, cap in self.cost_by:
            if r.cost > cap:
                return self._blamed(StopReason.MAX_COST, r)
        return None

    def _plan(
        self, calls: tuple[Call, ...], turn: int, per_turn: Limit | None
    ) -> tuple[tuple[Call, ...], tuple[Call, ...]] | RunResult | None:
        plan = Run._plan(self, calls, turn, per_turn)
        if not self.calls_by or not isinstance(plan, tuple):
            return plan
        need = _runnable(self, plan[0])
        if not need:
            return plan
        for r, cap in self.calls_by:
            if r.executed + need > cap:
                self._refuse(calls, turn, "the enclosing run's tool-call budget would be exceeded")
                return self._budget_stop(self._blamed(StopReason.MAX_TOOL_CALLS, r))
        return plan

    def _blamed(self, reason: StopReason, run: Run) -> StopReason:
        self.blame = (reason, run)
        return reason

    def _budget_stop(self, reason: StopReason, output: str | None = None) -> RunResult:
        if reason is StopReason.CANCELLED:  # an interrupt handed up: no budget's stop
            return Run._budget_stop(self, reason, output)
        if reason is StopReason.TIMEOUT:
            by = self.deadline_by
        else:
            by = self.blame[1] if self.blame is not None and self.blame[0] is reason else None
        if by is None:
            return super()._budget_stop(reason, output)
        if by.stop_next is None:
            by.stop_next = reason  # sticky: that run stops at its next check, with this budget
        stop, message, limit = by.budget.stop(reason)
        message = self._parent_message(message, reason, by)
        limit = {**limit, "scope": "parent"}
        self.emit("budget_exhausted", turn=self.turns, stop_reason=stop, **limit)
        return self.finish(reason, message, output, limit)

    def _parent_message(self, message: str, reason: StopReason, by: Run) -> str:
        """``message`` of the enclosing run ``by``, saying whose it is and what was left."""
        budget = reason.budget
        assert budget is not None
        limit = by.budget.limits[budget]
        at = self.chain.index(by)
        whose = "the parent run" if at == 0 else f"an enclosing run ({at + 1} levels up)"
        if limit.secret:
            left: str = MASK
        else:
            was = _left_of(by, budget, self.used_at_start[at], self.started)
            assert was is not None  # the run is blamed for its own limit
            left = show_value(round(was, 3) if budget == "timeout_seconds" else was)
        head = f"stopped: hit {limit.field.rpartition('.')[2]} ({limit.shown()})"
        tail = f" of {whose}, which had {left} left when this run started"
        if message.startswith(head):
            return head + tail + message[len(head) :]
        return f"{message} ({tail.strip()})"  # pragma: no cover - a stop message of another shape

    def finish(
        self,
        reason: StopReason,
        message: str | None = None,
        output: str | None = None,
        limit: dict[str, Any] | None = None,
    ) -> RunResult:
        result = super().finish(reason, message, output, limit)
        if not self.reported and not self.handle.ended:  # a parent that ended hears no more
            self.reported = True
            parent = self.parent
            if reason is StopReason.CANCELLED and _task() is self.handle._task:
                # interrupted where the parent runs (a KeyboardInterrupt, the task cancelled,
                # not a task of the tool's own): the parent is, too
                parent.stop_next = parent.stop_next or reason
            parent.emit(
                "child_end",
                turn=parent.turns,
                child_run_id=self.run_id,
                status=result.status.value,
                stop_reason=result.stop_reason,
                turns=result.turns,
                tokens=result.tokens,
                cost_usd=result.cost_usd,
                tool_calls_executed=result.tool_calls_executed,
            )
        return result


def run_class(budget: Budget) -> type[Run]:
    """The run a budget is enforced by: a `ChildRun` for a carved one."""
    return ChildRun if isinstance(budget, ChildBudget) else Run


Entry = tuple["RunHandle", "contextvars.Token[RunHandle | None]"]


def enter(run: Run) -> Entry:
    """Make ``run`` the current run, until `leave`: `current_run()` gives its handle."""
    handle = RunHandle(run)
    return handle, _CURRENT.set(handle)


def leave(entry: Entry) -> None:
    """The run has ended: its handle carves no more, and the run around it is current again."""
    handle, token = entry
    handle._ended = True
    _CURRENT.reset(token)
