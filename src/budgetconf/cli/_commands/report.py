"""``budgetconf report``: an events file drawn as one self-contained HTML page."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import Command, CommandLine


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("events", metavar="EVENTS.jsonl", help="the events file to read")
    parser.add_argument(
        "-o",
        "--output",
        dest="page",
        metavar="FILE",
        help="where to write the page (default: the events file's name with .html; - for"
        " standard output)",
    )


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._report import command  # the page's renderer

    return command(line, out, err)


COMMAND: Final = Command(
    "report",
    help="draw an events file's runs as one self-contained HTML page",
    description="Read an events file (budgetconf run --events, or on_event's JSON lines)"
    " and write one HTML page of its runs: the stop, a chart per budget, the budgets with"
    " where they were set, the turns. Exit 1 when a line is not an event (the page is"
    " written from the others, and each such line is told on stderr), or when the file"
    " cannot be read; 0 otherwise.",
    examples=(
        "budgetconf run --model script.json --events events.jsonl 'Say hi'",
        "budgetconf report events.jsonl                   writes events.html",
        "budgetconf report events.jsonl -o ci/report.html",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
