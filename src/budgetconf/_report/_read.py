"""An events file read into runs: each line checked, the good ones grouped by their run.

An events file is input: any line may be cut short, not JSON, or JSON that
is no event. `_checks` says which lines hold an event and why the others
hold none; such a line is set aside with why (`Bad`), and the others still
make their runs (the records of `_runs`: `RunView`, `Turn`, `Child`),
gathered here by ``run_id``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from budgetconf._files import read_limited
from budgetconf._report._checks import event_of
from budgetconf._report._runs import KNOWN_COST, Child, RunView, Turn
from budgetconf.events import (
    BATCH_REJECTED,
    BATCH_TRUNCATED,
    BUDGET_EXHAUSTED,
    BUDGET_WARNING,
    CALLS_NOT_EXECUTED,
    CHILD_END,
    CHILD_START,
    LAST_TURN_NOTICE,
    LEDGER_REFUSED,
    LEDGER_RESERVE,
    LEDGER_SETTLE,
    LEDGER_UNAVAILABLE,
    LEDGER_WARNING,
    MODEL_RESPONSE,
    RUN_STARTED,
    STOPPED,
    TOOL_ABANDONED,
    TOOL_EXECUTED,
    TOOL_LIMITED,
    TOOL_REFUSED,
    TOOL_STARTED,
    TURN_STARTED,
)

#: the largest events file read: a 10,000-turn run writes about 5 MB
MAX_EVENTS_BYTES: Final = 256 << 20
#: the events that belong to one turn, and what each tells of it
_TURN_EVENTS: Final = frozenset(
    {
        TURN_STARTED,
        LAST_TURN_NOTICE,
        MODEL_RESPONSE,
        TOOL_STARTED,
        TOOL_EXECUTED,
        TOOL_REFUSED,
        TOOL_ABANDONED,
        BATCH_REJECTED,
        BATCH_TRUNCATED,
        CALLS_NOT_EXECUTED,
        TOOL_LIMITED,
    }
)
#: the ledger's events, which the page lists as they came
_LEDGER_EVENTS: Final = frozenset(
    {LEDGER_RESERVE, LEDGER_SETTLE, LEDGER_REFUSED, LEDGER_UNAVAILABLE, LEDGER_WARNING}
)


@dataclass(frozen=True, slots=True)
class Bad:
    """A line of the file that is no event: its number and why."""

    line: int
    why: str


@dataclass(slots=True)
class Events:
    """An events file read: its runs in the order they began, and its bad lines."""

    runs: list[RunView]
    bad: list[Bad]
    lines: int


def read_events(path: str) -> Events:
    """The runs of the events file at ``path``. Raises `FileProblem` when it cannot be read."""
    data, _ = read_limited(path, MAX_EVENTS_BYTES)
    return parse_events(data)


def parse_events(data: bytes) -> Events:
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    builder = _Builder()
    bad: list[Bad] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines) and not complete
        event = event_of(raw, last)
        if isinstance(event, str):
            bad.append(Bad(number, event))
        else:
            builder.add(event, number)
    return Events(builder.runs, bad, len(lines) - (1 if complete else 0))


class _Builder:
    """Gathers the events into runs, by ``run_id``; events without one follow a ``run_started``."""

    def __init__(self) -> None:
        self.runs: list[RunView] = []
        self._by_id: dict[str, RunView] = {}
        self._anonymous: RunView | None = None

    def add(self, event: dict[str, Any], line: int) -> None:
        run = self._run_of(event, line)
        run.events += 1
        kind = event["type"]
        if kind in _TURN_EVENTS:
            _turn_event(run, event)
            if kind in _BY_TOOL:
                _by_tool(run, event)
        elif kind == RUN_STARTED:
            run.started = run.started or event
        elif kind == STOPPED:
            run.stopped = event
        elif kind == BUDGET_EXHAUSTED:
            run.exhausted = event
        elif kind == CHILD_START:
            run.children.append(Child(event))
        elif kind == CHILD_END:
            _child_end(run, event)
        elif kind in _LEDGER_EVENTS:
            run.ledger.append(event)
        elif kind == BUDGET_WARNING:
            run.warnings.append(event)

    def _run_of(self, event: dict[str, Any], line: int) -> RunView:
        run_id = event.get("run_id")
        if run_id is None:  # a file written before events carried their run's id
            if self._anonymous is None or event["type"] == RUN_STARTED:
                self._anonymous = self._new(None, line)
            return self._anonymous
        run = self._by_id.get(run_id)
        if run is None:
            run = self._by_id[run_id] = self._new(run_id, line)
        return run

    def _new(self, run_id: str | None, line: int) -> RunView:
        run = RunView(run_id, line)
        self.runs.append(run)
        return run


def _turn_event(run: RunView, event: dict[str, Any]) -> None:
    number = event.get("turn")
    if number is None:
        return
    turn = run.turn(number)
    kind = event["type"]
    if kind == MODEL_RESPONSE:
        _response(turn, event)
    elif kind in (TOOL_EXECUTED, TOOL_ABANDONED):
        turn.executed += 1
    elif kind == TOOL_REFUSED:
        turn.refused += 1
    elif kind == CALLS_NOT_EXECUTED:
        ids = event.get("ids")
        turn.refused += len(ids) if isinstance(ids, list) else 0
    elif kind == BATCH_REJECTED:
        turn.rejected = event
    elif kind == BATCH_TRUNCATED:
        turn.truncated = event
    elif kind == LAST_TURN_NOTICE:
        notice = event.get("kind")
        turn.notice = notice if isinstance(notice, str) else "notice"
    elif kind == TOOL_LIMITED:
        turn.refused += len(event.get("ids", ()))
        turn.limited.append(event)


#: the events a tool's own count is made of: its calls that ran, and those past its limit
_BY_TOOL: Final = frozenset({TOOL_EXECUTED, TOOL_ABANDONED, TOOL_LIMITED})


def _by_tool(run: RunView, event: dict[str, Any]) -> None:
    """Count a call that ran, or the calls past a tool's own limit, by the tool's name."""
    name = event.get("name")
    if not isinstance(name, str):
        return
    if event["type"] == TOOL_LIMITED:
        run.limited_calls[name] = run.limited_calls.get(name, 0) + len(event.get("ids", ()))
        run.limited_by[name] = event
    else:
        run.tool_calls[name] = run.tool_calls.get(name, 0) + 1


def _response(turn: Turn, event: dict[str, Any]) -> None:
    turn.responded = True
    turn.finish_reason = event.get("finish_reason")
    turn.tokens = event.get("tokens", 0)
    turn.cost_usd = event.get("cost_usd", 0)
    turn.cost = float(turn.cost_usd)
    source = turn.cost_source = event.get("cost_source")
    # cost_source says how the cost is known; an event without one (version 1) reported a
    # cost only when it gave one above 0
    turn.cost_reported = turn.cost > 0 or source in KNOWN_COST
    turn.model = event.get("model")
    turn.input_tokens = event.get("input_tokens")
    turn.cached_input_tokens = event.get("cached_input_tokens")
    turn.output_tokens = event.get("output_tokens")
    turn.time = event.get("time")
    content = event.get("content")
    turn.content = content if isinstance(content, str) else ""
    calls = event.get("tool_calls")
    if isinstance(calls, list):
        turn.asked = [_call_name(call) for call in calls]


def _call_name(call: object) -> str:
    name = call.get("name") if isinstance(call, dict) else None
    return name if isinstance(name, str) else "?"


def _child_end(run: RunView, event: dict[str, Any]) -> None:
    """Pair the end with its start: the one of the same child id, if the events name one,
    else the earliest child without an end (one child ends before the next starts)."""
    key = event.get("child_run_id")
    for child in run.children:
        if child.end is None and child.start.get("child_run_id") == key:
            child.end = event
            return
    run.children.append(Child({}, event))  # its start is not in the file
