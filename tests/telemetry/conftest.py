"""The real OpenTelemetry SDK, installed once as the global providers (as an application would),
with an in-memory span exporter and metric reader each test reads from empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_SPANS = InMemorySpanExporter()
# delta: what each collection reads is what was recorded since the one before
_READER = InMemoryMetricReader(
    preferred_temporality={
        Counter: AggregationTemporality.DELTA,
        Histogram: AggregationTemporality.DELTA,
    }
)
_tracing = TracerProvider()
_tracing.add_span_processor(SimpleSpanProcessor(_SPANS))
trace.set_tracer_provider(_tracing)
metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))


class Traced:
    """What the runs of one test put on the trace."""

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(_SPANS.get_finished_spans())

    def clear(self) -> None:
        """Forget what was traced so far: the next spans and metrics are new runs' alone."""
        _SPANS.clear()
        _READER.get_metrics_data()

    def metrics(self) -> dict[str, list[Any]]:
        """Each metric's data points, by name, from what was recorded so far."""
        data = _READER.get_metrics_data()
        found: dict[str, list[Any]] = {}
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def traced() -> Iterator[Traced]:
    found = Traced()
    found.clear()
    yield found
    _SPANS.clear()
