"""What a run records as it goes: the events' vocabulary, the sink that hears them, their file.

Every run records the same events, the executor's and every bridged run's:
each is a dict with a ``type`` from `TYPES`, the ``run_id`` of its run and
the ``time`` it was recorded (seconds since the epoch, UTC), with the keys
its type names. `TYPES` is the one place an event type is defined: the
runs emit by its names, the report reads by them, and docs/loop.md's table
is `table()`. A run's ``run_started`` carries the vocabulary's `VERSION`; a
run recorded without one is version 1.

A `Sink` is what a run's ``on_event`` is: a callable taking one event. One
that also has ``open_run(run)`` and ``close_run(run)`` hears them in the
run's own context, around the run, with the run's `RunInfo` (what an
exporter needs to nest what it records). `EventsFile` is the sink that
appends each event to a file as a JSON line.

This module is upstream of the loop, the bridges and the report: it imports
none of them.
"""

from __future__ import annotations

import errno
import json
import os
from typing import TYPE_CHECKING, Any, Protocol  # the loop imports typing already

from budgetconf._record import ReadOnly, Record, set_field
from budgetconf.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final, TextIO, TypeAlias

#: an event: its ``type``, ``run_id`` and ``time``, and the keys its type names
Event: TypeAlias = "dict[str, Any]"


class Sink(Protocol):
    """A run's ``on_event``: called with each event as it happens.

    It may also have ``open_run(run)`` and ``close_run(run)``, called with the run's
    `RunInfo` before its first event and after its last, and ``release_run(run)``, called
    once the run has returned to its caller. ``open_run`` is called in the caller's context;
    ``close_run`` where the run ends, which for a bridged run may be inside its framework
    (a hook that decided a stop), so what ``open_run`` made current in the caller's context
    is given back in ``release_run``.
    """

    def __call__(self, event: dict[str, Any], /) -> None: ...


__all__ = [
    "BATCH_REJECTED",
    "BATCH_TRUNCATED",
    "BUDGET_EXHAUSTED",
    "BUDGET_WARNING",
    "CALLS_NOT_EXECUTED",
    "CHILD_END",
    "CHILD_START",
    "COMMON",
    "LAST_TURN_NOTICE",
    "LEDGER_REFUSED",
    "LEDGER_RESERVE",
    "LEDGER_SETTLE",
    "LEDGER_UNAVAILABLE",
    "LEDGER_WARNING",
    "MODEL_RESPONSE",
    "RUN_STARTED",
    "STOPPED",
    "TOOL_ABANDONED",
    "TOOL_EXECUTED",
    "TOOL_LIMITED",
    "TOOL_REFUSED",
    "TOOL_STARTED",
    "TURN_STARTED",
    "TYPES",
    "VERSION",
    "EventType",
    "EventsFile",
    "RunInfo",
    "Sink",
    "table",
    "version_of",
]

#: the vocabulary's version, in every ``run_started``; a run recorded without one is version 1
VERSION: Final = 2


class EventType(Record):
    """One type of event: its name, when a run records it, and its keys with what each holds."""

    __module__ = "budgetconf.events"
    __slots__ = ("keys", "name", "when")

    name: str
    when: str
    keys: tuple[tuple[str, str], ...]

    def __init__(self, name: str, when: str, keys: tuple[tuple[str, str], ...]) -> None:
        set_field(self, "name", name)
        set_field(self, "when", when)
        set_field(self, "keys", keys)


#: the keys every event carries
COMMON: Final = (
    ("type", "one of `TYPES`"),
    ("run_id", "the run's id, 32 hex digits; a resumed run has its own"),
    ("time", "when it was recorded: seconds since the epoch (UTC), as `time.time()` gives it"),
)

