"""The bridge's middleware for langchain's ``create_agent``: the Meter's adapter, in the graph.

`budgetconf.integrations.langgraph.middleware` gives a `MeterMiddleware`. It
is the bridge's view of each model call and each tool call of the graph:

- ``wrap_model_call`` asks the run's Meter before the call (a stop raises
  `Ended`, which `run()` reports as the Meter's result; the shared ledger is
  reserved there), adds the last-turn notice to that call's messages, and hands
  the response's AI message (its ``usage_metadata``, text and tool calls) to
  the Meter, which plans its calls;
- ``wrap_tool_call`` runs each call through the Meter: the tool runs when the
  plan says so (seeing the bridged run as ``current_run()``), else its
  ``ToolMessage`` is the plan's answer (not executed, rejected, skipped).

The run is the bridge's (`run()` or `arun()`), found through a context
variable, so one graph may serve runs at once. A graph built with it and
invoked without the bridge stops at its start with a `UsageError`: its budget
would go unenforced.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from budgetconf._usage import Unreadable
from budgetconf.errors import UsageError
from budgetconf.integrations._langgraph_run import (
    METERING,
    Ended,
    GraphRun,
    asking_usage,
    calls_of,
    finish_of,
    text_of,
    usage_of,
)


class MeterMiddleware(AgentMiddleware[Any, Any, Any]):
    """Each model call and tool call of a ``create_agent`` graph, through the run's Meter."""

    #: how the bridge knows it among a graph's nodes
    budgetconf_meter = True

    @property
    def name(self) -> str:
        return "BudgetconfMeter"

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        _run(self)  # a graph run without the bridge: refused before its first model call
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        _run(self)
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        run = _run(self)
        request = _asked(run, request)
        try:
            response = handler(request)
        except Exception:
            _give_back(run)
            raise
        _answered(run, response)
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        run = _run(self)
        request = _asked(run, request)
        try:
            response = await handler(request)
        except Exception:
            _give_back(run)
            raise
        _answered(run, response)
        return response

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        run = _run(self)
        call = request.tool_call
        name = call["name"]
        if name not in run.tools:  # no such tool: the tool node answers it with its error
            return handler(request)
        lock = run.lock

        def invoke() -> Any:  # the tool runs unlocked: the calls of a response run at once
            lock.release()
            try:
                return handler(request)
            finally:
                lock.acquire()

        with lock:
            value = run.bridged.tool(call.get("id"), name, invoke)
        return _message(value, call, name)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        run = _run(self)
        call = request.tool_call
        name = call["name"]
        if name not in run.tools:
            return await handler(request)
        value = await run.bridged.atool(call.get("id"), name, lambda: handler(request))
        return _message(value, call, name)


def _run(owner: MeterMiddleware) -> GraphRun:
    """The bridged run ``owner``'s graph is running in; refused outside one."""
    run = METERING.get()
    if run is None or owner not in run.owners:
        raise UsageError(
            "this graph's middleware() enforces its budget only when it runs through"
            " budgetconf.integrations.langgraph.run() or arun()"
        )
    return run


def _asked(run: GraphRun, request: Any) -> Any:
    """Before a model call: the Meter lets it go (else `Ended`); the request, with the
    last-turn notice when the call carries one."""
    bridged = run.bridged
    end = bridged.call()
    if end is not None:
        raise Ended(end)
    offered = request.tools
    tools = run.tools
    if isinstance(tools, set):  # a tool another middleware added for this call is one too
        tools.update(n for t in offered if isinstance(n := getattr(t, "name", None), str))
    model = asking_usage(request.model)  # streamed, its usage counts as the plain call's
    if model is not request.model:
        request = request.override(model=model)
    notice = bridged.notice(bool(offered))
    if notice is None:
        return request
    return request.override(messages=[*request.messages, HumanMessage(notice)])


def _answered(run: GraphRun, response: Any) -> None:
    """After a model call: its AI message to the Meter, which plans its calls."""
    found = getattr(response, "result", None)
    messages = found if isinstance(found, list) else [response]
    message = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if message is None:  # nothing the model said: no response to judge
        return
    bridged = run.bridged
    try:
        usage = usage_of(message)
    except Unreadable as exc:  # the run ends here, as the executor's does
        raise Ended(bridged.unreadable(exc)) from None
    bridged.answered(usage, text_of(message) or None, calls_of(message), finish_of(message))


def _give_back(run: GraphRun) -> None:
    """The model call raised: the shared ledger's share it held goes back at once (a retry
    around this middleware reserves anew)."""
    draw = run.bridged.meter.draw
    if draw is not None:
        draw.release()


def _message(value: Any, call: Any, name: str) -> Any:
    """What the tool node gets: the tool's own message, or the plan's answer as one."""
    if isinstance(value, str):  # the call did not run: the Meter's answer stands for it
        return ToolMessage(content=value, tool_call_id=call.get("id"), name=name, status="error")
    return value
