"""Sub-agents: a run's handle, and the budget carved from what it has left.

`current_run()` is the handle of the innermost run in the calling context (a
context variable, which the drivers set for the length of a run and which
worker threads inherit; a bridge sets it around each tool it wraps).
``handle.carve(**caps)`` gives a `ChildBudget`: for each shared budget the
smaller of the cap asked and what the run (and every run enclosing it) has
left. `meter_for` makes the Meter of a run on such a budget, the executor's
or a bridge's: a `ChildMeter` (``_child_meter``), which charges what it
consumes to its parent as it happens and checks every enclosing run's own
limits as well as its own. A run whose budget was not carved draws from
nothing: it is not a child.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from budgetconf._loop_table import BudgetName
from budgetconf._spelling import did_you_mean
from budgetconf._values import show_value
from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.loop._budget import Budget
from budgetconf.loop._child_meter import ChildMeter, chain_of, left_of, task_now
from budgetconf.loop._limit import Limit
from budgetconf.loop._meter import Meter

if TYPE_CHECKING:
    from collections.abc import Iterator

    from budgetconf.loop._result import Totals


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
        if "max_repeats" in budget.limits:  # a child that goes nowhere is stopped the same way
            limits["max_repeats"] = budget.limits["max_repeats"]
        ordered = {name: limits[name] for name in budget.spec.budgets if name in limits}
        tools = {  # each tool's own limit: what this run has left of it
            name: replace(limit, value=max(0, int(limit.value) - run.by_tool.get(name, 0)))
            for name, limit in budget.tools.items()
        }
        _share_lock(run)
        return ChildBudget(
            budget.preset,
            ordered,
            budget.last_turn,
            budget.over_cap,
            budget.spec,
            budget.ledger,  # a child draws on the shared ledger itself, and writes its own record
            budget.prices,
            budget.otel,
            tools,
            budget.warnings,
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
    root = chain_of(run)[-1]
    if root.lock is None:
        root.lock = threading.Lock()


def _left(run: Meter, name: str, now: float) -> int | float | None:
    """What ``run`` has left of its own limit ``name`` at ``now``; None when it has none."""
    return left_of(run, name, (run.tokens, run.cost, run.executed + run.pending), now)


def _remainder(run: Meter, name: str, now: float) -> tuple[int | float, Meter] | None:
    """The least that ``run`` or a run around it has left of ``name``, and whose that is."""
    best: tuple[int | float, Meter] | None = None
    for r in chain_of(run):
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
