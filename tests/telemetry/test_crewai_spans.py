"""A CrewAI run named by its caller names its span (test_bridge_spans.py plays the traced
scenarios through the CrewAI drivers, in nox's crewai session)."""

from __future__ import annotations

import pytest

pytest.importorskip("crewai", reason="the CrewAI bridge is tested where CrewAI is installed")

from .conftest import Traced
from helpers.chat_server import serving
from helpers.conformance import MODEL, Adder, once


def test_a_crewai_run_named_by_its_caller_names_its_span(traced: Traced) -> None:
    from budgetconf import resolve
    from budgetconf.integrations import crewai

    from helpers.conformance_crewai import agent, quiet

    res = resolve(env={"BUDGETCONF_OTEL": "true"})
    with serving(once) as chat, quiet():
        crewai.run(agent(chat.url, Adder(), MODEL), "Add.", res, name="adder")
    (run,) = [s for s in traced.spans() if s.name.startswith("invoke_agent")]
    assert run.name == "invoke_agent adder"
    assert (run.attributes or {})["gen_ai.agent.name"] == "adder"
