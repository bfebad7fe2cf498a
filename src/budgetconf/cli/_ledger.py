"""``budgetconf ledger status|runs|reset|prune``: the shared ledger that ``ledger.url`` names.

The address, scopes and windows are resolved as ``explain`` resolves them, from
the same options, so the two always agree on which ledger and which scopes.
``status`` and ``runs`` read it (here); ``reset`` and ``prune`` change it
(`budgetconf.cli._ledger_changes`), after asking. Exit 0, or 1 with one line
when the ledger is not set, cannot be reached, counts a scope in another
window than the one configured, or the resolution failed; 64 on a usage error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO

from budgetconf._text import clipped, escape
from budgetconf._text_formats import text_problem
from budgetconf._trace import shown_locator
from budgetconf._values import plain_number
from budgetconf.cli._ledger_changes import WHY_SHOWN, Change, amounts, window_text
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, problems, say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.cli._resolution import resolve
from budgetconf.errors import LedgerConflict, LedgerUnavailable, UsageError

if TYPE_CHECKING:
    from budgetconf._resolution import Resolution
    from budgetconf.ledger import Ledger, LedgerStatus, LedgerURL
    from budgetconf.loop import Limit, ScopeBudget


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``ledger status``, ``runs``, ``reset`` or ``prune``."""
    line.no_app_args()
    ns = line.ns
    change = None
    if ns.view in ("reset", "prune"):
        change = Change.of(line)  # its usage errors before anything is read
    res = resolve(line).res
    if res.errors:
        problems(res, err, warnings=False)
        return EXIT_ERROR
    from budgetconf.loop import LedgerSettings

    settings = LedgerSettings.from_resolution(res)
    if settings is None or settings.address is None:
        say(err, f"budgetconf: error: ledger.url is not set; {_where_to_set(res)}")
        return EXIT_ERROR
    scope = getattr(ns, "scope", None)
    if scope is not None:
        problem = text_problem("ledger-scope", scope)
        if problem is not None:
            named = "SCOPE" if ns.view == "reset" else "--scope"
            raise Usage(f"{named}: {problem}: {clipped(scope, repr)}")
    address = settings.address
    missing = _missing_database(address)
    if missing is not None:
        say(err, f"budgetconf: error: {missing}")
        return EXIT_ERROR
    from budgetconf.ledger import open_ledger

    try:
        with open_ledger(address) as ledger:
            if change is not None:
                return change.carry_out(ledger, out, err)
            if ns.view == "runs":
                return _runs(ledger, scope or settings.scope, ns.limit, ns.format, out)
            return _status(ledger, settings.scopes(), scope, ns.format, out, err)
    except (LedgerUnavailable, LedgerConflict, UsageError) as exc:
        say(err, f"budgetconf: error: {address.conceal(one_line(exc))}")
        return EXIT_ERROR


def _missing_database(address: LedgerURL) -> str | None:
    """Why a ledger in a file cannot be read yet: reading one would create an empty database,
    and a mistyped path would then show a spend of nothing."""
    if address.path is None or os.path.exists(address.path):
        return None
    folder = os.path.dirname(address.path) or "."
    if not os.path.isdir(folder):  # a run could not create it either
        return f"ledger {address.shown} cannot be read: its folder {folder!r} does not exist"
    return f"ledger {address.shown} does not exist yet (a run that draws on it creates it)"


# ---------------------------------------------------------------------------------- status


def _status(
    ledger: Ledger,
    budgets: tuple[ScopeBudget, ...],
    asked: str | None,
    fmt: str,
    out: TextIO,
    err: TextIO,
) -> int:
    """Each scope the run draws on (its own first), or the one ``asked``: a document each, or
    one line per scope that the ledger counts in another window than the one configured."""
    shown: list[tuple[int | None, str, ScopeBudget | None]] = [
        (index, budget.scope, budget)
        for index, budget in enumerate(budgets)
        if asked is None or budget.scope == asked
    ]
    if asked is not None and not shown:  # none of the run's: its recorded window, no maxima
        shown = [(None, asked, None)]
    docs: list[dict[str, Any]] = []
    fields: list[dict[str, str | None]] = []  # the field that set each maximum, for the table
    conflicts: list[str] = []
    for index, scope, budget in shown:
        try:
            status = ledger.status(scope, window=None if budget is None else budget.window)
        except LedgerConflict as exc:
            conflicts.append(_conflict_line(exc, own=index == 0))
            continue
        tokens, cost = (None, None) if budget is None else (budget.max_tokens, budget.max_cost_usd)
        docs.append(status_document(status, tokens, cost))
        fields.append({"tokens": _field(tokens), "cost_usd": _field(cost)})
    if conflicts:
        for text in conflicts:
            say(err, f"budgetconf: error: {text}")
        return EXIT_ERROR
    if fmt == "json":
        write_json({"scopes": docs}, out)
    else:
        _status_table(docs, fields, ledger.url, out)
    return EXIT_OK


def _field(limit: Limit | None) -> str | None:
    return None if limit is None else limit.field


def _conflict_line(exc: LedgerConflict, *, own: bool) -> str:
    """The ledger's refusal, and what to set so that the run's scope is counted in the window
    the ledger recorded: the field the run's own message names too."""
    field = "ledger.window" if own else f"ledger.window_by_scope.{exc.scope}"
    return f"{one_line(exc)}; set {field} = {exc.window!r}"


