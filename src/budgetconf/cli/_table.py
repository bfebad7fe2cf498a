"""The explain table: the answer first, the evidence under it, for a person at a terminal.

Styling is for terminals only: none when the output is not a terminal, and
none at all (not even bold) when ``NO_COLOR`` is set. Every cell is a `Text`,
so nothing from a file or the environment is read as rich markup.

A name, a value or a locator is never broken across lines. Piped, nothing
wraps: each row is one line, however long. On a terminal only prose (a
rejection's reason, a warning) wraps, at spaces, to the terminal's width; a
column is never narrower than its longest name or word, so a table that
cannot fit is drawn wider than the terminal rather than cut into.

Control characters are escaped twice over: in each cell, so that columns
line up, and in every piece of text rich draws, header and all, before it is
written past the output's guard (`budgetconf.cli._output`). Paths are
shortened to ``./`` and ``~/`` forms here only; the JSON document keeps them
absolute.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Final, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from budgetconf._engine import Preset
from budgetconf._field import Field
from budgetconf._record import MASK
from budgetconf._resolution import Resolution
from budgetconf._text import escape
from budgetconf._trace import Candidate, FieldTrace, Status
from budgetconf._values import show_typed
from budgetconf.cli._output import styled
from budgetconf.cli._resolution import chosen_traces
from budgetconf.ledger._address import conceal
from budgetconf.sources import SourceStatus
from budgetconf.sources._records import DEFAULT_LOCATOR

_STYLE: Final = {
    Status.WON: "bold cyan",
    Status.SHADOWED: "dim",
    Status.REJECTED: "red",
    Status.REPLACED: "yellow",
    Status.EMPTY: "dim",
    Status.CLAMPED: "magenta",
}
_POLICY_STYLE: Final = "magenta"
_RAW_WIDTH: Final = 16  # a rejected value is evidence, not the answer: it may be cut
_UNBOUNDED: Final = 1_000_000  # a width to measure with: wider than anything the table holds
#: the value shown of a table no source set a key of (its default, ``{}``, had none)
NO_KEYS: Final = "no keys"


def render(res: Resolution, preset: Preset, fields: list[str], out: TextIO) -> None:
    """Draw the table on ``out``: wrapped to a terminal's width, never wrapped when piped."""
    # NO_COLOR (https://no-color.org) asks for plain text; rich would still bold and dim
    plain = bool(os.environ.get("NO_COLOR"))
    console = Console(file=out, highlight=False, color_system=None if plain else "auto")
    parts = _parts(res, preset, fields)
    wide = console.options.update_width(_UNBOUNDED)
    terminal = out.isatty()
    lines: list[Segment] = []
    for part in parts:
        drawn = [[]] if part is None else _drawn(console, wide, part, terminal=terminal)
        for line in drawn:
            lines += _escaped(line)
            lines.append(Segment.line())
    with console.capture() as capture:
        console.print(Segments(lines), soft_wrap=True, end="")
    styled(out, capture.get())


def _drawn(
    console: Console, wide: ConsoleOptions, part: RenderableType, *, terminal: bool
) -> list[list[Segment]]:
    """The lines of ``part``: as wide as the terminal, or as its longest name or word allows;
    when not drawn for a terminal, as wide as its longest row, so that nothing wraps."""
    if terminal and isinstance(part, Table):  # piped, the table is as wide as it needs
        _keep_words_whole(console, wide, part)
    measured = Measurement.get(console, wide, part)
    width = max(console.width, measured.minimum) if terminal else measured.maximum
    return console.render_lines(part, console.options.update_width(width), pad=False)


def _escaped(line: Iterable[Segment]) -> list[Segment]:
    """A drawn line with its text escaped and its trailing blanks, which rich pads with, gone."""
    found = [Segment(escape(s.text, keep=""), s.style) for s in line if not s.control]
    while found and not found[-1].text.strip():
        found.pop()
    if found:
        found[-1] = Segment(found[-1].text.rstrip(), found[-1].style)
    return found


def _keep_words_whole(console: Console, options: ConsoleOptions, table: Table) -> None:
    """Hold each column at least as wide as its widest unbreakable cell or word."""
    for column in table.columns:
        cells = list(column.cells)
        widest = max((Measurement.get(console, options, cell).minimum for cell in cells), default=0)
        column.min_width = widest


class _Whole(Text):
    """A name, a value or a locator: it is never broken, so its least width is its width."""

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = super().__rich_measure__(console, options).maximum
        return Measurement(width, width)


def _cell(text: str | None, style: str = "") -> Text:
    """Prose, which may wrap at its spaces on a terminal."""
    return Text(escape(text or "", keep=""), style)


def _whole(text: str | None, style: str = "") -> Text:
    return _Whole(escape(text or "", keep=""), style, no_wrap=True)


