"""What a run watches besides its budgets' totals, on the OpenTelemetry trace (docs/telemetry.md):
each tool's own limit, the warnings before a limit, and a stop for no progress, read back
through the real SDK's in-memory span exporter and metric reader."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from budgetconf import BudgetConfWarning, resolve
from budgetconf.loop import LoopExecutor, ScriptedModel
from budgetconf.telemetry import OtelSink

from .conftest import Traced
from helpers.presetfiles import preset_file


def search(q: str) -> str:
    return f"nothing for {q}"


def asks(*calls: tuple[str, str], turns: int = 6) -> ScriptedModel:
    """A model that asks for the same calls (tool, query) every turn, and never answers."""
    response = {
        "tool_calls": [{"name": tool, "arguments": {"q": q}} for tool, q in calls],
        "usage": {"prompt_tokens": 90, "completion_tokens": 10},
    }
    return ScriptedModel([response] * turns)


def a(recorded: Any) -> Mapping[str, Any]:
    return dict(recorded.attributes or {})


def the_run(traced: Traced) -> ReadableSpan:
    (run,) = [s for s in traced.spans() if s.name.startswith("invoke_agent")]
    return run


def events(run: ReadableSpan, name: str) -> list[Mapping[str, Any]]:
    return [a(e) for e in run.events if e.name == name]


TOOLS = {"web_search": search, "fetch": search}


def test_each_tools_own_limit_is_on_the_run_span_and_each_call_past_it_a_refusal(
    traced: Traced,
) -> None:
    """budgetconf.limit.tools.max_calls.<tool> with its source; a call past the tool's limit
    is no tool span but one budgetconf.tool_call_refused event, reason tool_limited."""
    res = resolve(
        explicit={
            "telemetry.otel": True,
            "loop.max_steps": 4,
            "tools.max_calls": {"web_search": 2, "fetch": 9},
        }
    )
    model = asks(("web_search", "a"), ("fetch", "b"), ("web_search", "c"))
    result = LoopExecutor(model, TOOLS, res).run("go")
    run = the_run(traced)
    attrs = a(run)
    assert attrs["budgetconf.limit.tools.max_calls.web_search"] == 2
    assert attrs["budgetconf.limit.tools.max_calls.web_search.source"] == "explicit"
    assert attrs["budgetconf.limit.tools.max_calls.fetch"] == 9
    assert attrs["budgetconf.limit.tools.max_calls.fetch.source"] == "explicit"
    limited = [e for e in result.events if e["type"] == "tool_limited"]
    past = [i for e in limited for i in e["ids"]]
    assert len(past) == 4  # turn 2's two searches and turn 3's; the last turn runs none
    refused = events(run, "budgetconf.tool_call_refused")
    by_reason = [r for r in refused if r["budgetconf.reason"] == "tool_limited"]
    assert [r["gen_ai.tool.name"] for r in by_reason] == ["web_search"] * len(past)
    tools = [s for s in traced.spans() if s.name.startswith("execute_tool")]
    assert sorted(a(t)["gen_ai.tool.name"] for t in tools) == ["fetch"] * 3 + ["web_search"] * 2
    assert {a(t)["gen_ai.tool.call.id"] for t in tools}.isdisjoint(past)
    assert attrs["budgetconf.used.tool_calls"] == result.tool_calls_executed == 5


def test_a_no_progress_stop_is_reported_as_every_budget_stop(traced: Traced) -> None:
    """The same search three times with the same result: stop reason no_progress, status
    truncated and no error, the stop's field loop.max_repeats on the span, its limit_reached
    event and the stops counter."""
    res = resolve(explicit={"telemetry.otel": True, "loop.max_repeats": 3, "loop.max_steps": 9})
    result = LoopExecutor(asks(("web_search", "same")), TOOLS, res).run("go")
    assert (result.stop_reason, result.turns) == ("no_progress", 3)
    run = the_run(traced)
    attrs = a(run)
    assert attrs["budgetconf.limit.max_repeats"] == 3
    assert attrs["budgetconf.limit.max_repeats.source"] == "explicit"
    assert attrs["budgetconf.stop.reason"] == "no_progress"
    assert attrs["budgetconf.status"] == "truncated"
    assert attrs["budgetconf.stop.field"] == "loop.max_repeats"
    assert attrs["budgetconf.stop.value"] == 3
    assert attrs["budgetconf.stop.source"] == "explicit"
    assert attrs["budgetconf.stop.locator"] == "explicit"
    assert run.status.status_code is StatusCode.UNSET  # a budget stop is no error
    assert "error.type" not in attrs
    (reached,) = events(run, "budgetconf.limit_reached")
    assert result.limit is not None
    assert reached == {
        "budgetconf.field": "loop.max_repeats",
        "budgetconf.value": 3,
        "budgetconf.used": 3,
        "budgetconf.source": "explicit",
        "budgetconf.locator": "explicit",
        "budgetconf.raise_with": tuple(result.limit["raise_with"]),
        "budgetconf.scope": "run",
    }
    (stop,) = traced.metrics()["budgetconf.stops"]
    assert a(stop) == {
        "budgetconf.stop.reason": "no_progress",
        "budgetconf.stop.field": "loop.max_repeats",
        "budgetconf.preset": "budgetconf",
    }


def test_each_budget_warning_is_an_event_on_the_run_span(traced: Traced) -> None:
    """warn_at 0.5: one budgetconf.budget_warning event per budget warned of, in the order
    the run warned, each with the budget, its field, what was used, the limit and the share."""
    res = resolve(
        explicit={
            "telemetry.otel": True,
            "loop.max_steps": 4,
            "limits.max_tokens": 400,
            "tools.max_calls": {"web_search": 2},
            "limits.warn_at": 0.5,
        }
    )
    with pytest.warns(BudgetConfWarning, match="budget warning"):
        result = LoopExecutor(asks(("web_search", "a")), TOOLS, res).run("go")
    warned = [e for e in result.events if e["type"] == "budget_warning"]
    assert [e["field"] for e in warned] == [
        "tools.max_calls.web_search",
        "loop.max_steps",
        "limits.max_tokens",
    ]
    found = events(the_run(traced), "budgetconf.budget_warning")
    assert found == [
        {
            "budgetconf.budget": e["budget"],
            "budgetconf.field": e["field"],
            "budgetconf.used": e["used"],
            "budgetconf.value": e["limit"],
            "budgetconf.fraction": e["fraction"],
        }
        for e in warned
    ]
    assert found[0] == {
        "budgetconf.budget": "max_calls_by_tool",
        "budgetconf.field": "tools.max_calls.web_search",
        "budgetconf.used": 1,
        "budgetconf.value": 2,
        "budgetconf.fraction": 0.5,
    }
    assert isinstance(found[2]["budgetconf.fraction"], float)


def test_a_secret_limits_warning_and_no_progress_stop_keep_it_off_the_trace(
    traced: Traced, tmp_path: Path
) -> None:
    """A preset whose step budget and repeat limit are secret: the warning has no value or
    share, the stop no value and no repeats, and the run span no limit values; never ***."""
    path = preset_file(
        tmp_path,
        fields={
            "agent.turns": {"type": "int", "default": 4, "secret": True},
            "agent.repeats": {"type": "int", "default": 2, "secret": True},
            "agent.warn": {"type": "number", "default": 0.5},
        },
        loop={"max_steps": "agent.turns", "max_repeats": "agent.repeats", "warn_at": "agent.warn"},
    )
    res = resolve(str(path))  # a preset with no telemetry.otel field: the sink traces it
    model = asks(("web_search", "same"))
    with pytest.warns(BudgetConfWarning, match="budget warning"):
        result = LoopExecutor(model, TOOLS, res, on_event=OtelSink()).run("go")
    assert result.stop_reason == "no_progress"
    run = the_run(traced)
    (warning,) = events(run, "budgetconf.budget_warning")
    assert warning == {
        "budgetconf.budget": "max_steps",
        "budgetconf.field": "agent.turns",
        "budgetconf.used": 2,
    }
    (reached,) = events(run, "budgetconf.limit_reached")
    assert "budgetconf.value" not in reached
    assert "budgetconf.used" not in reached
    assert reached["budgetconf.field"] == "agent.repeats"
    attrs = a(run)
    assert "budgetconf.limit.max_steps" not in attrs
    assert "budgetconf.limit.max_repeats" not in attrs
    assert attrs["budgetconf.limit.max_repeats.source"] == "default"
    assert "budgetconf.stop.value" not in attrs
    shown = [v for e in run.events for v in a(e).values()] + list(attrs.values())
    assert "***" not in shown


def test_every_span_event_and_metric_is_in_the_docs_table() -> None:
    """docs/telemetry.md's tables name each span event and metric _names makes, by its name."""
    from budgetconf.telemetry import _names as n

    from helpers import DOCS

    doc = (DOCS / "telemetry.md").read_text(encoding="utf-8")
    names = [
        n.LIMIT_REACHED,
        n.TOOL_CALL_REFUSED,
        n.BUDGET_WARNING,
        n.POLICY_CLAMPED,
        *n._LEDGER_EVENTS.values(),
        n.STOPS,
        n.COST,
        n.TOKEN_USAGE,
        f"budgetconf.limit.{n.TOOL_LIMIT}<tool>",
    ]
    assert [name for name in names if f"| `{name}`" not in doc and f", `{name}`" not in doc] == []
    assert f"`{n.TOOL_LIMITED}`" in doc
