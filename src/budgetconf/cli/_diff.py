"""``budgetconf explain --diff``: two resolutions side by side, only where they differ.

The options after ``--diff`` are applied on top of those before it, so the
second resolution is stated by what changes: ``--profile fast --diff
--profile slow``, ``--workflow w.yaml --diff --step review``, ``--diff --
--max-steps 20``. A field differs when its value or the source or locator
that set it does; each key of a table is compared as a field of its own (a key
one side does not set is unset there), and the count is of fields as the
schema has them, a table once.
"""

from __future__ import annotations

from typing import Any, Final, TextIO

from budgetconf._field import Kind
from budgetconf._resolution import Resolution
from budgetconf._trace import FieldTrace
from budgetconf.cli._explain import preset_failed
from budgetconf.cli._flags import given_flags
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, say, write_json
from budgetconf.cli._parser import OPTIONS, CommandLine, Usage, parse
from budgetconf.cli._resolution import PresetFailed, resolve

_SIDES: Final = ("before", "after")


def command(first: CommandLine, second: list[str], out: TextIO, err: TextIO) -> int:
    """Carry out ``explain --diff``: ``first`` parsed, ``second`` the arguments of the other side.

    Each side is resolved as explain resolves it, the first before the second
    is parsed, so that a problem of the first is the one reported.
    """
    if first.ns.command != "explain":
        raise Usage("--diff is an option of explain")
    try:
        before = resolve(first).res
    except PresetFailed as exc:
        return preset_failed(exc, first.ns.format, out, err)
    # the second side repeats the first's arguments, so it is an explain command too
    line = parse(second, first.commands)
    if line.ns.format == "toml":
        raise Usage("explain --diff shows a table or json")
    if _inputs(line) == _inputs(first):
        raise Usage(
            "--diff needs what the second resolution changes after it, such as"
            " --profile NAME, --set FIELD=VALUE or -- --max-steps 20"
        )
    try:
        second_side = resolve(line)
    except PresetFailed as exc:
        return preset_failed(exc, line.ns.format, out, err)
    after, fields = second_side.res, second_side.fields  # both sides' fields: the first's and more
    _problems(before, after, err)
    render(before, after, fields, line.ns.format, out)
    return EXIT_ERROR if before.errors or after.errors else EXIT_OK


def _inputs(line: CommandLine) -> tuple[object, ...]:
    """What a side's resolution is made from: a second side with the same is no comparison."""
    ns = line.ns
    return (ns.preset, *(getattr(ns, a.name) for a in OPTIONS), given_flags(ns), line.app_args)


def _problems(before: Resolution, after: Resolution, err: TextIO) -> None:
    """Both sides' errors, then their warnings: each once, as the sides share most of them."""
    for error in dict.fromkeys(str(e) for e in (*before.errors, *after.errors)):
        say(err, f"budgetconf: error: {error}")
    for warning in dict.fromkeys(str(w) for w in (*before.warnings, *after.warnings)):
        say(err, f"budgetconf: warning: {warning}")


def changes(
    before: Resolution, after: Resolution, fields: list[str]
) -> dict[str, tuple[FieldTrace | None, FieldTrace | None]]:
    """The fields whose value, source or locator differ, with each side's trace (None: no field).

    Fields are in the first resolution's order, then any only the second has; a
    table's keys, each by its path (``tools.max_calls.web_search``), where the table is.
    """
    tables: dict[str, str | None] = {}  # each path compared -> its table, if a key
    for trace in (*before.traces(), *after.traces()):
        tables.setdefault(trace.field.path, trace.field.table)
    owners = {
        owner: at for at, owner in enumerate(dict.fromkeys(t or p for p, t in tables.items()))
    }
    found = {}
    # a table's keys together, where the table is first, in the order of their paths
    for path, table in sorted(tables.items(), key=lambda i: (owners[i[1] or i[0]], i[1] and i[0])):
        if fields and path not in fields and table not in fields:
            continue
        pair = (_trace(before, path, table), _trace(after, path, table))
        if _key(pair[0]) != _key(pair[1]):
            found[path] = pair
    return found


def _trace(res: Resolution, path: str, table: str | None) -> FieldTrace | None:
    """The side's trace of ``path`` (a table's key no source set: unset), or None when its
    preset has no such field."""
    owner = res.schema.by_path.get(table or path)
    if owner is None or (table is not None and owner.kind is not Kind.TABLE):
        return None
    return res.trace(path)


def _count(found: dict[str, tuple[FieldTrace | None, FieldTrace | None]]) -> int:
    """How many fields differ, as the schema has them: a table whose keys differ, once."""
    owners = set()
    for path, (before, after) in found.items():
        trace = before or after
        owners.add(path if trace is None else trace.field.table or path)
    return len(owners)


def _key(trace: FieldTrace | None) -> tuple[object, ...] | None:
    return None if trace is None else (trace.value, trace.source, trace.locator)


def _side(trace: FieldTrace | None) -> dict[str, Any] | None:
    if trace is None:
        return None
    value = trace.field.public(trace.value)
    return {"value": value, "source": trace.source, "locator": trace.locator}


def render(before: Resolution, after: Resolution, fields: list[str], fmt: str, out: TextIO) -> None:
    """The differing fields, as a table for people or a JSON document for tools."""
    found = changes(before, after, fields)
    if fmt == "json":
        document = {
            "version": 1,
            **{
                name: {
                    "preset": res.preset,
                    "warnings": [str(w) for w in res.warnings],
                    "errors": [str(e) for e in res.errors],
                }
                for name, res in zip(_SIDES, (before, after), strict=True)
            },
            "fields": {
                path: dict(zip(_SIDES, map(_side, pair), strict=True))
                for path, pair in found.items()
            },
        }
        write_json(document, out)
        return
    from budgetconf.cli._table import Shortener, candidate_text

    short = Shortener()
    preset = before.preset if before.preset == after.preset else f"{before.preset} → {after.preset}"
    count = _count(found)
    if not count:
        say(out, f"preset {preset}: no field differs")
        return
    differ = "1 field differs" if count == 1 else f"{count} fields differ"
    say(out, f"preset {preset}: {differ}")
    for path, pair in found.items():
        rows = []
        for name, trace in zip(_SIDES, pair, strict=True):
            if trace is None:
                rows.append((name, "–", "", "no such field"))
            else:
                value = candidate_text(trace.winner, trace.field)
                rows.append((name, value, trace.source, short(trace.winner.where)))
        width = max(len(row[1]) for row in rows)
        out.write("\n")
        say(out, path)
        for name, value, source, where in rows:
            say(out, f"  {name:<6} {value:>{width}}  {source:<8} {where}".rstrip())
