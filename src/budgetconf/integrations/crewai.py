"""Run a CrewAI `Agent` within a budgetconf budget, and report its stop.

`limits(res)` gives ``{"max_iter": …, "max_execution_time": …}`` for
``Agent(..., **limits(res))``; `run(agent, input, budget)` runs one
``agent.kickoff(input)`` through the executor's `Meter` and returns a
`BridgeResult` whose ``message``, ``limit``, ``usage`` and ``events`` are the
executor's; `stream(agent, input, budget)` is that run, each model call
streamed, its text as it comes. ``budget=None`` resolves the default preset,
as every bridge does.

=========================  ==============================================================
budget                     enforced by
=========================  ==============================================================
max_steps                  the bridge: its ``before_llm_call`` hook asks the Meter before
                           each model call; the calls of the last permitted response are
                           answered as not executed, as in the executor, and the lent LLM
                           gives CrewAI's loop the stop's words in their place, so CrewAI
                           ends the run there as at an answer (``max_iter`` is lent one
                           higher, never reached: no forced final call, no "iteration
                           limit" text for an answer). `limits()`: ``max_iter =
                           max_steps - 1``, since at ``max_iter`` CrewAI makes one more,
                           tool-less, call
max_tool_calls_per_turn    the bridge: its ``before_tool_call`` hook blocks the calls of a
                           response over the cap, and its ``after_tool_call`` hook answers
                           them rejected (or skipped) with the executor's text
max_tool_calls             the bridge: the same hooks, against every call run
max_tokens                 the bridge, from the usage of each response the agent's LLM
                           reports (a copy of it, lent for the run)
timeout_seconds            the bridge: the Meter's checks before each model call and each
                           tool call, and a deadline that abandons the run in flight, as
                           CrewAI's own ``max_execution_time`` abandons a task.
                           `limits()`: ``max_execution_time``, in whole seconds, which
                           CrewAI applies to a task's run (not to ``Agent.kickoff``)
max_cost_usd               the bridge: each response's usage priced at the price of the
                           agent's model (its LLM's ``model``); refused without a price,
                           and by `limits()`
ledger.url                 the bridge: reserved before each model call, settled with the
                           response's usage and its cost at that price
=========================  ==============================================================

CrewAI's hooks are process-wide lists, but for one run the bridge registers its
own in CrewAI's execution scope (a context variable), which the run's threads
inherit and which ends with the run: another run, at once or later, never
meets them. An agent whose model calls the bridge cannot see (a
``function_calling_llm``, planning, a guardrail, memory, an LLM that calls
tools by text), a `Crew`, and a resumed executor are refused by name.
"""

from __future__ import annotations

from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    AgentModel,
    BridgeResult,
    bridge_budget,
    lent_steps,
    refuse_conflicting,
    refuse_stream_keyword,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from typing import Any, Final

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._threaded import Relay
    from budgetconf.loop import Budget

try:
    import crewai  # its names load when first read
except ImportError:
    raise missing("crewai", "crewai", "crewai") from None

__all__ = ["limits", "run", "stream"]

FRAMEWORK: Final = FRAMEWORKS["crewai"]


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"max_iter": max_steps - 1, "max_execution_time": …}`` for CrewAI's `Agent`.

    ``budget`` None resolves ``resolve_kwargs`` (the default preset unless they name
    another). A budget set that these keywords do not enforce is a `UsageError`.
    """
    checked = bridge_budget(FRAMEWORK, budget, resolve_kwargs, through="limits")
    return FRAMEWORK.keywords(checked, {})


def run(
    agent: Any,
    input: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.kickoff(input)`` within ``budget``; a budget stop is a result, not an error.

    ``framework_kwargs`` go to ``kickoff`` (``response_format``, ``input_files``;
    ``from_checkpoint`` is refused: a resumed run counts its earlier steps).
    ``on_event`` hears the run's events and ``name`` names it, as in
    `LoopExecutor`. A model or tool failure is a ``failed`` result whose
    ``native`` is the exception, as in the executor.
    """
    refuse_streaming(framework_kwargs)
    checked, model = _checked(agent, budget, unenforced, framework_kwargs)
    return _run(agent, input, checked, model, on_event, name, framework_kwargs)


