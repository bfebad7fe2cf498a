"""What every framework bridge shares: its result, its refusals, and its stops.

A bridge runs a framework's agent within a budgetconf `Budget`. It refuses a
budget the framework cannot be made to enforce (or warns, when asked), and
a framework keyword that would set a limit of its own; and it reports a stop
as the executor does: the field, its value, where it was set, how to raise it.
It names the agent's model (`AgentModel`), so that a cost budget holds at
that model's price.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from budgetconf._record import Record, set_field
from budgetconf.errors import BudgetConfWarning, UsageError
from budgetconf.integrations._verdicts import verdicts

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing a bridge
    from typing import Any, ClassVar, Literal, TypeAlias

    from budgetconf._loop_table import RunStatus, StopReason
    from budgetconf._usage import Usage
    from budgetconf.integrations._frameworks import Framework
    from budgetconf.loop import Budget, RunResult

    #: what a bridge does with a budget it cannot enforce: refuse it, or warn and run
    Unenforced: TypeAlias = Literal["error", "warn"]


class BridgeResult(Record):
    """How a framework's run ended, with `RunResult`'s names, its own result and its name.

    ``native`` is the framework's result object, or the exception it raised;
    ``framework`` the bridge module's last name (``openai_agents``). ``usage``
    is the run's `Usage`; ``events`` what it recorded (the executor's
    vocabulary), ``run_id`` the id they carry. A plain record, not a dataclass:
    importing a bridge adds next to nothing to importing its framework.
    """

    __module__ = "budgetconf.integrations"
    #: the fields, in the constructor's order (``__slots__`` is kept sorted)
    _FIELDS: ClassVar[tuple[str, ...]] = (
        "status", "stop_reason", "stop_kind", "message", "output", "turns", "limit",
        "framework", "native", "usage", "tool_calls_executed", "events", "run_id",
    )  # fmt: skip
    __slots__ = _FIELDS  # fmt: skip

    status: RunStatus
    stop_reason: str
    stop_kind: StopReason
    message: str
    output: str
    turns: int
    limit: dict[str, Any] | None
    framework: str
    native: Any
    usage: Usage
    tool_calls_executed: int
    events: list[dict[str, Any]]
    run_id: str

    def __init__(
        self,
        status: RunStatus,
        stop_reason: str,
        stop_kind: StopReason,
        message: str,
        output: str,
        turns: int,
        limit: dict[str, Any] | None,
        framework: str,
        native: Any = None,
        usage: Usage | None = None,
        tool_calls_executed: int = 0,
        events: list[dict[str, Any]] | None = None,
        run_id: str = "",
    ) -> None:
        if usage is None:
            from budgetconf._usage import NO_USAGE

            usage = NO_USAGE
        for name, value in zip(self._FIELDS, (
            status, stop_reason, stop_kind, message, output, turns, limit, framework, native,
            usage, tool_calls_executed, [] if events is None else events, run_id,
        ), strict=True):  # fmt: skip
            set_field(self, name, value)

    @classmethod
    def of(
        cls, result: RunResult, framework: Framework, native: object, output: str | None = None
    ) -> BridgeResult:
        """The bridge's result for the run its Meter ended with ``result``."""
        return cls(
            result.status,
            result.stop_reason,
            result.stop_kind,
            result.message,
            result.output if output is None else output,
            result.turns,
            result.limit,
            framework.name,
            native,
            result.usage,
            result.tool_calls_executed,
            result.events,
            result.run_id,
        )

    def __repr__(self) -> str:  # without the framework's result or the events: no summary
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS[:8])
        return f"BridgeResult({shown})"


class AgentModel:
    """The agent's model as its bridge finds it, for the price a cost budget holds at.

    ``name`` is the model's (None: a model with no name, such as a framework's
    test double, which only the price fields can price); ``provider`` the
    provider the framework names for it, ``url`` the base URL its client calls,
    whose host names the provider first (PRICES.md).
    """

    __slots__ = ("name", "provider", "url")

    def __init__(self, name: object = None, provider: object = None, url: object = None) -> None:
        self.name = _text(name)
        self.provider = _text(provider)
        self.url = None if url is None else _text(str(url))

    def __repr__(self) -> str:
        return f"AgentModel({self.name!r}, provider={self.provider!r}, url={self.url!r})"

    def provider_for(self, budget: Budget) -> str | None:
        """Whose genai-prices table prices the model in a run on ``budget``: the provider the
        client's base URL names, else the framework's; None when the run looks no price up
        there (no cost budget nor ledger, the price fields set, or another table)."""
        from budgetconf._prices import GENAI_PRICES, needs_prices

        prices = budget.prices
        if self.name is None or prices.fields is not None or prices.table != GENAI_PRICES:
            return None
        if not needs_prices(budget):
            return None
        if self.url is not None:
            from budgetconf._prices._genai import provider_for_url

            found = provider_for_url(self.url)
            if found:
                return found
        return self.provider


def _text(value: object) -> str | None:
    """A name a framework gives, or None for one that names nothing (blank, or no text)."""
    return value if isinstance(value, str) and value.strip() else None


#: a model the bridge cannot name
NAMELESS = AgentModel()


