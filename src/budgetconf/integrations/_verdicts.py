"""Each budget as a framework's bridge would take it: enforced, left as default, or refused.

`verdicts` is the one judgement `limits()`, `run()` and `budgetconf explain
--for NAME` make, from the plain table of `_frameworks` (no framework is
imported). A cost budget is the bridge's in `run()` when a price is known for
the agent's model (PRICES.md), or where the framework reports cost itself:
`verdicts` takes the model's name (and provider) to look its price up.
"""

from __future__ import annotations

from budgetconf._loop_table import BudgetName

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, Literal

    from budgetconf._prices import Price
    from budgetconf.integrations._frameworks import Framework
    from budgetconf.loop import Budget, Limit

_B = BudgetName


def verdicts(
    framework: Framework,
    budget: Budget,
    through: Literal["limits", "run"],
    model: str | None = None,
    provider: str | None = None,
) -> list[dict[str, Any]]:
    """Each budget ``budget`` sets, as `limits()` or `run()` (``through``) would take it: the
    one judgement both of them make, and `explain --for` shows.

    Each is its limit's `to_dict` with ``budget``, and ``enforced_by``: the
    ``framework``'s own keyword or the ``bridge`` (in `run()` only), each with
    ``how``; ``default``, a value that is the preset's own default, left as it
    is without a word; ``refused``, with ``why`` (a phrase naming the field,
    its value and where it was set) and ``policed`` (the policy set it, so it
    is never run without); or ``warned``, with ``why``: a cost budget that
    ``prices.unknown = warn`` runs without a price for its model.

    In `run()` a cost budget (``limits.max_cost_usd``, ``ledger.max_cost_usd``)
    holds at the price of the agent's model: ``model`` is its name (None: a
    model with no name, or none given), ``provider`` whose genai-prices table
    prices it. Its verdict has ``price``, the `Price.to_dict` it is enforced
    at, or None; a refusal for want of a price for a named model has
    ``unpriced`` (``prices.unknown = refuse``: `unenforced=` does not change it).
    """
    costs = _Costs(framework, budget, model, provider) if through == "run" else None
    limits = [*budget.limits.values(), *budget.tools.values()]  # each tool's own limit too
    found = [
        {**limit.to_dict(), "budget": limit.budget, **_verdict(framework, limit, through, costs)}
        for limit in limits
    ]
    found += [_warning(framework, limit, through) for limit in budget.warnings.values()]
    return found + _ledger_verdicts(framework, budget, through, costs)


def _warning(framework: Framework, limit: Limit, through: str) -> dict[str, Any]:
    """How ``limit.warn_at`` or ``loop.warn_model`` is taken: by the Meter in `run()`; the
    model told only where the bridge can edit one call's input."""
    verdict = {**limit.to_dict(), "budget": limit.budget}
    if through == "limits":
        return {**verdict, **_refused(limit, f" cannot be given to {framework.package}'s keywords")}
    if limit.budget == "warn_model" and not framework.notices:
        what = f": {framework.package} gives the bridge no way to edit one model call's input"
        return {**verdict, **_refused(limit, what)}
    how = "budget_warning events and a BudgetConfWarning, from the Meter's counts"
    if limit.budget == "warn_model":
        how = "the warnings go with the next model call, in the last-turn notice's place"
    return {**verdict, "enforced_by": "bridge", "how": how}


def _verdict(
    framework: Framework, limit: Limit, through: str, costs: _Costs | None
) -> dict[str, Any]:
    fewest, reason = framework.fewest_steps
    if through == "limits" and limit.budget == _B.MAX_STEPS and limit.value < fewest:
        return _refused(limit, f": {framework.package} needs at least {fewest} ({reason})")
    if costs is not None and limit.budget == _B.MAX_COST_USD:
        return costs.verdict(limit)
    found = framework.enforcer(BudgetName(limit.budget))
    if found is not None and (found[0] == "framework" or through == "run"):
        how = found[1].replace(_PRICE, "")  # through limits(): the framework's own price
        return {"enforced_by": found[0], "how": how}
    if limit.source == "default":
        return {"enforced_by": "default", "how": None}
    where = "" if found is None else " through limits()"
    return _refused(limit, f" cannot be enforced by {framework.package}{where}")


def _refused(limit: Limit, what: str) -> dict[str, Any]:
    policed = limit.source == "policy"
    where = f"{'the policy ' if policed else ''}{limit.locator}"
    why = f"{limit.field} = {limit.shown()} from {where}{what}"
    return {"enforced_by": "refused", "how": None, "why": why, "policed": policed}


#: where a cost budget's ``how`` names the price it is enforced at
_PRICE: Final = "{price}"
#: why no price can hold a cost budget for a model with no name
_NAMELESS: Final = (
    "no price is known for a model with no name (set prices.input_per_mtok and"
    " prices.output_per_mtok)"
)


