"""``budgetconf run``: the loop executor with a scripted model, or a server's, and two demo tools.

Exit codes follow the run's status: 0 ok, 1 failed (a configuration that did
not resolve is a failed run too), 2 truncated, 3 blocked; 64 is a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TextIO

from budgetconf._resolution import Resolution
from budgetconf.cli._output import say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.cli._resolution import PresetFailed, resolve
from budgetconf.errors import PresetError, UsageError
from budgetconf.integrations._urls import shown_url
from budgetconf.loop import Budget, LoopExecutor, RunResult, RunStatus, ScriptedModel, StopReason

__all__ = ["Server", "chosen_model", "command", "not_run", "opened", "run"]

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


def chosen_model(ns: argparse.Namespace) -> str | Server:
    """The model the command line asks for: a script's path, or a server. Raises `UsageError`."""
    if ns.model is not None:
        for name in _SERVER_OPTIONS:
            if getattr(ns, name) is not None:
                raise UsageError(f"--{name.replace('_', '-')} goes with --base-url, not --model")
        return str(ns.model)
    scheme, _, rest = ns.base_url.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        shown = shown_url(ns.base_url)
        raise UsageError(f"--base-url: expected an http:// or https:// URL, got {shown!r}")
    if not ns.model_name:
        raise UsageError("--base-url needs --model-name: the model the server runs")
    return Server(
        ns.base_url,
        ns.model_name,
        key_env=ns.api_key_env or "OPENAI_API_KEY",
        timeout=60.0 if ns.request_timeout is None else _seconds(ns.request_timeout),
        retries=2 if ns.max_retries is None else _count(ns.max_retries),
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"--request-timeout: expected a number of seconds above 0, got {text!r}")
    return value


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise UsageError(f"--max-retries: expected a whole number, 0 or more, got {text!r}")
    return int(text)


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
    client = openai.OpenAI(
        base_url=choice.url, api_key=key, timeout=choice.timeout, max_retries=choice.retries
    )
    with client:
        yield OpenAIModel(choice.model, client=client)


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``run``: a configuration that does not resolve is a run that never started."""
    ns = line.ns
    try:
        res = resolve(line).res
    except PresetFailed as exc:
        return not_run([str(exc)], ns.output, out, err)
    try:  # a usage error goes first: nothing else matters
        with opened(chosen_model(ns)) as model:
            return run(res, model, ns.prompt, ns.output, ns.events, out, err)
    except UsageError as exc:
        raise Usage(str(exc)) from None


def run(
    res: Resolution,
    model: Callable[..., Any],
    prompt: str,
    output: str,
    events_path: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    for warning in res.warnings:
        say(err, f"budgetconf: warning: {warning}")
    if res.errors:
        return not_run([str(e) for e in res.errors], output, out, err)
    try:
        budget = Budget.from_resolution(res, command_line=True)  # `--set`, not code
    except PresetError as exc:
        raise UsageError(str(exc)) from None
    if events_path is None:
        result = LoopExecutor(model, DEMO_TOOLS, budget).run(prompt)
    else:
        with _events_file(events_path) as log:
            result = LoopExecutor(model, DEMO_TOOLS, budget, on_event=_writer(log)).run(prompt)
    if output == "json":
        write_json(result.to_dict(), out)
    else:
        _text(result, budget, out, err)
    return EXIT_BY_STATUS[result.status]


def _events_file(path: str) -> TextIO:
    """The events file, opened to append: an earlier run's log is never lost."""
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--events {path}: {exc.strerror}") from None


def _writer(log: TextIO) -> Callable[[dict[str, Any]], None]:
    def write(event: dict[str, Any]) -> None:
        # ASCII: a model's text may hold lone surrogates, which no file encoding takes
        log.write(json.dumps(event, default=str) + "\n")
        log.flush()

    return write


def _text(result: RunResult, budget: Budget, out: TextIO, err: TextIO) -> None:
    if result.output and result.status in ("ok", "truncated"):  # an answer, or its summary
        out.write(result.output + "\n")  # its lines and tabs as the model wrote them
    if result.status == "ok":
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