RUN_STARTED: Final = "run_started"
TURN_STARTED: Final = "turn_started"
LAST_TURN_NOTICE: Final = "last_turn_notice"
MODEL_RESPONSE: Final = "model_response"
TOOL_STARTED: Final = "tool_started"
TOOL_EXECUTED: Final = "tool_executed"
TOOL_REFUSED: Final = "tool_refused"
TOOL_ABANDONED: Final = "tool_abandoned"
BATCH_REJECTED: Final = "batch_rejected"
BATCH_TRUNCATED: Final = "batch_truncated"
CALLS_NOT_EXECUTED: Final = "calls_not_executed"
TOOL_LIMITED: Final = "tool_limited"
BUDGET_WARNING: Final = "budget_warning"
BUDGET_EXHAUSTED: Final = "budget_exhausted"
LEDGER_RESERVE: Final = "ledger_reserve"
LEDGER_SETTLE: Final = "ledger_settle"
LEDGER_REFUSED: Final = "ledger_refused"
LEDGER_UNAVAILABLE: Final = "ledger_unavailable"
LEDGER_WARNING: Final = "ledger_warning"
STOPPED: Final = "stopped"
CHILD_START: Final = "child_start"
CHILD_END: Final = "child_end"

#: the limit's keys a stop's event repeats
_LIMIT = "and the `limit` keys (`field`, `value`, `source`, `locator`, `raise_with`, …)"

