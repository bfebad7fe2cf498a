"""A run's tables: its budgets and their provenance, its budget warnings, its turns, its
children, its ledger."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from budgetconf._report._cost import NOT_REPORTED
from budgetconf._report._runs import Child, RunView, Turn
from budgetconf._report._series import summed, warned
from budgetconf._report._text import attr, breakable, number, percent, text

#: a run longer than this shows its turns folded, to be opened
FOLDED_TURNS: Final = 200
#: the keys every event carries, which a table of an event's own keys leaves out
_STAMPS: Final = frozenset({"type", "run_id", "time"})


def scrolled(table: str) -> str:
    """A table in a box of its own width that scrolls: a table wider than a phone scrolls
    alone, and its words are never broken to fit."""
    return f'<div class="scroll">{table}</div>'


def value(item: object) -> str:
    """One value for a cell: a list joined by "or", an object as its keys, all escaped."""
    if isinstance(item, list):
        return " or ".join(breakable(part, limit=80) for part in item[:20]) or "–"
    if isinstance(item, dict):
        return fields(item)
    return breakable(item)


def fields(items: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """An object's keys and values as ``<dl>``, its keys in the order written."""
    left = set(skip) | _STAMPS
    shown = [
        f"<dt>{breakable(key, 80)}</dt><dd>{value(item)}</dd>"
        for key, item in list(items.items())[:40]
        if key not in left
    ]
    return f'<dl class="fields">{"".join(shown)}</dl>' if shown else ""


def budgets(run: RunView) -> str:
    """The budgets the run enforced, then each tool's own limit: value, field, source,
    locator, what raises each; and the fraction of each that was warned of."""
    rows = []
    for name, limit in run.limits.items():
        entry = run.budgets.get(name)
        entry = entry if isinstance(entry, dict) else {}
        rows.append(_budget_row(f'data-budget="{attr(name)}"', breakable(name), limit, entry))
    for tool in run.tools():
        key = f'data-budget="max_calls_by_tool" data-tool="{attr(tool.name)}"'
        shown = f"calls of {breakable(tool.name)}"
        rows.append(_budget_row(key, shown, tool.limit.get("value", "–"), tool.limit))
    if not rows:
        return '<p class="empty">The events name no budget (no run_started event).</p>'
    head = "<tr><th>budget</th><th>field</th><th>value</th><th>source</th><th>locator</th>"
    rows_shown = "".join(rows)
    table = f'<table class="budgets">{head}<th>raise it with</th></tr>{rows_shown}</table>'
    return scrolled(table) + _warn_at(run)


def _budget_row(key: str, name: str, limit: object, entry: Mapping[str, Any]) -> str:
    raise_with = entry.get("raise_with", [])
    return (
        f"<tr {key}><td>{name}</td>"
        f"<td>{breakable(entry.get('field', ''))}</td><td class=num>{text(limit)}</td>"
        f"<td>{breakable(entry.get('source', ''))}</td>"
        f"<td>{breakable(entry.get('locator', ''))}</td>"
        f"<td>{value(raise_with) if raise_with else '–'}</td></tr>"
    )


def _warn_at(run: RunView) -> str:
    """When the run warned of a budget (``limits.warn_at``), if it was asked to."""
    warn_at = run.warn_at
    if warn_at is None:
        return ""
    return (
        f'<p class="warn-at">Each budget is warned of once, when its use first reaches'
        f" {percent(warn_at)} of its limit (warn_at {number(warn_at)}).</p>"
    )