def bridge_budget(
    framework: Framework,
    budget: object,
    resolve_kwargs: Mapping[str, Any],
    *,
    through: Literal["limits", "run"],
    unenforced: Unenforced = "error",
    model: AgentModel = NAMELESS,
    priced_later: bool = False,
) -> Budget:
    """The `Budget` to run with, checked: every budget set is enforced, or refused.

    ``budget`` None resolves ``resolve_kwargs`` (``preset=`` among them; the
    default preset without it), as `budgetconf.resolve` does. A budget the
    framework cannot enforce ``through`` `limits()` or `run()` is a
    `UsageError` naming the field and the framework, or with
    ``unenforced="warn"`` one `BudgetConfWarning`, but for a budget the policy
    set or clamped, which is refused whatever ``unenforced`` says; a budget
    whose value is the preset's own default is left unenforced without a word,
    as the framework's table says.

    A cost budget in `run()` holds at the price of the agent's ``model``: a
    named model with no price is refused as ``prices.unknown`` says (a
    `UsageError` under ``refuse``, whatever ``unenforced`` says; under
    ``warn``, the run's Meter warns once). ``priced_later``: the model is not
    known yet (LangGraph's `middleware()`, made before its graph), so its cost
    budgets are judged by `run()`.
    """
    from budgetconf.loop import Budget

    if unenforced not in ("error", "warn"):
        raise UsageError(f'unenforced: expected "error" or "warn", got {unenforced!r}')
    if budget is None:
        from budgetconf._resolve import resolve

        checked = Budget.from_resolution(resolve(**resolve_kwargs))
    elif resolve_kwargs:
        raise UsageError("resolve keywords are for budget=None: the budget given is resolved")
    else:
        checked = Budget.of(budget)
    refused = _refusals(framework, checked, through, model, priced_later)
    if refused:
        what = "; ".join(v["why"] for v in refused)
        if any(v["policed"] for v in refused):  # an administrator's ceiling is never a warning
            raise UsageError(f"{what}; a budget the policy sets is never run without")
        if through == "limits":
            raise UsageError(f"{what}; {_instead(framework, checked, refused)}")
        if unenforced == "error":
            raise UsageError(f"{what}; unset it, or pass unenforced='warn' to run without it")
        warnings.warn(f"{what}; running without it", BudgetConfWarning, stacklevel=3)
    return checked


def _refusals(
    framework: Framework,
    budget: Budget,
    through: Literal["limits", "run"],
    model: AgentModel,
    priced_later: bool,
) -> list[dict[str, Any]]:
    """The verdicts of ``refused``; a `UsageError` at once for a named model with no price
    under ``prices.unknown = refuse``, which no ``unenforced=`` runs without."""
    found = verdicts(framework, budget, through, model.name, model.provider_for(budget))
    refused = [
        v for v in found if v["enforced_by"] == "refused" and not (priced_later and "price" in v)
    ]
    unpriced = [v["why"] for v in refused if v.get("unpriced")]
    if unpriced:  # no price, no run: the same words as the Meter's refusal
        raise UsageError(unpriced[0])
    return refused


def _instead(framework: Framework, budget: Budget, refused: list[dict[str, Any]]) -> str:
    """What to do about budgets `limits()` cannot pass: run() may enforce them all."""
    run = verdicts(framework, budget, "run")
    # a cost budget run() refuses only for want of the model's name is run()'s to enforce
    run_refuses = {v["field"] for v in run if v["enforced_by"] == "refused" and "price" not in v}
    if run_refuses.isdisjoint(v["field"] for v in refused):
        return "unset it, or run the agent through run(), which enforces it"
    return "unset it"


#: the step limit lent to a framework for a budget that sets none: more than any run makes
_NO_STEP_BUDGET = 2**31 - 1


def lent_steps(budget: Budget) -> int:
    """The step limit a bridge lends the framework's own knob for a run within ``budget``:
    one above its step budget, as the Meter ends the run first (so the framework's limit, and
    whatever the framework does there, is never reached); for a budget that sets none, one
    no run reaches, so that the framework's own default does not end the run either."""
    from budgetconf._loop_table import BudgetName

    steps = budget.value(BudgetName.MAX_STEPS)
    return _NO_STEP_BUDGET if steps is None else int(steps) + 1


def refuse_conflicting(framework: Framework, kwargs: Mapping[str, Any]) -> None:
    """Refuse a keyword of the framework's run call that would set a limit budgetconf sets."""
    taken = [k for k in framework.conflicting if k in kwargs]
    if taken:
        raise UsageError(
            f"{taken[0]}= would set {framework.package}'s own limit: set the budget through"
            " budgetconf instead (explicit=, --set or its variable)"
        )


def refuse_stream_keyword(kwargs: Mapping[str, Any]) -> None:
    """Refuse ``stream=`` in a `stream()` whose framework call takes it: the bridge sets it."""
    if "stream" in kwargs:
        raise UsageError("stream=: stream() streams the run itself; leave it out")


def refuse_streaming(kwargs: Mapping[str, Any]) -> None:
    """Refuse ``stream=True`` in `run()`, which returns the finished run: `stream()` streams."""
    if kwargs.get("stream"):
        raise UsageError(
            "stream=True: run() runs the agent to its end and returns its result; to stream"
            " the run, call stream() (docs/frameworks.md, Streaming)"
        )
