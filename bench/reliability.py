"""Resolution under concurrent change, and the loop executor over many runs.

stress: THREADS threads resolve continuously while a writer thread replaces
the project file atomically (write a new file, rename it over the old one)
VERSIONS times and changes environment variables after each version. Every
version of the file sets two fields that move together, so a result mixing
two versions (a torn read) shows; a reader must never see an older version
after a newer one, and the writer must see each version as soon as it is in
place (no stale cache entry). Prints resolutions per second.

soak: RUNS scripted runs of the loop executor, cycling through completions,
budget stops, tool errors and malformed responses; Python's traced memory
and its count of live objects after a warm-up and after all the runs.

tests/resolution/test_reliability.py runs both in a small size and checks every result;
docs/reliability.md gives the figures of a full run.

    python bench/reliability.py [--threads 8] [--versions 2000] [--runs 10000] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import budgetconf
from budgetconf.loop import Budget, LoopExecutor, ScriptedModel

TOOLS_VAR = "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN"
COST_VAR = "BUDGETCONF_MAX_COST_USD"  # set and unset: the environment changes size too


def version_text(version: int) -> str:
    """The project file of one version: every version has the same size."""
    return f"[loop]\nmax_steps = {1000 + version}\n\n[limits]\nmax_tokens = {5000 + version}\n"


@dataclass
class StressReport:
    threads: int
    versions: int
    resolutions: int = 0
    seconds: float = 0.0
    # every problem found, as text; empty when the run held
    problems: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.resolutions / self.seconds if self.seconds else 0.0


def _check(res: budgetconf.Resolution, path: str, tools: set[int]) -> tuple[int, str | None]:
    """The version a result shows, and what is wrong with it (None when it is whole)."""
    steps, tokens = res["loop.max_steps"], res["limits.max_tokens"]
    assert isinstance(steps, int)
    assert isinstance(tokens, int)
    version = steps - 1000
    trace = res.trace("loop.max_steps")
    if tokens - 5000 != version:
        return version, f"torn: max_steps {steps} with max_tokens {tokens}"
    if trace.winner.locator != f"{path}:2":
        return version, f"max_steps from {trace.winner.locator}"
    if res["loop.max_tool_calls_per_turn"] not in tools:
        return version, f"{TOOLS_VAR} gave {res['loop.max_tool_calls_per_turn']}"
    return version, None


def stress(
    folder: Path,
    threads: int = 8,
    versions: int = 200,
    environ: MutableMapping[str, str] = os.environ,
) -> StressReport:
    """Resolve in ``threads`` threads while the file and ``environ`` change; report what held.

    Resolutions read ``environ`` (the process environment by default), as
    `budgetconf.resolve(env=None)` does.
    """
    report = StressReport(threads, versions)
    path = folder / "settings.toml"
    path.write_text(version_text(0))
    environ[TOOLS_VAR] = "1"
    tools = set(range(1, versions + 2))
    done = threading.Event()
    lock = threading.Lock()
    env = None if environ is os.environ else environ

    def resolve() -> budgetconf.Resolution:
        return budgetconf.resolve(env=env, project_file=path)

    def problem(text: str) -> None:
        with lock:
            report.problems.append(text)

    def reader() -> None:
        seen, count = 0, 0
        try:
            while not done.is_set():
                version, wrong = _check(resolve(), str(path), tools)
                count += 1
                if wrong:
                    problem(wrong)
                if version < seen:
                    problem(f"stale: version {version} after {seen}")
                seen = max(seen, version)
        except BaseException as exc:  # anything that escapes is a finding
            problem(f"reader raised {exc!r}")
        with lock:
            report.resolutions += count

    def writer() -> None:
        try:
            for version in range(1, versions + 1):
                fresh = folder / f"settings.{version}.tmp"
                fresh.write_text(version_text(version))
                os.replace(fresh, path)
                environ[TOOLS_VAR] = str(version + 1)
                if version % 2:
                    environ[COST_VAR] = "2.5"
                else:
                    environ.pop(COST_VAR, None)
                seen, wrong = _check(resolve(), str(path), tools)
                if seen != version:
                    problem(f"stale: the writer saw version {seen} after writing {version}")
                if wrong:
                    problem(wrong)
        except BaseException as exc:
            problem(f"writer raised {exc!r}")
        finally:
            done.set()

    workers = [threading.Thread(target=reader) for _ in range(threads)]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning is expected: one would be a finding
        for worker in workers:
            worker.start()
        writer()
        for worker in workers:
            worker.join()
    report.seconds = time.perf_counter() - start
    last, wrong = _check(resolve(), str(path), tools)
    if (last, wrong) != (versions, None):
        problem(f"after the run: version {last}, {wrong}")
    return report


# --- soak ------------------------------------------------------------------------------------


def _boom(text: str) -> str:
    raise RuntimeError(f"tool failed on {text!r}")


def _echo(text: str) -> str:
    return text


class Halt(BaseException):
    """An application's own BaseException, as some frameworks raise to unwind."""


def _halt(text: str) -> str:
    raise Halt(text)


