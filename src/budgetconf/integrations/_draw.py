"""A bridged run's draw on the shared ledger: the executor's `Draw`, through a stand-in run.

A bridge that sees each model call reserves before it and settles after it,
with the executor's own code (`budgetconf.loop._ledger.Draw`): the same stop
before the call, its limit and message, the same ``on_unavailable``, the same
run record. `Tally` is what `Draw` needs of a run: the budget, a run id, the
counts the bridge feeds it, and a ``finish`` that keeps the stop for the
bridge to report as its result. A bridge result carries no executor events,
so ``emit`` keeps none. This module is imported only by a run whose budget
names a ledger.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from budgetconf.integrations._bridge import BridgeResult
from budgetconf.loop._ledger import Draw

if TYPE_CHECKING:
    from budgetconf._loop_table import StopReason
    from budgetconf.integrations._frameworks import Framework
    from budgetconf.loop._budget import Budget

__all__ = ["LedgerStop", "Refused", "Tally"]


class LedgerStop:
    """How the ledger stopped a bridged run before a model call: its reason, words, limit."""

    __slots__ = ("limit", "message", "reason")

    def __init__(self, reason: StopReason, message: str, limit: dict[str, Any] | None) -> None:
        self.reason = reason
        self.message = message
        self.limit = limit

    def result(
        self, framework: Framework, budget: Budget, output: str, turns: int, native: object
    ) -> BridgeResult:
        """The bridge's result for this stop, in the executor's words."""
        reason = self.reason
        stop = budget.stop_name(reason)
        return BridgeResult(
            reason.status, stop, reason, self.message, output, turns, self.limit,
            framework.name, native,
        )  # fmt: skip


class Refused(Exception):
    """The ledger's stop, raised inside a framework's run by a hook that cannot return it."""

    def __init__(self, stop: LedgerStop) -> None:
        super().__init__(f"ledger stop: {stop.reason.value}")
        self.stop = stop


class Tally:
    """A bridged run as its ledger `Draw` sees it; the bridge keeps ``turns`` and the totals."""

    def __init__(self, budget: Budget) -> None:
        assert budget.ledger is not None, "a budget without a ledger draws on none"
        self.budget = budget
        self.run_id = os.urandom(16).hex()  # as the executor's runs
        self.turns = 0  # model responses
        self.tokens = 0
        self.cost = 0.0
        # a stand-in for the Meter until the bridges draw through theirs
        self.draw = Draw(self, budget.ledger)  # type: ignore[arg-type]

    def emit(self, event_type: str, /, **data: Any) -> None:
        """A bridge result carries no executor events: nothing is kept."""

    def finish(
        self,
        reason: StopReason,
        message: str | None = None,
        output: str | None = None,
        limit: dict[str, Any] | None = None,
    ) -> LedgerStop:
        """The ledger's stop, kept for the bridge to report (the draw ends with the run)."""
        assert message is not None, "the ledger always says why it stops a run"
        return LedgerStop(reason, message, limit)

    def reserve(self) -> LedgerStop | None:
        """Hold the next model call's share; the stop when the ledger refuses it."""
        return self.draw.reserve()  # type: ignore[return-value]

    def settle(self, tokens: int, cost_usd: float) -> None:
        """The response's usage replaces what its call held; it counts in the run's record."""
        self.turns += 1
        self.tokens += tokens
        self.cost += cost_usd
        self.draw.settle(tokens, cost_usd)

    def release(self) -> None:
        """The model call failed: what it held goes back at once."""
        self.draw.release()

    def end(self, stop_reason: str) -> None:
        """The run has ended: what it holds goes back, its record is written."""
        self.draw.end(stop_reason)