#: every event type, in the order a run records them
TYPES: Final[Mapping[str, EventType]] = {
    t.name: t
    for t in (
        EventType(
            RUN_STARTED,
            "first",
            (
                ("version", "the vocabulary's `VERSION`"),
                ("name", "`name=`, else the preset's name"),
                ("preset", "the preset's name"),
                ("framework", "the bridge's, `openai_agents` say; null for the executor"),
                ("limits", "budget → value"),
                (
                    "budgets",
                    "budget → its limit: `field`, `value`, `source`, `locator`, `raise_with`",
                ),
                ("tools", "tool → its own limit (`tools.max_calls`), as in `budgets`"),
                ("warn_at", "`limits.warn_at`, or null"),
                ("last_turn", "the preset's last-turn behaviour"),
                ("over_cap", "the preset's per-response cap behaviour"),
                (
                    "carried_over",
                    "`turns`, `tool_calls_executed`, `tokens`, `cost_usd` a"
                    " resumed run starts from; zeros otherwise",
                ),
                ("resumed_from", "the run id of the run it resumes, or null"),
                (
                    "prices",
                    "the price of its model: `model`, `input_per_mtok`, `output_per_mtok`,"
                    " `cached_input_per_mtok`, `source`, `locator`; null when none is in force",
                ),
            ),
        ),
        EventType(TURN_STARTED, "before each model call", (("turn", "its number"),)),
        EventType(
            LAST_TURN_NOTICE,
            "the last-turn notice went with the call",
            (("turn", ""), ("kind", "`warn` or `wrap_up`"), ("content", "its text")),
        ),
        EventType(
            MODEL_RESPONSE,
            "a response was read",
            (
                ("turn", ""),
                ("finish_reason", ""),
                ("content", "its text, or null"),
                ("tool_calls", "the calls it asks for: `id`, `name`"),
                ("tokens", "its `usage.total_tokens`"),
                ("input_tokens", "its input tokens, cached ones included"),
                ("cached_input_tokens", ""),
                ("output_tokens", "reasoning ones included"),
                ("cost_usd", "its cost, or 0"),
                ("cost_source", "`reported`, `priced` or `none`"),
                ("model", "the model it names, or null"),
            ),
        ),
        EventType(
            TOOL_STARTED,
            "a tool call is about to run",
            (("turn", ""), ("id", "the call's id"), ("name", "the tool's")),
        ),
        EventType(
            TOOL_EXECUTED,
            "a tool ran",
            (("turn", ""), ("id", ""), ("name", ""), ("ok", ""), ("error", "when it raised")),
        ),
        EventType(
            TOOL_REFUSED,
            "an unknown tool, or arguments that cannot be read",
            (("turn", ""), ("id", ""), ("name", ""), ("reason", "")),
        ),
        EventType(
            TOOL_ABANDONED,
            "a call still running at the deadline or an interrupt",
            (("turn", ""), ("id", ""), ("name", ""), ("reason", "")),
        ),
        EventType(
            BATCH_REJECTED,
            "a response over the per-response cap was refused whole",
            (("turn", ""), ("calls", ""), ("cap", ""), ("ids", "")),
        ),
        EventType(
            BATCH_TRUNCATED,
            "only the first calls of a response ran",
            (("turn", ""), ("calls", ""), ("cap", ""), ("skipped", "their ids")),
        ),
        EventType(
            CALLS_NOT_EXECUTED,
            "calls were answered without running",
            (("turn", ""), ("ids", ""), ("reason", "")),
        ),
        EventType(
            TOOL_LIMITED,
            "calls of a tool past its own limit (`tools.max_calls`) were answered without"
            " running; the run goes on",
            (("turn", ""), ("name", "the tool's"), ("ids", ""), ("…", _LIMIT)),
        ),
        EventType(
            BUDGET_WARNING,
            "a run's use of a budget first reached `limits.warn_at` of its limit",
            (
                ("turn", ""),
                ("budget", "the loop table's key: `max_steps`, `max_calls_by_tool`, …"),
                ("field", "its field: `loop.max_steps`, `tools.max_calls.web_search`, …"),
                ("used", ""),
                ("limit", "the limit's value, `***` when its field is secret"),
                ("fraction", "`used / limit`, null when its field is secret"),
            ),
        ),
        EventType(
            BUDGET_EXHAUSTED,
            "a budget stopped the run",
            (("turn", ""), ("stop_reason", ""), ("…", _LIMIT)),
        ),
        EventType(
            LEDGER_RESERVE,
            "the shared ledger granted a reservation, before a model call",
            (
                ("turn", ""),
                ("scope", ""),
                ("reservation", ""),
                ("tokens", ""),
                ("cost_usd", ""),
                ("cost_from", "the price's locator, or `ledger.reserve_cost_usd`"),
            ),
        ),
        EventType(
            LEDGER_SETTLE,
            "the reservation was settled by the response (or given back, `released`)",
            (
                ("turn", ""),
                ("scope", ""),
                ("reservation", ""),
                ("tokens", ""),
                ("cost_usd", ""),
                ("released", ""),
            ),
        ),
        EventType(
            LEDGER_REFUSED,
            "the reservation would pass the scope's maximum: the run stops before the call",
            (("turn", ""), ("scope", ""), ("field", ""), ("…", "the `tokens` or `cost_usd` asked")),
        ),
        EventType(
            LEDGER_UNAVAILABLE,
            "the ledger could not be used",
            (
                ("turn", ""),
                ("scope", ""),
                ("url", "its password `***`"),
                ("error", ""),
                ("on_unavailable", ""),
                ("during", "`reserve`, `renew`, `settle`, `release` or `record`"),
            ),
        ),
        EventType(
            LEDGER_WARNING,
            "a settle brought a scope's spend to `limits.warn_at` of a maximum, first in the fleet",
            (
                ("turn", "the settled call's"),
                ("scope", ""),
                ("window", ""),
                ("window_ends", "ISO 8601 UTC, null for `none`"),
                ("budget", "`max_tokens` or `max_cost_usd`"),
                ("field", "the maximum's: `ledger.max_cost_usd_by_scope.team:research`, …"),
                ("spent", "the scope's settled spend in its window"),
                ("limit", "the maximum, `***` when its field is secret"),
                ("warn_at", ""),
            ),
        ),
        EventType(
            STOPPED,
            "last",
            (
                ("stop_reason", ""),
                ("status", ""),
                ("turns", "the conversation's, as on the result"),
                ("tool_calls_executed", ""),
                ("tokens", ""),
                ("cost_usd", ""),
                ("message", ""),
            ),
        ),
        EventType(
            CHILD_START,
            "a sub-agent's run began on a budget carved from this run",
            (
                ("turn", ""),
                ("child_run_id", "the `run_id` of the child's own events"),
                ("limits", "the child's: budget → value"),
            ),
        ),
        EventType(
            CHILD_END,
            "that sub-agent's run ended",
            (
                ("turn", ""),
                ("child_run_id", ""),
                ("status", ""),
                ("stop_reason", ""),
                ("turns", ""),
                ("tokens", ""),
                ("cost_usd", ""),
                ("tool_calls_executed", ""),
            ),
        ),
    )
}