class Unreadable(Mapping[str, Any]):
    """A response whose ``get`` raises, as a lazy mapping's may."""

    def __getitem__(self, key: str) -> Any:
        raise LookupError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def get(self, key: str, default: Any = None) -> Any:
        raise LookupError(key)


CALL = {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}
SCRIPTS: list[tuple[str, list[Any], str]] = [
    # (name, responses, expected stop reason)
    ("answer", [CALL, {"content": "done", "finish_reason": "stop"}], "completed"),
    ("out of steps", [CALL], "max_steps"),
    ("tool raises", [{"tool_calls": [{"name": "boom", "arguments": {"text": "x"}}]}], "max_steps"),
    ("unknown tool", [{"tool_calls": [{"name": "nope", "arguments": {}}]}], "max_steps"),
    ("arguments not JSON", [{"tool_calls": [{"name": "echo", "arguments": "{"}]}], "max_steps"),
    ("over the cap", [{"tool_calls": [CALL["tool_calls"][0]] * 3}], "max_steps"),
    ("malformed", [{"content": 5}], "error"),
    ("duplicate ids", [{"tool_calls": [{"id": "a", "name": "echo"}] * 2}], "error"),
    ("refused", [{"content": "no", "finish_reason": "refusal"}], "refused"),
    ("tool unwinds", [{"tool_calls": [{"name": "halt", "arguments": {"text": "x"}}]}], "max_steps"),
    ("response unreadable", [Unreadable()], "error"),
]


@dataclass
class SoakReport:
    runs: int
    by_reason: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    traced_after_warmup: int = 0
    traced_after_runs: int = 0
    objects_after_warmup: int = 0
    objects_after_runs: int = 0
    problems: list[str] = field(default_factory=list)


def _runs(budget: Budget) -> Iterator[tuple[str, Callable[[], Any], str]]:
    tools = {"echo": _echo, "boom": _boom, "halt": _halt}
    while True:
        for name, responses, reason in SCRIPTS:
            model = ScriptedModel(responses, record=False)
            executor = LoopExecutor(model, tools, budget)
            yield name, executor.run, reason


def soak(runs: int = 10_000, warmup: int = 500, *, trace: bool = True) -> SoakReport:
    """Run the scripts ``warmup`` times, measure, run them ``runs`` times, measure again.

    Without ``trace`` only live objects are counted (tracemalloc slows every
    allocation down).
    """
    report = SoakReport(runs)
    budget = Budget.from_resolution(
        budgetconf.resolve(
            env={}, explicit={"loop.max_steps": 3, "loop.max_tool_calls_per_turn": 2}
        )
    )
    scripted = _runs(budget)
    prompt = [{"role": "user", "content": "go"}]

    def run(count: int) -> None:
        for _ in range(count):
            name, start, reason = next(scripted)
            result = start(prompt)
            report.by_reason[result.stop_reason] = report.by_reason.get(result.stop_reason, 0) + 1
            if result.stop_reason != reason:
                report.problems.append(f"{name}: {result.stop_reason}, not {reason}")
            if prompt != [{"role": "user", "content": "go"}] or result.messages[:1] != prompt:
                report.problems.append(f"{name}: the caller's list or the transcript changed")

    with _traced(trace):
        run(warmup)
        report.by_reason.clear()
        report.traced_after_warmup, report.objects_after_warmup = _memory()
        start = time.perf_counter()
        run(runs)
        report.seconds = time.perf_counter() - start
        report.traced_after_runs, report.objects_after_runs = _memory()
    return report


@contextmanager
def _traced(trace: bool) -> Iterator[None]:
    started = trace and not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        yield
    finally:
        if started:
            tracemalloc.stop()


def _memory() -> tuple[int, int]:
    gc.collect()
    return tracemalloc.get_traced_memory()[0], len(gc.get_objects())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--versions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    environ = dict(os.environ)  # the process's own environment is left alone
    with tempfile.TemporaryDirectory() as folder:
        stressed = stress(Path(folder), args.threads, args.versions, environ)
    print(
        f"stress  {stressed.threads} threads, {stressed.versions} file versions: "
        f"{stressed.resolutions} resolutions in {stressed.seconds:.2f} s "
        f"({stressed.per_second:,.0f}/s), {len(stressed.problems)} problems"
    )
    soaked = soak(args.runs)
    grown = soaked.traced_after_runs - soaked.traced_after_warmup
    print(
        f"soak    {soaked.runs} runs in {soaked.seconds:.2f} s; traced memory "
        f"{soaked.traced_after_warmup / 1024:.0f} KiB -> {soaked.traced_after_runs / 1024:.0f} KiB "
        f"({grown / 1024:+.1f} KiB), live objects {soaked.objects_after_warmup} -> "
        f"{soaked.objects_after_runs}, {len(soaked.problems)} problems"
    )
    print(f"        stop reasons: {soaked.by_reason}")
    for problem in stressed.problems + soaked.problems:
        print(f"problem {problem}")
    print(f"python  {sys.version.split()[0]} on {platform.machine()}, {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "stress": {**asdict(stressed), "per_second": stressed.per_second},
                    "soak": asdict(soaked),
                },
                indent=2,
            )
        )
    return 1 if stressed.problems or soaked.problems else 0


if __name__ == "__main__":
    sys.exit(main())
