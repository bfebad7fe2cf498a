"""``budgetconf run``: the loop executor with a scripted model, or a server's, and two demo tools.

Exit codes follow the run's status: 0 ok, 1 failed (a configuration that did
not resolve is a failed run too, and so is one whose events or output could
not be written), 2 truncated, 3 blocked; 64 is a usage error.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TextIO

from budgetconf._field import MAX_INT, NUMBER_TEXT
from budgetconf._resolution import Resolution
from budgetconf._text import clipped
from budgetconf.cli._output import Unwritable, say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.cli._resolution import PresetFailed, resolve
from budgetconf.errors import BudgetConfWarning, ConfigError, PresetError, UsageError
from budgetconf.events import EventsFile
from budgetconf.integrations._urls import shown_url
from budgetconf.loop import Budget, LoopExecutor, RunResult, RunStatus, ScriptedModel, StopReason

EXIT_BY_STATUS: Final = {"ok": 0, "failed": 1, "truncated": 2, "blocked": 3}


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def add(a: float, b: float) -> float:
    """Return a + b."""
    return a + b


DEMO_TOOLS: Final[Mapping[str, Callable[..., Any]]] = {"echo": echo, "add": add}


@dataclass(frozen=True, slots=True)
class Server:
    """The OpenAI-compatible server of ``--base-url``, and how to talk to it."""

    url: str
    model: str
    key_env: str
    timeout: float
    retries: int


_SERVER_OPTIONS: Final = ("model_name", "api_key_env", "request_timeout", "max_retries")
#: the longest wait a socket takes; a longer --request-timeout is left to the total deadline
_LONGEST_WAIT: Final = threading.TIMEOUT_MAX


def chosen_model(ns: argparse.Namespace) -> str | Server:
    """The model the command line asks for: a script's path, or a server. Raises `UsageError`."""
    if ns.model is not None:
        for name in _SERVER_OPTIONS:
            if getattr(ns, name) is not None:
                raise UsageError(f"--{name.replace('_', '-')} goes with --base-url, not --model")
        return str(ns.model)
    _check_url(ns.base_url)
    if not ns.model_name:
        raise UsageError("--base-url needs --model-name: the model the server runs")
    return Server(
        ns.base_url,
        ns.model_name,
        key_env=ns.api_key_env or "OPENAI_API_KEY",
        timeout=60.0 if ns.request_timeout is None else _seconds(ns.request_timeout),
        retries=2 if ns.max_retries is None else _count(ns.max_retries),
    )


def _check_url(url: str) -> None:
    """Refuse what is not an http(s) URL with a host and a port a socket takes."""
    from urllib.parse import urlsplit

    shown = shown_url(url)
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise UsageError(
            f"--base-url: expected an http:// or https:// URL, got {clipped(shown, repr)}"
        )
    if not url.isprintable() or any(c.isspace() for c in url):
        raise UsageError(
            f"--base-url: a URL holds no spaces or control characters, got {clipped(shown, repr)}"
        )
    try:
        parts = urlsplit(url)  # an unclosed [ or a bracketed host that is no IPv6 address
    except ValueError as exc:
        raise UsageError(f"--base-url: not a URL ({exc}), got {clipped(shown, repr)}") from None
    if not parts.hostname:
        raise UsageError(f"--base-url: the URL names no host, got {clipped(shown, repr)}")
    try:
        port = parts.port
    except ValueError:  # not digits, or past 65535
        port = 0
    if port == 0:
        raise UsageError(
            f"--base-url: the port is not a number from 1 to 65535, got {clipped(shown, repr)}"
        )


def _seconds(text: str) -> float:
    """A number of seconds above 0, written as budgetconf reads numbers (``1e300`` too)."""
    value = float(text) if re.fullmatch(NUMBER_TEXT, text.strip()) else math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(
            f"--request-timeout: expected a number of seconds above 0, got {clipped(text, repr)}"
        )
    return value


def _count(text: str) -> int:
    digits = text.lstrip("0") or "0"  # leading zeros are ignored, as in every count
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(MAX_INT)):
        raise UsageError(
            f"--max-retries: expected a whole number from 0 to {MAX_INT}, got {clipped(text, repr)}"
        )
    count = int(digits)
    if count > MAX_INT:
        raise UsageError(
            f"--max-retries: expected a whole number from 0 to {MAX_INT}, got {clipped(text, repr)}"
        )
    return count


