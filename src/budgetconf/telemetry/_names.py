"""What budgetconf records on a trace, by name: its attributes, span events and metrics.

The conventions' names (``gen_ai.*``) where they define one, ``budgetconf.*``
where none does; docs/telemetry.md's table lists them. Each function here
builds one span's or event's attributes from a run's events and its budget:
OpenTelemetry primitives or lists of them, an unset value absent (never
None) and a secret budget's value absent too.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from budgetconf.events import Event, RunInfo

Attributes = dict[str, Any]

STOPS: Final = "budgetconf.stops"
STOPS_HELP: Final = "Runs stopped, by stop reason and the field that stopped them."
COST: Final = "budgetconf.cost"
COST_HELP: Final = "What the model calls cost, in US dollars."
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
TOKEN_USAGE_HELP: Final = "Tokens of each model call, by token type."

LIMIT_REACHED: Final = "budgetconf.limit_reached"
TOOL_CALL_REFUSED: Final = "budgetconf.tool_call_refused"
POLICY_CLAMPED: Final = "budgetconf.policy.clamped"
BUDGET_WARNING: Final = "budgetconf.budget_warning"
#: how the run span names each tool's own limit: budgetconf.limit.tools.max_calls.<tool>
TOOL_LIMIT: Final = "tools.max_calls."
#: the reason of a call answered as not executed past its tool's own limit
TOOL_LIMITED: Final = "tool_limited"
_LEDGER_EVENTS: Final = {
    "ledger_refused": "budgetconf.ledger.refused",
    "ledger_unavailable": "budgetconf.ledger.unavailable",
    "ledger_warning": "budgetconf.ledger.warning",
}

#: what each budget has used at a stop, by the stopped event's key
_USED: Final = {
    "max_steps": "turns",
    "max_tool_calls": "tool_calls_executed",
    "max_tokens": "tokens",
    "max_cost_usd": "cost_usd",
}


def _limits(budget: Any) -> Iterator[tuple[str, Any]]:
    """Each limit in force on ``budget`` by its attribute name: the run's, each tool's own
    (``tools.max_calls.<tool>``), then the ledger's."""
    if budget is None:
        return
    yield from budget.limits.items()
    for tool, limit in budget.tools.items():
        yield TOOL_LIMIT + tool, limit
    ledger = budget.ledger
    if ledger is not None:
        for limit in (ledger.max_tokens, ledger.max_cost_usd):
            if limit is not None:
                yield limit.field, limit


def run_attributes(info: RunInfo) -> tuple[Attributes, dict[str, str]]:
    """The run span's attributes at its start, and each limit's field → its budget's name."""
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": info.name,
        "gen_ai.conversation.id": info.run_id,
        "budgetconf.run.id": info.run_id,
        "budgetconf.preset": info.preset,
    }
    if info.resumed_from is not None:
        attributes["budgetconf.resumed_from"] = info.resumed_from
    budgets = {}
    for name, limit in _limits(info.budget):
        budgets[limit.field] = name
        if not limit.secret:
            attributes[f"budgetconf.limit.{name}"] = limit.value
        attributes[f"budgetconf.limit.{name}.source"] = limit.source
    return attributes, budgets


def policy_events(budget: Any) -> Iterator[tuple[str, Attributes]]:
    """A ``budgetconf.policy.clamped`` event for each limit the policy gave another value than
    its source asked for."""
    for _, limit in _limits(budget):
        asked = limit.asked_value
        if limit.policed is None or asked is None or asked == limit.value:
            continue
        attributes: Attributes = {"budgetconf.field": limit.field}
        if not limit.secret:
            attributes["budgetconf.asked"] = asked
            attributes["budgetconf.given"] = limit.value
        yield POLICY_CLAMPED, attributes


def chat_attributes(model: str | None) -> Attributes:
    attributes: Attributes = {"gen_ai.operation.name": "chat"}
    if model is not None:
        attributes["gen_ai.request.model"] = model
    return attributes


metric_attributes = chat_attributes  # a model call's metrics carry what its span starts with


def response_attributes(event: Event, content: bool) -> Attributes:
    """A model call's span at its response: its model, finish reason and tokens (and its text,
    when content is recorded)."""
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": event["input_tokens"],
        "gen_ai.usage.output_tokens": event["output_tokens"],
    }
    if event["cached_input_tokens"]:
        attributes["gen_ai.usage.cache_read.input_tokens"] = event["cached_input_tokens"]
    if event.get("model"):
        attributes["gen_ai.response.model"] = event["model"]
    finish = event.get("finish_reason")
    if finish is not None:
        attributes["gen_ai.response.finish_reasons"] = [str(finish)]
    if content:
        parts = [{"type": "text", "content": event["content"]}] if event["content"] else []
        parts += [
            {"type": "tool_call", "id": c["id"], "name": c["name"]} for c in event["tool_calls"]
        ]
        message = {"role": "assistant", "parts": parts, "finish_reason": str(finish)}
        attributes["gen_ai.output.messages"] = json.dumps([message], default=str)
    return attributes


