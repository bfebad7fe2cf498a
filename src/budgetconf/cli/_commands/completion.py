"""``budgetconf completion bash|zsh``: shell completion generated from the real parser."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import Command, CommandLine


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=("bash", "zsh"), help="the shell")


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._completion import command

    return command(line, out, err)


COMMAND: Final = Command(
    "completion",
    help="print a shell completion script",
    description="Print the completion script for bash or zsh.",
    examples=(
        "source <(budgetconf completion bash)    in ~/.bashrc",
        "source <(budgetconf completion zsh)     in ~/.zshrc, after compinit",
    ),
    arguments=_arguments,
    handler=_carry_out,
)
