"""``budgetconf schema``: the JSON Schema of a preset's settings files, for editors."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import FILE_KINDS, Command, CommandLine, add_preset


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_preset(parser)
    parser.add_argument(
        "--kind", choices=tuple(FILE_KINDS), help="describe only this source's file"
    )


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._schema import command

    return command(line, out, err)


COMMAND: Final = Command(
    "schema",
    help="print the JSON Schema of the preset's settings files, for editors",
    description="Print the JSON Schema (draft 2020-12) of the settings files the preset "
    "reads: its sections and fields with their types, bounds, defaults and variables.",
    examples=(
        "budgetconf schema > budgetconf.schema.json",
        "budgetconf schema --preset skiller --kind profile",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