@contextmanager
def opened(choice: str | Server) -> Iterator[Callable[..., Any]]:
    """The model of a run; a server's client is closed when the run is over."""
    if isinstance(choice, str):
        yield ScriptedModel.from_file(choice, record=False)  # nothing reads what it was sent
        return
    try:
        from budgetconf.integrations.openai import OpenAIModel
    except ImportError as exc:
        raise UsageError(f"--base-url: {exc}") from None
    import openai

    key = os.environ.get(choice.key_env)
    if not key:
        raise UsageError(
            f"--base-url: no API key in ${choice.key_env}: set it (a local server takes any"
            " value), or name another variable with --api-key-env"
        )
    from budgetconf.integrations._keys import key_flaw

    flaw = key_flaw(key)
    if flaw is not None:  # said by where it is, never by what it is
        raise UsageError(f"--base-url: the API key in ${choice.key_env} {flaw}; strip it")
    try:  # each read and write is bounded as a socket can be; the whole call by total_timeout
        client = openai.OpenAI(
            base_url=choice.url,
            api_key=key,
            timeout=min(choice.timeout, _LONGEST_WAIT),
            max_retries=choice.retries,
        )
    except Exception as exc:  # what the client's own URL parser refuses (999.1.1.1, say)
        raise UsageError(f"--base-url: {shown_url(choice.url)!r} is refused: {exc}") from None
    with client:
        yield OpenAIModel(choice.model, client=client, total_timeout=choice.timeout)


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``run``: a configuration that does not resolve is a run that never started."""
    ns = line.ns
    try:
        res = resolve(line).res
    except PresetFailed as exc:
        return not_run([str(exc)], ns.output, out, err)
    try:  # a usage error goes first: nothing else matters
        for option, path in (("--events", ns.events), ("--report", ns.report)):
            if path == "-":  # as `report -o -` and `init -` read it, never a file named -
                raise UsageError(
                    f"{option} -: standard output is the run's own output; name a file"
                )
        _check_report(ns.report)
        with opened(chosen_model(ns)) as model:
            code = run(res, model, ns.prompt, ns.output, ns.events, out, err, report=ns.report)
    except UsageError as exc:
        raise Usage(str(exc)) from None
    return code


def _check_report(path: str | None) -> None:
    """Refuse, before the run, a ``--report`` path the page could not be written to."""
    if path is None:
        return
    from budgetconf.cli._report import page_problem

    problem = page_problem(path)
    if problem is not None:
        raise UsageError(f"--report {path}: {problem}")


def run(
    res: Resolution,
    model: Callable[..., Any],
    prompt: str,
    output: str,
    events_path: str | None,
    out: TextIO,
    err: TextIO,
    *,
    report: str | None = None,
) -> int:
    """Run the loop; write its output, and its page to ``report`` if asked; the exit code."""
    for warning in res.warnings:
        say(err, f"budgetconf: warning: {warning}")
    if res.errors:
        return not_run([str(e) for e in res.errors], output, out, err)
    try:
        budget = Budget.from_resolution(res, command_line=True)  # `--set`, not code
    except PresetError as exc:
        raise UsageError(str(exc)) from None
    except ConfigError as exc:  # a price set by half (docs/prices.md)
        return not_run([str(exc)], output, out, err)
    try:
        with _warnings_said(err):  # a budget warning, a price unknown: one line each
            if events_path is None:
                result = LoopExecutor(model, DEMO_TOOLS, budget).run(prompt)
                lost = None
            else:
                with EventsFile(events_path, label=f"--events {events_path}") as log:
                    result = LoopExecutor(model, DEMO_TOOLS, budget, on_event=log).run(prompt)
                lost = log.lost
    except ConfigError as exc:  # a price table that cannot be read, before the first call
        return not_run([str(exc)], output, out, err)
    if lost is not None:  # the run stopped when it could not record an event: say where
        say(err, f"budgetconf: error: {lost}")
    said = lost is not None and result.status == "failed"  # the run failed for the lost event
    if output == "json":
        written = _written(lambda: write_json(result.to_dict(), out), out, err)
    else:
        written = _written(lambda: _text(result, budget, out, err, said=said), out, err)
    if report is not None and not _reported(report, result, err):
        return EXIT_BY_STATUS["failed"]
    if written and lost is None:
        return EXIT_BY_STATUS[result.status]
    return EXIT_BY_STATUS["failed"]


@contextmanager
def _warnings_said(err: TextIO) -> Iterator[None]:
    """Within: each `BudgetConfWarning` the run gives is a line on ``err``, as it is given,
    ``budgetconf: warning: …`` (never an exception, whatever the warnings filters say)."""
    import warnings

    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
        if issubclass(category, BudgetConfWarning):
            say(err, f"budgetconf: warning: {message}")
        else:  # another package's: as Python shows it
            shown(message, category, *args, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("always", BudgetConfWarning)
        warnings.showwarning = show  # restored with the filters as the block ends
        yield


def _reported(path: str, result: RunResult, err: TextIO) -> bool:
    """Write the run's page to ``path``; False, with one line on stderr, when it cannot be."""
    from budgetconf.cli._report import run_page, write_page

    failed = write_page(path, run_page("budgetconf run", result.events))
    if failed is not None:
        say(err, f"budgetconf: error: --report {failed}")
    return failed is None


def _written(write: Callable[[], None], out: TextIO, err: TextIO) -> bool:
    """Write the run's output; False, with one line on stderr, when it cannot be written."""
    try:
        write()
        out.flush()
    except Unwritable as exc:  # said now: the page is still to be written
        say(err, f"budgetconf: error: {exc}")
        return False
    return True


def _text(result: RunResult, budget: Budget, out: TextIO, err: TextIO, *, said: bool) -> None:
    """The answer on stdout (a cut-off one too); unless ``said``, what stopped the run on stderr."""
    if result.output and result.status != "failed":  # an answer, its summary, or what it got
        out.write(result.output + "\n")  # its lines and tabs as the model wrote them
    if result.status == "ok" or said:
        return
    if result.status == "truncated" and result.limit is not None:
        note = budget.spec.truncated_warning
        if note is None:
            say(err, f"budgetconf: warning: {result.message}")
        else:  # the preset's own line, then what set the limit and what raises it
            budget_name = result.stop_kind.budget
            assert budget_name is not None
            say(err, f"{note} [{budget.limits[budget_name].explain()}]")
    else:
        say(err, f"budgetconf: {result.message}")


def not_run(errors: list[str], output: str, out: TextIO, err: TextIO) -> int:
    """The configuration did not resolve, so the run never started: a failed run."""
    for error in errors:
        say(err, f"budgetconf: error: {error}")
    if output == "json":
        never = RunResult(
            status=RunStatus.FAILED,
            stop_reason=StopReason.ERROR.value,
            stop_kind=StopReason.ERROR,
            message="the budgets did not resolve: " + "; ".join(errors),
            output="",
            turns=0,
            tool_calls_executed=0,
            tokens=0,
            cost_usd=0.0,
            messages=[],
            events=[],
        )
        write_json(never.to_dict(), out)
    return EXIT_BY_STATUS["failed"]