def version_of(run_started: Mapping[str, Any]) -> int:
    """The vocabulary version a run was recorded in: its ``run_started``'s, else 1."""
    found = run_started.get("version")
    return found if type(found) is int and found >= 1 else 1


def table() -> str:
    """The vocabulary as docs/loop.md shows it: a Markdown table of each type, when, and keys."""
    rows = ["| type | when | keys |", "| --- | --- | --- |"]
    for t in TYPES.values():
        keys = ", ".join(_key(name, what) for name, what in t.keys)
        rows.append(f"| `{t.name}` | {t.when} | {keys} |")
    return "\n".join(rows) + "\n"


def _key(name: str, what: str) -> str:
    if name == "…":  # the keys of another record, which the description names
        return what
    return f"`{name}` ({what})" if what else f"`{name}`"


class RunInfo(ReadOnly):
    """A run as a sink's ``open_run`` and ``close_run`` see it: its id and name, its preset,
    the bridge's framework (None for the executor), the runs it belongs to, the model it asks
    for (None when it names none) and its `budgetconf.loop.Budget`. ``traced`` says the
    framework's own instrumentation traces the run's model and tool calls (a telemetry sink
    then traces the run alone, docs/telemetry.md)."""

    __module__ = "budgetconf.events"
    __slots__ = (
        "budget",
        "framework",
        "model",
        "name",
        "parent",
        "preset",
        "resumed_from",
        "run_id",
        "traced",
    )

    run_id: str
    name: str
    preset: str
    framework: str | None
    parent: RunInfo | None  # the run a sub-agent's budget was carved from
    resumed_from: str | None  # the id of the run it continues
    model: str | None
    budget: Any  # the run's `budgetconf.loop.Budget` (not imported here: the loop imports this)
    traced: bool

    def __init__(
        self,
        run_id: str,
        name: str,
        preset: str,
        *,
        framework: str | None = None,
        parent: RunInfo | None = None,
        resumed_from: str | None = None,
        model: str | None = None,
        budget: Any = None,
        traced: bool = False,
    ) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "name", name)
        set_field(self, "preset", preset)
        set_field(self, "framework", framework)
        set_field(self, "parent", parent)
        set_field(self, "resumed_from", resumed_from)
        set_field(self, "model", model)
        set_field(self, "budget", budget)
        set_field(self, "traced", traced)

    def __repr__(self) -> str:
        return f"RunInfo({self.name!r}, run_id={self.run_id!r})"


class EventsFile:
    """A sink that appends each event to the file at ``path`` as one JSON line.

    Opened to append, so an earlier run's events are never lost; a FIFO no
    process reads is refused (`UsageError`) rather than waited for. A write
    that fails is kept in ``lost`` (one line naming ``label``) and raised, so
    the run ends, failed. ``label`` is how messages name the file (the
    command line's ``--events PATH``).
    """

    __module__ = "budgetconf.events"

    def __init__(self, path: str, *, label: str | None = None) -> None:
        self.path = path
        self.label = path if label is None else label
        self.lost: str | None = None
        self._file = self._opened()

    def _opened(self) -> TextIO:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            why = "a FIFO that no process reads" if exc.errno == errno.ENXIO else _reason(exc)
            raise UsageError(f"{self.label}: {why}") from None
        os.set_blocking(fd, True)  # a pipe's reader may be slow: each write waits for it
        return open(fd, "a", encoding="utf-8", closefd=True)

    def __enter__(self) -> EventsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._file.close()
        except OSError as problem:  # the last lines could not be flushed
            self._lose(problem)

    def __call__(self, event: Event) -> None:
        try:
            # ASCII: a model's text may hold lone surrogates, which no file encoding takes
            self._file.write(json.dumps(event, default=str) + "\n")
            self._file.flush()
        except OSError as exc:
            self._lose(exc)
            raise OSError(exc.errno, exc.strerror, self.path) from None

    def _lose(self, exc: OSError) -> None:
        if self.lost is None:
            self.lost = f"{self.label}: cannot write: {_reason(exc)}"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
