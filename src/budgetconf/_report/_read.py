"""An events file read into runs: each line checked, the good ones grouped by their run.

An events file is input: any line may be cut short, not JSON, or JSON that
is no event. Such a line is set aside with why (`Bad`), and the others still
make their runs. A value the page draws (a count, a time) is checked here,
so that the page never meets a string where it draws a number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from budgetconf._files import read_limited
from budgetconf._text import clipped, escape
from budgetconf.events import (
    BATCH_REJECTED,
    BATCH_TRUNCATED,
    BUDGET_EXHAUSTED,
    CALLS_NOT_EXECUTED,
    CHILD_END,
    CHILD_START,
    LAST_TURN_NOTICE,
    LEDGER_REFUSED,
    LEDGER_RESERVE,
    LEDGER_SETTLE,
    LEDGER_UNAVAILABLE,
    MODEL_RESPONSE,
    RUN_STARTED,
    STOPPED,
    TOOL_ABANDONED,
    TOOL_EXECUTED,
    TOOL_REFUSED,
    TOOL_STARTED,
    TURN_STARTED,
    version_of,
)

#: the largest events file read: a 10,000-turn run writes about 5 MB
MAX_EVENTS_BYTES: Final = 256 << 20
#: the largest count an event may hold, as every count in budgetconf
_MAX_COUNT: Final = 2**63 - 1
#: keys an event holds as a count, or as a finite number, or as text (or null), or as an object
_COUNTS: Final = (
    "turn",
    "turns",
    "tokens",
    "tool_calls_executed",
    "calls",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
)
_NUMBERS: Final = ("time", "cost_usd")
_TEXTS: Final = (
    "type",
    "run_id",
    "stop_reason",
    "status",
    "message",
    "finish_reason",
    "cost_source",
    "cost_from",
)
_TEXTS_OR_NULL: Final = ("model",)
_OBJECTS: Final = ("limits", "budgets", "carried_over")
#: the rates of run_started's ``prices``: input and output are its price, cached defaults to input
_RATES: Final = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")
_PRICE_TEXTS: Final = ("model", "source", "locator")
#: the objects whose numbers the charts draw (as floats: a 309-digit integer is none)
_DRAWN_OBJECTS: Final = ("limits", "carried_over")
#: the cost_source of a response whose cost is known ("none": its cost_usd 0 is no cost)
KNOWN_COST: Final = frozenset({"reported", "priced"})
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
    }
)
#: the ledger's events, which the page lists as they came
_LEDGER_EVENTS: Final = frozenset(
    {LEDGER_RESERVE, LEDGER_SETTLE, LEDGER_REFUSED, LEDGER_UNAVAILABLE}
)


@dataclass(frozen=True, slots=True)
class Bad:
    """A line of the file that is no event: its number and why."""

    line: int
    why: str


@dataclass(slots=True)
class Turn:
    """What one turn did, gathered from its events."""

    number: int
    finish_reason: str | None = None
    asked: list[str] = field(default_factory=list)  # the names of the calls the model asked for
    executed: int = 0  # calls that ran (or started, when abandoned)
    refused: int = 0  # calls answered without running
    tokens: float = 0
    cost: float = 0.0
    cost_reported: bool = False  # whether its response's cost was known (reported or priced)
    cost_usd: float = 0  # cost_usd as the event holds it: an integer stays exact
    cost_source: str | None = None  # as the event says (version 1: none said)
    model: str | None = None  # the model its response names
    # its input (cached included), cached input and output tokens; None: the event gives none
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    content: str = ""
    time: float | None = None  # when the response was read
    rejected: dict[str, Any] | None = None  # the batch_rejected event
    truncated: dict[str, Any] | None = None  # the batch_truncated event
    notice: str | None = None  # the kind of the last-turn notice it carried
    responded: bool = False


@dataclass(slots=True)
class Child:
    """A sub-agent the run started: its limits, and how it ended (None: no end recorded)."""

    start: dict[str, Any]
    end: dict[str, Any] | None = None

    @property
    def run_id(self) -> str | None:
        """The ``run_id`` of the child's own events, as its start or end names it."""
        found = self.start.get("child_run_id", (self.end or {}).get("child_run_id"))
        return found if isinstance(found, str) else None


