"""``budgetconf check``: resolve and report, for CI; exit 1 on any error or warning."""

from __future__ import annotations

from typing import TextIO

from budgetconf.cli._explain import shown
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, document, plural, problems, say
from budgetconf.cli._parser import CommandLine
from budgetconf.cli._resolution import Resolved

__all__ = ["check", "command"]


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``check``: a preset file that cannot be read fails it as explain's would."""
    return shown(line, check, out, err)


def check(found: Resolved, fmt: str, out: TextIO, err: TextIO) -> int:
    """The problems, then one line that says whether the check passed; or the JSON document."""
    res, preset, fields = found.res, found.preset, found.fields
    failed = bool(res.errors or res.warnings)
    if fmt == "json":
        document(res, fields, out)
    else:
        problems(res, err, warnings=True)
        if failed:
            say(
                out,
                f"check failed: {plural(len(res.errors), 'error')}, "
                f"{plural(len(res.warnings), 'warning')} (preset {preset.name})",
            )
        else:
            count = plural(len(fields or res.values), "field")
            say(out, f"ok: {count} resolved, no warnings (preset {preset.name})")
    return EXIT_ERROR if failed else EXIT_OK
