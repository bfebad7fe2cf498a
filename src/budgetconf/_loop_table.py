"""What a preset says about its loop: the loop table, and the loop's words, each defined once.

The other half of the description (`budgetconf._description`), kept apart so
that ``import budgetconf`` need not create these enums: only the preset
reader and the loop executor use them. The reader checks a preset's renamed
stops and behaviours against the same words the executor stops with.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from budgetconf._record import Record, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final


class RunStatus(StrEnum):
    """The outcome of a run, as a caller branches on it."""

    __module__ = "budgetconf.loop"

    OK = "ok"
    TRUNCATED = "truncated"
    FAILED = "failed"
    BLOCKED = "blocked"


class BudgetName(StrEnum):
    """A budget the loop enforces: a key of a preset's ``[loop]`` table."""

    __module__ = "budgetconf.loop"

    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS_PER_TURN = "max_tool_calls_per_turn"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_COST_USD = "max_cost_usd"
    TIMEOUT_SECONDS = "timeout_seconds"
    MAX_REPEATS = "max_repeats"
    MAX_CALLS_BY_TOOL = "max_calls_by_tool"  # a table: each tool's own limit

    @property
    def counted(self) -> bool:
        """Whether the budget counts whole things (steps, calls, tokens): only an int will do."""
        return self not in (BudgetName.MAX_COST_USD, BudgetName.TIMEOUT_SECONDS)


class StopReason(StrEnum):
    """Why a run stopped. A preset may give a budget stop its own name (``max_turns_exhausted``)."""

    __module__ = "budgetconf.loop"

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_COST = "max_cost"
    TIMEOUT = "timeout"
    ERROR = "error"
    CANCELLED = "cancelled"
    CONTENT_FILTERED = "content_filtered"
    REFUSED = "refused"
    LENGTH_TRUNCATED = "length_truncated"
    NO_PROGRESS = "no_progress"

    @property
    def status(self) -> RunStatus:
        return _STATUS[self]

    @property
    def budget(self) -> BudgetName | None:
        """The budget whose exhaustion this is, if any: only these stops a preset may rename."""
        return _BUDGET.get(self)


_STATUS: Final = {
    StopReason.COMPLETED: RunStatus.OK,
    StopReason.MAX_STEPS: RunStatus.TRUNCATED,
    StopReason.MAX_TOOL_CALLS: RunStatus.TRUNCATED,
    StopReason.MAX_TOKENS: RunStatus.TRUNCATED,
    StopReason.MAX_COST: RunStatus.TRUNCATED,
    StopReason.TIMEOUT: RunStatus.TRUNCATED,
    StopReason.ERROR: RunStatus.FAILED,
    StopReason.CANCELLED: RunStatus.FAILED,
    StopReason.CONTENT_FILTERED: RunStatus.BLOCKED,
    StopReason.REFUSED: RunStatus.BLOCKED,
    StopReason.LENGTH_TRUNCATED: RunStatus.BLOCKED,
    StopReason.NO_PROGRESS: RunStatus.TRUNCATED,
}
_BUDGET: Final = {
    StopReason.MAX_STEPS: BudgetName.MAX_STEPS,
    StopReason.MAX_TOOL_CALLS: BudgetName.MAX_TOOL_CALLS,
    StopReason.MAX_TOKENS: BudgetName.MAX_TOKENS,
    StopReason.MAX_COST: BudgetName.MAX_COST_USD,
    StopReason.TIMEOUT: BudgetName.TIMEOUT_SECONDS,
    StopReason.NO_PROGRESS: BudgetName.MAX_REPEATS,
}


class LastTurn(StrEnum):
    """What the loop does before the last permitted turn (the first is a preset's default)."""

    __module__ = "budgetconf.loop"

    NONE = "none"
    WARN = "warn"
    WRAP_UP = "wrap_up"


class OverCap(StrEnum):
    """What the loop does with a response over the per-turn tool-call cap (the first: default)."""

    __module__ = "budgetconf.loop"

    REJECT = "reject"
    TRUNCATE = "truncate"


#: the loop's behaviours, each set by a field of the preset or one of its words
BEHAVIOURS: Final[Mapping[str, type[StrEnum]]] = {"last_turn": LastTurn, "over_cap": OverCap}
#: the loop's warnings before a limit, each set by a field of the preset of this type
WARNINGS: Final[Mapping[str, str]] = {"warn_at": "number", "warn_model": "bool"}

WARN_MESSAGE: Final = (
    "This is your last turn: tools you call now will not run. "
    "Give your final answer without calling tools."
)
WRAP_UP_MESSAGE: Final = (
    "You have reached the step budget for this task. Stop calling tools now and give "
    "your best final answer: summarise the work done so far and say clearly what is "
    "left incomplete."
)


class LoopSpec(Record):
    """How a preset's loop is bounded: which field holds each budget, and what happens at it.

    ``budgets`` maps a budget (``max_steps``, ``max_tokens``, …) to the path
    of the field that holds it; a budget with no field is not enforced.
    ``behaviours`` maps ``last_turn`` and ``over_cap`` to a field path or a
    fixed word. ``stop_reasons`` renames budget stops (``max_steps`` ->
    ``max_turns_exhausted``). ``warnings`` maps ``warn_at`` and ``warn_model``
    to the field that holds each (`WARNINGS`); one with no field is off.
    """

    __module__ = "budgetconf.loop"
    __slots__ = (
        "behaviours",
        "budgets",
        "stop_reasons",
        "truncated_warning",
        "warn_message",
        "warnings",
        "wrap_up_message",
    )

    budgets: Mapping[str, str]
    behaviours: Mapping[str, str]
    stop_reasons: Mapping[str, str]
    warn_message: str
    wrap_up_message: str
    truncated_warning: str | None
    warnings: Mapping[str, str]

    def __init__(
        self,
        budgets: Mapping[str, str],
        behaviours: Mapping[str, str],
        stop_reasons: Mapping[str, str],
        warn_message: str = WARN_MESSAGE,
        wrap_up_message: str = WRAP_UP_MESSAGE,
        truncated_warning: str | None = None,
        warnings: Mapping[str, str] | None = None,
    ) -> None:
        set_field(self, "warnings", MappingProxyType(dict(warnings or {})))
        set_field(self, "budgets", MappingProxyType(dict(budgets)))
        set_field(self, "behaviours", MappingProxyType(dict(behaviours)))
        set_field(self, "stop_reasons", MappingProxyType(dict(stop_reasons)))
        set_field(self, "warn_message", warn_message)
        set_field(self, "wrap_up_message", wrap_up_message)
        set_field(self, "truncated_warning", truncated_warning)
