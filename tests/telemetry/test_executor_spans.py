"""The executor's runs on the OpenTelemetry trace (docs/telemetry.md), read back through the
real SDK's in-memory span exporter and metric reader."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from budgetconf import BudgetConfWarning, UsageError, resolve
from budgetconf.integrations.openai import OpenAIModel
from budgetconf.loop import LoopExecutor, ScriptedModel, current_run
from budgetconf.telemetry import OtelSink

from .conftest import Traced
from helpers.chat_server import reply, serving


def tool_call(cid: str, name: str = "echo") -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": {"text": "x"} if name == "echo" else {}}


def echo(text: str) -> str:
    return text


USAGE = {"prompt_tokens": 7, "completion_tokens": 3}


def asks_forever(n: int = 6) -> ScriptedModel:
    return ScriptedModel(
        [
            {
                "tool_calls": [tool_call(f"c{i}")],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            }
            for i in range(n)
        ]
    )


def a(recorded: Any) -> Mapping[str, Any]:
    """A span's or span event's attributes."""
    return dict(recorded.attributes or {})


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def test_a_run_is_one_invoke_agent_span_with_chat_and_tool_spans_beneath(traced: Traced) -> None:
    """telemetry.otel on: the run span, a CLIENT chat span per call and a tool span per run
    call, all in one trace, with the conventions' attributes."""
    res = resolve(explicit={"telemetry.otel": True, "loop.max_steps": 3})
    result = LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    spans = traced.spans()
    (run,) = by_name(spans, "invoke_agent")
    assert run.name == "invoke_agent budgetconf"
    assert run.kind is SpanKind.INTERNAL
    attrs = dict(run.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.conversation.id"] == result.run_id == attrs["budgetconf.run.id"]
    assert attrs["budgetconf.limit.max_steps"] == 3
    assert attrs["budgetconf.limit.max_steps.source"] == "explicit"
    assert attrs["budgetconf.stop.reason"] == result.stop_reason
    assert attrs["budgetconf.stop.field"] == "loop.max_steps"
    assert attrs["budgetconf.used.steps"] == result.turns == 3
    assert attrs["budgetconf.used.tokens"] == result.tokens
    assert run.status.status_code is StatusCode.UNSET  # a budget stop is no error
    chats = by_name(spans, "chat")
    assert len(chats) == 3
    assert {c.kind for c in chats} == {SpanKind.CLIENT}
    assert {c.parent.span_id if c.parent else None for c in chats} == {run.context.span_id}
    assert a(chats[0])["gen_ai.usage.input_tokens"] == 7
    assert a(chats[0])["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert "gen_ai.request.model" not in a(chats[0])  # a scripted model has no name
    tools = by_name(spans, "execute_tool")
    assert [a(t)["gen_ai.tool.name"] for t in tools] == ["echo"] * result.tool_calls_executed
    assert {t.context.trace_id for t in spans} == {run.context.trace_id}
    (reached,) = [e for e in run.events if e.name == "budgetconf.limit_reached"]
    assert a(reached)["budgetconf.field"] == "loop.max_steps"
    assert a(reached)["budgetconf.used"] == 3
    assert a(reached)["budgetconf.scope"] == "run"
    assert result.limit is not None
    assert a(reached)["budgetconf.raise_with"] == tuple(result.limit["raise_with"])


def test_the_metrics_count_the_stop_and_each_calls_tokens(traced: Traced) -> None:
    res = resolve(explicit={"telemetry.otel": True, "loop.max_steps": 2})
    LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    points = traced.metrics()
    (stop,) = points["budgetconf.stops"]
    assert stop.value == 1
    assert a(stop)["budgetconf.stop.field"] == "loop.max_steps"
    usage = {a(p)["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]}
    assert usage == {"input": 14, "output": 6}


def test_off_by_default_and_an_otel_sink_traces_one_run(traced: Traced) -> None:
    LoopExecutor(ScriptedModel([{"content": "hi"}])).run("go")
    assert traced.spans() == ()
    model = ScriptedModel([{"content": "hi"}])
    result = LoopExecutor(model, on_event=OtelSink(), name="helper").run("go")
    (run,) = by_name(traced.spans(), "invoke_agent")
    assert run.name == "invoke_agent helper"
    assert a(run)["budgetconf.status"] == result.status.value


def test_a_carved_child_is_a_span_under_its_parents_tool_span(traced: Traced) -> None:
    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        child = ScriptedModel([{"content": "done"}])
        return LoopExecutor(child, budget=handle.carve(max_steps=2), name="child").run("go").output

    model = ScriptedModel([{"tool_calls": [tool_call("s", "spawn")]}, {"content": "ok"}])
    res = resolve(explicit={"telemetry.otel": True})
    LoopExecutor(model, tools={"spawn": spawn}, budget=res).run("go")
    spans = traced.spans()
    (child,) = [s for s in spans if s.name == "invoke_agent child"]
    (tool,) = by_name(spans, "execute_tool spawn")
    assert child.parent is not None
    assert child.parent.span_id == tool.context.span_id


def test_a_resumed_run_is_a_new_span_naming_the_run_it_continues(traced: Traced) -> None:
    res = resolve(explicit={"telemetry.otel": True, "loop.max_steps": 1})
    executor = LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res)
    first = executor.run("go")
    second = executor.resume(first, extra_steps=1)
    runs = by_name(traced.spans(), "invoke_agent")
    assert len(runs) == 2
    assert a(runs[1])["gen_ai.conversation.id"] == second.run_id != first.run_id
    assert a(runs[1])["budgetconf.resumed_from"] == first.run_id


def test_refused_calls_are_events_not_spans(traced: Traced) -> None:
    """A rejected batch of three is three refusal events and no tool span."""
    model = ScriptedModel(
        [{"tool_calls": [tool_call("a"), tool_call("b"), tool_call("c")]}, {"content": "ok"}]
    )
    res = resolve(explicit={"telemetry.otel": True, "loop.max_tool_calls_per_turn": 2})
    LoopExecutor(model, tools={"echo": echo}, budget=res).run("go")
    spans = traced.spans()
    assert by_name(spans, "execute_tool") == []
    (run,) = by_name(spans, "invoke_agent")
    refused = [e for e in run.events if e.name == "budgetconf.tool_call_refused"]
    assert [a(e)["gen_ai.tool.name"] for e in refused] == ["echo"] * 3


def test_a_secret_budget_has_no_value_on_the_trace(traced: Traced, tmp_path: Any) -> None:
    res = resolve(explicit={"telemetry.otel": True, "limits.max_tokens": 5})
    secret = res.schema.by_path["limits.max_tokens"].secret
    LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    (run,) = by_name(traced.spans(), "invoke_agent")
    assert ("budgetconf.limit.max_tokens" in a(run)) is not secret


def test_a_failing_exporter_warns_once_and_the_run_goes_on(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer = trace.get_tracer("x")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no spans today")

    monkeypatch.setattr(type(tracer), "start_span", broken)
    res = resolve(explicit={"telemetry.otel": True, "loop.max_steps": 3})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    assert result.turns == 3
    mine = [w for w in caught if issubclass(w.category, BudgetConfWarning)]
    assert len(mine) == 1
    assert "telemetry failed" in str(mine[0].message)


def test_without_opentelemetry_the_run_is_refused_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    import budgetconf.telemetry

    monkeypatch.delitem(sys.modules, "budgetconf.telemetry._sink", raising=False)
    monkeypatch.delattr(budgetconf.telemetry, "_sink", raising=False)
    res = resolve(explicit={"telemetry.otel": True})
    asked: list[object] = []

    def model(messages: object, tools: object) -> dict[str, str]:
        asked.append(messages)
        return {"content": "hi"}

    with pytest.raises(UsageError, match=r"pip install 'budgetconf\[otel\]'"):
        LoopExecutor(model, budget=res).run("go")
    assert asked == []  # refused before the first model call


def test_a_tool_that_raises_is_an_error_span(traced: Traced) -> None:
    def broken(text: str) -> str:
        raise ValueError("no such page")

    model = ScriptedModel([{"tool_calls": [tool_call("a")]}, {"content": "ok"}])
    res = resolve(explicit={"telemetry.otel": True})
    LoopExecutor(model, tools={"echo": broken}, budget=res).run("go")
    (tool,) = by_name(traced.spans(), "execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert a(tool)["error.type"] == "ValueError"


def test_a_failed_run_sets_error_and_its_stop_reason(traced: Traced) -> None:
    def model(messages: object, tools: object) -> dict[str, str]:
        raise ConnectionError("refused")

    res = resolve(explicit={"telemetry.otel": True})
    result = LoopExecutor(model, budget=res).run("go")
    (run,) = by_name(traced.spans(), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert a(run)["error.type"] == result.stop_reason == "error"
    assert "budgetconf.stop.field" not in a(run)  # no budget stopped it
    (chat,) = by_name(traced.spans(), "chat")  # the call that failed is ended, an error
    assert chat.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("capture", ["", "true"])
def test_content_is_recorded_only_when_asked(
    traced: Traced, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture)
    res = resolve(explicit={"telemetry.otel": True})
    LoopExecutor(ScriptedModel([{"content": "the secret answer"}]), budget=res).run("go")
    (chat,) = by_name(traced.spans(), "chat")
    shown = " ".join(str(v) for span in traced.spans() for v in a(span).values())
    assert ("the secret answer" in shown) is bool(capture)
    assert ("gen_ai.output.messages" in a(chat)) is bool(capture)


def test_the_policy_clamp_is_an_event_on_the_run_span(traced: Traced, place: Any) -> None:
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text('{"on_exceed": "clamp", "loop": {"max_steps": {"max": 2}}}')
    res = resolve(explicit={"telemetry.otel": True, "loop.max_steps": 9})
    LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    (run,) = by_name(traced.spans(), "invoke_agent")
    assert a(run)["budgetconf.limit.max_steps.source"] == "policy"
    (clamped,) = [e for e in run.events if e.name == "budgetconf.policy.clamped"]
    assert a(clamped) == {
        "budgetconf.field": "loop.max_steps",
        "budgetconf.asked": 9,
        "budgetconf.given": 2,
    }


def test_the_ledger_maximum_its_refusal_and_its_stop_are_on_the_run_span(
    traced: Traced, tmp_path: Any
) -> None:
    res = resolve(
        explicit={
            "telemetry.otel": True,
            "ledger.url": f"sqlite:///{tmp_path / 'ledger.db'}",
            "ledger.max_tokens": 100,
            "ledger.reserve_tokens": 60,
            "ledger.window": "none",
        }
    )
    result = LoopExecutor(asks_forever(), tools={"echo": echo}, budget=res).run("go")
    assert result.stop_reason == "max_tokens"
    (run,) = by_name(traced.spans(), "invoke_agent")
    assert a(run)["budgetconf.limit.ledger.max_tokens"] == 100
    (refused,) = [e for e in run.events if e.name == "budgetconf.ledger.refused"]
    assert a(refused)["budgetconf.scope"] == "default"
    (reached,) = [e for e in run.events if e.name == "budgetconf.limit_reached"]
    assert a(reached)["budgetconf.scope"] == "ledger"
    assert a(reached)["budgetconf.field"] == "ledger.max_tokens"


def test_a_run_against_a_loopback_server_names_its_model_and_prices_its_calls(
    traced: Traced,
) -> None:
    """Through the real openai client: the chat span names the requested and the responding
    model, an unknown tool is a refusal event, and the priced cost is the cost metric."""
    replies = [
        reply(calls=[("k1", "nope", {}), ("k2", "echo", {"text": "x"})], usage=(1000, 100)),
        reply("done", usage=(1000, 100)),
    ]
    res = resolve(
        explicit={
            "telemetry.otel": True,
            "prices.input_per_mtok": 1.0,
            "prices.output_per_mtok": 2.0,
            "limits.max_cost_usd": 1.0,
        }
    )
    with (
        serving(replies) as chat,
        openai.OpenAI(base_url=chat.url, api_key="sk-test", max_retries=0, timeout=10.0) as client,
    ):
        result = LoopExecutor(OpenAIModel("gpt-4o-mini", client=client), {"echo": echo}, res).run(
            "hi"
        )
    assert result.status.value == "ok"
    spans = traced.spans()
    chats = by_name(spans, "chat gpt-4o-mini")
    assert len(chats) == 2
    assert a(chats[0])["gen_ai.request.model"] == "gpt-4o-mini"
    assert a(chats[0])["gen_ai.response.model"] == "test-model"
    (run,) = by_name(spans, "invoke_agent")
    refused = [a(e) for e in run.events if e.name == "budgetconf.tool_call_refused"]
    assert [r["gen_ai.tool.name"] for r in refused] == ["nope"]
    (cost,) = traced.metrics()["budgetconf.cost"]
    assert cost.value == pytest.approx(result.cost_usd)
    assert cost.value == pytest.approx(2 * (1000 * 1.0 + 100 * 2.0) / 1e6)
    assert a(run)["budgetconf.used.cost_usd"] == pytest.approx(result.cost_usd)


def test_cached_tokens_and_a_timeout_stop_are_recorded(traced: Traced) -> None:
    """A response's cached input tokens are on its chat span; at a timeout stop the limit's
    ``used`` is the seconds the run took."""
    import time

    def slow(text: str) -> str:
        time.sleep(0.05)
        return text

    usage = {
        "prompt_tokens": 9,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    model = ScriptedModel([{"tool_calls": [tool_call(f"c{i}")], "usage": usage} for i in range(9)])
    res = resolve(explicit={"telemetry.otel": True, "limits.timeout_seconds": 0.02})
    result = LoopExecutor(model, tools={"echo": slow}, budget=res).run("go")
    assert result.stop_reason == "timeout"
    spans = traced.spans()
    assert a(by_name(spans, "chat")[0])["gen_ai.usage.cache_read.input_tokens"] == 4
    (run,) = by_name(spans, "invoke_agent")
    (reached,) = [a(e) for e in run.events if e.name == "budgetconf.limit_reached"]
    assert reached["budgetconf.field"] == "limits.timeout_seconds"
    assert reached["budgetconf.used"] >= 0.02


def test_a_sink_that_cannot_record_an_event_warns_once(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = OtelSink()
    assert repr(sink) == "<OtelSink, 0 runs open>"

    def broken(*args: Any) -> None:
        raise RuntimeError("no metrics today")

    monkeypatch.setattr(sink, "_response", broken)
    monkeypatch.setitem(sink._on, "model_response", broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = LoopExecutor(asks_forever(), tools={"echo": echo}, on_event=sink).run("go")
    assert result.turns > 1  # the run went on
    assert len([w for w in caught if issubclass(w.category, BudgetConfWarning)]) == 1


def test_a_broken_install_is_not_taken_for_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A module of budgetconf's own that cannot be imported is raised as it is."""
    import sys

    import budgetconf.telemetry

    monkeypatch.setitem(sys.modules, "budgetconf.telemetry._sink", None)
    monkeypatch.delattr(budgetconf.telemetry, "_sink", raising=False)
    with pytest.raises(ModuleNotFoundError) as raised:
        budgetconf.telemetry.OtelSink  # noqa: B018  (the lazy attribute imports the sink)
    assert raised.type is ModuleNotFoundError
    assert raised.value.name == "budgetconf.telemetry._sink"


def test_the_field_on_and_an_otel_sink_given_trace_the_run_once(traced: Traced) -> None:
    res = resolve(explicit={"telemetry.otel": True})
    LoopExecutor(ScriptedModel([{"content": "hi"}]), budget=res, on_event=OtelSink()).run("go")
    assert [s.name for s in traced.spans()] == ["chat", "invoke_agent budgetconf"]


def test_a_run_told_of_by_hand_without_its_budget_has_no_limits(traced: Traced) -> None:
    """A sink's open_run and close_run called with a RunInfo that carries no budget."""
    from budgetconf.events import RunInfo

    sink, info = OtelSink(), RunInfo("r1", "by-hand", "budgetconf")
    sink.open_run(info)
    assert trace.get_current_span().get_span_context().is_valid  # current while it runs
    sink.close_run(info)
    sink.release_run(info)  # given back already: nothing left to give
    assert not trace.get_current_span().get_span_context().is_valid
    (run,) = traced.spans()
    assert not [k for k in a(run) if k.startswith("budgetconf.limit.")]
    assert a(run)["budgetconf.run.id"] == "r1"


@pytest.mark.parametrize("failing", ["", "invoke_agent"], ids=["every span", "the run span"])
def test_an_exporter_failing_as_spans_end_warns_once(
    traced: Traced, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """Spans whose end raises: from the first model call's, or the run's alone, at its end."""
    from opentelemetry.sdk.trace import Span

    ends = Span.end

    def broken(self: Any, end_time: Any = None) -> None:
        if self.name.startswith(failing):
            raise RuntimeError("export failed")
        ends(self, end_time)

    monkeypatch.setattr(Span, "end", broken)
    res = resolve(explicit={"telemetry.otel": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = LoopExecutor(ScriptedModel([{"content": "hi"}]), budget=res).run("go")
    assert result.status.value == "ok"
    assert len([w for w in caught if issubclass(w.category, BudgetConfWarning)]) == 1
    assert not trace.get_current_span().get_span_context().is_valid  # the context given back