def _parts(res: Resolution, preset: Preset, fields: list[str]) -> list[RenderableType | None]:
    """What the table is drawn from, in order: texts and grids, None for a blank line."""
    short = Shortener()
    origin = "built-in" if preset.origin == "built-in" else short(preset.origin)
    name, origin = escape(preset.name, keep=""), escape(origin, keep="")
    header = Text.assemble(("preset ", "dim"), (name, "bold"), (f"  ({origin})", "dim"))
    parts: list[RenderableType | None] = [header, None]

    grid = Table.grid(padding=(0, 1))
    grid.add_column("field")
    grid.add_column("value", justify="right")
    grid.add_column("where")
    for field, traces in chosen_traces(res, fields):
        if not traces:  # a table with no key set: a line of its own says it has none
            grid.add_row(
                _whole(field.path, "bold"),
                _whole(NO_KEYS, _STYLE[Status.WON]),
                _whole(DEFAULT_LOCATOR),
            )
        for trace in traces:  # a table's keys, each a field of its own
            _add_field(grid, trace, short)
    parts += [grid, None]

    parts += [Text("sources", "dim"), _sources(res, short)]

    return parts + _footer(res, short)


def _footer(res: Resolution, short: Shortener) -> list[RenderableType | None]:
    """The warnings, then the notes: what is worth knowing that is no problem."""
    found: list[RenderableType | None] = [None] if res.warnings or res.notes else []
    said = [("warning", "yellow", w) for w in res.warnings]
    said += [("note", "dim", n) for n in res.notes]
    for word, style, text in said:  # a grid each: one line's long path leaves the others be
        line = Table.grid(padding=(0, 1))
        line.add_column()
        line.add_column()
        line.add_row(_whole(word, style), _cell(short(text)))
        found.append(line)
    return found


def _sources(res: Resolution, short: Shortener) -> Table:
    """A row for each source: its kind, how it fared, where it read and how many values."""
    sources = Table.grid(padding=(0, 1))
    for _ in range(3):
        sources.add_column()
    for report in res.sources:
        if report.status is SourceStatus.ERROR:
            style = "red"
        else:
            style = "" if report.status is SourceStatus.LOADED else "dim"
        where = short(report.locator)
        if report.status is SourceStatus.LOADED and report.source != "default":
            noun = "rule" if report.source == "policy" else "value"  # a policy bounds values
            count = f"{report.offered} {noun}" + ("" if report.offered == 1 else "s")
            where = f"{where}, {count}" if report.locator else count
        sources.add_row(
            _whole(f"  {report.source}"), _whole(report.status.value, style), _whole(where)
        )
    return sources


def _add_field(grid: Table, trace: FieldTrace, short: Shortener) -> None:
    field = trace.field
    winner = trace.winner
    where = short(winner.where)
    if trace.ruling is not None:  # a clamp seen at a glance: the value is the policy's
        where = f"{where} (policy {trace.ruling})"
    grid.add_row(
        _whole(field.path, "bold"),
        _whole(candidate_text(winner, field), _STYLE[Status.WON]),
        _whole(where),
    )
    for candidate in reversed(trace.candidates):
        if candidate is winner:
            continue
        style = _STYLE[candidate.status]
        grid.add_row(
            _whole(f"  {candidate.status.value}", style),
            _whole(candidate_text(candidate, field), style),
            _whole(short(candidate.where)),
        )
        if candidate.reason:
            grid.add_row(Text(""), Text(""), _cell(short(candidate.reason), style))
    if trace.policy is not None:
        _add_bounds(grid, trace, short)


def _add_bounds(grid: Table, trace: FieldTrace, short: Shortener) -> None:
    """The policy's bounds on the field, a row for each place they are written."""
    places: dict[str, list[str]] = {}
    for name, bound in trace.policy.bounds().items() if trace.policy else ():
        value = trace.field.public(bound.value)
        shown = value if isinstance(value, str) else show_typed(value)
        reject = " (reject)" if bound.reject and name in ("max", "min") else ""
        places.setdefault(bound.locator, []).append(f"{name} {shown}{reject}")
    for locator, said in places.items():
        grid.add_row(
            _whole("  policy", _POLICY_STYLE),
            _whole(", ".join(said), _POLICY_STYLE),
            _whole(short(locator)),
        )


def candidate_text(candidate: Candidate, field: Field) -> str:
    """The value as a person reads it: ``40``, ``wrap_up``, ``unset``; a rejected or empty raw
    quoted (``''``)."""
    if candidate.status is Status.REJECTED or candidate.status is Status.EMPTY:
        shown = field.show_raw(candidate.raw, candidate.text)
        return shown if len(shown) <= _RAW_WIDTH else shown[: _RAW_WIDTH - 1] + "…"
    if field.secret:
        return MASK
    value = candidate.value
    if value is None:
        return "unset"
    return str(conceal(value)) if isinstance(value, str) else show_typed(value)


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
        if cwd:  # in the home folder itself, ~/ says which file it is: the user's own
            prefixes.setdefault(cwd + os.sep, "./")
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
