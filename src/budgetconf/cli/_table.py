"""The explain table: the answer first, the evidence under it, for a person at a terminal.

Styling is for terminals only: none when the output is not a terminal, and
none at all (not even bold) when ``NO_COLOR`` is set. Paths are shortened to
``./`` and ``~/`` forms here only; the JSON document keeps them absolute.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetconf.presets import Preset
from budgetconf.resolve import Resolution
from budgetconf.schema import show_text, show_typed
from budgetconf.sources import SourceStatus
from budgetconf.trace import MASK, Candidate, FieldTrace, Status

_STYLE = {
    Status.WON: "bold cyan",
    Status.SHADOWED: "dim",
    Status.REJECTED: "red",
    Status.REPLACED: "yellow",
}


def render(res: Resolution, preset: Preset, fields: list[str], out: TextIO) -> None:
    # NO_COLOR (https://no-color.org) asks for plain text; rich would still bold and dim
    plain = bool(os.environ.get("NO_COLOR"))
    console = Console(file=out, highlight=False, color_system=None if plain else "auto")
    with console.capture() as capture:
        _draw(console, res, preset, fields)
    # rich pads every cell to its column's width; trailing blanks only get in the way
    out.write("".join(line.rstrip() + "\n" for line in capture.get().splitlines()))


def _draw(console: Console, res: Resolution, preset: Preset, fields: list[str]) -> None:
    short = _Shortener()
    origin = "built-in" if preset.origin == "built-in" else short(preset.origin)
    console.print(
        Text.assemble(("preset ", "dim"), (preset.name, "bold"), (f"  ({origin})", "dim"))
    )
    console.print()

    grid = Table.grid(padding=(0, 1))
    grid.add_column("field", no_wrap=True)
    grid.add_column("value", justify="right", no_wrap=True, max_width=16, overflow="ellipsis")
    grid.add_column("where", overflow="fold")
    for trace in res.traces():
        if fields and trace.field.path not in fields:
            continue
        _add_field(grid, trace, short)
    console.print(grid)
    console.print()

    sources = Table.grid(padding=(0, 1))
    sources.add_column(no_wrap=True)
    sources.add_column(no_wrap=True)
    sources.add_column(overflow="fold")
    for report in res.sources:
        style = (
            "red"
            if report.status is SourceStatus.ERROR
            else ("" if report.status is SourceStatus.LOADED else "dim")
        )
        if report.source == "env":
            where = f"{report.offered} variable" + ("" if report.offered == 1 else "s")
        else:
            where = short(report.locator) if report.locator else ""
        sources.add_row(f"  {report.source}", Text(report.status.value, style), where)
    console.print(Text("sources", "dim"))
    console.print(sources)
    if res.warnings:
        notes = Table.grid(padding=(0, 1))
        notes.add_column(no_wrap=True)
        notes.add_column(overflow="fold")
        for warning in res.warnings:
            notes.add_row(Text("warning", "yellow"), short(warning))
        console.print()
        console.print(notes)


def _add_field(grid: Table, trace: FieldTrace, short: _Shortener) -> None:
    field = trace.field
    winner = trace.winner
    grid.add_row(
        Text(field.path, "bold"),
        Text(_value(winner, field.secret), _STYLE[Status.WON]),
        short(winner.locator),
    )
    others = [c for c in reversed(trace.candidates) if c is not winner]
    for candidate in others:
        grid.add_row(
            Text(f"  {candidate.status.value}", _STYLE[candidate.status]),
            Text(_value(candidate, field.secret), _STYLE[candidate.status]),
            short(candidate.locator),
        )
        if candidate.reason:
            grid.add_row("", "", Text(short(candidate.reason), _STYLE[candidate.status]))


def _value(candidate: Candidate, secret: bool) -> str:
    if secret:
        return MASK
    if candidate.status is Status.REJECTED:
        raw = candidate.raw
        return show_text(raw) if candidate.text and isinstance(raw, str) else show_typed(raw)
    value = candidate.value
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Shortener:
    """Absolute paths as a person reads them: ``./settings.toml``, ``~/.budgetconf/…``."""

    def __init__(self) -> None:
        prefixes = [(os.getcwd(), ".")]
        home = os.path.expanduser("~")
        if home.strip(os.sep):
            prefixes.append((home, "~"))
        # a path starts the text or follows a space or a parenthesis
        self._pattern = re.compile(
            "|".join(f"(?<![^ (]){re.escape(p.rstrip(os.sep) + os.sep)}" for p, _ in prefixes)
        )
        self._short = {p.rstrip(os.sep) + os.sep: s + "/" for p, s in prefixes}

    def __call__(self, text: str | None) -> str:
        if not text:
            return ""
        return self._pattern.sub(lambda m: self._short[m.group()], text)
