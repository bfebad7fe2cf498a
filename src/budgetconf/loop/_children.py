"""Sub-agents: a run's handle, the budget carved from what it has left, and the child's run.

`current_run()` is the handle of the innermost run in the calling context (a
context variable, which the drivers set for the length of a run and which
worker threads inherit; a bridge sets it around each tool it wraps).
``handle.carve(**caps)`` gives a `ChildBudget`: for each shared budget the
smaller of the cap asked and what the run (and every run enclosing it) has
left. A run on such a budget, the executor's or a bridge's, is a child
`Meter`, which charges what it consumes to its parent as it happens and
checks every enclosing run's own limits as well as its own. A run whose
budget was not carved draws from nothing: it is not a child.
"""

from __future__ import annotations

import contextvars
import math
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from budgetconf._loop_table import BudgetName
from budgetconf._schema import MASK
from budgetconf._spelling import did_you_mean
from budgetconf._values import show_value
from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.events import BUDGET_EXHAUSTED, CHILD_END, CHILD_START
from budgetconf.loop._budget import Budget, Limit
from budgetconf.loop._meter import Meter, add_usage
from budgetconf.loop._reasons import StopReason
from budgetconf.loop._result import RunResult, Totals

if TYPE_CHECKING:
    from collections.abc import Iterator

    from budgetconf._usage import Usage

__all__ = [
    "ChildBudget",
    "ChildMeter",
    "RunHandle",
    "current_run",
    "enter",
    "leave",
    "meter_for",
    "running",
    "task_now",
]


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


def task_now() -> object:
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
    __slots__ = ("_ended", "_meter", "task")

    def __init__(self, meter: Meter) -> None:
        self._meter = meter
        self._ended = False
        self.task = task_now()  # the asyncio task the run is driven in, if any

    def __repr__(self) -> str:
        state = "ended" if self._ended else "running"
        return f"<RunHandle {self._meter.budget.preset} {state}, turn {self._meter.turns}>"

    @property
    def totals(self) -> Totals:
        """What the run has consumed so far, its children's consumption included."""
        return self._meter.totals

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
        run = self._meter
        budget = run.budget
        asked = _asked(caps, budget)
        limits = _own_limits(budget, asked)
        shared, inherited = _shared_limits(run, asked)
        limits.update(shared)
        ordered = {name: limits[name] for name in budget.spec.budgets if name in limits}
        _share_lock(run)
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

    __module__ = "budgetconf.loop"

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


def _own_limits(budget: Budget, asked: Mapping[str, int | float]) -> dict[str, Limit]:
    """The child's own budgets (`OWN`): the cap asked, else the parent's limit."""
    limits: dict[str, Limit] = {}
    for name in OWN:
        if name in asked:
            limits[name] = _carved(budget, name, asked[name])
        elif name in budget.limits:
            limits[name] = budget.limits[name]
    return limits


def _shared_limits(
    run: Meter, asked: Mapping[str, int | float]
) -> tuple[dict[str, Limit], set[str]]:
    """The budgets shared with the runs around (`SHARED`): the cap asked, unless a run has
    less left; and the names of those that are what a run has left (``inherited``)."""
    budget = run.budget
    limits: dict[str, Limit] = {}
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
    return limits, inherited


def _share_lock(run: Meter) -> None:
    """Give ``run``'s tree its lock at its first child: from then on its counts are shared."""
    root = run.chain[-1] if isinstance(run, ChildMeter) else run
    if root.lock is None:
        root.lock = threading.Lock()


def _left(run: Meter, name: str, now: float) -> int | float | None:
    """What ``run`` has left of its own limit ``name`` at ``now``; None when it has none."""
    return _left_of(run, name, (run.tokens, run.cost, run.executed + run.pending), now)


def _left_of(run: Meter, name: str, used: tuple[int, float, int], now: float) -> int | float | None:
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


def _own_deadline(run: Meter) -> float | None:
    return run.own_deadline if isinstance(run, ChildMeter) else run.deadline


def _chain(run: Meter) -> tuple[Meter, ...]:
    """``run`` and the runs enclosing it, nearest first."""
    return (run, *run.chain) if isinstance(run, ChildMeter) else (run,)


