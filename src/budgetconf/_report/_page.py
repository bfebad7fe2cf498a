"""The report: one self-contained HTML page of an events file's runs.

The page has no script, loads nothing (its Content-Security-Policy forbids
every fetch, and it names no external style, font or image), and draws its
charts as inline SVG, so it opens from disk in any browser and shows the
same there as in a CI job's artifacts. Each run shows its stop first, then a
chart per enforced budget and a bar per tool with a limit of its own, its
cost by input, cached input and output at the price in force, the budgets
with their provenance, its budget warnings, its children, its ledger and its
turns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from budgetconf._report import _cost, _tables
from budgetconf._report._charts import svg, tool_svg
from budgetconf._report._read import Bad, Events
from budgetconf._report._runs import RunView
from budgetconf._report._series import charts, tool_bars
from budgetconf._report._text import attr, breakable, text

#: bad lines the page lists (stderr has them all)
SHOWN_BAD: Final = 50

_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:76em;padding:0 1em;
color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.25em;margin:0}h3{font-size:1.05em}
h1,h2{overflow-wrap:anywhere}
header p,.empty{color:#5b6474}
.run{border-top:2px solid #d8dde6;margin-top:1.5em;padding-top:1em}
.stop{border-left:6px solid #8a94a6;background:#f5f7fa;padding:.6em 1em;margin:.8em 0}
.stop.truncated{border-color:#d08700}.stop.failed{border-color:#c62828}
.stop.blocked{border-color:#6a1b9a}.stop.ok{border-color:#2e7d32}
.verdict{font-size:1.1em;margin:0}.status{font-weight:700;text-transform:uppercase}
.message{font-family:ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.note{font-weight:600}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border-bottom:1px solid #e3e7ee;padding:.2em .6em;text-align:left;vertical-align:top}
th{white-space:nowrap}td{overflow-wrap:break-word}
.scroll{overflow-x:auto;max-width:100%}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr.rejected{background:#fdecea}tr.truncated{background:#fff4e0}
dl.fields{display:grid;grid-template-columns:max-content auto;gap:0 .8em;margin:.3em 0}
dl.fields dt{color:#5b6474}dl.fields dd{margin:0;overflow-wrap:break-word;min-width:0}
.charts{display:flex;flex-wrap:wrap;gap:.5em 1.5em}
figure{margin:.4em 0}figcaption{font-weight:600;overflow-wrap:break-word;max-width:480px}
svg.chart{background:#fafbfc;border:1px solid #e3e7ee;max-width:100%;height:auto}
svg .axis{stroke:#8a94a6}svg .tick,svg .limit-label{font-size:11px;fill:#5b6474}
svg .used{fill:none;stroke:#1f6feb;stroke-width:2}svg .bar,svg .point{fill:#1f6feb}
svg .limit{stroke:#c62828;stroke-width:1.5;stroke-dasharray:6 4}
svg .mark-notice{stroke:#d08700;stroke-dasharray:3 3}svg .mark-stop{stroke:#c62828}
svg .mark-rejected{fill:#c62828}svg .mark-truncated{fill:#d08700}
svg .mark-warning{stroke:#e65100;stroke-width:2;stroke-dasharray:1 3}
svg .bar-limited{fill:#d08700;fill-opacity:.55;stroke:#d08700}
.price{overflow-wrap:anywhere}.source{color:#5b6474}
.children{margin-left:1.5em}.child{border-left:3px solid #d8dde6;padding-left:1em}
.problems{background:#fdecea;padding:.4em 1em}
"""


def render(name: str, events: Events) -> str:
    """The page of ``events``, read from the file called ``name``."""
    known = {run.run_id: (i, run) for i, run in enumerate(events.runs, 1) if run.run_id}
    parents = {
        child.run_id: i
        for i, run in enumerate(events.runs, 1)
        for child in run.children
        if child.run_id is not None
    }
    runs = "".join(
        _run(run, i, known, parents.get(run.run_id or "")) for i, run in enumerate(events.runs, 1)
    )
    title = f"budgetconf report: {name}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
        " style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{text(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{text(title)}</h1>{_summary(events)}</header>"
        f"{_problems(events.bad)}{_index(events.runs)}{runs}</body></html>\n"
    )


