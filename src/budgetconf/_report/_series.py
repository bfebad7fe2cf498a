"""A run's charts: what each enforced budget used, turn by turn, against its limit, and
what each tool with a limit of its own ran against it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from budgetconf._report._charts import Chart, Mark, ToolBar
from budgetconf._report._runs import RunView, ToolUse, Turn
from budgetconf._report._text import number, percent

#: the most tools whose bars a run draws (the budgets table lists every one)
MOST_TOOLS: Final = 40


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
    for at, said in warned(run).items():
        when = f"turn {at}" if at else "before turn 1"
        marks.append(Mark(at, "warning", f"{when}: budget warning: {'; '.join(said)}"))
    exhausted = run.exhausted or {}
    stop = exhausted.get("turn")
    if isinstance(stop, int) and turns:
        reason = exhausted.get("stop_reason", "a budget")
        field = exhausted.get("field")
        setting = f" ({field} = {exhausted.get('value', '?')})" if isinstance(field, str) else ""
        marks.append(Mark(stop, "stop", f"turn {stop}: stopped by {reason}{setting}"))
    return marks


def warning(event: Mapping[str, Any]) -> str:
    """A budget warning in words: ``loop.max_steps: 8 of 10 used (80%)``."""
    field = event.get("field", event.get("budget", "a budget"))
    used, limit, fraction = event.get("used"), event.get("limit", "?"), event.get("fraction")
    shown = "?" if used is None else number(used) if isinstance(used, int | float) else used
    of = number(limit) if isinstance(limit, int | float) and not isinstance(limit, bool) else limit
    said = f"{field}: {shown} of {of} used"
    if isinstance(fraction, int | float) and not isinstance(fraction, bool):
        said += f" ({percent(fraction)})"
    return said


def warned(run: RunView) -> dict[int, list[str]]:
    """The run's budget warnings in words, by the turn each came in (0: before the first)."""
    found: dict[int, list[str]] = {}
    for event in run.warnings:
        turn = event.get("turn")
        if isinstance(turn, int):
            found.setdefault(turn, []).append(warning(event))
    return found


def tool_bars(run: RunView, runs: Mapping[str, RunView]) -> list[ToolBar]:
    """A bar for each tool with a limit of its own: its calls that ran against the limit (its
    children's among them, as the loop counts them), and those answered past it."""
    bars = []
    theirs = _children_calls(run, runs, {run.run_id or ""})
    for tool in run.tools()[:MOST_TOOLS]:
        by_children = theirs.get(tool.name, 0)
        bars.append(_bar(tool, tool.executed + by_children, by_children))
    return bars


def _bar(tool: ToolUse, executed: int, by_children: int) -> ToolBar:
    value = tool.limit.get("value", "?")
    limit = _limit(value)
    if limit is not None:
        ran = f"{_count(executed)} of {_count(limit)} calls ran"
    else:  # a secret's limit (***): named, never drawn
        ran = f"{_count(executed)} call{'' if executed == 1 else 's'} ran (limit {value})"
    if by_children:
        ran += f" ({_count(by_children)} by its children)"
    past = f", {_count(tool.limited)} not executed past it" if tool.limited else ""
    title = f"{tool.name}: {ran}{past} ({tool.field})"
    return ToolBar(tool.name, title, executed, tool.limited, limit, _count)


def _children_calls(run: RunView, runs: Mapping[str, RunView], seen: set[str]) -> dict[str, int]:
    """Each tool's calls that the run's children ran (and theirs), from the children's own
    runs the file holds: a child's call counts against every run it was carved from."""
    found: dict[str, int] = {}
    for child in run.children:
        own = runs.get(child.run_id or "")
        if own is None or child.run_id in seen:
            continue
        seen.add(own.run_id or "")
        for counts in (own.tool_calls, _children_calls(own, runs, seen)):
            for name, count in counts.items():
                found[name] = found.get(name, 0) + count
    return found
