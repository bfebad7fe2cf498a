"""One meaning everywhere: every bridge, through its framework's standard OpenAI client and
one loopback server, makes the executor's requests, runs its tool calls and ends as it
does, in every scenario (tests/conformance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import conformance_langgraph  # noqa: F401  (each registers its drivers)
import conformance_openai_agents  # noqa: F401
import conformance_praisonai  # noqa: F401
import conformance_pydantic_ai  # noqa: F401
import conformance_smolagents  # noqa: F401
from chat_server import serving
from conformance import DRIVERS, REFUSALS, SCENARIOS, Adder, Outcome, Scenario, executor, outcome

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
    "1.5 s a reply": Outcome(2, 1, "truncated", "timeout", "limits.timeout_seconds"),
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
    assert play(scenario, DRIVERS[name], tmp_path) == EXPECTED[scenario.name]
