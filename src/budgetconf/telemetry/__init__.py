"""Runs on the OpenTelemetry trace: `OtelSink` (docs/telemetry.md).

Off by default. ``telemetry.otel = true`` (``BUDGETCONF_OTEL``, ``--otel``)
puts every run on the trace, and ``on_event=OtelSink()`` one run; either way
the spans and metrics go to OpenTelemetry's global providers, which the
application sets up. This needs ``opentelemetry-api``, the extra
``budgetconf[otel]``: importing `OtelSink` without it is a `UsageError`
naming the extra, and so is a run with ``telemetry.otel`` on, before its first
model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetconf.errors import UsageError

if TYPE_CHECKING:
    from budgetconf.events import Sink
    from budgetconf.telemetry._sink import OtelSink

__all__ = ["OtelSink"]

_MISSING = (
    "telemetry needs opentelemetry-api, which is not installed: pip install 'budgetconf[otel]'"
)


def _sink_module() -> Any:
    try:
        from budgetconf.telemetry import _sink
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "opentelemetry":
            raise
        raise UsageError(_MISSING) from None
    return _sink


def _otel_for(on_event: Sink | None) -> OtelSink | None:
    """The telemetry of a run with ``telemetry.otel`` on (see `_sink.telemetry_for`)."""
    found: OtelSink | None = _sink_module().telemetry_for(on_event)
    return found


def __getattr__(name: str) -> Any:
    if name == "OtelSink":
        return _sink_module().OtelSink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