def _remainder(run: Meter, name: str, now: float) -> tuple[int | float, Meter] | None:
    """The least that ``run`` or a run around it has left of ``name``, and whose that is."""
    best: tuple[int | float, Meter] | None = None
    for r in _chain(run):
        left = _left(r, name, now)
        if left is not None and (best is None or left < best[0]):
            best = (left, r)
    return best


Entry = tuple["RunHandle", "contextvars.Token[RunHandle | None]"]


def enter(run: Meter) -> Entry:
    """Make ``run`` the current run, until `leave`: `current_run()` gives its handle."""
    handle = run.handle
    if handle is None:
        handle = run.handle = RunHandle(run)
    return handle, _CURRENT.set(handle)


def leave(entry: Entry) -> None:
    """The run has ended: its handle carves no more, and the run around it is current again."""
    handle, token = entry
    handle._ended = True
    _CURRENT.reset(token)


@contextmanager
def running(run: Meter) -> Iterator[None]:
    """Within: ``run`` is the current run (a bridge's tool wrapper, on whatever thread the
    framework runs the tool), without ending its handle afterwards."""
    handle = run.handle
    if handle is None:
        handle = run.handle = RunHandle(run)
    token = _CURRENT.set(handle)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def meter_for(
    budget: Budget,
    *args: Any,
    root: type[Meter] = Meter,
    child: type[ChildMeter] | None = None,
    **kwargs: Any,
) -> Meter:
    """The meter of a run on ``budget``: ``root(budget, *args, **kwargs)``, or ``child`` (a
    `ChildMeter`, by default) for a budget carved from a running parent, made its child."""
    if not isinstance(budget, ChildBudget):
        return root(budget, *args, **kwargs)
    handle = budget.parent
    if handle.ended:
        raise UsageError("the run this budget was carved from has ended")
    parent = handle._meter
    made = (ChildMeter if child is None else child)(budget, *args, parent=parent.info, **kwargs)
    made._adopt(parent, budget.inherited)
    return made


