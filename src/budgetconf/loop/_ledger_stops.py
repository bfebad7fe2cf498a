"""What the shared ledger's verdicts say and record: the stop when a scope has no room, and
the fleet's warning when a scope's spend first reaches ``limits.warn_at`` of a maximum.

Both speak in the executor's own words (`Limit.explain`): the scope's spend goes before
how to raise the maximum, or the policy's word that only its administrator can.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from budgetconf._loop_table import StopReason
from budgetconf.errors import BudgetConfWarning
from budgetconf.events import BUDGET_EXHAUSTED, LEDGER_REFUSED, LEDGER_WARNING
from budgetconf.ledger._checks import to_nano
from budgetconf.ledger._records import iso

if TYPE_CHECKING:
    import datetime as _dt
    from typing import Protocol

    from budgetconf._prices._pricing import Pricing
    from budgetconf.ledger import LedgerStatus, ScopeWarning
    from budgetconf.loop._budget import Budget, LedgerSettings, ScopeBudget
    from budgetconf.loop._limit import Limit
    from budgetconf.loop._result import RunResult

    class Meter(Protocol):
        """What the ledger's part of a run needs of it: `budgetconf.loop.Meter` (named so
        here, since the Meter imports the ledger's part)."""

        budget: Budget
        run_id: str
        turns: int
        warnings_due: list[str]
        tokens: int
        cost: float
        pricing: Pricing | None

        def emit(self, event_type: str, /, **data: Any) -> None: ...

        def finish(
            self,
            reason: StopReason,
            message: str | None = None,
            output: str | None = None,
            limit: dict[str, Any] | None = None,
        ) -> RunResult: ...


def refusal(
    run: Meter,
    s: LedgerSettings,
    turn: int,
    budget: ScopeBudget,
    status: LedgerStatus | None,
    reason: StopReason,
    limit: Limit,
    spent: float,
    reserved: float,
) -> RunResult:
    """The stop before the call at ``budget``'s ``limit``: its events, message and limit."""
    ends = None if status is None else status.window_ends
    name = budget.scope
    spend = _spend(name, limit, spent, budget.window, ends)
    message = f"stopped: hit {reason.value} ({limit.shown()}): {limit.explain(spend)}"
    document = {
        **limit.to_dict(),
        "scope": "ledger",
        "ledger_scope": name,
        "spent": spent,
        "reserved": reserved,
    }
    if ends is not None:
        document["window_ends"] = iso(ends)
    asked = (
        {"cost_usd": s.reserve_cost_usd}
        if reason is StopReason.MAX_COST
        else {"tokens": s.reserve_tokens}
    )
    run.emit(LEDGER_REFUSED, turn=turn, scope=name, field=limit.field, **asked)
    stop = run.budget.stop_name(reason)
    run.emit(BUDGET_EXHAUSTED, turn=run.turns, stop_reason=stop, **document)
    return run.finish(reason, message, None, document)


def which(
    s: LedgerSettings, budget: ScopeBudget, status: LedgerStatus | None
) -> tuple[StopReason, Limit, float, float, bool]:
    """The maximum of ``budget`` the reservation would pass (cost first), what is spent and
    reserved, and whether it would pass it as the ledger stands."""
    cost, tokens = budget.max_cost_usd, budget.max_tokens
    if cost is not None:
        spent_cost = 0.0 if status is None else status.spent_cost_usd
        held_cost = 0.0 if status is None else status.reserved_cost_usd
        # as the backends count: in whole billionths of a dollar, where sums are exact
        asked = (spent_cost, held_cost, s.reserve_cost_usd)
        over = sum(to_nano(v, "cost_usd") for v in asked) > to_nano(cost.value, "max_cost_usd")
        if over or tokens is None:
            return StopReason.MAX_COST, cost, round(spent_cost, 12), round(held_cost, 12), over
    assert tokens is not None, "a scope without a maximum refuses nothing"
    spent = 0 if status is None else status.spent_tokens
    held = 0 if status is None else status.reserved_tokens
    over = spent + held + s.reserve_tokens > tokens.value
    return StopReason.MAX_TOKENS, tokens, spent, held, over


def fleet_warning(
    run: Meter,
    scopes: tuple[ScopeBudget, ...],
    warn_at: float | None,
    warning: ScopeWarning,
    turn: int,
) -> None:
    """A scope's spend has reached ``warn_at`` of a maximum, first in the fleet: its event, a
    `BudgetConfWarning`, and (with ``loop.warn_model``) the model told at its next call."""
    budget = next(b for b in scopes if b.scope == warning.scope)
    limit = budget.max_tokens if warning.budget == "max_tokens" else budget.max_cost_usd
    assert limit is not None, "a warning is of a maximum the run drew under"
    spend = _spend(warning.scope, limit, warning.spent, warning.window, warning.window_ends)
    words = (
        f"{spend[2:]}, the fleet's first past limits.warn_at = {warn_at:g}:"
        f" {limit.field} = {limit.shown()} from {limit.locator}"
    )
    run.emit(
        LEDGER_WARNING,
        turn=turn,
        scope=warning.scope,
        window=warning.window,
        window_ends=iso(warning.window_ends),
        budget=warning.budget,
        field=limit.field,
        spent=warning.spent,
        limit=limit.public_value,
        warn_at=warn_at,
    )
    warnings.warn(f"ledger warning: {words}", BudgetConfWarning, stacklevel=4)
    if run.budget.warn_model:
        run.warnings_due.append(words)


def _spend(scope: str, limit: Limit, spent: float, window: str, ends: _dt.datetime | None) -> str:
    """``; scope team-a has spent $49.97 of $50 this day (resets 2026-12-02T00:00:00Z)``."""
    unit = "" if limit.budget == "max_cost_usd" else " tokens"  # "90 of 100 tokens"
    spend = f"; scope {scope} has spent {limit.amount(spent)} of {limit.amount(limit.value)}{unit}"
    if window != "none":
        spend += f" this {window}" + (f" (resets {iso(ends)})" if ends is not None else "")
    return spend