def _summary(events: Events) -> str:
    runs = len(events.runs)
    bad = len(events.bad)
    parts = [f"{runs} run{'' if runs == 1 else 's'}", f"{events.lines:,} lines"]
    if bad:
        parts.append(f"{bad} bad line{'' if bad == 1 else 's'}")
    return f'<p class="summary">{" · ".join(parts)}</p>'


def _problems(bad: list[Bad]) -> str:
    if not bad:
        return ""
    items = "".join(f"<li>line {b.line}: {text(b.why)}</li>" for b in bad[:SHOWN_BAD])
    more = f"<p>… and {len(bad) - SHOWN_BAD} more.</p>" if len(bad) > SHOWN_BAD else ""
    return (
        '<section class="problems"><h2>Lines that are not events</h2>'
        f"<p>They were left out; the runs below are drawn from the others.</p>"
        f"<ul>{items}</ul>{more}</section>"
    )


def _index(runs: list[RunView]) -> str:
    """The list of runs, when the file holds more than one."""
    if len(runs) < 2:
        return ""
    rows = []
    for i, run in enumerate(runs, 1):
        stopped = run.stopped or {}
        rows.append(
            f'<tr><td><a href="#run-{i}">run {i}</a></td><td>{_when(run)}</td>'
            f"<td>{text((run.started or {}).get('preset', '–'))}</td>"
            f"<td>{text(stopped.get('status', 'unfinished'))}</td>"
            f"<td>{text(stopped.get('stop_reason', '–'))}</td>"
            f"<td class=num>{text(stopped.get('turns', len(run.turns)))}</td></tr>"
        )
    head = (
        "<tr><th>run</th><th>started</th><th>preset</th><th>status</th><th>stop reason</th>"
        "<th>turns</th></tr>"
    )
    table = _tables.scrolled(f"<table>{head}{''.join(rows)}</table>")
    return f'<nav class="runs"><h2>Runs</h2>{table}</nav>'


def _when(run: RunView) -> str:
    """When the run began, in UTC, from its first event's time."""
    moment = (run.started or {}).get("time")
    if not isinstance(moment, int | float):
        return "–"
    try:
        return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):  # a year past 9999
        return text(moment)


def _run(run: RunView, index: int, known: _tables.Known, parent: int | None) -> str:
    """One run's section; a sub-agent's says whose child it is, and links to its parent."""
    anchor = f"run-{index}"
    started = run.started or {}
    ident = f" · {text(run.run_id, 40)}" if run.run_id else ""
    if parent is not None:
        ident = (
            f" · {text(run.name or 'child')} · child of"
            f' <a href="#run-{parent}">run {parent}</a>{ident}'
        )
    shown = "".join(
        f"<figure><figcaption>{breakable(chart.title)}</figcaption>{svg(chart)}</figure>"
        for chart in charts(run)
    )
    by_id = {ident: found for ident, (_, found) in known.items()}
    shown += "".join(
        f'<figure class="tool"><figcaption>{breakable(bar.title)}</figcaption>'
        f"{tool_svg(bar)}</figure>"
        for bar in tool_bars(run, by_id)
    )
    drawn = shown or '<p class="empty">No budget to draw.</p>'
    return (
        f'<section class="run" id="{attr(anchor)}" data-run-id="{attr(run.run_id or "")}">'
        f"<h2>Run {index}{ident}</h2>"
        f'<p class="empty">preset {text(started.get("preset", "–"))} · started {_when(run)}'
        f" · from line {run.first_line:,}</p>"
        f"{_stop(run)}"
        f'<section><h3>Budgets used</h3><div class="charts">{drawn}</div></section>'
        f"{_cost.section(run)}"
        f"<section><h3>Budgets and where they were set</h3>{_tables.budgets(run)}</section>"
        f"{_tables.warnings(run)}{_tables.children(run, known)}{_tables.ledger(run)}"
        f"<section><h3>Turns</h3>{_tables.turns(run)}</section></section>"
    )


