"""Run an agno `Agent` within a budgetconf budget, and report its stop.

>>> from budgetconf.integrations.agno import limits, run
>>> Agent(model=..., tools=[...], **limits(res))  # agno's own tool_call_limit, soft
>>> result = run(agent, "Add.", res)              # every budget, and the stop the budgetconf way
>>> with stream(agent, "Add.", res) as events:    # the same run, agno's own events as they come
...     for event in events: ...
>>> events.result                                 # run()'s result, once the events have ended

`run()` (and `arun()`) runs ``agent.run(input)`` through the executor's `Meter`:
for the run it lends the agent a copy of its model, whose every model call asks
the Meter first and hands it the response, and whose every tool call carries one
more of agno's tool hooks, outermost, so the Meter decides each call agno makes,
as the executor's loop does. Its result's ``message``, ``limit``, ``usage`` and
``events`` are the executor's. `stream()` is the same run, yielding what
``agent.run(input, stream=True)`` yields; a stop ends it without raising.

=========================  ==============================================================
budget                     enforced by
=========================  ==============================================================
max_steps                  `run()`: the lent model asks the Meter before each model call,
                           and the calls of the last permitted response are answered as not
                           executed; agno itself has no step limit (its loop calls the
                           model until a response asks for no tool), so `limits()` cannot
                           carry one
max_tool_calls_per_turn    `run()`: the bridge's tool hook rejects (or truncates) a response
                           over it with the executor's answer, and the run goes on
max_tool_calls             `run()`: the tool hook answers the calls past it as not executed,
                           and ``StopAgentRun`` ends agno's loop there, a hard limit.
                           `limits()`: ``Agent(tool_call_limit=…)``, which agno keeps soft:
                           it answers the calls past it with an error and calls the model
                           again, as often as the model asks
max_tokens                 `run()`: the usage agno reads from each response
                           (``metrics``); a spent budget stops the next model call
max_cost_usd               `run()`: the cost agno reports for a response (``metrics.cost``,
                           from a provider that prices its responses), else its tokens
                           priced at the price of the agent's model (its ``id``); refused
                           without either, and by `limits()`
timeout_seconds            `run()`: a deadline that abandons a model call in flight (not a
                           streamed one), checked too before each model call and each
                           response's tools (a tool in progress is not cut short)
ledger.url                 `run()`: reserved before each model call (a refusal stops the run
                           before it), settled with the response's usage and cost
=========================  ==============================================================

A stop before a model call ends agno's run as a cancellation (agno keeps it in the
agent's session, ``cancelled``, its ``native``); a stop after a response's calls ends it
through ``StopAgentRun``, as agno ends a run a tool stops. An agent whose model calls the
lent model does not make (a reasoning, output, parser, memory, summary, follow-up or
learning model, fallback models) is refused by name, and so is one that agno would run
again after a failure (``retries``). One agent is in one bridged run at a time.
"""

from __future__ import annotations

from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.integrations._bridge import (
    AgentModel,
    BridgeResult,
    bridge_budget,
    refuse_conflicting,
    refuse_stream_keyword,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop and agno's agent load with the first run, not with the bridge
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from typing import Any, Final

    from budgetconf.events import Sink
    from budgetconf.integrations._agno_run import Session
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.loop import Budget

try:
    import agno  # noqa: F401  (its agent and models load with the first run)
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("agno", "agno", "agno") from None

__all__ = ["arun", "limits", "run", "stream"]

FRAMEWORK: Final = FRAMEWORKS["agno"]

#: an agent's settings whose model calls the lent model does not make, and what they are
_UNSEEN: Final = (
    ("reasoning_model", "a reasoning model"),
    ("reasoning_agent", "a reasoning agent"),
    ("output_model", "an output model"),
    ("parser_model", "a parser model"),
    ("memory_manager", "a memory manager"),
    ("enable_agentic_memory", "agentic memory"),
    ("update_memory_on_run", "memories updated on each run"),
    ("enable_session_summaries", "session summaries"),
    ("session_summary_manager", "a session summary manager"),
    ("followups", "follow-up suggestions"),
    ("learning", "learning"),
    ("fallback_config", "fallback models"),
)


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"tool_call_limit": max_tool_calls}`` for ``Agent(..., **limits(res))`` (``{}``
    without a tool-call budget).

    agno's ``tool_call_limit`` is soft: the calls past it are answered with an
    error and the model is called again. Any other budget set (not by its
    default) is a `UsageError`: only `run()` enforces those.
    """
    checked = bridge_budget(FRAMEWORK, budget, resolve_kwargs, through="limits")
    return FRAMEWORK.keywords(checked, {})


def run(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.run(input, **framework_kwargs)`` within ``budget``; a budget stop is a result.

    ``budget`` is what `LoopExecutor` accepts (None: the default preset);
    ``on_event`` and ``name`` are the run's, as `LoopExecutor`'s. The agent's
    model and ``tool_call_limit`` are the run's while it runs, and its own
    afterwards, also when it raises. ``tool_call_limit=`` is refused (set the
    budget through budgetconf), and so are ``stream=True`` (`stream` streams)
    and a run of an agent already in a bridged run. ``native`` is agno's
    `RunOutput`. A model failure that ends agno's run is a ``failed`` result.
    """
    refuse_streaming(framework_kwargs)
    session = _opened(agent, budget, unenforced, on_event, name, framework_kwargs)
    with _claimed(agent):
        try:
            with session.lent():  # not streamed, whatever the agent's own ``stream`` says
                native = agent.run(input, **{**framework_kwargs, "stream": False})
        except BaseException as exc:
            return _ended(session, exc)
    return session.finished(native)


