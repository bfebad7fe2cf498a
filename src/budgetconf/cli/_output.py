"""What every command writes with: exit codes, lines for people, documents for tools.

A line for a person never carries a raw control character: whatever a file,
the environment or a server gave is escaped before it reaches the terminal.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from budgetconf._resolution import Resolution

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "document",
    "plural",
    "printable",
    "problems",
    "say",
    "write_json",
]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 64


def printable(text: str, keep: str = "") -> str:
    """``text`` safe for a terminal: control characters (escapes too) shown as ``\\x1b``.

    Characters in ``keep`` (say, newline and tab) are left as they are.
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c in keep else c.encode("unicode_escape").decode() for c in text
    )


def say(stream: TextIO, line: str) -> None:
    """One line to a person: a message that spans lines is joined, control codes escaped."""
    stream.write(printable(" ".join(line.split("\n"))) + "\n")


def plural(n: int, word: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def write_json(data: object, out: TextIO) -> None:
    """A document for tools: indented, and with its text as it is, not as ``\\u`` escapes."""
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def document(res: Resolution, fields: list[str], out: TextIO) -> None:
    """The resolution as the explain and check JSON document, ``fields`` only if any are given."""
    write_json(res.to_dict(fields), out)


def problems(res: Resolution, err: TextIO, *, warnings: bool) -> None:
    """The resolution's errors, one line each, then its warnings if asked for."""
    for error in res.errors:
        say(err, f"budgetconf: error: {error}")
    for warning in res.warnings if warnings else ():
        say(err, f"budgetconf: warning: {warning}")
