"""A run's charts: what each enforced budget used, turn by turn, against its limit."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from budgetconf._report._charts import Chart, Mark
from budgetconf._report._read import RunView, Turn
from budgetconf._report._text import number


def _count(value: float) -> str:
    return number(int(value)) if value == int(value) else number(value)


def _dollars(value: float) -> str:
    return "$" + number(round(value, 6))


def _seconds(value: float) -> str:
    return number(round(value, 3)) + " s"


#: budget -> (what it counts, how a value is shown), in the order the page draws them
_BUDGETS: Final[dict[str, tuple[str, Callable[[float], str]]]] = {
    "max_steps": ("turns", _count),
    "max_tokens": ("tokens", _count),
    "max_cost_usd": ("cost", _dollars),
    "max_tool_calls": ("tool calls", _count),
    "timeout_seconds": ("time", _seconds),
    "max_tool_calls_per_turn": ("tool calls per response", _count),
}


def _limit(value: object) -> float | None:
    """A limit the chart can draw: a number (``***``, a secret's, draws none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def charts(run: RunView) -> list[Chart]:
    """One chart per budget the run enforced, in a fixed order."""
    turns = [run.turns[n] for n in sorted(run.turns)]
    numbers = [t.number for t in turns]
    marks = _marks(run, turns)
    found = []
    for budget, (what, show) in _BUDGETS.items():
        if budget not in run.limits:
            continue
        values, limit = _values(run, budget, turns)
        drawn = numbers
        if budget == "timeout_seconds":
            drawn = [t.number for t in turns if t.time is not None] if values else []
        if budget == "max_cost_usd" and not _cost_known(run):
            drawn, values = [], []  # a line at 0 would say it cost nothing
        title = _title(run, budget, values, limit)
        chart = Chart(budget, title, drawn, values, limit, show, bars=what.endswith("response"))
        chart.marks = marks
        chart.integral = show is _count
        chart.span = (numbers[0], numbers[-1]) if numbers else None
        found.append(chart)
    return found


def _title(run: RunView, budget: str, values: list[float], limit: float | None) -> str:
    """``tokens: 2,400 of 10,000 (limits.max_tokens)``: what was used, of what, by which field."""
    what, show = _BUDGETS[budget]
    entry = run.budgets.get(budget)
    field = entry.get("field", budget) if isinstance(entry, dict) else budget
    of = f" of {show(limit)}" if limit is not None else f" (limit {run.limits[budget]})"
    if budget == "max_tool_calls_per_turn":
        most = show(max(values)) if values else "none"
        return f"{what}: at most {most} asked, cap{of.removeprefix(' of')} ({field})"
    used = show(values[-1]) if values else "nothing"
    if budget == "max_cost_usd" and not _cost_known(run):
        used = "not reported"
    return f"{what}: {used}{of} ({field})"


def _cost_known(run: RunView) -> bool:
    """Whether any response of the run, or a child's spend, reported a cost."""
    return any(t.cost_reported for t in run.turns.values()) or any(run.charged("cost_usd").values())


def _values(run: RunView, budget: str, turns: list[Turn]) -> tuple[list[float], float | None]:
    """What ``budget`` had used after each turn, and its limit on the same scale."""
    limit = _limit(run.limits[budget])
    if budget == "max_steps":
        return [float(t.number) for t in turns], _shifted(limit, run.carried_over("turns"))
    if budget == "max_tool_calls_per_turn":
        return [float(len(t.asked)) for t in turns], limit
    if budget == "timeout_seconds":
        begun = (run.started or {}).get("time")
        if not isinstance(begun, float | int):
            return [], limit
        return [max(t.time - begun, 0.0) for t in turns if t.time is not None], limit
    key, attribute = _SUMMED[budget]
    return summed(run, turns, key, attribute), limit


def summed(run: RunView, turns: list[Turn], key: str, attribute: str) -> list[float]:
    """A total after each turn: what the run carried over, its turns' own amounts, and what
    its children spent (the loop charges it to the run, and stops the run on it)."""
    total = run.carried_over(key)
    charged = run.charged(key)
    early = sum(v for at, v in charged.items() if at < (turns[0].number if turns else 0))
    late = sum(v for at, v in charged.items() if turns and at > turns[-1].number)
    total += early
    values = []
    for turn in turns:
        total += getattr(turn, attribute) + charged.get(turn.number, 0.0)
        values.append(total)
    if values:
        values[-1] += late
    return values


#: the budgets a run's total counts: the key of carried_over, and the turn's own amount
_SUMMED: Final = {
    "max_tokens": ("tokens", "tokens"),
    "max_cost_usd": ("cost_usd", "cost"),
    "max_tool_calls": ("tool_calls_executed", "executed"),
}


def _shifted(limit: float | None, by: float) -> float | None:
    """A resumed run's step budget counts from the turns it carries over."""
    return None if limit is None else limit + by


def _marks(run: RunView, turns: list[Turn]) -> list[Mark]:
    marks = []
    for turn in turns:
        if turn.notice is not None:
            marks.append(Mark(turn.number, "notice", f"turn {turn.number}: last-turn notice"))
        if turn.rejected is not None:
            calls, cap = turn.rejected.get("calls"), turn.rejected.get("cap")
            why = f"turn {turn.number}: response rejected ({calls} calls, cap {cap})"
            marks.append(Mark(turn.number, "rejected", why))
        if turn.truncated is not None:
            calls, cap = turn.truncated.get("calls"), turn.truncated.get("cap")
            why = f"turn {turn.number}: response truncated ({calls} calls, cap {cap})"
            marks.append(Mark(turn.number, "truncated", why))
    stop = (run.exhausted or {}).get("turn")
    if isinstance(stop, int) and turns:
        reason = (run.exhausted or {}).get("stop_reason", "a budget")
        marks.append(Mark(stop, "stop", f"turn {stop}: stopped by {reason}"))
    return marks
