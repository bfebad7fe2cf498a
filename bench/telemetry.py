"""What putting a run on the OpenTelemetry trace costs a turn (docs/telemetry.md).

On: the executor's run with `OtelSink`, against the same run heard by a sink that makes
the same spans, attributes and metrics straight through the SDK (`Direct`, the least
telemetry can cost), both exporting to the SDK's in-memory exporter and metric reader,
timed in alternating pairs (`_paired.py`): the difference per turn is budgetconf's own
cost. TELEMETRY.md's target: at most 30 µs.

Off: the same run with telemetry off, here and in a checkout of the commit before
telemetry (``--against``, default the parent of the commit that added
``budgetconf.telemetry``), each side in its own process, three alternating pairs; the
cost is the median of the pairs' ratios. The target: within 3 %, and an off run
imports no OpenTelemetry. Prints the table; ``--quick`` makes a smoke run (for the
tests, so the script cannot rot); ``--json FILE`` writes the numbers.

    python bench/telemetry.py [--turns 200] [--repeat 31] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry import context, metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from budgetconf.loop import LoopExecutor
from budgetconf.telemetry import OtelSink

from _paired import paired

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODEL = "gpt-4o-mini"
USAGE = {"usage": {"prompt_tokens": 1200, "completion_tokens": 300}, "model": MODEL}
CALL = {"tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}], **USAGE}
DONE = {"content": "done", "finish_reason": "stop", **USAGE}
#: TELEMETRY.md's targets: budgetconf's own cost per turn, on; an off turn's over the commit's
ON_TARGET_NS, OFF_TARGET = 30_000, 1.03

SPANS = InMemorySpanExporter()
READER = InMemoryMetricReader()


class Named:
    """A model named ``MODEL`` that reports usage: a tool call each turn but the last."""

    def __init__(self, turns: int) -> None:
        self.model = MODEL
        self.turns = turns
        self.n = 0

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.n += 1
        return DONE if self.n >= self.turns else CALL


def echo(text: str) -> str:
    return text


class Direct:
    """The spans and metrics `OtelSink` makes of a run, made straight through the SDK with
    the attributes written out: what any telemetry of these events costs."""

    def __init__(self) -> None:
        self.tracer = trace.get_tracer("direct")
        meter = metrics.get_meter("direct")
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
        self.stops = meter.create_counter("budgetconf.stops", unit="{stop}")
        self.run: Any = None
        self.chat: Any = None
        self.tool: Any = None
        self.token: Any = None

    def open_run(self, info: Any) -> None:
        self.run = self.tracer.start_span(
            "invoke_agent budgetconf",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": info.name,
                "gen_ai.conversation.id": info.run_id,
                "budgetconf.run.id": info.run_id,
                "budgetconf.preset": info.preset,
                "budgetconf.limit.max_steps": info.budget.limits["max_steps"].value,
                "budgetconf.limit.max_steps.source": "explicit",
                "budgetconf.limit.max_tool_calls_per_turn": 10,
                "budgetconf.limit.max_tool_calls_per_turn.source": "default",
            },
        )
        self.token = context.attach(trace.set_span_in_context(self.run))

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "turn_started":
            self.chat = self.tracer.start_span(
                f"chat {MODEL}",
                context=trace.set_span_in_context(self.run),
                kind=SpanKind.CLIENT,
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL},
            )
        elif kind == "model_response":
            self.chat.set_attributes(
                {
                    "gen_ai.response.model": MODEL,
                    "gen_ai.response.finish_reasons": (event["finish_reason"],),
                    "gen_ai.usage.input_tokens": event["input_tokens"],
                    "gen_ai.usage.output_tokens": event["output_tokens"],
                }
            )
            self.chat.end()
            base = {"gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL}
            self.tokens.record(event["input_tokens"], {**base, "gen_ai.token.type": "input"})
            self.tokens.record(event["output_tokens"], {**base, "gen_ai.token.type": "output"})
        elif kind == "tool_started":
            self.tool = self.tracer.start_span(
                f"execute_tool {event['name']}",
                context=trace.set_span_in_context(self.run),
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event["name"],
                    "gen_ai.tool.call.id": event["id"],
                },
            )
        elif kind == "tool_executed":
            self.tool.end()
        elif kind == "stopped":
            self.run.set_attributes(
                {
                    "budgetconf.used.steps": event["turns"],
                    "budgetconf.used.tool_calls": event["tool_calls_executed"],
                    "budgetconf.used.tokens": event["tokens"],
                    "budgetconf.used.cost_usd": float(event["cost_usd"]),
                    "budgetconf.status": event["status"],
                    "budgetconf.stop.reason": event["stop_reason"],
                }
            )
            self.stops.add(1, {"budgetconf.stop.reason": event["stop_reason"]})

    def close_run(self, info: Any) -> None:
        self.run.end()
        context.detach(self.token)


def timed(turns: int, sink: Any, spans: list[int] | None = None) -> int:
    """Nanoseconds of one run of ``turns`` turns heard by ``sink``; the spans it made (their
    number appended to ``spans``) are dropped after, outside the timing."""
    ex = LoopExecutor(Named(turns), {"echo": echo}, {"loop.max_steps": turns + 1}, on_event=sink)
    start = time.perf_counter_ns()
    result = ex.run("go")
    took = time.perf_counter_ns() - start
    if result.turns != turns or result.status != "ok":
        raise RuntimeError(f"the benchmark's run went wrong: {result.message}")
    if spans is not None:
        spans.append(len(SPANS.get_finished_spans()))
    SPANS.clear()
    return took


def on_row(turns: int, repeat: int) -> dict[str, float]:
    """`OtelSink` against `Direct`, in alternating pairs: µs per turn, and the spans each
    side's warm-up run made."""
    spans: list[int] = []
    timed(turns, Direct(), spans)  # warm up: imports, the preset cache
    timed(turns, OtelSink(), spans)
    if spans[0] != spans[1]:
        raise RuntimeError(f"the sides made {spans} spans: they do not do the same work")
    direct, ours, cost = paired(
        lambda: timed(turns, Direct()), lambda: timed(turns, OtelSink()), repeat, turns
    )
    return {
        "direct_us": direct / 1000,
        "otel_sink_us": ours / 1000,
        "cost_us": cost / 1000,
        "spans": spans[1],
    }