def status_document(
    status: LedgerStatus, max_tokens: Limit | None, max_cost_usd: Limit | None
) -> dict[str, Any]:
    """One scope's ``ledger status --format json`` document: the status, and each maximum with
    where it was set and what is left of it (maximum - spent - reserved), or null when unset."""
    doc = status.to_dict()
    doc["max"] = {
        key: _maximum(limit, doc["spent"][key] + doc["reserved"][key])
        for key, limit in (("tokens", max_tokens), ("cost_usd", max_cost_usd))
    }
    return doc


def _maximum(limit: Limit | None, used: float) -> dict[str, Any] | None:
    if limit is None:
        return None
    left = limit.value - used
    return {
        "value": limit.value,
        "source": limit.source,
        "locator": shown_locator(limit.locator, limit.via),
        "left": round(left, 12) if isinstance(left, float) else left,
    }


def _status_table(
    docs: list[dict[str, Any]], fields: list[dict[str, str | None]], url: str, out: TextIO
) -> None:
    """The ledger's line, then a block of name and value lines per scope, a blank line between."""
    scopes = (_status_rows(doc, named) for doc, named in zip(docs, fields, strict=True))
    blocks = [[("ledger", url)], *scopes]
    width = max(len(name) for block in blocks for name, _ in block)
    for number, block in enumerate(blocks):
        if number:
            out.write("\n")
        for name, text in block:
            out.write(f"{name.ljust(width)}  {text}\n")


def _status_rows(doc: dict[str, Any], fields: dict[str, str | None]) -> list[tuple[str, str]]:
    """A scope's block; a maximum that another field than ``ledger.NAME`` set names it."""
    rows = [
        ("scope", doc["scope"]),
        ("window", window_text(doc["window"], doc["window_start"], doc["window_ends"])),
        ("spent", amounts(doc["spent"])),
        ("reserved", amounts(doc["reserved"])),
        ("runs", str(doc["runs"])),
    ]
    for key, name in (("cost_usd", "max_cost_usd"), ("tokens", "max_tokens")):
        entry = doc["max"][key]
        if entry is None:
            rows.append((name, "unset"))
            continue
        shown = plain_number(entry["value"])
        left = plain_number(entry["left"])
        field = fields[key]
        named = "" if field in (None, f"ledger.{name}") else f"{field} "
        rows.append((name, f"{shown}, {left} left ({named}from {entry['locator']})"))
    reset = doc["reset"]
    if reset is not None:
        rows.append(("reset", _reset_text(reset)))
    return rows


def _reset_text(reset: dict[str, Any]) -> str:
    """A window's latest reset for a person: when, who, why, and what it had spent."""
    spent = _spent(reset)
    had = "" if spent is None else f"; it had spent {amounts(spent)}"
    return f"{_cell(reset.get('at'))} by {_said(reset)}{had}"


def _said(reset: dict[str, Any]) -> str:
    """``alice@box: refund for a runaway job``: who reset a window and why, on one line."""
    why = clipped(escape(str(reset.get("why")), keep=""), limit=WHY_SHOWN)
    return f"{_cell(reset.get('by'))}: {why}"


def _spent(reset: dict[str, Any]) -> dict[str, Any] | None:
    """What the window had spent when it was reset, when the record says so."""
    spent = reset.get("spent")
    return spent if isinstance(spent, dict) and {"tokens", "cost_usd"} <= set(spent) else None


# ---------------------------------------------------------------------------------- runs


def _runs(ledger: Ledger, scope: str, limit: int, fmt: str, out: TextIO) -> int:
    records = ledger.runs(scope, limit=limit)
    if fmt == "json":
        write_json(records, out)
        return EXIT_OK
    if not records:
        out.write(f"no runs recorded in scope {scope}\n")
        return EXIT_OK
    columns = ("ended", "run_id", "host", "pid", "turns", "tokens", "cost_usd", "stop_reason")
    rows = [columns, *(_row(record, columns) for record in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
    return EXIT_OK


def _row(record: dict[str, Any], columns: tuple[str, ...]) -> tuple[str, ...]:
    """A record's cells; a reset's last cell says who reset the window, why, and its spend
    (the last column, so that its length moves no other)."""
    cells = [_cell(record.get(column)) for column in columns]
    reset = record.get("reset")
    if record.get("stop_reason") == "reset" and isinstance(reset, dict):
        spent = _spent(reset)
        had = "" if spent is None else f" (it had spent {amounts(spent)})"
        cells[-1] = f"reset by {_said(reset)}{had}"
    return tuple(cells)


def _cell(value: object) -> str:
    """A record's field as one cell: its line breaks and tabs escaped, so no field forges a
    row, and cut to the length a message shows."""
    if isinstance(value, float):
        return plain_number(round(value, 6))
    return "" if value is None else clipped(escape(str(value), keep=""))


# ---------------------------------------------------------------------------------- shared


def _where_to_set(res: Resolution) -> str:
    """Where a person sets ``ledger.url`` in the preset: its variables, ``--set``, a file."""
    from budgetconf.loop import LedgerSettings

    field = res.schema.by_path.get(LedgerSettings.path("url"))
    kinds = {report.source for report in res.sources}
    ways = []
    if field is not None and "env" in kinds:
        ways += list(field.env)
    if field is not None and "explicit" in kinds:
        ways.append("--set ledger.url=URL")
    if field is not None and kinds & {"global", "project", "profile"}:
        ways.append("url under [ledger] in a settings file")
    if not ways:
        return f"preset {res.preset!r} has no ledger.url field"
    return "set it with " + (
        ways[0] if len(ways) == 1 else ", ".join(ways[:-1]) + " or " + ways[-1]
    )


def one_line(exc: BaseException) -> str:
    """An error's text on one line."""
    return " ".join(str(exc).split())
