"""What each framework bridge can enforce, and the keywords it passes: plain data.

This module imports no framework, so `budgetconf explain --for NAME` can say
what a framework would get without the cost (seconds, for some) of importing
it, and each bridge checks a budget against the same table it documents.

A budget is enforced by the framework's own keyword (``knobs``: `limits()`
passes it, and so does `run()`), by the bridge around the run (``bridged``:
hooks, callbacks, middleware, deadlines; `run()` only), or not at all. A cost
budget is the bridge's in `run()` when a price is known for the agent's model
(PRICES.md), or where the framework reports cost itself: `verdicts` takes the
model's name (and provider) to look its price up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from budgetconf._loop_table import BudgetName

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, Literal, TypeAlias

    from budgetconf._prices import Price
    from budgetconf.loop import Budget, Limit

    Keywords: TypeAlias = Callable[[Budget, Mapping[str, Any]], dict[str, Any]]

#: the plain keyword arguments `limits()` gives, before the bridge builds framework objects

_B = BudgetName


class Framework:
    """One framework a bridge runs: its names, what enforces each budget, and its keywords."""

    __slots__ = (
        "bridged",
        "conflicting",
        "extra",
        "fewest_steps",
        "instrumented_by",
        "keywords",
        "knobs",
        "ledger",
        "name",
        "package",
        "reports_cost",
    )

    def __init__(
        self,
        name: str,
        *,
        package: str,
        extra: str,
        knobs: Mapping[BudgetName, str],
        bridged: Mapping[BudgetName, str],
        conflicting: tuple[str, ...],
        keywords: Keywords,
        ledger: str | None = None,
        fewest_steps: tuple[int, str] = (1, ""),
        reports_cost: bool = False,
        instrumented_by: tuple[str, ...] = (),
    ) -> None:
        self.name = name  # the module's last name, and a result's ``framework``
        self.package = package  # on the package index
        self.extra = extra  # budgetconf's extra that installs it
        self.knobs = knobs  # budget -> the framework keyword that carries it
        self.bridged = bridged  # budget -> how the bridge enforces it in run()
        self.conflicting = conflicting  # run() keywords that would set a limit of their own
        self.keywords = keywords
        # how the bridge draws on the shared ledger per model call in run(); None: it cannot,
        # so a set ledger.url is refused like any budget nothing enforces
        self.ledger = ledger
        # the step budget the keyword limits() passes can carry, and why no fewer
        self.fewest_steps = fewest_steps
        # whether the framework prices its own responses (their usage carries a cost): then a
        # cost budget holds on what it reports, and on the model's price where it reports none
        self.reports_cost = reports_cost
        # the instrumentations ("module:Instrumentor") that trace its model and tool calls: while
        # one is active, the run's span is budgetconf's only span (docs/telemetry.md)
        self.instrumented_by = instrumented_by

    def __repr__(self) -> str:
        return f"Framework({self.name!r})"

    def enforcer(self, budget: BudgetName) -> tuple[str, str] | None:
        """What enforces ``budget`` and how: ``("framework", keyword)`` (in `limits()` and
        `run()`), ``("bridge", how)`` (in `run()` only), or None when nothing can."""
        if budget in self.knobs:
            return "framework", self.knobs[budget]
        if budget in self.bridged:
            return "bridge", self.bridged[budget]
        return None


def _steps(budget: Budget) -> int | None:
    value = budget.value(_B.MAX_STEPS)
    return None if value is None else int(value)


def _openai_agents(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    return {"max_turns": _steps(budget)}


def _langgraph(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    steps = _steps(budget)
    per_turn = int(options.get("steps_per_turn", 2))
    return {"config": {"recursion_limit": None if steps is None else per_turn * steps}}


def _smolagents(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    steps = _steps(budget)  # its forced final answer is one more model call
    return {"max_steps": None if steps is None else steps - 1}


def _pydantic_ai(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    # request_limit always: pydantic-ai's own default is 50; None (unlimited) only for a budget
    # that sets no step budget, as the Meter has no last turn then
    limits: dict[str, Any] = {"request_limit": _steps(budget)}
    for budget_name, field in (
        (_B.MAX_TOOL_CALLS, "tool_calls_limit"),
        (_B.MAX_TOKENS, "total_tokens_limit"),
        (_B.MAX_COST_USD, "cost_limit"),
    ):
        value = budget.value(budget_name)
        if value is not None:
            limits[field] = value
    keywords: dict[str, Any] = {"usage_limits": limits}
    timeout = budget.value(_B.TIMEOUT_SECONDS)
    if timeout is not None:
        keywords["timeout"] = float(timeout)
    return keywords


def _praisonai(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    execution = {
        "max_steps": _steps(budget),
        "max_tool_calls_per_turn": budget.value(_B.MAX_TOOL_CALLS_PER_TURN),
    }
    return {"execution": {k: v for k, v in execution.items() if v is not None}}


FRAMEWORKS: Final[Mapping[str, Framework]] = {
    f.name: f
    for f in (
        Framework(
            "openai_agents",
            package="openai-agents",
            extra="openai-agents",
            knobs={
                _B.MAX_STEPS: "max_turns (in run(), the Meter counts the model calls through"
                " RunConfig.call_model_input_filter and answers the last turn's calls as not"
                " executed)"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "each function tool runs through a wrapper: calls"
                " past the cap are rejected (or truncated), and the run goes on",
                _B.MAX_TOOL_CALLS: "the function tools' wrapper answers the calls past it as"
                " not executed",
                _B.MAX_TOKENS: "RunHooks.on_llm_end, from the usage each response reports; a"
                " spent budget stops the next call",
                _B.MAX_COST_USD: "RunHooks.on_llm_end, each response's usage priced at {price};"
                " a spent budget stops the next call",
                _B.TIMEOUT_SECONDS: "a deadline that cancels the run, and the Meter's checks"
                " before each call and batch",
            },
            conflicting=("max_turns",),
            keywords=_openai_agents,
            ledger="RunConfig.call_model_input_filter reserves before each model call (a refusal"
            " stops the run before it); RunHooks.on_llm_end settles with the tokens the response"
            " reports",
            instrumented_by=(
                "openinference.instrumentation.openai_agents:OpenAIAgentsInstrumentor",
            ),
        ),
        Framework(
            "langgraph",
            package="langgraph",
            extra="langgraph",
            knobs={
                _B.MAX_STEPS: 'config["recursion_limit"] (steps_per_turn x max_steps); in run(),'
                " a count of the model calls: the last turn's calls are answered as not"
                " executed (middleware()), or the stream ends before its tools node"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "with create_agent and middleware(): its"
                " wrap_tool_call rejects (or truncates) a response over it, and the run goes on;"
                " a graph without middleware() refuses a cap set anywhere but the default",
                _B.MAX_TOOL_CALLS: "with middleware(), its wrap_tool_call answers the calls past"
                " it as not executed; any other graph stops before its tools node",
                _B.MAX_TOKENS: "the usage_metadata of each response (middleware(), or the"
                " streamed states); a spent budget stops the next model call",
                _B.MAX_COST_USD: "the usage_metadata of each response (middleware(), or the"
                " streamed states), priced at {price}; a spent budget stops the next model call",
                _B.TIMEOUT_SECONDS: "a deadline checked before each model call and each"
                " response's tools (arun() also cancels a step still running)",
            },
            conflicting=("recursion_limit",),
            keywords=_langgraph,
            ledger="with create_agent and middleware(): its wrap_model_call reserves before each"
            " model call and settles with the response's usage_metadata (any other graph"
            " refuses it)",
            instrumented_by=("openinference.instrumentation.langchain:LangChainInstrumentor",),
        ),
        Framework(
            "smolagents",
            package="smolagents",
            extra="smolagents",
            knobs={
                _B.MAX_STEPS: "max_steps (max_steps - 1 in limits(): its forced final answer is"
                " one more call); in run(), the agent's model, wrapped, refuses the call past"
                " it and the last response's calls are answered as not executed"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "a ToolCallingAgent's tools, wrapped: a response"
                " over it is rejected (or its surplus skipped) and the run goes on (refused for"
                " a CodeAgent, unless it is the preset's default)",
                _B.MAX_TOOL_CALLS: "a ToolCallingAgent's tools, wrapped: calls past it are"
                " answered as not executed and the run stops (refused for a CodeAgent)",
                _B.MAX_TOKENS: "the agent's model, wrapped, from each response's token_usage; a"
                " spent budget stops the next call",
                _B.MAX_COST_USD: "the agent's model, wrapped, each response's token_usage priced"
                " at {price}; a spent budget stops the next call",
                _B.TIMEOUT_SECONDS: "the agent's model, wrapped: checked before each call and"
                " each response's tools; a call still running at the deadline is abandoned",
            },
            conflicting=("max_steps",),
            keywords=_smolagents,
            fewest_steps=(2, "its forced final answer is one more model call"),
            ledger="the agent's model, wrapped, reserves before each model call (a refusal stops"
            " the run before it) and settles with the response's token_usage",
        ),
        Framework(
            "pydantic_ai",
            package="pydantic-ai-slim",
            extra="pydantic-ai",
            # limits() passes these keywords; run() enforces each through the Meter instead
            knobs={
                _B.MAX_STEPS: "UsageLimits(request_limit=…); run(): the Meter, before each model"
                " call, the last permitted response's calls answered as not executed",
                _B.MAX_TOOL_CALLS: "UsageLimits(tool_calls_limit=…); run(): the wrapped toolset,"
                " a response whose calls would pass it stopping the run before any runs",
                _B.MAX_TOKENS: "UsageLimits(total_tokens_limit=…); run(): the Meter, from each"
                " response's usage before its tools run",
                _B.MAX_COST_USD: "UsageLimits(cost_limit=…); run(): the Meter, from the cost"
                " pydantic-ai prices each response at{price}",
                _B.TIMEOUT_SECONDS: "the run's timeout=; run(): the Meter's deadline, and"
                " timeout= set to what is left of it",
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "the wrapped toolset: a response over it rejected"
                " whole (or truncated), each call answered, and the run goes on",
            },
            conflicting=("usage_limits", "timeout"),
            keywords=_pydantic_ai,
            ledger="the wrapped model reserves before each model call (a refusal stops the run"
            " before it) and settles with the response's tokens and the cost pydantic-ai prices",
            reports_cost=True,
        ),
        Framework(
            "praisonai",
            package="praisonaiagents",
            extra="praisonai",
            knobs={
                _B.MAX_STEPS: "ExecutionConfig(max_steps=…); in run(), the bridge asks before"
                " each model request and answers the last turn's calls as not executed"
            },
            # run() lends the agent a copy of its OpenAI client and its execute_tool, so the
            # Meter sees every model request and decides every tool call
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "the agent's execute_tool, lent for the run: a"
                " response over it is rejected (or truncated) with the executor's answer",
                _B.MAX_TOOL_CALLS: "the agent's execute_tool, lent for the run: calls past it"
                " are answered as not executed, and the run stops at the next model call",
                _B.MAX_TOKENS: "the usage of each response its OpenAI client returns",
                _B.MAX_COST_USD: "the usage of each response its OpenAI client returns, priced at"
                " {price}",
                _B.TIMEOUT_SECONDS: "a deadline that abandons a model request or a tool in"
                " flight, checked too before each model call",
            },
            conflicting=("execution",),
            keywords=_praisonai,
            ledger="its OpenAI client, lent for the run, reserves before each model request (a"
            " refusal stops the run before it) and settles with the tokens the response reports",
        ),
    )
}


def framework_named(name: str) -> Framework:
    """The framework of a module name (``openai_agents``) or an extra's (``openai-agents``).

    Raises `KeyError` naming the known ones.
    """
    found = FRAMEWORKS.get(name.replace("-", "_"))
    if found is None:
        known = ", ".join(f.extra for f in FRAMEWORKS.values())
        raise KeyError(f"unknown framework {name!r}: one of {known}")
    return found


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
    found = [
        {**limit.to_dict(), "budget": name, **_verdict(framework, limit, through, costs)}
        for name, limit in budget.limits.items()
    ]
    return found + _ledger_verdicts(framework, budget, through, costs)


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
    refused through `limits()` and where it cannot; and its cost maximum, drawn on at the
    model's price (or as the framework prices its responses), or refused without one."""
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
    cost = ledger.max_cost_usd
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
