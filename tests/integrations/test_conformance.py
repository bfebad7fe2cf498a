"""One meaning everywhere: every bridge, through its framework's standard OpenAI client and
one loopback server, makes the executor's requests, runs its tool calls and ends as it
does, in every scenario (tests/helpers/conformance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (  # noqa: F401  (each registers its drivers)
    DOCS,
    conformance_langgraph,
    conformance_openai_agents,
    conformance_praisonai,
    conformance_pydantic_ai,
    conformance_smolagents,
)
from helpers.agents_double import _default_loop_closed, _no_tracing  # noqa: F401  (fixtures)
from helpers.chat_server import serving
from helpers.conformance import (
    DIFFERENCES,
    DRIVERS,
    REFUSALS,
    SCENARIOS,
    Adder,
    Outcome,
    Scenario,
    executor,
    outcome,
)

#: what the executor does in each scenario: the baseline, pinned
EXPECTED = {
    "a tool once, then an answer": Outcome(2, 1, "ok", "completed", None),
    "always a tool": Outcome(3, 2, "truncated", "max_steps", "loop.max_steps"),
    "three calls a response, two allowed": Outcome(
        3, 0, "truncated", "max_steps", "loop.max_steps"
    ),
    "three calls a response, four in all": Outcome(
        2, 3, "truncated", "max_tool_calls", "limits.max_tool_calls"
    ),
    "one server error, retried": Outcome(4, 2, "truncated", "max_steps", "loop.max_steps"),
    "server errors from the second": Outcome(4, 1, "failed", "error", None),
    "100 tokens a reply": Outcome(3, 2, "truncated", "max_tokens", "limits.max_tokens"),
    "100 tokens a reply, a ledger's maximum": Outcome(
        2, 2, "truncated", "max_tokens", "ledger.max_tokens"
    ),
    "2 s a reply": Outcome(2, 1, "truncated", "timeout", "limits.timeout_seconds"),
    "one call id in every response": Outcome(
        3, 2, "truncated", "max_tool_calls", "limits.max_tool_calls"
    ),
}


def play(scenario: Scenario, drive: object, tmp_path: Path) -> Outcome:
    adder = Adder()
    with serving(scenario.respond, delay=scenario.delay) as chat:
        result = drive(chat.url, scenario.budget(tmp_path), adder)  # type: ignore[operator]
        requests = len(chat.received)
    return outcome(result, requests, adder)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_executor_does_what_the_suite_expects(scenario: Scenario, tmp_path: Path) -> None:
    assert play(scenario, executor, tmp_path) == EXPECTED[scenario.name]


@pytest.mark.parametrize("name", sorted(DRIVERS))
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_bridge_does_what_the_executor_does(
    name: str, scenario: Scenario, tmp_path: Path
) -> None:
    refused = REFUSALS[name].get(scenario.name)
    if refused is not None:
        import budgetconf

        with pytest.raises(budgetconf.UsageError, match=refused):
            play(scenario, DRIVERS[name], tmp_path)
        return
    expected = DIFFERENCES[name].get(scenario.name, (EXPECTED[scenario.name], ""))[0]
    assert play(scenario, DRIVERS[name], tmp_path) == expected


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_where_a_framework_does_otherwise_the_docs_say_why(name: str) -> None:
    """Each difference is the framework's own, stays within the budget, and is in the docs."""
    docs = " ".join((DOCS / "frameworks.md").read_text(encoding="utf-8").split())
    for scenario, (outcome_, reason) in DIFFERENCES[name].items():
        assert reason in docs, (name, scenario)
        baseline = EXPECTED[scenario]
        assert outcome_.tool_runs <= baseline.tool_runs
        assert outcome_.requests <= baseline.requests
