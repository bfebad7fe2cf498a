"""One run's pricing: each model's price looked up once, and each response priced by it.

`pricing_for` makes it before a run's first model call, for a run that prices
at all (`needs_prices`: a cost budget, or a ledger to settle with), and refuses
a named model with no price under a cost budget, as ``prices.unknown`` says. The Meter then
prices every response that reports no cost with `Pricing.cost`.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

from budgetconf._prices import WAYS, Price, PriceSettings
from budgetconf._usage import Usage
from budgetconf.errors import BudgetConfWarning, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Set
    from typing import Any

    from budgetconf._prices import CostLimit, Priced


class Pricing:
    """A run's prices: ``price`` is its model's (None when it has none), and a response
    naming another model is priced by that model's own, when known."""

    __slots__ = ("_found", "last", "model", "price", "provider", "settings", "started")

    def __init__(self, settings: PriceSettings, model: str | None, provider: str | None) -> None:
        self.settings = settings
        self.model = model
        self.provider = provider
        self.started = datetime.now(UTC)  # what a dated price is looked up at
        self._found: dict[str, Price | None] = {}
        if model:
            self.price = self.of(model)
        else:  # a model with no name reports its own cost, unless the fields price it
            self.price = settings.fields
        self.last = self.price  # the price of the last response priced

    def __repr__(self) -> str:
        return f"<Pricing {self.model}: {self.price!r}>"

    def in_force(self) -> dict[str, Any] | None:
        """``run_started``'s ``prices``: the price of the run's model, or None."""
        return None if self.price is None else self.price.to_dict()

    def of(self, model: str) -> Price | None:
        """``model``'s price, looked up once per run."""
        found = self._found
        if model not in found:
            found[model] = self.settings.find(model, self.provider, self.started)
        return found[model]

    def cost(self, usage: Usage) -> float | None:
        """What ``usage`` (a response that reported no cost) cost at its model's price, or
        None when it used no tokens or no price is known. A response naming another model is
        priced by that model's price when known, else by the run's."""
        if not (usage.input_tokens or usage.output_tokens):
            return None
        named = usage.model
        price = self.price if not named or named == self.model else self.of(named) or self.price
        if price is None:
            return None
        self.last = price
        return price.cost(usage)


def spent(pricing: Pricing | None, cost: float, sources: Set[str]) -> str:
    """How a run's cost was known, for its cost stop: ``; spent $0.00150 at gpt-4o-mini's
    price (genai-prices 0.2.3: $0.15 / $0.60 per Mtok)``; ``sources`` are its responses'
    cost sources."""
    shown = f"; spent ${cost:.5f}"
    priced = None if pricing is None or "priced" not in sources else pricing.last
    if priced is None:
        return shown + (" as its responses reported it" if sources else "")
    reported = " as its responses reported it and" if "reported" in sources else ""
    return f"{shown}{reported} at {priced.note()}"


def cost_budget(budget: Priced) -> CostLimit | None:
    """The run's cost budget: ``limits.max_cost_usd``, else the ledger's ``max_cost_usd``."""
    own = budget.limits.get("max_cost_usd")
    if own is not None or budget.ledger is None:
        return own
    return budget.ledger.max_cost_usd


def pricing_for(budget: Priced, model: str | None, provider: str | None) -> Pricing:
    """How a run of ``model`` on ``budget`` is priced, for a budget that `needs_prices`; a
    `UsageError`, or a warning under ``prices.unknown = warn``, for a named model with no price
    under a cost budget."""
    limit = cost_budget(budget)
    pricing = Pricing(budget.prices, model, provider)
    if model and pricing.price is None and limit is not None:
        message = unpriced(model, limit)
        if budget.prices.unknown == "refuse":
            raise UsageError(message)
        warnings.warn(f"{message}; only the cost its responses report counts", BudgetConfWarning, 2)
    return pricing


def unpriced(model: str, limit: CostLimit) -> str:
    """Why a cost budget cannot hold for ``model``: it has no price, and how to give one."""
    return (
        f"no price for the model {model!r}, and {limit.field} = {limit.amount(limit.value)}"
        f" from {limit.locator} is a cost budget: {WAYS}"
    )