def warnings(run: RunView) -> str:
    """The run's budget warnings, in the order they came: each budget's first reach of
    ``limits.warn_at`` of its limit."""
    if not run.warnings:
        return ""
    head = "<tr><th>turn</th><th>budget</th><th>field</th><th>used</th><th>limit</th><th>share</th>"
    rows = []
    for event in run.warnings[:2000]:
        fraction = event.get("fraction")
        share = "–" if fraction is None else percent(fraction)
        rows.append(
            f'<tr data-field="{attr(event.get("field", ""))}">'
            f"<td class=num>{text(event.get('turn', '–'))}</td>"
            f"<td>{breakable(event.get('budget', ''))}</td>"
            f"<td>{breakable(event.get('field', ''))}</td>"
            f"<td class=num>{text(event.get('used', '–'))}</td>"
            f"<td class=num>{text(event.get('limit', '–'))}</td><td class=num>{share}</td></tr>"
        )
    table = scrolled(f'<table class="warnings">{head}</tr>{"".join(rows)}</table>')
    return f'<section class="warnings"><h3>Budget warnings</h3>{table}</section>'


def turns(run: RunView) -> str:
    """The turn-by-turn table; folded when the run is long."""
    ordered = [run.turns[n] for n in sorted(run.turns)]
    if not ordered:
        return '<p class="empty">No turn was recorded.</p>'
    charged = run.charged("tokens")
    totals = summed(run, ordered, "tokens", "tokens")
    # where a response was priced, each cost says how it is known: priced or reported
    sourced = any(turn.cost_source == "priced" for turn in ordered)
    said = warned(run)
    rows = [
        _turn_row(turn, so_far, charged.get(turn.number, 0.0), sourced, said.get(turn.number, ()))
        for turn, so_far in zip(ordered, totals, strict=True)
    ]
    head = (
        "<tr><th>turn</th><th>finish reason</th><th>tool calls asked</th><th>executed</th>"
        "<th>not run</th><th>tokens</th><th>tokens so far</th><th>cost</th><th>notes</th>"
        "<th>content</th></tr>"
    )
    table = scrolled(f'<table class="turns">{head}{"".join(rows)}</table>')
    if len(ordered) <= FOLDED_TURNS:
        return table
    return f"<details><summary>{len(ordered):,} turns</summary>{table}</details>"


def _turn_row(
    turn: Turn, so_far: float, children: float, sourced: bool, warnings: Iterable[str]
) -> str:
    asked = ", ".join(turn.asked[:8])
    if len(turn.asked) > 8:
        asked += f" … and {len(turn.asked) - 8} more"
    notes = []
    if turn.notice is not None:
        notes.append(f"last-turn notice ({turn.notice})")
    for kind, event in (("rejected", turn.rejected), ("truncated", turn.truncated)):
        if event is not None:
            notes.append(f"{kind}: {event.get('calls')} calls, cap {event.get('cap')}")
    for event in turn.limited[:8]:
        setting = f"{event.get('field', 'its limit')} = {event.get('value', '?')}"
        count = len(event.get("ids", ()))
        notes.append(f"{event.get('name', '?')}: {count} not executed past its limit ({setting})")
    notes.extend(f"budget warning: {said}" for said in warnings)
    if not turn.responded:
        notes.append("no response recorded")
    if children:
        notes.append(f"children spent {number(_whole(children))} tokens")
    classes = " ".join(
        name
        for name, on in (("rejected", turn.rejected), ("truncated", turn.truncated))
        if on is not None
    )
    return (
        f'<tr class="{classes}" data-turn="{turn.number}"><td class=num>{turn.number:,}</td>'
        f"<td>{breakable(turn.finish_reason or '–')}</td>"
        f"<td>{len(turn.asked)}{': ' + breakable(asked, 120) if asked else ''}</td>"
        f"<td class=num>{turn.executed}</td><td class=num>{turn.refused}</td>"
        f"<td class=num>{number(turn.tokens)}</td><td class=num>{number(so_far)}</td>"
        f"<td class=num>{_cost_cell(turn, sourced)}</td>"
        f"<td>{breakable('; '.join(notes))}</td>"
        f"<td>{text(turn.content, 80)}</td></tr>"
    )


def _cost_cell(turn: Turn, sourced: bool) -> str:
    """A response's cost; with how it is known (``priced``, ``reported``) when ``sourced``."""
    if not turn.cost_reported:
        return NOT_REPORTED
    if not sourced:
        return number(turn.cost)
    source = "priced" if turn.cost_source == "priced" else "reported"
    return f'{number(turn.cost)} <span class="source">{source}</span>'


