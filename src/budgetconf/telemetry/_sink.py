"""`OtelSink`: a run's events made into OpenTelemetry spans, span events and metrics.

The sink hears a run as every sink does (`budgetconf.events`): ``open_run`` starts
the run's span and makes it current in the caller's context, so what the
framework of a bridged run traces nests beneath it; each event then opens,
annotates or ends the span it concerns; ``close_run`` ends the run's span, and
the caller's context is given back as it was there or, for a bridged run that
ended inside its framework, in ``release_run`` once the bridge returns. While
the framework traces its own calls (`RunInfo.traced`), the sink makes the run's
span alone. What it records is named in docs/telemetry.md, whose
table `budgetconf.telemetry._names` holds.

OpenTelemetry's rule is kept: telemetry never ends or changes a run. A span
that cannot be made, or an exporter that raises, is skipped, with one
`BudgetConfWarning` for the run, and the run goes on untraced.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import TYPE_CHECKING, Final

from opentelemetry import context, metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from budgetconf import __version__
from budgetconf.errors import BudgetConfWarning
from budgetconf.telemetry import _names as n

if TYPE_CHECKING:
    from collections.abc import Callable

    from opentelemetry.trace import Span

    from budgetconf.events import Event, RunInfo, Sink

#: the conventions' switch for recording content: prompts, answers, arguments, results
CAPTURE: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

#: the runs any sink has open, by run id: where a carved child finds its parent's tool span
_OPEN: dict[str, _Run] = {}


class _Run:
    """What the sink holds of one open run: its span, the model call and tool calls open in
    it, and what its end needs."""

    __slots__ = (
        "budgets",
        "chat",
        "model",
        "names",
        "preset",
        "refused",
        "span",
        "started",
        "stop",
        "tools",
        "traced",
        "warned",
    )

    def __init__(self, span: Span, info: RunInfo, budgets: dict[str, str]) -> None:
        self.span = span
        self.model = info.model
        self.preset = info.preset
        self.budgets = budgets  # field -> budget name, for a stop's field
        self.chat: Span | None = None
        self.tools: dict[str, Span] = {}  # call id -> its span, while it runs
        self.names: dict[str, str] = {}  # call id -> tool name, from the last response
        self.refused: set[str] = set()  # the ids of its calls answered as not executed
        self.stop: Event | None = None  # the budget_exhausted event, at a budget stop
        self.started = time.monotonic()
        # the framework's instrumentation makes the chat and execute_tool spans: none of ours
        self.traced = info.traced
        self.warned = False

    def current(self) -> Span | None:
        """The span a child carved now nests under: the tool call running; while the framework
        traces its calls, None: the context's, which is the framework's own tool span."""
        if self.tools:
            return next(reversed(self.tools.values()))
        return None if self.traced else self.span


class OtelSink:
    """A sink that puts runs on the OpenTelemetry trace (docs/telemetry.md).

    Give it as ``on_event`` for one run, or set ``telemetry.otel``. The tracer
    and meter come from OpenTelemetry's global providers (instrumenting scope
    ``budgetconf``); budgetconf installs no SDK and no exporter of its own.
    """

    __module__ = "budgetconf.telemetry"

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("budgetconf", __version__)
        meter = metrics.get_meter("budgetconf", __version__)
        self._stops = meter.create_counter(n.STOPS, unit="{stop}", description=n.STOPS_HELP)
        self._cost = meter.create_counter(n.COST, unit="USD", description=n.COST_HELP)
        self._tokens = meter.create_histogram(
            n.TOKEN_USAGE, unit="{token}", description=n.TOKEN_USAGE_HELP
        )
        self._content = os.environ.get(CAPTURE, "").strip().lower() == "true"
        self._runs: dict[str, _Run] = {}
        # run id -> the token of the context open_run made current, until it is given back
        self._attached: dict[str, object] = {}
        self._on: dict[str, Callable[[_Run, Event], None]] = {
            "turn_started": self._turn,
            "model_response": self._response,
            "tool_started": self._tool_started,
            "tool_executed": self._tool_ended,
            "tool_abandoned": self._tool_ended,
            "tool_refused": self._refused_one,
            "batch_rejected": self._refused_ids,
            "batch_truncated": self._refused_ids,
            "calls_not_executed": self._refused_ids,
            "tool_limited": self._limited,
            "budget_warning": self._warning,
            "budget_exhausted": self._budget_stop,
            "ledger_refused": self._ledger,
            "ledger_unavailable": self._ledger,
            "ledger_warning": self._ledger,
            "stopped": self._stopped,
        }

    def __repr__(self) -> str:
        return f"<OtelSink, {len(self._runs)} runs open>"

    # ------------------------------------------------------------------ the run

    def open_run(self, info: RunInfo) -> None:
        """Start the run's span (under its parent's tool span, for a carved child) and make it
        current in the run's context."""
        try:
            parent = _OPEN.get(info.parent.run_id) if info.parent is not None else None
            beneath = None if parent is None else parent.current()
            under = None if beneath is None else trace.set_span_in_context(beneath)
            attributes, budgets = n.run_attributes(info)
            span = self._tracer.start_span(
                f"invoke_agent {info.name}",
                context=under,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
            )
            run = _Run(span, info, budgets)
            for name, attrs in n.policy_events(info.budget):
                span.add_event(name, attrs)
            self._attached[info.run_id] = context.attach(trace.set_span_in_context(span))
        except Exception as exc:
            _warn(info.run_id, exc)
            return
        self._runs[info.run_id] = _OPEN[info.run_id] = run

    def close_run(self, info: RunInfo) -> None:
        """End the run's span and, where the run ends in its caller's context, give that
        context back as it was."""
        run = self._runs.pop(info.run_id, None)
        _OPEN.pop(info.run_id, None)
        if run is not None:
            try:
                for span in (run.chat, *run.tools.values()):  # left open by an error or interrupt
                    if span is not None:
                        span.set_status(Status(StatusCode.ERROR))
                        span.end()
                run.span.end()
            except Exception as exc:
                self._fail(info.run_id, run, exc)
        token = self._attached.get(info.run_id)
        if token is not None and _detached(token):
            del self._attached[info.run_id]

    def release_run(self, info: RunInfo) -> None:
        """Back in the caller's frame after a run that ended inside its framework (a bridge's
        hook that decided a stop, in the framework's own context): give the caller's context
        back as it was before the run."""
        token = self._attached.pop(info.run_id, None)
        if token is not None:
            _detached(token)

    def __call__(self, event: Event) -> None:
        run = self._runs.get(event["run_id"])
        if run is None:
            return
        handle = self._on.get(event["type"])
        if handle is None:
            return
        try:
            handle(run, event)
        except Exception as exc:
            self._fail(event["run_id"], run, exc)

    def _fail(self, run_id: str, run: _Run, exc: Exception) -> None:
        """Telemetry that failed: the run goes on untraced, with one warning."""
        if not run.warned:
            run.warned = True
            _warn(run_id, exc)
        self._runs.pop(run_id, None)

    # ------------------------------------------------------------------ model calls

    def _turn(self, run: _Run, event: Event) -> None:
        if run.traced:
            return
        model = run.model
        run.chat = self._tracer.start_span(
            "chat" if model is None else f"chat {model}",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.CLIENT,
            attributes=n.chat_attributes(model),
        )

    def _response(self, run: _Run, event: Event) -> None:
        run.names = {c["id"]: c["name"] for c in event["tool_calls"]}
        run.refused = set()
        span = run.chat
        if span is not None:  # None: the framework's instrumentation traces its calls
            run.chat = None
            span.set_attributes(n.response_attributes(event, self._content))
            span.end()
        base = n.metric_attributes(run.model)
        for kind, count in (("input", event["input_tokens"]), ("output", event["output_tokens"])):
            self._tokens.record(count, {**base, "gen_ai.token.type": kind})
        if event["cost_usd"]:
            self._cost.add(float(event["cost_usd"]), base)

    # ------------------------------------------------------------------ tool calls

    def _tool_started(self, run: _Run, event: Event) -> None:
        if run.traced:
            return
        name = event["name"]
        run.tools[event["id"]] = self._tracer.start_span(
            f"execute_tool {name}",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.INTERNAL,
            attributes=n.tool_attributes(name, event["id"]),
        )

    def _tool_ended(self, run: _Run, event: Event) -> None:
        span = run.tools.pop(event["id"], None)
        if span is None:
            return
        failed = event.get("error") or event.get("reason")
        if event.get("ok") is not True and failed:
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", n.error_type(str(failed)))
        span.end()

    def _refused_one(self, run: _Run, event: Event) -> None:
        self._refuse(run, event["id"], event["name"], event["reason"])

    def _refused_ids(self, run: _Run, event: Event) -> None:
        reason = event.get("reason") or event["type"]  # a batch's cap names no reason
        for call_id in event.get("ids") or event.get("skipped") or ():
            self._refuse(run, call_id, run.names.get(call_id, ""), reason)

    def _limited(self, run: _Run, event: Event) -> None:
        """Calls of a tool past its own limit: each answered as not executed."""
        for call_id in event["ids"]:
            self._refuse(run, call_id, event["name"], n.TOOL_LIMITED)

    def _refuse(self, run: _Run, call_id: str, name: str, reason: str) -> None:
        """One event per call answered as not executed, however many events name it."""
        if call_id not in run.refused:
            run.refused.add(call_id)
            run.span.add_event(n.TOOL_CALL_REFUSED, n.refused(name, reason))

    # ------------------------------------------------------------------ stops

    def _budget_stop(self, run: _Run, event: Event) -> None:
        run.stop = event

    def _warning(self, run: _Run, event: Event) -> None:
        run.span.add_event(n.BUDGET_WARNING, n.budget_warning(event))

    def _ledger(self, run: _Run, event: Event) -> None:
        name, attributes = n.ledger_event(event)
        run.span.add_event(name, attributes)

    def _stopped(self, run: _Run, event: Event) -> None:
        span = run.span
        stop = run.stop
        elapsed = time.monotonic() - run.started
        span.set_attributes(n.end_attributes(event, stop))
        if stop is not None:
            span.add_event(n.LIMIT_REACHED, n.limit_reached(stop, event, run.budgets, elapsed))
        if event["status"] == "failed":
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", n.error_type(event["stop_reason"]))
        self._stops.add(1, n.stop_attributes(event, stop, run.preset))


def _detached(token: object) -> bool:
    """Give back the context a run's span was made current in, if this is that context (not a
    framework's task that the run ended in): whether it was."""
    try:  # quiet, unlike context.detach(), which logs another context's token as an error
        context._RUNTIME_CONTEXT.detach(token)  # type: ignore[arg-type]
    except (ValueError, RuntimeError):  # another context's token, or one given back already
        return False
    return True


def _warn(run_id: str, exc: BaseException) -> None:
    warnings.warn(
        f"run {run_id}: telemetry failed and the run goes on untraced: {type(exc).__name__}: {exc}",
        BudgetConfWarning,
        stacklevel=3,
    )


def telemetry_for(on_event: Sink | None) -> OtelSink | None:
    """The telemetry of a run with ``telemetry.otel`` on, heard beside its own ``on_event``:
    an `OtelSink`, or None when ``on_event`` is one already (each event is traced once)."""
    return None if isinstance(on_event, OtelSink) else OtelSink()