class _Costs:
    """How `run()` judges the cost budgets of one run: at the price of the agent's model,
    looked up once, when the first cost budget asks (a run without one looks nothing up)."""

    __slots__ = ("budget", "found", "framework", "looked", "model", "provider")

    def __init__(
        self, framework: Framework, budget: Budget, model: str | None, provider: str | None
    ) -> None:
        self.framework = framework
        self.budget = budget
        self.model = model or None
        self.provider = provider
        self.looked = False
        self.found: Price | None = None

    @property
    def price(self) -> Price | None:
        """The model's price (the fields' for a model with no name), or None."""
        if not self.looked:
            from budgetconf._prices._pricing import Pricing

            self.found = Pricing(self.budget.prices, self.model, self.provider).price
            self.looked = True
        return self.found

    def at(self, how: str) -> str:
        """``how`` naming the price: a framework that prices its own responses uses it for
        those it cannot price, if any."""
        price = self.price
        if self.framework.reports_cost:
            shown = "" if price is None else f", else its usage priced at {price.note()}"
        else:
            shown = "the model's price" if price is None else price.note()
        return how.replace(_PRICE, shown)

    def verdict(self, limit: Limit, drawn: str | None = None) -> dict[str, Any]:
        """The verdict of the cost budget ``limit``: enforced at the price (``drawn``: how the
        shared ledger is drawn on, for its ``ledger.max_cost_usd``), or what ``prices.unknown``
        says for a named model with no price, or refused for want of any price."""
        framework = self.framework
        price = self.price
        if price is not None or (framework.reports_cost and self.model is None):
            shown = None if price is None else price.to_dict()
            if drawn is not None:
                told = f"each response's usage priced at {_PRICE}"
                if framework.reports_cost:
                    told = f"the cost {framework.extra} prices each response at{_PRICE}"
                return {"enforced_by": "bridge", "how": self.at(f"{drawn}: {told}"), "price": shown}
            kind, how = framework.enforcer(_B.MAX_COST_USD) or ("bridge", _PRICE)
            return {"enforced_by": kind, "how": self.at(how), "price": shown}
        if self.model is not None:
            return self._unpriced(limit, self.model)
        if limit.source == "default":
            return {"enforced_by": "default", "how": None, "price": None}
        what = f"be drawn on by {framework.package}: it reports no cost to settle with"
        if drawn is None:
            what = f"be enforced by {framework.package}: it reports no cost"
        return {**_refused(limit, f" cannot {what}, and {_NAMELESS}"), "price": None}

    def _unpriced(self, limit: Limit, model: str) -> dict[str, Any]:
        """A named model with no price: refused, or warned under ``prices.unknown = warn``."""
        from budgetconf._prices._pricing import unpriced

        why = unpriced(model, limit)
        if self.budget.prices.unknown == "warn":
            why += "; only the cost its responses report counts"
            return {"enforced_by": "warned", "how": None, "why": why, "price": None}
        refused = {"enforced_by": "refused", "how": None, "why": why, "policed": False}
        return {**refused, "price": None, "unpriced": True}


def _ledger_verdicts(
    framework: Framework, budget: Budget, through: str, costs: _Costs | None
) -> list[dict[str, Any]]:
    """The shared ledger's: drawn on by the bridge in `run()` where it sees each model call,
    refused through `limits()` and where it cannot; and each scope's cost maximum, drawn on
    at the model's price (or as the framework prices its responses), or refused without one."""
    ledger = budget.ledger
    if ledger is None:
        return []
    where = {"source": ledger.source, "locator": ledger.locator, "raise_with": []}
    shown = {"field": ledger.path("url"), "value": ledger.shown, **where, "budget": "ledger"}
    if framework.ledger is None or costs is None:
        how = "" if framework.ledger is None else " through limits()"
        why = (
            f"{ledger.path('url')} = {ledger.shown} from {ledger.locator} cannot be drawn on by"
            f" {framework.package}{how}: the shared ledger is drawn on before each model call"
        )
        # an administrator's ledger is never run without
        refused = {"enforced_by": "refused", "how": None, "policed": ledger.source == "policy"}
        return [{**shown, **refused, "why": why}]
    found = [{**shown, "enforced_by": "bridge", "how": framework.ledger}]
    for scope in ledger.scopes():  # its own scope's, then each parent's
        cost = scope.max_cost_usd
        if cost is not None:
            drawn = costs.verdict(cost, "drawn on per model call")
            found.append({**cost.to_dict(), "budget": "ledger", **drawn})
    return found


def describe(
    framework: Framework, budget: Budget, model: str | None = None, provider: str | None = None
) -> dict[str, Any]:
    """What ``framework`` gets from ``budget``, as `explain --for` shows it: plain values.

    ``limits`` is what `limits()` passes (with its default options), or None
    when it refuses ``limits_refused`` (its `verdicts` of ``refused``);
    ``budgets`` are `run()`'s `verdicts`, for the agent's ``model`` (a cost
    budget is judged at its price) and ``provider``; ``model`` is that name.
    """
    through_limits = [
        v for v in verdicts(framework, budget, "limits") if v["enforced_by"] == "refused"
    ]
    return {
        "name": framework.name,
        "extra": framework.extra,
        "package": framework.package,
        "module": f"budgetconf.integrations.{framework.name}",
        "model": model or None,
        "limits": None if through_limits else framework.keywords(budget, {}),
        "limits_refused": through_limits,
        "budgets": verdicts(framework, budget, "run", model, provider),
    }