def stream(
    agent: Any,
    input: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[str]:
    """`run`, streamed: the text of each model call, piece by piece, as it arrives.

    The run is `run`'s, on a thread of its own, in the context ``stream`` is called
    in, on a copy of the agent's LLM that streams each call (with its usage, which
    CrewAI asks the server for); iterating the stream yields each piece of text as
    CrewAI reports it, and ends without raising at a stop, where ``result`` is the
    result `run` gives. The keywords and refusals are `run`'s; ``stream=`` is the
    bridge's own. Closing the stream before its end abandons the call streaming and
    ends the run ``cancelled``.
    """
    refuse_stream_keyword(framework_kwargs)
    checked, model = _checked(agent, budget, unenforced, framework_kwargs)
    from budgetconf.integrations._threaded import Relay, Streamed

    streamed = Streamed(
        lambda relay: _run(agent, input, checked, model, on_event, name, framework_kwargs, relay),
        Relay(),
        "budgetconf-crewai",
    )
    return BridgeStream(streamed.items(), streamed.finish)


def _checked(
    agent: Any, budget: object, unenforced: Unenforced, kwargs: dict[str, Any]
) -> tuple[Budget, AgentModel]:
    """The budget `run` and `stream` run ``agent`` within, and its model, once every refusal
    is past."""
    refuse_conflicting(FRAMEWORK, kwargs)
    if "from_checkpoint" in kwargs:
        raise UsageError(
            "from_checkpoint=: a resumed run counts its earlier steps against max_steps; run()"
            " gives the budget to one whole run, so resume it with agent.kickoff"
        )
    _refuse_unseen(agent)
    llm = agent.llm
    model = AgentModel(
        getattr(llm, "model", None), getattr(llm, "provider", None), getattr(llm, "base_url", None)
    )
    checked = bridge_budget(
        FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
    )
    return checked, model


def _run(
    agent: Any,
    input: str,
    checked: Budget,
    model: AgentModel,
    on_event: Sink | None,
    name: str | None,
    framework_kwargs: dict[str, Any],
    relay: Relay | None = None,
) -> BridgeResult:
    """One run of ``agent.kickoff(input)`` through the Meter (each call streamed through
    ``relay``, for `stream`), with the agent's LLM and ``max_iter`` lent for the run and put
    back afterwards."""
    from crewai.utilities.agent_utils import is_inside_event_loop

    from budgetconf.integrations._crewai_run import Watch
    from budgetconf.integrations._metered import LENT, claimed

    with claimed(agent, agent.role, LENT.format("LLM")):
        watch = Watch(agent, checked, _tool_names(agent), on_event, name, model, relay)
        # past the budget: CrewAI's forced final call (at its max_iter, which limits() gives
        # as max_steps - 1) is never made
        own = agent.max_iter
        object.__setattr__(agent, "max_iter", lent_steps(checked))
        try:
            with watch.lent():
                threaded = watch.seconds_left() is not None or is_inside_event_loop()
                return watch.kickoff(input, framework_kwargs, threaded)
        finally:
            object.__setattr__(agent, "max_iter", own)


def _tool_names(agent: Any) -> frozenset[str]:
    """The names CrewAI gives the model for the agent's tools (sanitized, as it matches them)."""
    from crewai.utilities.string_utils import sanitize_tool_name

    return frozenset(sanitize_tool_name(t.name) for t in agent.tools or ())


def _refuse_unseen(agent: Any) -> None:
    """An agent whose model calls the bridge cannot all see, or not an `Agent`: refused."""
    if isinstance(agent, crewai.Crew):
        raise UsageError(
            "agent: run() runs one crewai Agent through agent.kickoff, whose model and tool"
            " calls its hooks see; a Crew runs its tasks' agents (and a manager) with budgets"
            " of their own: pass **limits(...) to each Agent and call crew.kickoff yourself"
        )
    if not isinstance(agent, crewai.Agent):
        raise UsageError(f"agent: expected a crewai Agent, got {type(agent).__name__}")
    llm = agent.llm
    own = vars(agent)  # read so, CrewAI's deprecated fields warn of nothing
    unseen = [
        phrase
        for present, phrase in (
            (own.get("function_calling_llm") is not None, "a function_calling_llm"),
            (bool(own.get("planning") or own.get("planning_config")), "planning"),
            (bool(own.get("reasoning")), "reasoning"),
            (own.get("guardrail") is not None, "a guardrail"),
            (own.get("memory") is not None, "memory"),
            (
                bool(agent.tools) and not llm.supports_function_calling(),
                "an LLM that calls tools by text (no native function calling)",
            ),
            (
                bool(getattr(own.get("agent_executor"), "_resuming", False)),
                "an executor being resumed",
            ),
        )
        if present
    ]
    if unseen:
        raise UsageError(
            f"the agent {agent.role!r} has {unseen[0]}, whose model calls (or their usage)"
            " run() cannot count: it sees the calls of the agent's own LLM in its tool loop"
            " only; pass **limits(...) to Agent and call agent.kickoff yourself"
        )
