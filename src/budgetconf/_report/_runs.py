"""A run as its events tell it: its turns, its children, its tools and its warnings.

`RunView` is what the page draws of one run, `Turn` what one turn did and
`Child` a sub-agent the run started; `_read` gathers them from the events.
Each reads its ``run_started`` defensively: a key of the wrong kind reads as
absent, so the page draws nothing of it rather than failing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from budgetconf.events import version_of

#: the cost_source of a response whose cost is known ("none": its cost_usd 0 is no cost)
KNOWN_COST: Final = frozenset({"reported", "priced"})
#: the loop table's key of each tool's own limit (``tools.max_calls``), as a warning names it
TOOL_BUDGET: Final = "max_calls_by_tool"


@dataclass(slots=True)
class Turn:
    """What one turn did, gathered from its events."""

    number: int
    finish_reason: str | None = None
    asked: list[str] = field(default_factory=list)  # the names of the calls the model asked for
    executed: int = 0  # calls that ran (or started, when abandoned)
    refused: int = 0  # calls answered without running
    tokens: float = 0
    cost: float = 0.0
    cost_reported: bool = False  # whether its response's cost was known (reported or priced)
    cost_usd: float = 0  # cost_usd as the event holds it: an integer stays exact
    cost_source: str | None = None  # as the event says (version 1: none said)
    model: str | None = None  # the model its response names
    # its input (cached included), cached input and output tokens; None: the event gives none
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    content: str = ""
    time: float | None = None  # when the response was read
    rejected: dict[str, Any] | None = None  # the batch_rejected event
    truncated: dict[str, Any] | None = None  # the batch_truncated event
    notice: str | None = None  # the kind of the last-turn notice it carried
    limited: list[dict[str, Any]] = field(default_factory=list)  # its tool_limited events
    responded: bool = False


@dataclass(slots=True)
class Child:
    """A sub-agent the run started: its limits, and how it ended (None: no end recorded)."""

    start: dict[str, Any]
    end: dict[str, Any] | None = None

    @property
    def run_id(self) -> str | None:
        """The ``run_id`` of the child's own events, as its start or end names it."""
        found = self.start.get("child_run_id", (self.end or {}).get("child_run_id"))
        return found if isinstance(found, str) else None


@dataclass(slots=True)
class ToolUse:
    """One tool with a limit of its own: the calls that ran, and those answered as not
    executed past the limit, with the limit's keys (``field``, ``value``, ``source``, ...)."""

    name: str
    limit: dict[str, Any]
    executed: int = 0
    limited: int = 0

    @property
    def field(self) -> str:
        found = self.limit.get("field")
        return found if isinstance(found, str) else f"tools.max_calls.{self.name}"


@dataclass(slots=True)
class RunView:
    """One run as its events tell it."""

    run_id: str | None
    first_line: int
    started: dict[str, Any] | None = None
    stopped: dict[str, Any] | None = None
    exhausted: dict[str, Any] | None = None  # the budget_exhausted event
    turns: dict[int, Turn] = field(default_factory=dict)
    children: list[Child] = field(default_factory=list)
    ledger: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # its budget_warning events
    # each tool's calls that ran (or started, when abandoned), by its name
    tool_calls: dict[str, int] = field(default_factory=dict)
    # each tool's calls answered as not executed past its own limit, and its last such event
    limited_calls: dict[str, int] = field(default_factory=dict)
    limited_by: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: int = 0

    def turn(self, number: int) -> Turn:
        found = self.turns.get(number)
        if found is None:
            found = self.turns[number] = Turn(number)
        return found

    @property
    def name(self) -> str | None:
        """The run's name (``name=``, else its preset's), as its run_started gives it."""
        found = (self.started or {}).get("name")
        return found if isinstance(found, str) and found else None

    @property
    def version(self) -> int:
        """The vocabulary its events were recorded in: 1 for a run that says none."""
        return version_of(self.started or {})

    @property
    def prices(self) -> dict[str, Any] | None:
        """The price in force, as run_started's ``prices`` names it; None: none was in force,
        or its events name none (see `prices_named`)."""
        found = (self.started or {}).get("prices")
        return found if isinstance(found, dict) else None

    @property
    def prices_named(self) -> bool:
        """Whether its run_started says what price was in force (its events are recent enough
        to have ``prices``, null included)."""
        return "prices" in (self.started or {})

    @property
    def limits(self) -> dict[str, Any]:
        limits = (self.started or {}).get("limits")
        return limits if isinstance(limits, dict) else {}

    @property
    def budgets(self) -> dict[str, Any]:
        budgets = (self.started or {}).get("budgets")
        return budgets if isinstance(budgets, dict) else {}

    @property
    def carried(self) -> dict[str, Any]:
        carried = (self.started or {}).get("carried_over")
        return carried if isinstance(carried, dict) else {}

    @property
    def warn_at(self) -> float | None:
        """``limits.warn_at`` as run_started gives it: None when no warning was asked for."""
        found = (self.started or {}).get("warn_at")
        return found if isinstance(found, int | float) and not isinstance(found, bool) else None

    def tools(self) -> list[ToolUse]:
        """Each tool with a limit of its own, in the order run_started names them (then any
        that only a tool_limited event names), with what the run did of it."""
        named = (self.started or {}).get("tools")
        limits: dict[str, dict[str, Any]] = {}
        for name, limit in (named if isinstance(named, dict) else {}).items():
            limits[name] = limit if isinstance(limit, dict) else {}
        for name, event in self.limited_by.items():
            limits.setdefault(name, {k: v for k, v in event.items() if k in _LIMIT_KEYS})
        return [
            ToolUse(name, limit, self.tool_calls.get(name, 0), self.limited_calls.get(name, 0))
            for name, limit in limits.items()
        ]

    def charged(self, key: str) -> dict[int, float]:
        """What its children spent (``tokens``, ``cost_usd``, ``tool_calls_executed``), by the
        turn each ended in: the loop charges a child's spend to its parent as it happens."""
        found: dict[int, float] = {}
        last = max(self.turns, default=0)
        for child in self.children:
            spent = (child.end or {}).get(key)
            if isinstance(spent, int | float) and spent:
                turn = (child.end or {}).get("turn")
                at = turn if isinstance(turn, int) else last  # no turn: the run's last
                found[at] = found.get(at, 0.0) + float(spent)
        return found

    def carried_over(self, key: str) -> float:
        """What a resumed run started from (``tokens``, ``turns``, ...): 0 unless a number."""
        found = self.carried.get(key, 0)
        if isinstance(found, bool) or not isinstance(found, int | float):
            return 0.0
        return float(found) if math.isfinite(found) and found >= 0 else 0.0


#: the keys of a limit, as a tool_limited event repeats them
_LIMIT_KEYS: Final = ("field", "value", "source", "locator", "raise_with")