class ChildMeter(Meter):
    """A run whose budget was carved from a running parent.

    What it consumes (tokens, cost, tool calls) is added to its parent's
    counts as it happens, and so on up, under the tree's lock. Beside its own
    limits it checks each enclosing run's own limits against that run's
    counts: the nearest one spent stops it, naming that run's limit with
    ``"scope": "parent"``. The tool calls it admits come out of every
    enclosing run's remainder at once.
    """

    __module__ = "budgetconf.loop"
    __slots__ = ()  # a child's attributes are the Meter's last slots
    # the checks and the charges call the base class by name: super() costs more each turn

    parent: Meter
    chain: tuple[Meter, ...]
    line: tuple[Meter, ...]  # the run and the chain: what each charge goes to
    blame: tuple[StopReason, Meter] | None
    started: float
    used_at_start: tuple[tuple[int, float, int], ...]
    tokens_by: tuple[tuple[Meter, int | float], ...]
    cost_by: tuple[tuple[Meter, int | float], ...]
    own_deadline: float | None
    deadline_by: Meter | None

    def _adopt(self, parent: Meter, inherited: frozenset[str]) -> None:
        """Become a child of ``parent`` (``inherited`` names the limits that are what a run
        around it had left: enforced there, not here)."""
        self.parent = parent
        self.chain = chain = _chain(parent)
        self.line = (self, *chain)
        self.lock = parent.lock
        self.blame = None
        self.started = now = time.monotonic()
        self.used_at_start = tuple((r.tokens, r.cost, r.executed + r.pending) for r in chain)
        shown = {n: limit.public_value for n, limit in self.budget.limits.items()}
        parent.emit(CHILD_START, turn=parent.turns, child_run_id=self.run_id, limits=shown)
        self.limits = {n: v for n, v in self.limits.items() if n not in inherited}
        # the enclosing runs' own limits, each with its run: what every check goes through
        self.tokens_by = _bounded(chain, "max_tokens")
        self.cost_by = _bounded(chain, "max_cost_usd")
        own = self.limits.get("timeout_seconds")
        self.own_deadline = None if own is None else now + own
        self.deadline, self.deadline_by = self.own_deadline, None
        outer = parent.deadline
        if outer is not None and (self.own_deadline is None or outer < self.own_deadline):
            self.deadline = outer
            self.deadline_by = next(r for r in chain if _own_deadline(r) == outer)

    # -- the charges: what the child consumes, every enclosing run has consumed too

    def _count(self, usage: Usage) -> None:
        if usage.cost_source != "none":
            for r in self.line:
                r.cost_sources.add(usage.cost_source)
        assert self.lock is not None, "a tree with a child shares a lock"
        with self.lock:
            add_usage(self, usage)
            for r in self.chain:
                add_usage(r, usage)

    def _admit(self, need: int) -> str | None:
        if not need:
            return None
        assert self.lock is not None, "a tree with a child shares a lock"
        line = self.line
        with self.lock:
            for r in line:
                cap = r.limits.get("max_tool_calls")
                if cap is not None and r.executed + r.pending + need > cap:
                    if r is self:
                        return "the run's tool-call budget would be exceeded"
                    self.blame = (StopReason.MAX_TOOL_CALLS, r)
                    return "the enclosing run's tool-call budget would be exceeded"
            for r in line:
                r.pending += need
        return None

    def _finished(self) -> None:
        assert self.lock is not None, "a tree with a child shares a lock"
        with self.lock:
            for r in self.line:
                r.pending -= 1
                r.executed += 1

    def _release(self, count: int) -> None:
        assert self.lock is not None, "a tree with a child shares a lock"
        with self.lock:
            for r in self.line:
                r.pending -= count

    # -- the checks: the run's own first, then each enclosing run's, nearest first

    def _spent(self) -> StopReason | None:
        own = Meter._spent(self)
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
        own = Meter._over(self)
        if own is not None:
            return own
        for r, cap in self.tokens_by:
            if r.tokens > cap:
                return self._blamed(StopReason.MAX_TOKENS, r)
        for r, cap in self.cost_by:
            if r.cost > cap:
                return self._blamed(StopReason.MAX_COST, r)
        return None

    def _blamed(self, reason: StopReason, run: Meter) -> StopReason:
        self.blame = (reason, run)
        return reason

    def budget_stop(self, reason: StopReason, output: str | None = None) -> RunResult:
        if reason is StopReason.CANCELLED:  # an interrupt handed up: no budget's stop
            return Meter.budget_stop(self, reason, output)
        if reason is StopReason.TIMEOUT:
            by = self.deadline_by
        else:
            blame = self.blame
            by = blame[1] if blame is not None and blame[0] is reason else None
        if by is None:
            return Meter.budget_stop(self, reason, output)
        if by.stop_next is None:
            by.stop_next = reason  # sticky: that run stops at its next check, with this budget
        stop, message, limit = by.budget.stop(reason)
        message = self._parent_message(message, reason, by)
        limit = {**limit, "scope": "parent"}
        self.emit(BUDGET_EXHAUSTED, turn=self.turns, stop_reason=stop, **limit)
        return self.finish(reason, message, output, limit)

    def _parent_message(self, message: str, reason: StopReason, by: Meter) -> str:
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

    def _ended(self, result: RunResult) -> None:
        """Tell the parent how this child ended, unless the parent has ended first."""
        parent = self.parent
        handle: RunHandle = parent.handle
        if handle.ended:  # a parent that ended hears no more
            return
        if result.stop_kind is StopReason.CANCELLED and task_now() is handle.task:
            # interrupted where the parent runs (a KeyboardInterrupt, the task cancelled, not a
            # task of the tool's own): the parent is, too
            parent.stop_next = parent.stop_next or StopReason.CANCELLED
        parent.emit(
            CHILD_END,
            turn=parent.turns,
            child_run_id=self.run_id,
            status=result.status.value,
            stop_reason=result.stop_reason,
            turns=result.turns,
            tokens=result.tokens,
            cost_usd=result.cost_usd,
            tool_calls_executed=result.tool_calls_executed,
        )


def _bounded(runs: tuple[Meter, ...], name: str) -> tuple[tuple[Meter, int | float], ...]:
    """Each of ``runs`` that has its own limit ``name``, with that limit."""
    return tuple((r, r.limits[name]) for r in runs if name in r.limits)