@dataclass(slots=True)
class RunView:
    """One run as its events tell it."""

    run_id: str | None
    first_line: int
    started: dict[str, Any] | None = None
    stopped: dict[str, Any] | None = None
    exhausted: dict[str, Any] | None = None  # the budget_exhausted event
    turns: dict[int, Turn] = field(default_factory=dict)
    children: list[Child] = field(default_factory=list)
    ledger: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0

    def turn(self, number: int) -> Turn:
        found = self.turns.get(number)
        if found is None:
            found = self.turns[number] = Turn(number)
        return found

    @property
    def name(self) -> str | None:
        """The run's name (``name=``, else its preset's), as its run_started gives it."""
        found = (self.started or {}).get("name")
        return found if isinstance(found, str) and found else None

    @property
    def version(self) -> int:
        """The vocabulary its events were recorded in: 1 for a run that says none."""
        return version_of(self.started or {})

    @property
    def prices(self) -> dict[str, Any] | None:
        """The price in force, as run_started's ``prices`` names it; None: none was in force,
        or its events name none (see `prices_named`)."""
        found = (self.started or {}).get("prices")
        return found if isinstance(found, dict) else None

    @property
    def prices_named(self) -> bool:
        """Whether its run_started says what price was in force (its events are recent enough
        to have ``prices``, null included)."""
        return "prices" in (self.started or {})

    @property
    def limits(self) -> dict[str, Any]:
        limits = (self.started or {}).get("limits")
        return limits if isinstance(limits, dict) else {}

    @property
    def budgets(self) -> dict[str, Any]:
        budgets = (self.started or {}).get("budgets")
        return budgets if isinstance(budgets, dict) else {}

    @property
    def carried(self) -> dict[str, Any]:
        carried = (self.started or {}).get("carried_over")
        return carried if isinstance(carried, dict) else {}

    def charged(self, key: str) -> dict[int, float]:
        """What its children spent (``tokens``, ``cost_usd``, ``tool_calls_executed``), by the
        turn each ended in: the loop charges a child's spend to its parent as it happens."""
        found: dict[int, float] = {}
        last = max(self.turns, default=0)
        for child in self.children:
            spent = (child.end or {}).get(key)
            if isinstance(spent, int | float) and spent:
                turn = (child.end or {}).get("turn")
                at = turn if isinstance(turn, int) else last  # no turn: the run's last
                found[at] = found.get(at, 0.0) + float(spent)
        return found

    def carried_over(self, key: str) -> float:
        """What a resumed run started from (``tokens``, ``turns``, ...): 0 unless a number."""
        found = self.carried.get(key, 0)
        if isinstance(found, bool) or not isinstance(found, int | float):
            return 0.0
        return float(found) if math.isfinite(found) and found >= 0 else 0.0


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
        event = _event(raw, last)
        if isinstance(event, str):
            bad.append(Bad(number, event))
        else:
            builder.add(event, number)
    return Events(builder.runs, bad, len(lines) - (1 if complete else 0))


def _event(raw: bytes, last: bool) -> dict[str, Any] | str:
    """The event on a line, or why the line holds none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        cut = " (the file ends inside the line: cut short?)" if last else ""
        return f"not JSON: {exc.msg}, column {exc.colno}{cut}"
    except (ValueError, RecursionError) as exc:  # NaN, a number of 5,000 digits, deep nesting
        return f"not JSON: {str(exc)[:80] or type(exc).__name__}"
    if not isinstance(value, dict):
        return f"not an event: expected a JSON object, got {_kind(value)}"
    return _checked(value)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _checked(event: dict[str, Any]) -> dict[str, Any] | str:
    """The event, when each key the page reads holds what it should; else why not."""
    if not isinstance(event.get("type"), str):
        return 'not an event: no "type" text'
    name = escape(clipped(event["type"], limit=40), keep="")  # one line, whatever it holds
    for keys, fits, expected, shown in _RULES:
        for key in keys:
            if key in event and not fits(event[key]):
                return f"{name}: {key}: {expected}, got {shown(event[key])}"
    wrong = _too_big(event)
    if wrong is None and "prices" in event:
        wrong = _price_problem(event["prices"])
    return f"{name}: {wrong}" if wrong is not None else event


def _price_problem(prices: object) -> str | None:
    """Why run_started's ``prices`` is no price the page can show and split by; None when
    it is one (null: no price was in force)."""
    if prices is None:
        return None
    if not isinstance(prices, dict):
        return f"prices: expected an object or null, got {_kind(prices)}"
    for key in _RATES[:2]:
        if key not in prices:
            return f"prices: {key}: expected a number from 0, got nothing"
    for key in _RATES:
        rate = prices.get(key)
        if not _is_number(rate) and not (key == _RATES[2] and rate is None):
            return f"prices: {key}: expected a number from 0, got {_shown(rate)}"
    for key in _PRICE_TEXTS:
        if key in prices and not isinstance(prices[key], str):
            return f"prices: {key}: expected text, got {_kind(prices[key])}"
    return None


def _too_big(event: dict[str, Any]) -> str | None:
    """Why a number the charts draw cannot be one: float() of a 309-digit integer overflows."""
    for key in _DRAWN_OBJECTS:
        for inner, item in event.get(key, {}).items():
            if type(item) is int and abs(item) > _MAX_COUNT:
                shown = escape(clipped(inner, limit=40), keep="")
                return f"{key}: {shown}: expected a number to 2**63-1, got {_shown(item)}"
    return None


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_text_or_null(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_count(value: object) -> bool:
    return type(value) is int and 0 <= value <= _MAX_COUNT


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return 0 <= value <= _MAX_COUNT
    return math.isfinite(value) and value >= 0


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true or false"}
    return "null" if value is None else names.get(type(value), "a number")


def _shown(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = str(value)
        return text if len(text) <= 24 else f"a number of {len(text)} digits"
    return _kind(value)


#: each kind of key: the keys, whether a value fits, what was expected, how the value is named
_RULES: Final[
    tuple[tuple[tuple[str, ...], Callable[[object], bool], str, Callable[[object], str]], ...]
] = (
    (_TEXTS, _is_text, "expected text", _kind),
    (_TEXTS_OR_NULL, _is_text_or_null, "expected text or null", _kind),
    (_COUNTS, _is_count, "expected a whole number from 0", _shown),
    (_NUMBERS, _is_number, "expected a number from 0", _shown),
    (_OBJECTS, _is_object, "expected an object", _kind),
)


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
