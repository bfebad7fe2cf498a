"""``budgetconf ledger reset|prune``: the two commands that change the shared ledger.

Each asks a person first, on a terminal (``[y/N]``, on standard error, the
answer read from standard input), unless ``--yes``; with standard input not
a terminal and no ``--yes``, the command line is a usage error (exit 64), so
that no script changes a ledger by accident. A reset sets a scope's spend in
its current window to zero and keeps a record of who, when and why; prune
removes the run and reset records that ended before a moment, in every
scope, and never any spend. The texts a window and its amounts are shown by,
which the reading views share, are here too.
"""

from __future__ import annotations

import datetime as _dt
import sys
from typing import TYPE_CHECKING, Any, Final, TextIO

from budgetconf._text import clipped, escape
from budgetconf._values import plain_number
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, plural, say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.errors import LedgerConflict

if TYPE_CHECKING:
    from budgetconf.ledger import Ledger

#: how much of a reset's why a table shows
WHY_SHOWN: Final = 200
#: the earliest moment ``--before`` may name: no ledger record ended before it
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class Change:
    """``reset`` or ``prune`` as the command line asks it, checked before anything is read."""

    __slots__ = ("format", "yes")

    def __init__(self, line: CommandLine) -> None:
        self.format: str = line.ns.format
        self.yes: bool = line.ns.yes

    @staticmethod
    def of(line: CommandLine) -> Change:
        """The change ``line`` asks for; `Usage` when it cannot be carried out as given."""
        change: Change = Reset(line) if line.ns.view == "reset" else Prune(line)
        if not change.yes and not _is_terminal(sys.stdin):
            raise Usage(
                f"ledger {line.ns.view} asks before it changes the ledger, and standard input"
                f" is not a terminal: pass --yes to {change.doing} without asking"
            )
        return change

    @property
    def doing(self) -> str:
        """What the change does, to follow ``pass --yes to``."""
        raise NotImplementedError

    def carry_out(self, ledger: Ledger, out: TextIO, err: TextIO) -> int:
        """Ask (unless ``--yes``), change ``ledger``, and say what changed."""
        raise NotImplementedError

    def confirmed(self, question: str, err: TextIO) -> bool:
        """Whether the person answers yes to ``question`` (always, with ``--yes``)."""
        if self.yes:
            return True
        err.write(f"{question} [y/N] ")
        err.flush()
        answer = sys.stdin.readline()
        if not answer.endswith("\n"):  # the end of input, where a terminal echoed no newline
            err.write("\n")
        return answer.strip().lower() in ("y", "yes")


class Reset(Change):
    """``ledger reset SCOPE [--window W] --why TEXT``."""

    __slots__ = ("scope", "why", "window")

    def __init__(self, line: CommandLine) -> None:
        super().__init__(line)
        why = " ".join(line.ns.why.split())
        if not why:
            raise Usage("--why is empty: a reset says why it was made")
        self.why = why
        self.scope: str = line.ns.scope
        self.window: str | None = line.ns.window

    @property
    def doing(self) -> str:
        return "reset"

    def carry_out(self, ledger: Ledger, out: TextIO, err: TextIO) -> int:
        try:
            doc = ledger.status(self.scope, window=self.window).to_dict()
        except LedgerConflict as exc:  # a counter of another window kind, kept from before
            window = exc.asked
            question = (
                f"Reset scope {self.scope}'s counter of the window {window} (it counts in"
                f" {exc.window}; this one was kept from before it had one window)?"
            )
        else:
            window = doc["window"]
            shown = window_text(window, doc["window_start"], doc["window_ends"])
            question = (
                f"Reset scope {self.scope}'s spend in its window {shown}"
                f" (spent: {amounts(doc['spent'])})?"
            )
        if not self.confirmed(question, err):
            say(err, f"budgetconf: scope {self.scope} was not reset")
            return EXIT_ERROR
        record = ledger.reset(self.scope, why=self.why, window=window)
        if self.format == "json":
            write_json(record, out)
        else:
            _reset_table(record, out)
        return EXIT_OK


def _reset_table(record: dict[str, Any], out: TextIO) -> None:
    from budgetconf.ledger import iso, window_bounds

    reset = record["reset"]
    start = reset["window_start"]
    ends = None if start is None else iso(window_bounds(reset["window"], _moment(start))[1])
    rows = (
        ("scope", record["scope"]),
        ("window", window_text(reset["window"], start, ends)),
        ("spent before", amounts(reset["spent"])),
        ("reset by", reset["by"]),
        ("why", reset["why"]),
        ("at", reset["at"]),
    )
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        shown = clipped(escape(str(text), keep=""), limit=WHY_SHOWN)
        out.write(f"{name.ljust(width)}  {shown}\n")


class Prune(Change):
    """``ledger prune --before DATE``."""

    __slots__ = ("before",)

    def __init__(self, line: CommandLine) -> None:
        super().__init__(line)
        self.before = moment_before(line.ns.before)

    @property
    def doing(self) -> str:
        return "prune"

    def carry_out(self, ledger: Ledger, out: TextIO, err: TextIO) -> int:
        from budgetconf.ledger import iso

        shown = iso(self.before)
        question = (
            f"Remove the run and reset records that ended before {shown}, in every scope"
            " (no spend is removed)?"
        )
        if not self.confirmed(question, err):
            say(err, "budgetconf: no record was removed")
            return EXIT_ERROR
        removed = ledger.prune(self.before)
        if self.format == "json":
            write_json({"removed": removed, "before": shown}, out)
        else:
            out.write(f"removed {plural(removed, 'record')} that ended before {shown}\n")
        return EXIT_OK


def moment_before(text: str) -> _dt.datetime:
    """``--before``: an ISO 8601 date (its 00:00 UTC) or time (UTC unless it names its offset),
    from 1970 on; `Usage` for any other text."""
    try:
        moment = _dt.datetime.fromisoformat(text)
        if moment.tzinfo is None or moment.utcoffset() is None:
            moment = moment.replace(tzinfo=_dt.UTC)
        moment = moment.astimezone(_dt.UTC)
    except (ValueError, OverflowError):
        raise Usage(
            f"--before: expected an ISO 8601 date or time (2026-12-01, 2026-12-01T09:30:00Z),"
            f" got {clipped(text, repr)}"
        ) from None
    if moment < _EPOCH:
        raise Usage(f"--before: {clipped(text, repr)} is before 1970, when no record ended")
    return moment


def _moment(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text)


def _is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal a person answers at (None and closed streams are not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return callable(isatty) and bool(isatty())
    except (ValueError, OSError):
        return False


# ---------------------------------------------------------------------------------- texts


def window_text(window: str, start: str | None, ends: str | None) -> str:
    """``day, 2026-12-01T00:00:00Z to 2026-12-02T00:00:00Z``; ``none`` alone."""
    return window if start is None else f"{window}, {start} to {ends}"


def amounts(pair: dict[str, Any]) -> str:
    """``50 tokens, 0.25 USD``."""
    return f"{pair['tokens']} tokens, {plain_number(pair['cost_usd'])} USD"
