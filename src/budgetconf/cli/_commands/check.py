"""``budgetconf check``: resolve and report, for CI; exit 1 on any error or warning."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import (
    Command,
    CommandLine,
    add_format_and_fields,
    add_resolution_options,
)


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_resolution_options(parser)
    add_format_and_fields(parser, ("table", "json"))  # check writes no settings file


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._check import command

    return command(line, out, err)


COMMAND: Final = Command(
    "check",
    help="exit 1 on any error or warning (for CI)",
    description="Resolve and report problems; exit 1 on any error or warning.",
    examples=(
        "budgetconf check",
        "budgetconf check --preset app-budgets.toml --project ci/settings.toml",
    ),
    arguments=_arguments,
    handler=_carry_out,
    budget_flags=True,
)
