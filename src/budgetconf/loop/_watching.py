"""What a `Meter` watches besides its budgets' totals: each tool's own limit, a warning
before any limit is reached, and calls that repeat without progress.

- ``tools.max_calls``: a call of a tool that has had the calls its limit allows
  is answered as not executed, naming the setting, and the run goes on: the
  model learns that the tool is spent (`_over_tools`).
- ``limits.warn_at``: the first time a run's use of a budget reaches that
  fraction of its limit, one ``budget_warning`` event and one
  `BudgetConfWarning`; with ``loop.warn_model`` the next model call carries
  the same words, in the last-turn notice's place (`_warnings_due`).
- ``loop.max_repeats``: that many consecutive executed calls with the same
  tool name, the same arguments (as canonical JSON) and the same result (the
  same text, or the same exception's type and message) end the run before its
  next model call, ``no_progress`` (`_repeated`).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final

from budgetconf._loop_table import BudgetName, StopReason
from budgetconf._values import plain_number
from budgetconf.events import BUDGET_WARNING, TOOL_LIMITED
from budgetconf.loop._counting import Counting
from budgetconf.loop._response import Call, tool_text

if TYPE_CHECKING:
    from collections.abc import Container, Mapping

    from budgetconf.loop._budget import Budget
    from budgetconf.loop._limit import Limit

_monotonic = time.monotonic
_B = BudgetName

#: how a warning names a budget's unit: `4 of 5 turns used`
_UNITS: Final = {
    _B.MAX_STEPS: "turns",
    _B.MAX_TOOL_CALLS: "tool calls",
    _B.MAX_TOKENS: "tokens",
    _B.MAX_COST_USD: "USD",
    _B.TIMEOUT_SECONDS: "seconds",
}


class Watching(Counting):
    """The part of a `Meter` that watches each tool, warns before a limit and sees a run
    that goes nowhere (see above), from the counts it stands on."""

    __slots__ = (
        "by_tool",
        "repeat",
        "repeats",
        "started_at",
        "tool_limits",
        "unchecked",
        "warn_at",
        "warned",
        "warnings_due",
    )
    by_tool: dict[str, int]  # each tool's calls started this run (a carved child's: since)
    repeat: tuple[str, str, str] | None  # the last executed call: name, arguments, outcome
    repeats: int  # how many consecutive executed calls it has been
    warned: set[str]  # the fields whose limits this run has warned of
    warnings_due: list[str]  # what the next model call tells the model (`loop.warn_model`)
    started_at: float
    tool_limits: Mapping[str, Limit]  # the budget's `tools`: each tool's own limit
    warn_at: float | None  # the budget's: read every turn, so kept at hand
    unchecked: Container[str] | None  # the run's tools, until its limits are checked against them

    if TYPE_CHECKING:  # the Meter's
        stop_next: StopReason | None
        budget: Budget
        run_id: str

        def emit(self, event_type: str, /, **data: Any) -> None: ...

    def _watch(self, tools: Container[str]) -> None:
        """Start watching ``tools`` (which a bridge may fill as it wraps them): nothing
        counted yet."""
        self.by_tool = {}
        self.repeat = None
        self.repeats = 0
        self.warned = set()
        self.warnings_due = []
        self.started_at = _monotonic()
        self.tool_limits = self.budget.tools
        self.warn_at = self.budget.warn_at
        self.unchecked = tools if self.tool_limits else None

    def _check_tools(self) -> None:
        """Before the run's first model call: a limit of a tool the run does not have is a
        warning, when the run says which tools it has (tools are known only at run time)."""
        tools, self.unchecked = self.unchecked, None
        if not isinstance(tools, Collection) or not tools:
            return
        offered = ", ".join(sorted(str(t) for t in tools))
        for name, limit in self.tool_limits.items():
            if name not in tools:
                _warn(
                    f"{limit.field} = {limit.shown()} from {limit.locator}: the run has no tool"
                    f" named {name!r} (its tools: {offered})"
                )

    # -- each tool's own limit ------------------------------------------------------------

    def _over_tools(
        self, batch: tuple[Call, ...], turn: int
    ) -> tuple[tuple[Call, ...], tuple[str | None, ...] | None]:
        """The calls of ``batch`` within their tools' own limits, and the answer of each call
        of ``batch`` (None: it runs), or None when every call is within them."""
        limits = self.tool_limits
        taken: dict[str, int] = {}
        answers: list[str | None] = []
        over: dict[str, list[Call]] = {}
        for call in batch:
            limit = limits.get(call.name)
            if limit is None:
                answers.append(None)
                continue
            used = self.by_tool.get(call.name, 0) + taken.get(call.name, 0)
            if used < limit.value:
                taken[call.name] = taken.get(call.name, 0) + 1
                answers.append(None)
                continue
            over.setdefault(call.name, []).append(call)
            answers.append(_spent_answer(call.name, limit))
        if not over:
            return batch, None
        for name, calls in over.items():
            limit = limits[name]
            ids = [c.id for c in calls]
            self.emit(TOOL_LIMITED, turn=turn, name=name, ids=ids, **limit.to_dict())
        run = tuple(c for c, answer in zip(batch, answers, strict=True) if answer is None)
        return run, tuple(answers)

    def _tool_counted(self, call: Call) -> None:
        """A call of ``call.name`` has started: it counts against the tool's own limit."""
        self.by_tool[call.name] = used = self.by_tool.get(call.name, 0) + 1
        limit = self.tool_limits.get(call.name)
        if limit is not None and self.warn_at is not None:
            self._warn_of(limit, used, f"calls of {call.name}")

    # -- a run that goes nowhere ----------------------------------------------------------

    def _repeated(self, call: Call, error: str | None, value: object) -> None:
        """``call`` ran, and raised ``error`` (its type and message) or returned ``value``:
        the run stops before its next model call when it is the same call with the same
        outcome for the ``max_repeats``-th time in a row."""
        limit = self.limits[_B.MAX_REPEATS]
        seen = (call.name, _canonical(call.arguments), _outcome(error, value))
        if seen == self.repeat:
            self.repeats += 1
        else:
            self.repeat, self.repeats = seen, 1
        if self.repeats >= limit and self.stop_next is None:
            self.stop_next = StopReason.NO_PROGRESS  # type: ignore[misc]  # a slot of the Meter

    def no_progress(self) -> str:
        """What a ``no_progress`` stop says of the call that repeated."""
        assert self.repeat is not None, "a no-progress stop follows a repeated call"
        name, arguments, _ = self.repeat
        secret = self.budget.limits[_B.MAX_REPEATS].secret  # the count would tell its value
        count = "again and again" if secret else f"{self.repeats} times"
        return (
            f"{name}({arguments}) ran {count} in a row with the same arguments and the same result"
        )

    # -- warnings before a limit ----------------------------------------------------------

    def _check_warnings(self) -> None:
        """Each budget the run has whose use has first reached ``warn_at`` of its limit."""
        limits = self.budget.limits
        used: dict[str, int | float] = {
            _B.MAX_STEPS: self.turns,
            _B.MAX_TOOL_CALLS: self.executed,
            _B.MAX_TOKENS: self.tokens,
            _B.MAX_COST_USD: self.cost,
            _B.TIMEOUT_SECONDS: _monotonic() - self.started_at,
        }
        for name, unit in _UNITS.items():
            limit = limits.get(name)
            if limit is not None:
                self._warn_of(limit, used[name], unit)

    def _warn_of(self, limit: Limit, used: int | float, unit: str) -> None:
        """The warning of ``limit``, once a run, when ``used`` has reached its fraction."""
        warn_at = self.warn_at
        assert warn_at is not None
        if limit.field in self.warned or not limit.value or used < warn_at * limit.value:
            return
        self.warned.add(limit.field)
        shown = round(used, 2) if isinstance(used, float) else used
        words = (
            f"{plain_number(shown)} of {limit.shown()} {unit} used:"
            f" {limit.field} = {limit.shown()} from {limit.locator}"
        )
        self.emit(
            BUDGET_WARNING,
            turn=self.turns,
            budget=str(limit.budget),
            field=limit.field,
            used=shown,
            limit=limit.public_value,
            fraction=None if limit.secret else round(used / limit.value, 4),
        )
        _warn(f"budget warning: {words}")
        if self.budget.warn_model:
            self.warnings_due.append(words)

    def _warnings_due(self) -> str | None:
        """The warnings the next model call tells the model, once; None when there are none."""
        due = self.warnings_due
        if not due:
            return None
        self.warnings_due = []
        return "\n".join(due)


def _spent_answer(name: str, limit: Limit) -> str:
    """The answer of a call of a tool whose own limit is spent."""
    shown = limit.shown()
    return (
        f"not executed: {name} may run {shown} times in a run, and has"
        f" ({limit.field} = {shown} from {limit.locator}); it will not run again in this run"
    )


def _outcome(error: str | None, value: object) -> str:
    """A call's outcome, to compare with the last one's: what it raised, or its text."""
    if error is not None:
        return f"raised {error}"
    try:
        return f"returned {tool_text(value)}"
    except Exception:  # the value's own methods (__str__, say) are the tool's code
        return f"returned an unwritable {type(value).__name__} at {id(value)}"


def _canonical(arguments: object) -> str:
    """A call's arguments as canonical JSON: keys sorted, no spaces."""
    import json

    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(arguments)


def _warn(message: str) -> None:
    import warnings

    from budgetconf.errors import BudgetConfWarning

    warnings.warn(message, BudgetConfWarning, stacklevel=4)
