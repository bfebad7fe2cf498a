"""``budgetconf ledger status|runs``: the shared ledger that ``ledger.url`` names, read.

The address, scope and window are resolved as ``explain`` resolves them, from
the same options, so the two always agree on which ledger and which scope.
Exit 0, or 1 with one line when the ledger is not set, cannot be reached, or
the resolution failed; 64 on a usage error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO

from budgetconf._text import clipped, escape
from budgetconf._text_formats import text_problem
from budgetconf._trace import shown_locator
from budgetconf._values import plain_number
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, problems, say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.cli._resolution import resolve
from budgetconf.errors import LedgerUnavailable, UsageError

if TYPE_CHECKING:
    from budgetconf._resolution import Resolution
    from budgetconf.ledger import Ledger, LedgerStatus, LedgerURL
    from budgetconf.loop import LedgerSettings, Limit


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``ledger status`` or ``ledger runs``."""
    line.no_app_args()
    res = resolve(line).res
    if res.errors:
        problems(res, err, warnings=False)
        return EXIT_ERROR
    from budgetconf.loop import LedgerSettings

    settings = LedgerSettings.from_resolution(res)
    if settings is None or settings.address is None:
        say(err, f"budgetconf: error: ledger.url is not set; {_where_to_set(res)}")
        return EXIT_ERROR
    scope = line.ns.scope or settings.scope
    problem = text_problem("ledger-scope", scope)
    if problem is not None:
        raise Usage(f"--scope: {problem}: {clipped(scope, repr)}")
    address = settings.address
    missing = _missing_database(address)
    if missing is not None:
        say(err, f"budgetconf: error: {missing}")
        return EXIT_ERROR
    from budgetconf.ledger import open_ledger

    try:
        with open_ledger(address) as ledger:
            if line.ns.view == "runs":
                return _runs(ledger, scope, line.ns.limit, line.ns.format, out)
            doc = status_document(settings, ledger.status(scope, window=settings.window))
    except (LedgerUnavailable, UsageError) as exc:
        say(err, f"budgetconf: error: {address.conceal(_one_line(exc))}")
        return EXIT_ERROR
    if line.ns.format == "json":
        write_json(doc, out)
    else:
        _status_table(doc, address.shown, out)
    return EXIT_OK


def _missing_database(address: LedgerURL) -> str | None:
    """Why a ledger in a file cannot be read yet: reading one would create an empty database,
    and a mistyped path would then show a spend of nothing."""
    if address.path is None or os.path.exists(address.path):
        return None
    folder = os.path.dirname(address.path) or "."
    if not os.path.isdir(folder):  # a run could not create it either
        return f"ledger {address.shown} cannot be read: its folder {folder!r} does not exist"
    return f"ledger {address.shown} does not exist yet (a run that draws on it creates it)"


def status_document(settings: LedgerSettings, status: LedgerStatus) -> dict[str, Any]:
    """The ``ledger status --format json`` document: the status, and each maximum with where it
    was set and what is left of it (maximum - spent - reserved), or null when unset."""
    doc = status.to_dict()
    doc["max"] = {
        key: _maximum(limit, doc["spent"][key] + doc["reserved"][key])
        for key, limit in (("tokens", settings.max_tokens), ("cost_usd", settings.max_cost_usd))
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


def _status_table(doc: dict[str, Any], url: str, out: TextIO) -> None:
    window = doc["window"]
    if doc["window_start"] is not None:
        window += f", {doc['window_start']} to {doc['window_ends']}"
    rows = [
        ("ledger", url),
        ("scope", doc["scope"]),
        ("window", window),
        ("spent", _amounts(doc["spent"])),
        ("reserved", _amounts(doc["reserved"])),
        ("runs", str(doc["runs"])),
    ]
    for key, name in (("cost_usd", "max_cost_usd"), ("tokens", "max_tokens")):
        entry = doc["max"][key]
        if entry is None:
            rows.append((name, "unset"))
            continue
        shown = plain_number(entry["value"])
        left = plain_number(entry["left"])
        rows.append((name, f"{shown}, {left} left (from {entry['locator']})"))
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        out.write(f"{name.ljust(width)}  {text}\n")


def _amounts(pair: dict[str, Any]) -> str:
    return f"{pair['tokens']} tokens, {plain_number(pair['cost_usd'])} USD"


def _runs(ledger: Ledger, scope: str, limit: int, fmt: str, out: TextIO) -> int:
    records = ledger.runs(scope, limit=limit)
    if fmt == "json":
        write_json(records, out)
        return EXIT_OK
    if not records:
        out.write(f"no runs recorded in scope {scope}\n")
        return EXIT_OK
    columns = ("ended", "run_id", "host", "pid", "turns", "tokens", "cost_usd", "stop_reason")
    rows = [columns, *(tuple(_cell(r.get(c)) for c in columns) for r in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
    return EXIT_OK


def _cell(value: object) -> str:
    """A record's field as one cell: its line breaks and tabs escaped, so no field forges a
    row, and cut to the length a message shows."""
    if isinstance(value, float):
        return plain_number(round(value, 6))
    return "" if value is None else clipped(escape(str(value), keep=""))


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


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
