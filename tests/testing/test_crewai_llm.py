"""`budgetconf.testing.crewai_llm`: a model script played by a CrewAI LLM, in process, to
CrewAI's own agents and to the bridge, which stops on it where the executor stops."""

from __future__ import annotations

import pytest

pytest.importorskip("crewai", reason="the CrewAI model is tested where CrewAI is installed")

import importlib
import os
import sys
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before CrewAI's first import

from crewai import Agent
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.llm_events import LLMCallCompletedEvent
from crewai.tools import tool

import budgetconf
from budgetconf.integrations.crewai import run, stream
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.testing import crewai_llm

from helpers.conformance_crewai import DEPRECATED

# CrewAI 1.15 warns in every Agent() and kickoff of deprecated fields of its own
pytestmark = pytest.mark.filterwarnings(f"ignore::DeprecationWarning:{DEPRECATED}")

RAN: list[tuple[int, int]] = []


def adding(a: int, b: int) -> int:
    """Add two numbers."""
    RAN.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _ran() -> None:
    RAN.clear()


USAGE = {"prompt_tokens": 60, "completion_tokens": 40}
CACHED = {**USAGE, "prompt_tokens_details": {"cached_tokens": 20}}
ONCE: list[dict[str, Any]] = [
    {"content": "adding", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    {"content": "3", "usage": USAGE},
]


def agent(llm: Any) -> Any:
    return Agent(
        role="adder", goal="Add.", backstory="You add.", llm=llm, tools=[tool("add")(adding)]
    )


def test_crewais_own_kickoff_plays_the_script() -> None:
    llm = crewai_llm(ONCE)
    output = agent(llm).kickoff("What is 1 + 2?")
    assert (output.raw, llm.calls, RAN) == ("3", 2, [(1, 2)])
    assert llm.model == "scripted"
    assert llm.supports_function_calling()


def test_each_call_reports_its_usage_as_crewais_openai_llm_does() -> None:
    reported: list[Any] = []

    def heard(source: Any, event: LLMCallCompletedEvent) -> None:
        reported.append(event.usage)

    llm = crewai_llm([{"content": "3", "usage": CACHED}])
    with crewai_event_bus.scoped_handlers():
        crewai_event_bus.on(LLMCallCompletedEvent)(heard)
        agent(llm).kickoff("Add.")
        crewai_event_bus.flush()
    assert reported == [
        {
            "prompt_tokens": 60,
            "completion_tokens": 40,
            "total_tokens": 100,
            "cached_prompt_tokens": 20,
        }
    ]
    assert llm.get_token_usage_summary().cached_prompt_tokens == 20


def looping(count: int) -> list[dict[str, Any]]:
    made = [{"name": "add", "arguments": {"a": i, "b": 1}} for i in range(count)]
    return [{"content": "adding", "tool_calls": made, "usage": USAGE}]


@pytest.mark.parametrize(
    ("budget", "count"),
    [
        ({"BUDGETCONF_MAX_STEPS": "3"}, 1),
        ({"BUDGETCONF_MAX_TOKENS": "250"}, 1),
        ({"BUDGETCONF_MAX_TOOL_CALLS": "4"}, 3),
        ({"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "2"}, 3),
    ],
    ids=["steps", "tokens", "tool calls", "calls a response"],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_the_bridge_on_it_stops_where_the_executor_stops_on_the_script(
    budget: dict[str, str], count: int, streamed: bool
) -> None:
    res = budgetconf.resolve(env=budget)
    script = ScriptedModel(looping(count))
    ran = LoopExecutor(script, {"add": adding}, res).run("go")
    executed = list(RAN)
    RAN.clear()
    llm = crewai_llm(looping(count))
    if streamed:  # the scripted LLM streams no pieces: the stream ends with run()'s result
        streaming = stream(agent(llm), "go", res)
        assert list(streaming) == []
        bridged = streaming.result
    else:
        bridged = run(agent(llm), "go", res)
    assert (llm.calls, sorted(RAN)) == (script.calls, sorted(executed))
    fields = ("status", "stop_reason", "message", "turns", "limit", "usage")
    assert [getattr(bridged, f) for f in fields] == [getattr(ran, f) for f in fields]


def test_without_crewai_the_import_errors_say_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "crewai.llms.base_llm", None)  # as for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.testing._crewai")
    with pytest.raises(ImportError, match=r"pip install 'budgetconf\[crewai\]'") as raised:
        _ = budgetconf.testing.crewai_llm
    assert raised.value.name == "crewai"
    monkeypatch.setitem(sys.modules, "crewai", None)
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.crewai")
    with pytest.raises(ImportError, match=r"pip install 'budgetconf\[crewai\]'"):
        importlib.import_module("budgetconf.integrations.crewai")
