"""The page's charts: inline SVG, drawn here, at a bounded number of points.

A chart is what one budget used turn by turn, against its limit: a line for
what accumulates (turns, tokens, cost, tool calls, time), bars for the calls
each response asked for (against the per-response cap). Marks show the turn
of the last-turn notice, of each budget warning and of the stop, and the
responses rejected or cut at the cap. A long run's series is sampled down to
`MAX_POINTS`, and its marks to one per pixel column, so the page stays small
whatever the run's length. A tool with a limit of its own is one bar
(`ToolBar`): its calls that ran against the limit, then those answered past it.
"""

from __future__ import annotations

import itertools
import math
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
    """A turn the chart points out: ``kind`` is notice, warning, rejected, truncated or stop."""

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
    #: whether the values are counts: the value axis's ticks are then whole numbers
    integral: bool = True


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


#: a run of at most this many turns labels each; a longer one its first and last
_LABELLED_TURNS: Final = 6
#: the most ticks the value axis has (0 among them): at least 25 px apart
_MOST_TICKS: Final = 5


class _Frame:
    """Where a turn and a value fall on the chart.

    Each turn of the axis has a slot of the same width, and its point or bar sits at the
    slot's middle: turn 1 falls at the same place in every chart of the run.
    """

    def __init__(self, first: int, last: int, top: float) -> None:
        self.first = first
        self.last = max(last, first)
        self.slot = (WIDTH - _LEFT - _RIGHT) / (self.last - first + 1)
        self.top = top if top > 0 else 1.0

    def x(self, turn: float) -> float:
        return _LEFT + (turn - self.first + 0.5) * self.slot

    def y(self, value: float) -> float:
        return HEIGHT - _BOTTOM - min(value / self.top, 1.0) * (HEIGHT - _TOP - _BOTTOM)


def ticks(most: float, integral: bool) -> list[float]:
    """The value axis's ticks, from 0 to ``most``: 1, 2 or 5 times a power of ten apart,
    whole numbers for a count, at most `_MOST_TICKS` of them, so no two labels meet."""
    if most <= 0:
        return [0.0]
    step = 10 ** math.floor(math.log10(most / (_MOST_TICKS - 1)))
    for factor in (1, 2, 5, 10):
        if most / (step * factor) <= _MOST_TICKS - 1:
            step *= factor
            break
    if integral:
        step = max(round(step), 1)
    count = int(most / step + 1e-9)
    return [round(i * step, 12) for i in range(count + 1)]


