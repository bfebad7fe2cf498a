"""``budgetconf run``: the loop executor with a scripted model and two demo tools.

Exit codes follow the run's status: 0 ok, 1 failed (a configuration that did
not resolve is a failed run too), 2 truncated, 3 blocked; 64 is a usage error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TextIO

from budgetconf.cli import printable, say
from budgetconf.errors import PresetError, UsageError
from budgetconf.loop import Budget, LoopExecutor, RunResult, RunStatus, ScriptedModel, StopReason
from budgetconf.resolve import Resolution

__all__ = ["not_run", "run"]

EXIT_BY_STATUS: Final = {"ok": 0, "failed": 1, "truncated": 2, "blocked": 3}


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def add(a: float, b: float) -> float:
    """Return a + b."""
    return a + b


DEMO_TOOLS: Final[Mapping[str, Callable[..., Any]]] = {"echo": echo, "add": add}


def run(
    res: Resolution,
    script: str,
    prompt: str,
    output: str,
    events_path: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    # a usage error goes first: nothing else matters; nothing reads what the model was sent
    model = ScriptedModel.from_file(script, record=False)
    for warning in res.warnings:
        say(err, f"budgetconf: warning: {warning}")
    if res.errors:
        return not_run([str(e) for e in res.errors], output, out, err)
    try:
        budget = Budget.from_resolution(res)
    except PresetError as exc:
        raise UsageError(str(exc)) from None
    if events_path is None:
        result = LoopExecutor(model, DEMO_TOOLS, budget).run(prompt)
    else:
        with _events_file(events_path) as log:
            result = LoopExecutor(model, DEMO_TOOLS, budget, on_event=_writer(log)).run(prompt)
    if output == "json":
        out.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
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
        out.write(printable(result.output, keep="\n\t") + "\n")
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
        out.write(json.dumps(never.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return EXIT_BY_STATUS["failed"]
