"""What every framework bridge shares: its result, its refusals, and its stops.

A bridge runs a framework's agent within a budgetconf `Budget`. It refuses a
budget the framework cannot be made to enforce (or warns, when asked), and
a framework keyword that would set a limit of its own; and it reports a stop
as the executor does: the field, its value, where it was set, how to raise it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from budgetconf._record import Record, set_field
from budgetconf.errors import BudgetConfWarning, UsageError

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


def bridge_budget(
    framework: Framework,
    budget: object,
    resolve_kwargs: Mapping[str, Any],
    *,
    through: Literal["limits", "run"],
    unenforced: Unenforced = "error",
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
    missed = _unenforced(framework, checked, through)
    if missed:
        what = "; ".join(phrase for phrase, _ in missed)
        if any(policed for _, policed in missed):  # an administrator's ceiling is never a warning
            raise UsageError(f"{what}; a budget the policy sets is never run without")
        if unenforced == "error":
            raise UsageError(f"{what}; unset it, or pass unenforced='warn' to run without it")
        warnings.warn(f"{what}; running without it", BudgetConfWarning, stacklevel=3)
    return checked


def _unenforced(framework: Framework, budget: Budget, through: str) -> list[tuple[str, bool]]:
    """A phrase for each budget set (not by its default) that the framework will not enforce,
    and whether the policy set it."""
    from budgetconf._loop_table import BudgetName

    found = []
    for name, limit in budget.limits.items():
        by = framework.enforcer(BudgetName(name))
        if by is not None and (by[0] == "framework" or through == "run"):
            continue
        if limit.source == "default":
            continue
        where = "" if by is None else " through limits()"
        policed = limit.source == "policy"
        source = "the policy " if policed else ""
        found.append(
            (
                f"{limit.field} = {limit.shown()} from {source}{limit.locator} cannot be"
                f" enforced by {framework.package}{where}",
                policed,
            )
        )
    return found + _undrawn(framework, budget, through)


def _undrawn(framework: Framework, budget: Budget, through: str) -> list[tuple[str, bool]]:
    """The phrase for a set ``ledger.url`` the bridge will not draw on (every `limits()`, and
    `run()` where it cannot reserve before each model call), or for a ledger maximum it
    cannot settle, and whether the policy set it."""
    from budgetconf.integrations._frameworks import uncounted

    ledger = budget.ledger
    if ledger is None:
        return []
    if framework.ledger is None or through == "limits":
        where = "" if framework.ledger is None else " through limits()"
        return [
            (
                f"ledger.url = {ledger.shown} from {ledger.locator} cannot be drawn on by"
                f" {framework.package}{where}: the shared ledger is drawn on before each model"
                " call",
                ledger.source == "policy",  # an administrator's ledger never becomes a warning
            )
        ]
    cost = uncounted(framework, ledger)
    if cost is None:
        return []
    policed = cost.source == "policy"
    where = f"{'the policy ' * policed}{cost.locator}"
    return [
        (
            f"{cost.field} = {cost.shown()} from {where} cannot be drawn on by"
            f" {framework.package}: it reports no cost to settle with",
            policed,
        )
    ]


def refuse_conflicting(framework: Framework, kwargs: Mapping[str, Any]) -> None:
    """Refuse a keyword of the framework's run call that would set a limit budgetconf sets."""
    taken = [k for k in framework.conflicting if k in kwargs]
    if taken:
        raise UsageError(
            f"{taken[0]}= would set {framework.package}'s own limit: set the budget through"
            " budgetconf instead (explicit=, --set or its variable)"
        )
