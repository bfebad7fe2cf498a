"""``budgetconf prices``: what each model's tokens cost, where that price comes from."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import (
    Command,
    CommandLine,
    add_resolution_options,
    add_table_or_json,
)


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_resolution_options(parser)
    parser.add_argument(
        "models",
        metavar="MODEL",
        nargs="*",
        help="the models to show (default: every model the price table knows)",
    )
    add_table_or_json(parser)


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._prices import command  # the price tables, when one is read

    return command(line, out, err)


COMMAND: Final = Command(
    "prices",
    help="each model's price per million tokens, its source, and whether a cost budget holds",
    description="Show the price of each model as a run would find it: the prices.* fields, "
    "the table file prices.table names, or the genai-prices package; and whether a cost "
    "budget can be enforced for it.",
    epilog="Exit codes: 0 every model found, 1 a model with no price, 64 usage.",
    examples=(
        "budgetconf prices gpt-4o-mini",
        "budgetconf prices claude-sonnet-4-5 --format json",
        "budgetconf prices --price-table prices.toml",
    ),
    arguments=_arguments,
    handler=_carry_out,
    budget_flags=True,
)
