"""The explain table: the answer first, the evidence under it, for a person at a terminal.

Styling is for terminals only: none when the output is not a terminal, and
none at all (not even bold) when ``NO_COLOR`` is set. Every cell is a `Text`,
so nothing from a file or the environment is read as rich markup, and control
characters are escaped, the preset's name too. Rich's own style codes are the
one text written past the output's guard (`budgetconf.cli._output`). Paths
are shortened to ``./`` and ``~/`` forms here only; the JSON document keeps
them absolute.
"""

from __future__ import annotations

import os
import re
from typing import Final, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetconf._engine import Preset
from budgetconf._resolution import Resolution
from budgetconf._schema import MASK, Field, show_typed
from budgetconf._text import escape
from budgetconf._trace import Candidate, FieldTrace, Status
from budgetconf.cli._output import styled
from budgetconf.sources import SourceStatus

__all__ = ["Shortener", "candidate_text", "render"]

_STYLE: Final = {
    Status.WON: "bold cyan",
    Status.SHADOWED: "dim",
    Status.REJECTED: "red",
    Status.REPLACED: "yellow",
}
_RAW_WIDTH: Final = 16  # a rejected value is evidence, not the answer: it may be cut


def render(res: Resolution, preset: Preset, fields: list[str], out: TextIO) -> None:
    # NO_COLOR (https://no-color.org) asks for plain text; rich would still bold and dim
    plain = bool(os.environ.get("NO_COLOR"))
    console = Console(file=out, highlight=False, color_system=None if plain else "auto")
    with console.capture() as capture:
        _draw(console, res, preset, fields)
    # rich pads every cell to its column's width; trailing blanks only get in the way
    styled(out, "".join(line.rstrip() + "\n" for line in capture.get().splitlines()))


def _cell(text: str | None, style: str = "") -> Text:
    return Text(escape(text or "", keep=""), style)


def _draw(console: Console, res: Resolution, preset: Preset, fields: list[str]) -> None:
    short = Shortener()
    origin = "built-in" if preset.origin == "built-in" else short(preset.origin)
    name, origin = escape(preset.name, keep=""), escape(origin, keep="")
    console.print(Text.assemble(("preset ", "dim"), (name, "bold"), (f"  ({origin})", "dim")))
    console.print()

    grid = Table.grid(padding=(0, 1))
    grid.add_column("field", overflow="fold")
    grid.add_column("value", justify="right", no_wrap=True)
    grid.add_column("where", overflow="fold", min_width=24)
    for trace in res.traces():
        if not fields or trace.field.path in fields:
            _add_field(grid, trace, short)
    console.print(grid)
    console.print()

    sources = Table.grid(padding=(0, 1))
    sources.add_column(no_wrap=True)
    sources.add_column(no_wrap=True)
    sources.add_column(overflow="fold")
    for report in res.sources:
        if report.status is SourceStatus.ERROR:
            style = "red"
        else:
            style = "" if report.status is SourceStatus.LOADED else "dim"
        where = short(report.locator)
        if report.status is SourceStatus.LOADED and report.source != "default":
            count = f"{report.offered} value" + ("" if report.offered == 1 else "s")
            where = f"{where}, {count}" if report.locator else count
        sources.add_row(
            _cell(f"  {report.source}"), _cell(report.status.value, style), _cell(where)
        )
    console.print(Text("sources", "dim"))
    console.print(sources)

    if res.warnings:
        notes = Table.grid(padding=(0, 1))
        notes.add_column(no_wrap=True)
        notes.add_column(overflow="fold")
        for warning in res.warnings:
            notes.add_row(Text("warning", "yellow"), _cell(short(warning)))
        console.print()
        console.print(notes)


def _add_field(grid: Table, trace: FieldTrace, short: Shortener) -> None:
    field = trace.field
    winner = trace.winner
    grid.add_row(
        _cell(field.path, "bold"),
        _cell(candidate_text(winner, field), _STYLE[Status.WON]),
        _cell(short(winner.where)),
    )
    for candidate in reversed(trace.candidates):
        if candidate is winner:
            continue
        style = _STYLE[candidate.status]
        grid.add_row(
            _cell(f"  {candidate.status.value}", style),
            _cell(candidate_text(candidate, field), style),
            _cell(short(candidate.where)),
        )
        if candidate.reason:
            grid.add_row(Text(""), Text(""), _cell(short(candidate.reason), style))


def candidate_text(candidate: Candidate, field: Field) -> str:
    """The value as a person reads it: ``40``, ``wrap_up``, ``unset``; a rejected raw quoted."""
    if candidate.status is Status.REJECTED:
        shown = field.show_raw(candidate.raw, candidate.text)
        return shown if len(shown) <= _RAW_WIDTH else shown[: _RAW_WIDTH - 1] + "…"
    if field.secret:
        return MASK
    value = candidate.value
    if value is None:
        return "unset"
    return value if isinstance(value, str) else show_typed(value)


class Shortener:
    """Absolute paths as a person reads them: ``./settings.toml``, ``~/.budgetconf/…``."""

    def __init__(self) -> None:
        prefixes = {}
        home = os.path.expanduser("~").rstrip(os.sep)
        if home:
            prefixes[home + os.sep] = "~/"
        try:
            cwd = os.getcwd().rstrip(os.sep)
        except OSError:  # the working directory is gone
            cwd = ""
        if cwd:
            prefixes[cwd + os.sep] = "./"
        # the longest prefix first: a project under home reads ./x, a home under it ~/x
        self._short = dict(sorted(prefixes.items(), key=lambda item: -len(item[0])))
        # a path starts the text or follows a space or a parenthesis
        self._pattern = (
            re.compile("|".join(f"(?<![^ (]){re.escape(prefix)}" for prefix in self._short))
            if self._short
            else None
        )

    def __call__(self, text: str | None) -> str:
        if not text or self._pattern is None:
            return text or ""
        return self._pattern.sub(lambda m: self._short[m.group()], text)