def _whole(amount: float) -> float:
    return int(amount) if amount == int(amount) else amount


_END_KEYS: Final = ("status", "stop_reason", "turns", "tokens", "cost_usd", "tool_calls_executed")


#: the file's runs by run_id: each one's number on the page, and the run
Known = Mapping[str, tuple[int, RunView]]
#: the keys a child's start and end both carry, which its heading shows once
_CHILD_STAMPS: Final = ("turn", "child_run_id")


def _end_cell(end: Mapping[str, Any], key: str) -> str:
    """A child_end's value; its cost "not reported" when 0 (child_end says not how it is known)."""
    found = end.get(key, "–")
    if key == "cost_usd" and found == 0:
        return NOT_REPORTED
    return value(found)


def children(run: RunView, known: Known) -> str:
    """The run's sub-agents, each a section of its own under the run, named once."""
    if not run.children:
        return ""
    shown = [_child(index, child, known) for index, child in enumerate(run.children, 1)]
    return f'<section class="children"><h3>Children</h3>{"".join(shown)}</section>'


def _child(index: int, child: Child, known: Known) -> str:
    end = child.end
    if end is None:
        verdict = "no end recorded"
        summary = '<p class="empty">The events hold no child_end for this child.</p>'
    else:
        verdict = f"{text(end.get('status', '?'))} · {text(end.get('stop_reason', '?'))}"
        cells = "".join(f"<td>{_end_cell(end, key)}</td>" for key in _END_KEYS)
        head = "".join(f"<th>{breakable(key)}</th>" for key in _END_KEYS)
        summary = scrolled(f'<table class="child-end"><tr>{head}</tr><tr>{cells}</tr></table>')
    limits = child.start.get("limits")
    shown = fields(limits) if isinstance(limits, dict) else '<p class="empty">No limits.</p>'
    extra = fields(child.start, skip=("limits", *_CHILD_STAMPS))
    extra += fields(end or {}, skip=(*_END_KEYS, *_CHILD_STAMPS))
    return (
        f'<section class="child" data-child-run-id="{attr(child.run_id or "")}">'
        f"<h4>Child {index} · {_child_name(child, known)} · {verdict}</h4>"
        f"{_child_turns(child)}{summary}<h5>Limits</h5>{shown}{extra}</section>"
    )


def _child_name(child: Child, known: Known) -> str:
    """The child's name and its run: linked to its own section when the file holds it."""
    ident = child.run_id
    if ident is None:
        return "unnamed"
    found = known.get(ident)
    if found is None:
        return f"run {text(ident, 40)}"
    index, own = found
    name = f"{text(own.name)} " if own.name else ""
    return f'{name}<a href="#run-{index}" title="{attr(ident)}">run {index}</a>'


def _child_turns(child: Child) -> str:
    """When in its parent's run the child began and ended, once."""
    start, end = child.start.get("turn"), (child.end or {}).get("turn")
    said = [f"began in turn {text(start)}"] if start is not None else []
    if end is not None and end != start:
        said.append(f"ended in turn {text(end)}")
    elif end is not None:
        said = [f"ran in turn {text(end)}"]
    return f'<p class="empty">{", ".join(said)}</p>' if said else ""


def ledger(run: RunView) -> str:
    """The shared ledger's events, when the run used one."""
    if not run.ledger:
        return ""
    rows = [
        f"<tr><td>{breakable(event['type'])}</td><td>{fields(event)}</td></tr>"
        for event in run.ledger[:2000]
    ]
    more = len(run.ledger) - len(rows)
    note = f'<p class="empty">… and {more:,} more ledger events.</p>' if more > 0 else ""
    table = scrolled(
        f'<table class="ledger"><tr><th>event</th><th>details</th></tr>{"".join(rows)}</table>'
    )
    return f'<section class="ledger"><h3>Shared ledger</h3>{table}{note}</section>'
