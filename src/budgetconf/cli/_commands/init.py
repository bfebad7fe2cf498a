"""``budgetconf init``: a settings file that explains every field and sets none."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import FILE_KINDS, Command, CommandLine, add_preset


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_preset(parser)
    parser.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="where to write (default: where the preset reads that kind of file); "
        "for a profile, a NAME or a PATH; - for standard output",
    )
    parser.add_argument(
        "--kind",
        choices=tuple(FILE_KINDS),
        help="which source's file: project (TOML, the default), global or profile (JSON)",
    )
    parser.add_argument(
        "--format",
        dest="file_format",
        choices=("toml", "json"),
        help="toml for the project file, json for the global one (default: from PATH's "
        "extension; a check against --kind and PATH)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._init import command

    return command(line, out, err)


COMMAND: Final = Command(
    "init",
    help="write a commented settings file that sets nothing yet",
    description="Write a settings file for the preset that describes every field and "
    "sets none, so it changes nothing until edited. Never overwrites without --force.",
    examples=(
        "budgetconf init                         ./settings.toml, the project file",
        "budgetconf init --kind global           ~/.budgetconf/settings.json",
        "budgetconf init --kind profile fast     ~/.budgetconf/profiles/fast.json",
        "budgetconf init ci/settings.toml --force",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
