"""The ``budgetconf`` command: explain, check, run, and the commands around them.

Exit codes of explain and check: 0 when every field resolved, 1 when a value
was rejected under the ``error`` policy or a source could not be read
(``check`` also on any warning), 64 on a usage error; run's are in
``_run``. Errors print as one line each, never as a traceback. rich is
imported only to draw the table.

Each command is declared in its module of ``_commands``, named in
`COMMANDS`, and its handler imports what carries it out only when that
command runs. The grammar is in ``_parser``, the resolution explain, check,
run and diff share in ``_resolution``, what they all write with in ``_output``.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Final, TextIO, cast

from budgetconf.cli._output import EXIT_ERROR, EXIT_USAGE, Guarded, Unwritable, say
from budgetconf.cli._parser import Usage, declared, parse, split
from budgetconf.cli._resolution import PresetFailed

__all__ = ["main"]

#: the commands in the order help lists them, each by its module in ``_commands``
COMMANDS: Final = (
    "explain",
    "check",
    "run",
    "presets",
    "schema",
    "init",
    "report",
    "completion",
    "ledger",
    "prices",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Every write goes through a `Guarded` stream, the command's and any other
    (argparse's help, a warning) alike: ``sys.stdout`` and ``sys.stderr`` are
    the guarded streams until the command returns.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    streams = sys.stdout, sys.stderr
    for stream in streams:
        if isinstance(stream, io.TextIOWrapper):  # a path may hold bytes the locale cannot encode
            stream.reconfigure(errors="backslashreplace")
    # a Guarded stream is a text stream in all a command does with one
    out = cast(TextIO, Guarded(streams[0], output=True))
    err = cast(TextIO, Guarded(streams[1]))
    sys.stdout, sys.stderr = out, err
    try:
        return _guarded(args, out, err)
    finally:
        sys.stdout, sys.stderr = streams


def _guarded(args: list[str], out: TextIO, err: TextIO) -> int:
    try:
        try:
            return _main(args, out, err)
        finally:  # what a buffered stdout still holds fails here, not unseen at exit
            out.flush()
    except Unwritable as exc:  # before the usage error or the help it may have cut short
        say(err, f"budgetconf: error: {exc}")
        _discard(out)
        return EXIT_ERROR
    except Usage as exc:
        say(err, f"budgetconf: usage error: {exc}")
        return EXIT_USAGE
    except PresetFailed as exc:  # reported here by the commands that write no document of it
        say(err, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    except BrokenPipeError:  # before OSError, its base class
        # the reader went away (`| head`); stop quietly, without a second error at exit
        _discard(out)
        return EXIT_ERROR
    except OSError as exc:  # the working directory was removed, and the like
        say(err, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _discard(out: TextIO) -> None:
    """Point stdout at the null device: what it still holds is dropped at exit, not an error."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # a stream of a caller's, with no file behind it
        return
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)


def _main(args: list[str], out: TextIO, err: TextIO) -> int:
    args, second = split(args)
    line = parse(args, declared(COMMANDS))
    if line.command is None:
        line.parser.print_help(err)
        return EXIT_USAGE
    if second is not None:
        from budgetconf.cli._diff import command as diff

        return diff(line, second, out, err)
    return line.command.handler(line, out, err)
