"""The page's charts: inline SVG, drawn here, at a bounded number of points.

A chart is what one budget used turn by turn, against its limit: a line for
what accumulates (turns, tokens, cost, tool calls, time), bars for the calls
each response asked for (against the per-response cap). Marks show the turn
of the last-turn notice and the responses rejected or cut at the cap. A long
run's series is sampled down to `MAX_POINTS`, and its marks to one per pixel
column, so the page stays small whatever the run's length.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from budgetconf._report._text import attr, text

#: the most points (or bars) one chart draws
MAX_POINTS: Final = 300
WIDTH: Final = 480
HEIGHT: Final = 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 14, 30


@dataclass(frozen=True, slots=True)
class Mark:
    """A turn the chart points out: ``kind`` is notice, rejected, truncated or stop."""

    turn: int
    kind: str
    note: str


@dataclass(slots=True)
class Chart:
    """One budget's use by turn: ``values[i]`` after turn ``turns[i]``."""

    budget: str
    title: str
    turns: Sequence[int]
    values: Sequence[float]
    limit: float | None
    show: Callable[[float], str]
    bars: bool = False
    marks: list[Mark] = field(default_factory=list)
    #: the first and last turn of the run: the x axis, whichever turns have a value
    span: tuple[int, int] | None = None


def sampled(count: int, values: Sequence[float], bars: bool) -> list[int]:
    """The indices drawn of ``count`` values: all of them, or `MAX_POINTS` spread evenly.

    A line keeps its first and last point; bars keep the largest of each stretch,
    so a spike is never sampled away.
    """
    if count <= MAX_POINTS:
        return list(range(count))
    if not bars:
        step = (count - 1) / (MAX_POINTS - 1)
        return sorted({round(i * step) for i in range(MAX_POINTS)})
    edges = [round(i * count / MAX_POINTS) for i in range(MAX_POINTS + 1)]
    return [
        max(range(start, end), key=values.__getitem__)
        for start, end in itertools.pairwise(edges)
        if end > start
    ]


class _Frame:
    """Where a turn and a value fall on the chart."""

    def __init__(self, first: int, last: int, top: float) -> None:
        self.first = first
        self.span = max(last - first, 1)
        self.top = top if top > 0 else 1.0

    def x(self, turn: float) -> float:
        return _LEFT + (turn - self.first) / self.span * (WIDTH - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        return HEIGHT - _BOTTOM - min(value / self.top, 1.0) * (HEIGHT - _TOP - _BOTTOM)


def svg(chart: Chart) -> str:
    """The chart as an ``<svg>`` element; every text in it escaped."""
    turns, values = chart.turns, chart.values
    highest = max(values, default=0.0)
    top = max(highest, chart.limit or 0.0) * 1.08
    first, last = chart.span or ((turns[0], turns[-1]) if turns else (0, 1))
    frame = _Frame(first - (1 if chart.bars else 0), last, top)
    parts = [
        f'<svg class="chart" data-budget="{attr(chart.budget)}" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' width="{WIDTH}" height="{HEIGHT}" role="img">',
        f"<title>{text(chart.title)}</title>",
        *_axes(chart, frame, first, last, highest),
        _series(chart, frame),
    ]
    if chart.limit is not None:
        y = frame.y(chart.limit)
        parts.append(
            f'<line class="limit" x1="{_LEFT}" y1="{y:.1f}" x2="{WIDTH - _RIGHT}" y2="{y:.1f}"/>'
            f'<text class="limit-label" x="{WIDTH - _RIGHT}" y="{y - 4:.1f}"'
            f' text-anchor="end">limit {text(chart.show(chart.limit))}</text>'
        )
    parts.extend(_marks(chart.marks, frame))
    parts.append("</svg>")
    return "".join(parts)


def _axes(chart: Chart, frame: _Frame, first: int, last: int, highest: float) -> list[str]:
    """The axes, with 0 and the most the run used on the left, the first and last turn below."""
    base = HEIGHT - _BOTTOM
    right = WIDTH - _RIGHT
    return [
        f'<line class="axis" x1="{_LEFT}" y1="{base}" x2="{right}" y2="{base}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{base}"/>',
        f'<text class="tick" x="{_LEFT - 6}" y="{base}" text-anchor="end">0</text>',
        f'<text class="tick" x="{_LEFT - 6}" y="{frame.y(highest) + 4:.1f}" text-anchor="end">'
        f"{text(chart.show(highest))}</text>",
        f'<text class="tick" x="{frame.x(first):.1f}" y="{base + 16}" text-anchor="middle">'
        f"turn {first:,}</text>",
        f'<text class="tick" x="{right}" y="{base + 16}" text-anchor="end">turn {last:,}</text>',
    ]


def _series(chart: Chart, frame: _Frame) -> str:
    turns, values = chart.turns, chart.values
    drawn = sampled(len(values), values, chart.bars)
    if chart.bars:
        base = HEIGHT - _BOTTOM
        path = " ".join(
            f"M{frame.x(turns[i]) - 0.5:.1f} {base}V{frame.y(values[i]):.1f}" for i in drawn
        )
        return f'<path class="bars" d="{path}"/>'
    points = " ".join(f"{frame.x(turns[i]):.1f},{frame.y(values[i]):.1f}" for i in drawn)
    return f'<polyline class="used" points="{points}"/>'


def _marks(marks: list[Mark], frame: _Frame) -> list[str]:
    """The marks, one per kind and pixel column: a long run's thousand rejections draw once."""
    parts: list[str] = []
    seen: set[tuple[str, int]] = set()
    base = HEIGHT - _BOTTOM
    for mark in marks:
        if not frame.first <= mark.turn <= frame.first + frame.span:
            continue  # a turn past the axis: an event the run's turns do not hold
        x = frame.x(mark.turn)
        column = (mark.kind, int(x))
        if column in seen:
            continue
        seen.add(column)
        note = f"<title>{text(mark.note)}</title>"
        if mark.kind in ("notice", "stop"):
            parts.append(
                f'<line class="mark-{mark.kind}" x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}"'
                f' y2="{base}">{note}</line>'
            )
        else:
            parts.append(
                f'<circle class="mark-{mark.kind}" cx="{x:.1f}" cy="{base}" r="4">{note}</circle>'
            )
    return parts
