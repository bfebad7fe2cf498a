"""``budgetconf report``: an events file drawn as one self-contained HTML page.

Exit codes: 0 when every line was an event, 1 when one was not (the page is
still written from the others, and each such line is told on stderr as
``FILE:LINE: why``), when the file holds no run (a warning says so), or when
the events cannot be read or the page written;
64 is a usage error. ``run --report FILE`` writes the same page of its run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, TextIO

from budgetconf._files import FileProblem
from budgetconf._report._page import render
from budgetconf._report._read import Events, parse_events, read_events
from budgetconf._text import escape
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, plural, say
from budgetconf.cli._parser import CommandLine, Usage


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``report``: read the events, tell each bad line, write the page."""
    line.no_app_args()
    source: str = line.ns.events
    target: str = line.ns.page if line.ns.page is not None else default_page(source)
    if target != "-":
        problem = page_problem(target, source)
        if problem is not None:
            raise Usage(f"-o {target}: {problem}")
    try:
        events = read_events(source)
    except FileProblem as exc:
        say(err, f"budgetconf: error: {source}: {exc.problem}")
        return EXIT_ERROR
    shown = escape(source, keep="")  # each bad line in one line, whatever the name holds
    for bad in events.bad:
        say(err, f"{shown}:{bad.line}: {bad.why}")
    page = render(os.path.basename(source), events)
    if target == "-":
        out.write(page)
    else:
        failed = write_page(target, page)
        if failed is not None:
            say(err, f"budgetconf: error: {failed}")
            return EXIT_ERROR
        say(out, f"wrote {target}: {_counted(events)}")
    if not events.runs:  # an empty file, or one of bad lines only: no run to show
        say(err, f"budgetconf: warning: no runs in {shown}")
        return EXIT_ERROR
    return EXIT_ERROR if events.bad else EXIT_OK


def _counted(events: Events) -> str:
    shown = plural(len(events.runs), "run")
    if events.bad:
        shown += f", {plural(len(events.bad), 'line')} left out"
    return shown


def default_page(source: str) -> str:
    """The events file's name with ``.html`` for its extension (never the file itself)."""
    root, extension = os.path.splitext(source)
    page = (root if extension else source) + ".html"
    return page if page != source else source + ".html"


def page_problem(target: str, source: str | None = None) -> str | None:
    """Why the page cannot be written at ``target`` (None when it can be tried)."""
    if os.path.isdir(target):
        return "is a directory"
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        return f"no folder {folder}"
    both = source is not None and os.path.exists(target) and os.path.exists(source)
    if both and os.path.samefile(str(source), target):
        return "is the events file itself"
    return None


def write_page(target: str, page: str) -> str | None:
    """Write ``page`` to ``target`` whole, or not at all; None, or what went wrong."""
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        # the umask applies, as to any file the user writes; O_EXCL: never someone else's file
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        return f"cannot write {target}: {exc.strerror or exc}"
    try:
        with open(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(page)
        os.replace(temporary, target)
    except OSError as exc:
        os.remove(temporary)  # ours: made above
        return f"cannot write {target}: {exc.strerror or exc}"
    return None


def run_page(name: str, events: Iterable[dict[str, Any]]) -> str:
    """The page of a run's own events, as `report` draws them from its events file."""
    lines = "".join(json.dumps(event, default=str) + "\n" for event in events)
    return render(name, parse_events(lines.encode("utf-8", "backslashreplace")))
