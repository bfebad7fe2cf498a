"""An agno run named by its caller names its span (test_bridge_spans.py plays the traced
scenarios through the agno drivers with every other bridge's)."""

from __future__ import annotations

from .conftest import Traced
from helpers import conformance_agno
from helpers.chat_server import serving
from helpers.conformance import MODEL, Adder, once


def test_an_agno_run_named_by_its_caller_names_its_span(traced: Traced) -> None:
    """run(..., name=...) names the span, as LoopExecutor(name=...) does."""
    from budgetconf import resolve
    from budgetconf.integrations import agno

    res = resolve(env={"BUDGETCONF_OTEL": "true"})
    with serving(once) as chat, conformance_agno.no_telemetry():
        agno.run(conformance_agno.agent(chat.url, Adder(), MODEL), "Add.", res, name="adder")
    (run,) = [s for s in traced.spans() if s.name.startswith("invoke_agent")]
    assert run.name == "invoke_agent adder"
    assert (run.attributes or {})["gen_ai.agent.name"] == "adder"