#: the limit's keys a stop shows first, in this order; the rest follow as written
_LIMIT_KEYS: Final = ("field", "value", "source", "locator", "raise_with")
#: the keys of budget_exhausted that are the event's, not the limit's
_NOT_LIMIT: Final = ("turn", "stop_reason")


def _stop(run: RunView) -> str:
    """How the run ended: status, stop reason, the stop message, and the limit that did it."""
    stopped = run.stopped
    if stopped is None:
        return (
            '<section class="stop unfinished"><p class="verdict"><span class="status">'
            "unfinished</span></p><p>The events end before the run did: no stopped event."
            "</p></section>"
        )
    status = stopped.get("status", "?")
    turns = stopped.get("turns")
    after = f" after {text(turns)} turn{'' if turns == 1 else 's'}" if turns is not None else ""
    parts = [
        f'<section class="stop {attr(status)}"><p class="verdict"><span class="status">'
        f'{text(status)}</span> · <span class="reason">{text(stopped.get("stop_reason", "?"))}'
        f"</span>{after}</p>",
        f'<p class="message">{text(stopped.get("message", ""), limit=2000)}</p>',
    ]
    limit = run.exhausted
    if limit is not None:
        first: dict[str, object] = {key: limit[key] for key in _LIMIT_KEYS if key in limit}
        rest = {k: v for k, v in limit.items() if k not in first and k not in _NOT_LIMIT}
        parts.append(_tables.fields({**first, **rest}))
        parts.append(_no_progress(run, limit))
        parts.append(_whose(limit))
    parts.append("</section>")
    return "".join(parts)


def _no_progress(run: RunView, limit: dict[str, object]) -> str:
    """What a ``no_progress`` stop means, naming its setting (``loop.max_repeats``): the stop
    whose reason says so, or whose field is the one the run's ``max_repeats`` budget names."""
    entry = run.budgets.get("max_repeats")
    field = entry.get("field") if isinstance(entry, dict) else None
    if limit.get("stop_reason") != "no_progress" and (field is None or limit.get("field") != field):
        return ""
    setting = f"{limit.get('field', field or 'loop.max_repeats')} = {limit.get('value', '?')}"
    note = (
        f"No progress ({setting}): the same tool call, one tool with the same arguments, ran"
        " that many times in a row with the same result each time, so the run was stopped"
        " before its next model call."
    )
    return f'<p class="note no-progress">{text(note, limit=400)}</p>'


def _amount(limit: dict[str, object], key: str, missing: object) -> str:
    """``$49.97`` of a cost maximum (its field in US dollars), ``812 tokens`` of a token one,
    as the stop message says them; anything but a number as it came."""
    amount = limit.get(key, missing)
    if not isinstance(amount, int | float) or isinstance(amount, bool):
        return text(amount)
    if str(limit.get("field", "")).endswith("_usd"):
        return text(f"${amount}")
    return text(f"{amount} tokens")


def _whose(limit: dict[str, object]) -> str:
    """What the page says of a limit no user setting can raise: a policy's, a ledger's."""
    scope = limit.get("scope")
    if scope == "ledger":
        ends = limit.get("window_ends")
        spent, reserved = _amount(limit, "spent", "?"), _amount(limit, "reserved", 0)
        note = f"A shared ledger's limit: its scope has spent {spent} with {reserved} reserved" + (
            f"; the window ends {text(ends)}." if ends is not None else "."
        )
        return f'<p class="note">{note}</p>'
    if limit.get("source") == "policy":
        note = "This limit is the policy's: only its administrator can raise it."
    elif scope == "parent":
        note = "The parent run's remainder ran out: the limit is the parent's."
    else:
        return ""
    return f'<p class="note">{text(note)}</p>'