def tool_attributes(name: str, call_id: str) -> Attributes:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }


def refused(name: str, reason: str) -> Attributes:
    return {"gen_ai.tool.name": name, "budgetconf.reason": reason}


def budget_warning(event: Event) -> Attributes:
    """The ``budgetconf.budget_warning`` event: which budget, its field, what was used of it,
    its limit and the fraction used; a secret's limit and fraction absent, as the event
    masks them (``***``, null)."""
    attributes: Attributes = {
        "budgetconf.budget": event["budget"],
        "budgetconf.field": event["field"],
        "budgetconf.used": event["used"],
    }
    for key, value in _stop_value({"value": event["limit"]}).items():
        attributes[f"budgetconf.{key}"] = value
    if event.get("fraction") is not None:
        attributes["budgetconf.fraction"] = float(event["fraction"])
    return attributes


def error_type(text: str) -> str:
    """``error.type`` from a failure's text: ``ValueError`` of ``ValueError: boom``."""
    head, colon, _ = text.partition(":")
    return head if colon and head.replace(".", "").isidentifier() else text


def ledger_event(event: Event) -> tuple[str, Attributes]:
    """A ledger event's span event: its scope and what it says (the URL is never in it)."""
    attributes: Attributes = {"budgetconf.scope": event["scope"]}
    keys = ("field", "tokens", "cost_usd", "error", "during", "on_unavailable", "spent", "limit")
    for key in keys:
        value = event.get(key)
        if value is not None:
            attributes[f"budgetconf.{key}"] = value
    return _LEDGER_EVENTS[event["type"]], attributes


def _stop_value(stop: Mapping[str, Any]) -> Attributes:
    """A stop's limit value, unless its field is secret (its value then shows as ``***``)."""
    value = stop["value"]
    return {} if isinstance(value, str) else {"value": value}


def end_attributes(stopped: Event, stop: Event | None) -> Attributes:
    """The run span's attributes at its end: what it used, how it ended, what stopped it."""
    attributes: Attributes = {
        "budgetconf.used.steps": stopped["turns"],
        "budgetconf.used.tool_calls": stopped["tool_calls_executed"],
        "budgetconf.used.tokens": stopped["tokens"],
        "budgetconf.used.cost_usd": float(stopped["cost_usd"]),
        "budgetconf.status": stopped["status"],
        "budgetconf.stop.reason": stopped["stop_reason"],
    }
    if stop is not None:
        attributes["budgetconf.stop.field"] = stop["field"]
        for key, value in _stop_value(stop).items():
            attributes[f"budgetconf.stop.{key}"] = value
        attributes["budgetconf.stop.source"] = stop["source"]
        attributes["budgetconf.stop.locator"] = stop["locator"]
    return attributes


def limit_reached(
    stop: Event, stopped: Event, budgets: Mapping[str, str], elapsed: float
) -> Attributes:
    """The ``budgetconf.limit_reached`` event of a budget stop: the limit, what was used of it,
    where it was set and how to raise it, and whose it was (``run``, ``parent``, ``ledger``)."""
    scope = stop.get("scope", "run")
    budget = budgets.get(stop["field"], stop["field"].rpartition(".")[2])
    limit = _stop_value(stop).get("value")
    used: float | None
    if scope == "ledger":
        used = stop["spent"]
    elif budget == "timeout_seconds":
        used = round(elapsed, 6)
        if scope == "run" and limit is not None:  # its own deadline passed, by the run's clock,
            used = max(used, limit)  # which began a little before the sink's
    elif budget == "max_repeats":
        used = limit  # the repeats that stop a run: the run reached them (a secret's: absent)
    else:
        used = stopped[_USED.get(budget, "turns")]
    attributes: Attributes = {"budgetconf.field": stop["field"]}
    if limit is not None:
        attributes["budgetconf.value"] = limit
    if used is not None:
        attributes["budgetconf.used"] = used
    attributes.update(
        {
            "budgetconf.source": stop["source"],
            "budgetconf.locator": stop["locator"],
            "budgetconf.raise_with": list(stop["raise_with"]),
            "budgetconf.scope": scope,
        }
    )
    return attributes


def stop_attributes(stopped: Event, stop: Event | None, preset: str) -> Attributes:
    """The ``budgetconf.stops`` counter's attributes for one run's stop."""
    attributes: Attributes = {
        "budgetconf.stop.reason": stopped["stop_reason"],
        "budgetconf.preset": preset,
    }
    if stop is not None:
        attributes["budgetconf.stop.field"] = stop["field"]
    return attributes