async def arun(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run`, awaiting ``agent.arun(input, **framework_kwargs)``: async tools are awaited, and
    the calls of one response run at once, as agno runs them."""
    refuse_streaming(framework_kwargs)
    session = _opened(agent, budget, unenforced, on_event, name, framework_kwargs)
    with _claimed(agent):
        try:
            with session.lent():
                native = await agent.arun(input, **{**framework_kwargs, "stream": False})
        except BaseException as exc:
            return _ended(session, exc)
    return session.finished(native)


def stream(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Any]:
    """`run`, streamed: what ``agent.run(input, stream=True, **framework_kwargs)`` yields.

    Iterating it yields agno's own events (``RunContentEvent``\\ s as each
    response streams, its tool-call events with ``stream_events=True``, the
    ``RunCompletedEvent``; a stop before a model call, agno's
    ``RunCancelledEvent``); it ends without raising, and ``result`` is the
    result `run` gives, its ``native`` agno's `RunOutput`. The keywords and
    refusals are `run`'s, ``stream=`` and ``yield_run_output=`` the bridge's
    own; the run begins at the first item. Closing the stream before its end
    closes agno's and ends the run ``cancelled``.
    """
    refuse_stream_keyword(framework_kwargs)
    if "yield_run_output" in framework_kwargs:
        raise UsageError(
            "yield_run_output=: stream() gives agno's RunOutput as its result's native"
        )
    session = _opened(agent, budget, unenforced, on_event, name, framework_kwargs)
    streamed = _Streamed(agent, session)
    return BridgeStream(streamed.items(input, framework_kwargs), streamed.finish)


class _Streamed:
    """One streamed run: agno's events within the run, and the run's end after them."""

    __slots__ = ("agent", "native", "session")

    def __init__(self, agent: Any, session: Session) -> None:
        self.agent = agent
        self.session = session
        self.native: Any = None  # agno's RunOutput, which its stream gives last

    def items(self, input: Any, kwargs: dict[str, Any]) -> Iterator[Any]:
        from agno.run.agent import RunOutput

        with _claimed(self.agent), self.session.lent():
            events = self.agent.run(input, stream=True, yield_run_output=True, **kwargs)
            try:
                for event in events:
                    if isinstance(event, RunOutput):
                        self.native = event
                    else:
                        yield event
            except BaseException as exc:
                if not isinstance(exc, Exception | GeneratorExit):
                    _ended(self.session, exc)  # the process is leaving: the run's end recorded
                raise  # the stream hands it to `finish`, or the stream was closed
            finally:
                events.close()

    def finish(self, exc: BaseException | None) -> BridgeResult:
        """The run's end: agno's, the stream closed (cancelled), or the caller's mistake
        (raised again, as the run did not begin)."""
        if exc is None:
            return self.session.finished(self.native)
        return _ended(self.session, exc)


def _claimed(agent: Any) -> AbstractContextManager[None]:
    """While it holds, ``agent`` is in this bridged run, and in no other."""
    from budgetconf.integrations._metered import LENT, claimed

    return claimed(agent, agent.name or type(agent).__name__, LENT.format("model"))


def _opened(
    agent: Any,
    budget: object,
    unenforced: Unenforced,
    on_event: Sink | None,
    name: str | None,
    kwargs: dict[str, Any],
) -> Session:
    """The run's `Session`, once the caller's keywords, the agent and the budget pass."""
    refuse_conflicting(FRAMEWORK, kwargs)
    from agno.agent import Agent

    if not isinstance(agent, Agent):
        raise UsageTypeError(f"agent: expected an agno Agent, got {type(agent).__name__}")
    model = _agent_model(agent)
    checked = bridge_budget(
        FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
    )
    _refuse_unseen(agent)
    _refuse_hosted(agent, checked)
    _refuse_own_limit(agent, checked)
    from budgetconf.integrations._agno_run import Session

    return Session(agent, checked, on_event, name, model)


def _agent_model(agent: Any) -> AgentModel:
    """The agent's model (an agno ``Model``; a ``"provider:id"`` string made one, as agno
    makes it at the run's start): its ``id``, its ``provider`` and the base URL its client
    calls (``base_url``; for an OpenAI one without it, ``OPENAI_BASE_URL``)."""
    from agno.models.base import Model
    from agno.models.utils import get_model

    if isinstance(agent.model, str):
        agent.model = get_model(agent.model)
    model = agent.model
    if not isinstance(model, Model):
        raise UsageError(
            "agent.model is unset: give the agent an agno Model (such as"
            " agno.models.openai.OpenAIChat(id=...)); agno would pick a default of its own"
        )
    provider = model.provider.lower() if isinstance(model.provider, str) else None
    url = getattr(model, "base_url", None)
    if provider == "openai" and url is None:  # the openai client's own default
        import os

        url = os.environ.get("OPENAI_BASE_URL")
    return AgentModel(model.id, provider, url)


def _refuse_unseen(agent: Any) -> None:
    """An agent that makes model calls the lent model does not see, or runs again after a
    failure: refused by name."""
    found = [what for attribute, what in _UNSEEN if getattr(agent, attribute, None)]
    if found:
        raise UsageError(
            f"the agent {agent.name or 'Agent'!r} has {found[0]}, whose model calls run() cannot"
            " count: it sees those of the agent's own model; unset it, or pass **limits(...)"
            " to Agent and call agent.run yourself"
        )
    if agent.retries:
        raise UsageError(
            f"the agent {agent.name or 'Agent'!r} has retries = {agent.retries}: agno runs a"
            " failed run again from its start, so its model calls would count twice; the"
            " model's own client retries a failed request (max_retries)"
        )


def _refuse_hosted(agent: Any, budget: Budget) -> None:
    """A budget on tool calls (set, not by its default: the tool-call budgets, each tool's
    own limit, ``loop.max_repeats``) on an agent with a tool its model's provider runs (a
    dict in ``tools``): refused, as those calls pass no hook of agno's."""
    hosted = [t for t in agent.tools or () if isinstance(t, dict)]
    if not hosted:
        return
    caps = [
        budget.limits.get(n) for n in ("max_tool_calls", "max_tool_calls_per_turn", "max_repeats")
    ]
    for cap in [*caps, *budget.tools.values()]:  # each a budget that needs every call seen
        if cap is not None and cap.source != "default":
            raise UsageError(
                f"{cap.field} = {cap.shown()} from {cap.locator} cannot be enforced by agno for"
                f" the provider's own tool {hosted[0].get('type', hosted[0])!r}: its provider"
                " runs its calls, which pass no tool hook; remove the tool or the budget"
            )


def _refuse_own_limit(agent: Any, budget: Budget) -> None:
    """An agent with a ``tool_call_limit`` of its own other than the budget's: refused, as
    the keyword is (the run sets it aside, so it would not hold)."""
    own = agent.tool_call_limit
    if own is None or own == budget.value("max_tool_calls"):
        return
    raise UsageError(
        f"the agent's tool_call_limit = {own} would set agno's own limit: set the budget"
        " through budgetconf instead (limits.max_tool_calls: explicit=, --set or its"
        " variable), or give the agent **limits(...)"
    )


def _ended(session: Session, exc: BaseException) -> BridgeResult:
    """The run's end when agno's run (or its stream) raised ``exc``: a model or tool failure
    the Meter records, a closed stream or Ctrl-C cancelled; the process leaving is raised
    again, once recorded."""
    bridged = session.bridged
    if isinstance(exc, KeyboardInterrupt):
        return bridged.cancelled(exc)
    if isinstance(exc, Exception):
        return bridged.failed(exc)
    bridged.failed(exc)
    raise exc
