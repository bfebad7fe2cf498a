"""The counts of a `Meter`: what its responses used, and the tool calls it admits and runs.

Once a child is carved from a run its tree shares a lock (``lock``), and
every count here is changed under it: a child may count on another thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from budgetconf._usage import Usage, picodollars
from budgetconf.loop._result import Totals

if TYPE_CHECKING:
    import threading


class Counting:
    """The half of a `Meter` that keeps its counts (see above)."""

    # the counts; a `Meter` sets them as it starts, from the conversation it continues
    __slots__ = (
        "cached_input_tokens",
        "cost",
        "cost_sources",
        "executed",
        "input_tokens",
        "output_tokens",
        "pending",
        "tokens",
        "turns",
    )

    turns: int
    executed: int
    pending: int  # tool calls admitted and not finished (the one running now among them)
    tokens: int
    cost: float
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    cost_sources: set[str]  # how its responses' costs were known: reported, priced

    if TYPE_CHECKING:  # the Meter's
        lock: threading.Lock | None
        limits: dict[str, int | float]

    def _count(self, usage: Usage, cost: float, source: str) -> None:
        """Add a response's usage to this run's counts, at ``cost`` known as ``source`` (its
        own, or its price's)."""
        if source != "none":
            self.cost_sources.add(source)
        lock = self.lock
        if lock is None:
            add_usage(self, usage, cost)
            return
        with lock:  # a child of this run may be counting on another thread
            add_usage(self, usage, cost)

    def _admit(self, need: int) -> str | None:
        """Hold ``need`` tool calls within ``max_tool_calls``, less what is admitted already;
        when there is no room, why (the answer of the calls refused)."""
        if not need:
            return None
        cap = self.limits.get("max_tool_calls")
        lock = self.lock
        if lock is None:
            if cap is not None and self.executed + self.pending + need > cap:
                return _NO_ROOM
            self.pending += need
            return None
        with lock:
            if cap is not None and self.executed + self.pending + need > cap:
                return _NO_ROOM
            self.pending += need
        return None

    def _finished(self) -> None:
        """One admitted call has ended: it counts as executed."""
        lock = self.lock
        if lock is None:
            self.pending -= 1
            self.executed += 1
            return
        with lock:
            self.pending -= 1
            self.executed += 1

    def _release(self, count: int) -> None:
        """``count`` admitted calls will not run."""
        lock = self.lock
        if lock is None:
            self.pending -= count
            return
        with lock:
            self.pending -= count

    @property
    def usage(self) -> Usage:
        """What the conversation has used so far, its responses' usage summed."""
        sources = self.cost_sources
        source = "reported" if "reported" in sources else "priced" if sources else "none"
        return Usage(
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
            self.tokens,
            self.cost,
            source,
        )

    @property
    def totals(self) -> Totals:
        """What the conversation has consumed, its sub-agents' consumption included."""
        return Totals(
            self.turns,
            self.executed,
            self.tokens,
            self.cost,
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
        )


#: the answer of calls past the run's own tool-call budget
_NO_ROOM: Final = "the run's tool-call budget would be exceeded"


def add_usage(run: Counting, usage: Usage, cost: float) -> None:
    """Add ``usage`` to ``run``'s counts (its caller holds the tree's lock, if there is one)."""
    run.tokens += usage.total_tokens
    run.input_tokens += usage.input_tokens
    run.cached_input_tokens += usage.cached_input_tokens
    run.output_tokens += usage.output_tokens
    if cost:  # summed to the picodollar: three at 0.1 reach a limit of 0.3 exactly
        run.cost = picodollars(run.cost + cost)
