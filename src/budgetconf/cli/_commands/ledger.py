"""``budgetconf ledger status|runs|reset|prune``: the shared ledger that ``ledger.url`` names."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf._text import clipped
from budgetconf.cli._parser import (
    Command,
    CommandLine,
    add_resolution_options,
    add_table_or_json,
)

#: the window kinds a reset may name: `budgetconf.ledger.WINDOWS`, which is not loaded to
#: build the parser (a test holds the two equal)
WINDOWS: Final = ("none", "hour", "day", "week", "month")


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to 10000, got {clipped(text, repr)}"
        )
    return int(text)


def _yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do it without asking (needed when standard input is not a terminal)",
    )


def _arguments(parser: argparse.ArgumentParser) -> None:
    # the views' parsers are of the command's own class, so their errors are usage errors too
    views = parser.add_subparsers(dest="view", metavar="VIEW")
    views.required = True
    for view, what in (
        ("status", "each scope's spent, reserved and left"),
        ("runs", "a scope's latest runs"),
        ("reset", "set a scope's spend in its window to zero"),
        ("prune", "remove the run records that ended before a date"),
    ):
        sub = views.add_parser(view, help=what, description=what[0].upper() + what[1:] + ".")
        add_resolution_options(sub)
        if view in ("status", "runs"):
            default = "every scope the run draws on" if view == "status" else "ledger.scope"
            sub.add_argument("--scope", metavar="S", help=f"one scope (default: {default})")
        if view == "runs":
            sub.add_argument("--limit", metavar="N", type=_count, default=20, help="default 20")
        if view == "reset":
            sub.add_argument("scope", metavar="SCOPE", help="the scope to reset")
            sub.add_argument(
                "--window",
                choices=WINDOWS,
                help="the window the scope counts in (default: the one the ledger recorded)",
            )
            sub.add_argument(
                "--why", metavar="TEXT", required=True, help="why, kept in the reset's record"
            )
            _yes(sub)
        if view == "prune":
            sub.add_argument(
                "--before",
                metavar="DATE",
                required=True,
                help="ISO 8601 date (00:00 UTC) or time (UTC unless it names its offset)",
            )
            _yes(sub)
        add_table_or_json(sub)


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._ledger import command  # the ledger's backends, when one is read

    return command(line, out, err)


COMMAND: Final = Command(
    "ledger",
    help="the shared ledger: each scope's spend and runs; reset and prune",
    description=(
        "Read the shared ledger that ledger.url names, as the options resolve it; reset a"
        " scope's spend, or prune old run records. reset and prune ask first, unless --yes."
    ),
    examples=(
        "budgetconf ledger status              every scope the run draws on",
        "budgetconf ledger status --scope team-a --format json",
        "budgetconf ledger runs --limit 5",
        "budgetconf ledger reset team-a --why 'refund: runaway job' --yes",
        "budgetconf ledger prune --before 2026-01-01",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
