"""``budgetconf ledger status|runs``: the shared ledger that ``ledger.url`` names, read."""

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


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to 10000, got {clipped(text, repr)}"
        )
    return int(text)


def _arguments(parser: argparse.ArgumentParser) -> None:
    # the views' parsers are of the command's own class, so their errors are usage errors too
    views = parser.add_subparsers(dest="view", metavar="VIEW")
    views.required = True
    for view, what in (
        ("status", "a scope's spent, reserved and left"),
        ("runs", "a scope's latest runs"),
    ):
        sub = views.add_parser(view, help=what)
        add_resolution_options(sub)
        sub.add_argument("--scope", metavar="S", help="the scope (default: ledger.scope)")
        if view == "runs":
            sub.add_argument("--limit", metavar="N", type=_count, default=20, help="default 20")
        add_table_or_json(sub)


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._ledger import command  # the ledger's backends, when one is read

    return command(line, out, err)


COMMAND: Final = Command(
    "ledger",
    help="the shared ledger: a scope's spend in its window, and the runs it recorded",
    description="Read the shared ledger that ledger.url names, as the options resolve it.",
    examples=(
        "budgetconf ledger status                the scope's window: spent, reserved, left",
        "budgetconf ledger status --scope team-a --format json",
        "budgetconf ledger runs --limit 5",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
