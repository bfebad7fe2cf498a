"""``budgetconf presets``: the built-in presets, one line each."""

from __future__ import annotations

from typing import Final, TextIO

from budgetconf._engine import load_preset
from budgetconf.cli._output import EXIT_OK
from budgetconf.cli._parser import Command, CommandLine


def _presets(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """List each built-in preset's name and summary."""
    from budgetconf._presets import preset_names  # the preset reader, not loaded to parse

    line.no_app_args()
    for name in preset_names():
        out.write(f"{name:<16} {load_preset(name).summary}\n")
    return EXIT_OK


COMMAND: Final = Command(
    "presets",
    help="list the built-in presets",
    description="List the built-in presets, one line each.",
    examples=("budgetconf presets",),
    handler=_presets,
)