#: one side of the off row, in its own process: the median ns per turn of an off run, and
#: whether the run imported OpenTelemetry
CHILD = """
import statistics, sys, time
from budgetconf.loop import LoopExecutor
turns, repeat = int(sys.argv[1]), int(sys.argv[2])
call = {"tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}]}
done = {"content": "done", "finish_reason": "stop"}
def model_for(turns):
    n = [0]
    def model(messages, tools):
        n[0] += 1
        return done if n[0] >= turns else call
    return model
runs = []
for _ in range(repeat + 1):
    ex = LoopExecutor(model_for(turns), {"echo": lambda text: text}, {"loop.max_steps": turns + 1})
    start = time.perf_counter_ns()
    result = ex.run("go")
    runs.append(time.perf_counter_ns() - start)
    assert result.turns == turns and result.status == "ok", result.message
import budgetconf
print(statistics.median(runs[1:]) / turns, "opentelemetry" in sys.modules, budgetconf.__file__)
"""


def before_telemetry() -> str | None:
    """The commit before the one that added budgetconf.telemetry, if this is a checkout."""
    found = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "src/budgetconf/telemetry"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    added = found.stdout.split()
    return f"{added[-1]}^" if found.returncode == 0 and added else None


def side(src: Path, turns: int, repeat: int) -> tuple[float, bool]:
    # one hash seed for both sides: a process's dict and set layouts move its time by a few %
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(turns), str(repeat)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.split()
    if not out[2].startswith(str(src)):
        raise RuntimeError(f"{src}'s side ran {out[2]}")
    return float(out[0]), out[1] == "True"


def off_row(against: str | None, turns: int, repeat: int, pairs: int = 3) -> dict[str, Any]:
    """Telemetry off here against ``against``'s checkout: per-turn times, their ratios."""
    here = ROOT / "src"
    if against is None:
        return {"against": None}
    with tempfile.TemporaryDirectory() as folder:
        checkout = Path(folder) / "before"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(checkout), against],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            ratios, ours, theirs, imported = [], [], [], False
            for n in range(pairs):
                order = (here, checkout / "src") if n % 2 else (checkout / "src", here)
                got = {src: side(src, turns, repeat) for src in order}
                ours.append(got[here][0])
                theirs.append(got[checkout / "src"][0])
                ratios.append(ours[-1] / theirs[-1])
                imported = imported or got[here][1]
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(checkout)], cwd=ROOT, check=False
            )
    return {
        "against": against,
        "off_us": statistics.median(ours) / 1000,
        "before_us": statistics.median(theirs) / 1000,
        "ratio": statistics.median(ratios),
        "imports_opentelemetry": imported,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--against", help="the commit the off row is timed against")
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 20 turns")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    turns, repeat = (20, 3) if args.quick else (args.turns, args.repeat)

    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(tracing)
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    on = on_row(turns, repeat)
    # an off turn costs a tenth of a traced one: more runs a side, for the same precision
    off = off_row(args.against or before_telemetry(), turns, 5 * repeat)

    print(f"{turns} turns, one tool call each; {repeat} alternating pairs")
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    holds = on["cost_us"] * 1000 <= ON_TARGET_NS
    print(
        f"on:  OtelSink {on['otel_sink_us']:.2f} µs/turn, the SDK directly {on['direct_us']:.2f}"
        f" µs/turn: +{on['cost_us']:.2f} µs/turn (target ≤ 30 µs: {'holds' if holds else 'misses'})"
    )
    if off["against"] is None:
        print("off: not measured: no commit before telemetry in this checkout")
    else:
        within = off["ratio"] <= OFF_TARGET and not off["imports_opentelemetry"]
        print(
            f"off: {off['off_us']:.2f} µs/turn, {off['against']} {off['before_us']:.2f} µs/turn:"
            f" {off['ratio']:.3f}x; imports OpenTelemetry: {off['imports_opentelemetry']}"
            f" (target ≤ 1.03x, none: {'holds' if within else 'misses'})"
        )
    if args.json:
        report = {"turns": turns, "repeat": repeat, "on": on, "off": off}
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
