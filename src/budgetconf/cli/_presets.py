"""``budgetconf presets``: the built-in presets, one line each."""

from __future__ import annotations

from typing import TextIO

from budgetconf._engine import load_preset
from budgetconf._presets import preset_names
from budgetconf.cli._output import EXIT_OK
from budgetconf.cli._parser import CommandLine

__all__ = ["command"]


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """List each built-in preset's name and summary."""
    line.no_app_args()
    for name in preset_names():
        out.write(f"{name:<16} {load_preset(name).summary}\n")
    return EXIT_OK
