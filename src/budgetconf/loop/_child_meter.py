"""A sub-agent's run: the Meter of a budget carved from a running parent.

A `ChildMeter` charges what it consumes to every run around it as it
happens, under the tree's lock, and checks each enclosing run's own limits
beside its own: the nearest one spent stops it, in that run's words. What
a run has left of a limit (`left_of`) is counted here, for the child's
stop message and for ``carve`` (``_children``), which makes the budgets
such a run is enforced on.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from budgetconf._loop_table import StopReason
from budgetconf._record import MASK
from budgetconf._values import show_value
from budgetconf.events import BUDGET_EXHAUSTED, CHILD_END, CHILD_START
from budgetconf.loop._counting import add_usage
from budgetconf.loop._meter import Meter

if TYPE_CHECKING:
    from budgetconf._usage import Usage
    from budgetconf.loop._response import Call
    from budgetconf.loop._result import RunResult


def task_now() -> object:
    """The asyncio task running now, or None: in a sync program, asyncio is never loaded.

    A run's handle keeps the task the run is driven in; a child cancelled in that task
    cancels its parent too.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        return None


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
        self.chain = chain = chain_of(parent)
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

    def _count(self, usage: Usage, cost: float, source: str) -> None:
        if source != "none":
            for r in self.line:
                r.cost_sources.add(source)
        assert self.lock is not None, "a tree with a child shares a lock"
        with self.lock:
            add_usage(self, usage, cost)
            for r in self.chain:
                add_usage(r, usage, cost)

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

    def _tool_counted(self, call: Call) -> None:
        Meter._tool_counted(self, call)
        assert self.lock is not None, "a tree with a child shares a lock"
        with self.lock:  # each enclosing run's own count of the tool
            for r in self.chain:
                r.by_tool[call.name] = r.by_tool.get(call.name, 0) + 1

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
            was = left_of(by, budget, self.used_at_start[at], self.started)
            assert was is not None  # the run is blamed for its own limit
            # in the limit's own units: "$0.9" of a cost, as the ledger's stop says its spend
            left = show_value(round(was, 3)) if budget == "timeout_seconds" else limit.amount(was)
        head = f"stopped: hit {limit.field.rpartition('.')[2]} ({limit.shown()})"
        tail = f" of {whose}, which had {left} left when this run started"
        if message.startswith(head):
            return head + tail + message[len(head) :]
        return f"{message} ({tail.strip()})"  # pragma: no cover - a stop message of another shape

    def _ended(self, result: RunResult) -> None:
        """Tell the parent how this child ended, unless the parent has ended first."""
        parent = self.parent
        handle = parent.handle  # its RunHandle (``_children``): a parent is always entered
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


def left_of(run: Meter, name: str, used: tuple[int, float, int], now: float) -> int | float | None:
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


def chain_of(run: Meter) -> tuple[Meter, ...]:
    """``run`` and the runs enclosing it, nearest first."""
    return (run, *run.chain) if isinstance(run, ChildMeter) else (run,)