def svg(chart: Chart) -> str:
    """The chart as an ``<svg>`` element; every text in it escaped."""
    turns, values = chart.turns, chart.values
    highest = max(values, default=0.0)
    most = max(highest, chart.limit or 0.0)
    first, last = chart.span or ((turns[0], turns[-1]) if turns else (0, 1))
    frame = _Frame(first, last, most * 1.08)
    marks = _marks(chart.marks, frame)
    lines = [mark for mark in marks if mark.startswith("<line")]
    parts = [
        f'<svg class="chart" data-budget="{attr(chart.budget)}" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' width="{WIDTH}" height="{HEIGHT}" role="img">',
        f"<title>{text(chart.title)}</title>",
        *_axes(chart, frame, most),
        *lines,  # under the series: a notice or a stop never hides a bar
        _series(chart, frame),
        *(mark for mark in marks if not mark.startswith("<line")),
    ]
    if chart.limit is not None:
        y = frame.y(chart.limit)
        parts.append(
            f'<line class="limit" x1="{_LEFT}" y1="{y:.1f}" x2="{WIDTH - _RIGHT}" y2="{y:.1f}"/>'
            f'<text class="limit-label" x="{WIDTH - _RIGHT}" y="{y - 4:.1f}"'
            f' text-anchor="end">limit {text(chart.show(chart.limit))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _axes(chart: Chart, frame: _Frame, most: float) -> list[str]:
    """The axes: the value's ticks on the left, and below each turn of a short run, or the
    first and last of a long one, each labelled once."""
    base = HEIGHT - _BOTTOM
    right = WIDTH - _RIGHT
    parts = [
        f'<line class="axis" x1="{_LEFT}" y1="{base}" x2="{right}" y2="{base}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{base}"/>',
    ]
    for tick in ticks(most, chart.integral):
        y = frame.y(tick)
        parts.append(
            f'<text class="tick" x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{text(chart.show(tick))}</text>"
        )
    first, last = frame.first, frame.last
    if last - first < _LABELLED_TURNS:
        labelled = [(turn, frame.x(turn), "middle") for turn in range(first, last + 1)]
    else:  # the last label ends at the axis's end: a long run's last slot is a sliver
        labelled = [(first, frame.x(first), "middle"), (last, right, "end")]
    parts.extend(
        f'<text class="tick turn" x="{x:.1f}" y="{base + 16}" text-anchor="{anchor}">'
        f"turn {turn:,}</text>"
        for turn, x, anchor in labelled
    )
    return parts


def _series(chart: Chart, frame: _Frame) -> str:
    turns, values = chart.turns, chart.values
    drawn = sampled(len(values), values, chart.bars)
    if chart.bars:
        base = HEIGHT - _BOTTOM
        # a bar a slot's width apart from the next, never thinner than 2 px nor wider than 24
        width = max(2.0, min(frame.slot * 0.6, 24.0))
        bars = "".join(
            f'<rect class="bar" x="{frame.x(turns[i]) - width / 2:.1f}"'
            f' y="{frame.y(values[i]):.1f}" width="{width:.1f}"'
            f' height="{base - frame.y(values[i]):.1f}"/>'
            for i in drawn
        )
        return f'<g class="bars">{bars}</g>'
    points = " ".join(f"{frame.x(turns[i]):.1f},{frame.y(values[i]):.1f}" for i in drawn)
    line = f'<polyline class="used" points="{points}"/>'
    if len(drawn) == 1:  # a line of one point draws nothing: a dot shows it
        x, y = frame.x(turns[drawn[0]]), frame.y(values[drawn[0]])
        line += f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3"/>'
    return line


#: the marks drawn as a line across the chart, and where in their turn's slot
_EDGES: Final = {"notice": -0.5, "warning": 0.0, "stop": 0.5}


def _marks(marks: list[Mark], frame: _Frame) -> list[str]:
    """The marks, one per kind and pixel column: a long run's thousand rejections draw once."""
    parts: list[str] = []
    seen: set[tuple[str, int]] = set()
    base = HEIGHT - _BOTTOM
    for mark in marks:
        # a notice went with its turn's call, a stop came after its turn: each at that edge;
        # a warning at its turn's point (one before the first turn: at that turn's start)
        at = mark.turn + _EDGES.get(mark.kind, 0.0)
        if mark.kind == "warning":
            at = max(at, frame.first - 0.5)
        if not frame.first - 0.5 <= at <= frame.last + 0.5:
            continue  # a turn past the axis: an event the run's turns do not hold
        x = frame.x(at)
        column = (mark.kind, int(x))
        if column in seen:
            continue
        seen.add(column)
        note = f"<title>{text(mark.note)}</title>"
        if mark.kind in _EDGES:
            parts.append(
                f'<line class="mark-{mark.kind}" x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}"'
                f' y2="{base}">{note}</line>'
            )
        else:
            parts.append(
                f'<circle class="mark-{mark.kind}" cx="{x:.1f}" cy="{base}" r="4">{note}</circle>'
            )
    return parts


@dataclass(frozen=True, slots=True)
class ToolBar:
    """One tool's own limit: the calls that ran against it, and those answered past it."""

    tool: str
    title: str
    executed: int
    limited: int
    limit: float | None  # None: a secret's, which draws no line
    show: Callable[[float], str]


TOOL_HEIGHT: Final = 64
_TOOL_LEFT, _TOOL_TOP, _TOOL_BASE = 20, 16, 40


def tool_svg(bar: ToolBar) -> str:
    """The tool's bar as an ``<svg>`` element: what ran in blue, what was answered past the
    limit after it, the limit a red dashed line; every text in it escaped."""
    most = max(bar.limit or 0.0, float(bar.executed + bar.limited), 1.0)
    span = WIDTH - _TOOL_LEFT - _RIGHT

    def x(value: float) -> float:
        return _TOOL_LEFT + value / (most * 1.08) * span

    height = _TOOL_BASE - _TOOL_TOP
    parts = [
        f'<svg class="chart tool" data-budget="max_calls_by_tool" data-tool="{attr(bar.tool)}"'
        f' viewBox="0 0 {WIDTH} {TOOL_HEIGHT}" width="{WIDTH}" height="{TOOL_HEIGHT}"'
        f' role="img"><title>{text(bar.title)}</title>',
        f'<line class="axis" x1="{_TOOL_LEFT}" y1="{_TOOL_BASE}" x2="{WIDTH - _RIGHT}"'
        f' y2="{_TOOL_BASE}"/>',
    ]
    parts.extend(
        f'<text class="tick" x="{x(tick):.1f}" y="{_TOOL_BASE + 16}" text-anchor="middle">'
        f"{text(bar.show(tick))}</text>"
        for tick in ticks(most, integral=True)
    )
    if bar.executed:
        parts.append(
            f'<rect class="bar" x="{x(0):.1f}" y="{_TOOL_TOP}" width="{x(bar.executed) - x(0):.1f}"'
            f' height="{height}"><title>{bar.executed:,} ran</title></rect>'
        )
    if bar.limited:
        start, end = x(bar.executed), x(bar.executed + bar.limited)
        parts.append(
            f'<rect class="bar-limited" x="{start:.1f}" y="{_TOOL_TOP}" width="{end - start:.1f}"'
            f' height="{height}"><title>{bar.limited:,} answered as not executed past the'
            " limit</title></rect>"
        )
    if bar.limit is not None:
        at = x(bar.limit)
        left = at < WIDTH / 2  # the label on the side with room for it
        parts.append(
            f'<line class="limit" x1="{at:.1f}" y1="{_TOOL_TOP - 4}" x2="{at:.1f}"'
            f' y2="{_TOOL_BASE}"/><text class="limit-label" x="{at + (3 if left else -3):.1f}"'
            f' y="{_TOOL_TOP - 5}" text-anchor="{"start" if left else "end"}">'
            f"limit {text(bar.show(bar.limit))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
