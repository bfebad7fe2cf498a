"""What every command writes with: exit codes, the guarded streams, lines and documents.

Nothing a file, the environment or a server gave reaches a terminal as a
command: `main` hands every command `Guarded` streams, which escape each
write (`budgetconf._text.escape`), and sets them as ``sys.stdout`` and
``sys.stderr`` while the command runs, so that argparse's help and anything
else printed pass the same way. A document is escaped in its own notation
first (`json_text`, `toml_text`), so that it still reads back as written.
The explain table is the one text with escape codes of its own, rich's
styles: it escapes the text of each piece it draws and writes through
`styled`.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TextIO

from budgetconf._text import escape, escape_json, escape_toml

if TYPE_CHECKING:
    from budgetconf._resolution import Resolution

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 64


class Unwritable(Exception):
    """Standard output took no more (a full disk, a closed file): one line says so, exit 1.

    Not an `OSError`, so that no command's own handling of a file it writes
    mistakes standard output for that file.
    """

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to standard output: {exc.strerror or exc}")


class Guarded(io.TextIOBase):
    """A stream that escapes what is written to it: stdout and stderr as every command has them.

    The newline and the tab pass; every other unsafe character is written as
    its escape (``\\x1b``). Whether the stream is a terminal, its encoding and
    its file number are the stream's. On the ``output`` stream, a write or a
    flush that fails raises `Unwritable` (a reader gone away is still
    `BrokenPipeError`, the quiet ending).
    """

    def __init__(self, stream: TextIO, *, output: bool = False) -> None:
        super().__init__()
        self.stream = stream
        self.output = output

    def write(self, text: str) -> int:
        self._guard(self.stream.write, escape(text))
        return len(text)

    def styled(self, text: str) -> None:
        """Write text whose escape codes are a renderer's own and whose words were escaped."""
        self._guard(self.stream.write, text)

    def _guard(self, write: Callable[[str], object], text: str) -> None:
        try:
            write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if not self.output:
                raise
            raise Unwritable(exc) from None

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._guard(lambda _: self.stream.flush(), "")

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the stream's, which may be unset
        return getattr(self.stream, "encoding", None) or "utf-8"


def styled(out: TextIO, text: str) -> None:
    """Write ``text``, already escaped but for its style codes, past the guard of ``out``."""
    if isinstance(out, Guarded):
        out.styled(text)
    else:  # a stream a caller gave: there is no guard to pass
        out.write(text)


def say(stream: TextIO, line: str) -> None:
    """One line to a person: a message that spans lines is joined into one."""
    stream.write(" ".join(line.split("\n")) + "\n")


def plural(n: int, word: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def json_text(data: object) -> str:
    """A document for tools: indented, its text as it is but what a terminal would act on."""
    import json

    return escape_json(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def comment(text: str) -> str:
    """A comment line of a TOML file: ``# text``, a newline in ``text`` shown as ``\\n``.

    The rest of what a terminal or an editor would act on is escaped with the
    whole document, by `toml_text`, so that a commented value line still reads
    as TOML once uncommented.
    """
    return "# " + text.replace("\n", "\\n") if text else "#"


def toml_text(document: str) -> str:
    """A TOML document with what a terminal or an editor would act on escaped."""
    return escape_toml(document)


def write_json(data: object, out: TextIO) -> None:
    """Write the document `json_text` makes of ``data``."""
    out.write(json_text(data))


def document(res: Resolution, fields: list[str], out: TextIO) -> None:
    """The resolution as the explain and check JSON document, ``fields`` only if any are given."""
    write_json(res.to_dict(fields), out)


def problems(res: Resolution, err: TextIO, *, warnings: bool) -> None:
    """The resolution's errors, one line each, then its warnings if asked for."""
    for error in res.errors:
        say(err, f"budgetconf: error: {error}")
    for warning in res.warnings if warnings else ():
        say(err, f"budgetconf: warning: {warning}")
