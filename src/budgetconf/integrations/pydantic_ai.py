"""Run a pydantic-ai agent within a budgetconf budget, and report its stop the budgetconf way.

``pip install 'budgetconf[pydantic-ai]'`` (from a checkout ``pip install -e
'.[pydantic-ai]'``). `limits(res)` gives the keywords of ``agent.run`` /
``agent.run_sync`` (``agent.run_sync(prompt, **limits(res))``); `run()` and
`arun()` run the agent and return a `BridgeResult` whose ``native`` is
pydantic-ai's ``AgentRunResult``, or the ``UsageLimitExceeded`` /
``RunTimedOut`` that stopped it.

=========================  ==================================================  ==========
budget                     how                                                 by
=========================  ==================================================  ==========
loop.max_steps             ``UsageLimits(request_limit=N)``: checked before    framework
                           each request, so at most N model responses; the
                           tools of the Nth run. Always set: pydantic-ai's
                           own default is 50, and ``None`` means unlimited
limits.max_tool_calls      ``UsageLimits(tool_calls_limit=N)``: counts tool    framework
                           calls run; a response whose batch would pass N is
                           refused whole (none of its calls run)
limits.max_tokens          ``UsageLimits(total_tokens_limit=N)``: checked      framework
                           after each response, so the run overshoots; the
                           response that crosses N stops the run even when it
                           is a final answer, and its tools do not run
limits.max_cost_usd        ``UsageLimits(cost_limit=N)``: as the tokens, from  framework
                           the cost each response reports; with no priced
                           usage pydantic-ai warns ``CostNotFoundWarning``
                           at the end of the run and cannot enforce it
limits.timeout_seconds     the run's ``timeout=``: the whole run, raising      framework
                           ``RunTimedOut``
loop.max_tool_calls_per_   not enforceable: pydantic-ai has no per-response    --
turn                       cap. Its default (10) is left unenforced without a
                           word; set anywhere else it is refused
=========================  ==================================================  ==========

``run()`` refuses ``usage_limits=`` and ``timeout=`` (they would set the same
limits). A ``conversation=`` or ``usage=`` carrying earlier usage would count
against pydantic-ai's limits, which are cumulative over a conversation; the
bridge adds that usage to each limit, so the budget bounds this run, as the
executor's does. A stop is attributed to a budget only when it is the
bridge's own ``UsageLimits`` that raised (a nested agent's limit, raised
through a tool, is re-raised unchanged) or, for ``RunTimedOut``, when the
run lasted the whole ``timeout_seconds`` (a shorter deadline inherited from
an enclosing run is not the budget's). ``turns`` counts this run's model
responses in the messages ``capture_run_messages()`` keeps, and a stopped
run's ``output`` is the last text a response of the run held, the crossing
one included. No last-turn notice is sent.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import FrameType
from typing import Any

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_cost, reported_tokens
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    ended,
    refuse_conflicting,
    stopped,
    unreadable,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from budgetconf.integrations._bridge import Unenforced

try:
    import pydantic_core
    from pydantic_ai import UsageLimits, capture_run_messages
    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.exceptions import RunTimedOut, UsageLimitExceeded
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.usage import RunUsage
except ImportError:
    raise missing("pydantic_ai", "pydantic-ai-slim", "pydantic-ai") from None

__all__ = ["arun", "limits", "run"]

_FRAMEWORK = FRAMEWORKS["pydantic_ai"]

# UsageLimits' field -> the stop it is; the field's name is how its message starts
_REASONS: Mapping[str, StopReason] = {
    "request_limit": StopReason.MAX_STEPS,
    "tool_calls_limit": StopReason.MAX_TOOL_CALLS,
    "total_tokens_limit": StopReason.MAX_TOKENS,
    "cost_limit": StopReason.MAX_COST,
}
_NAMED = re.compile(r"\b(" + "|".join(_REASONS) + r")\b")


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"usage_limits": UsageLimits(...)}``, plus ``"timeout"`` when the budget sets one.

    For ``agent.run_sync(prompt, **limits(res))``. ``budget=None`` resolves
    the default preset with ``resolve_kwargs``. A budget set that
    pydantic-ai cannot enforce is a `UsageError`.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    return _native(_FRAMEWORK.keywords(checked, {}), RunUsage())


def run(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.run_sync(input, **framework_kwargs)`` within ``budget``.

    A budget stop is a result (``truncated``), never an exception; any other
    error pydantic-ai raises is raised unchanged.
    """
    plan = _Plan(budget, unenforced, framework_kwargs, agent, sys._getframe(1))
    with capture_run_messages() as messages:
        try:
            done = agent.run_sync(input, **plan.kwargs)
        except (UsageLimitExceeded, RunTimedOut) as exc:
            result = plan.stopped(exc, messages)
            if result is None:
                raise
            return result
    return plan.completed(done.output, messages, done)


async def arun(
    agent: AbstractAgent[Any, Any],
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run()` with ``await agent.run(...)``, for code already in an event loop."""
    plan = _Plan(budget, unenforced, framework_kwargs, agent, sys._getframe(1))
    with capture_run_messages() as messages:
        try:
            done = await agent.run(input, **plan.kwargs)
        except (UsageLimitExceeded, RunTimedOut) as exc:
            result = plan.stopped(exc, messages)
            if result is None:
                raise
            return result
    return plan.completed(done.output, messages, done)


class _Plan:
    """One run's budget, the framework keywords that carry it, and how to read its end."""

    __slots__ = ("budget", "kwargs", "prior", "reasons", "started", "timeout", "usage_limits")

    def __init__(
        self,
        budget: object,
        unenforced: Unenforced,
        kwargs: dict[str, Any],
        agent: AbstractAgent[Any, Any],
        caller: FrameType,
    ) -> None:
        refuse_conflicting(_FRAMEWORK, kwargs)
        self.budget = bridge_budget(_FRAMEWORK, budget, {}, through="run", unenforced=unenforced)
        conversation = kwargs.get("conversation")
        if conversation is not None:
            start, history = conversation.usage, conversation.messages
        else:
            start = kwargs.get("usage") or RunUsage()
            history = kwargs.get("message_history") or ()
        plain = _FRAMEWORK.keywords(self.budget, {})
        native = _native(plain, start)
        self.usage_limits: UsageLimits = native["usage_limits"]
        self.timeout: float | None = native.get("timeout")
        self.reasons = {name: _REASONS[name] for name in plain["usage_limits"]}
        self.prior = {message.run_id for message in history}
        if kwargs.pop("infer_name", True) and agent.name is None:
            _infer_name(agent, caller)
        # run_sync would name the agent after this module's own variable: named above instead
        self.kwargs = {**kwargs, **native, "infer_name": False}
        self.started = time.monotonic()

    def stopped(self, exc: Exception, messages: list[ModelMessage]) -> BridgeResult | None:
        """The budget stop ``exc`` is, or None when no limit the bridge set raised it."""
        reason = self._reason(exc)
        if reason is None:
            return None
        responses = self._responses(messages)
        output = next((r.text for r in reversed(responses) if r.text), None) or ""
        fault = _unreadable(responses)
        if fault is not None:
            return unreadable(_FRAMEWORK, fault, output=output, turns=len(responses), native=exc)
        return stopped(
            _FRAMEWORK, self.budget, reason, output=output, turns=len(responses), native=exc
        )

    def completed(
        self, output: object, messages: list[ModelMessage], native: object
    ) -> BridgeResult:
        responses = self._responses(messages)
        turns = len(responses)
        text = output if isinstance(output, str) else pydantic_core.to_json(output).decode()
        fault = _unreadable(responses)
        if fault is not None:
            return unreadable(_FRAMEWORK, fault, output=text, turns=turns, native=native)
        message = f"completed in {turns} turn{'' if turns == 1 else 's'}"
        return ended(
            _FRAMEWORK, StopReason.COMPLETED, message, output=text, turns=turns, native=native
        )

    def _reason(self, exc: Exception) -> StopReason | None:
        if isinstance(exc, RunTimedOut):
            # an enclosing run's deadline, shorter than the budget's, is not the budget's stop
            ran = time.monotonic() - self.started
            hit = self.timeout is not None and ran >= self.timeout
            return StopReason.TIMEOUT if hit else None
        if not _raised_by(exc, self.usage_limits):
            return None  # a nested agent's own limits, raised through a tool
        named = _NAMED.search(str(exc))
        return None if named is None else self.reasons.get(named.group(1))

    def _responses(self, messages: Sequence[ModelMessage]) -> list[ModelResponse]:
        """This run's model responses: those no run of the history made."""
        return [m for m in messages if isinstance(m, ModelResponse) and m.run_id not in self.prior]


def _unreadable(responses: Sequence[ModelResponse]) -> Unreadable | None:
    """The first usage among ``responses`` that no response can report, if one is.

    pydantic-ai counts usage itself, so the bridge reads it when the run has ended: such a
    run fails, as the executor's does.
    """
    for response in responses:
        usage = response.usage
        try:
            reported_tokens(usage.total_tokens, "usage.total_tokens")
            if usage.cost is not None:
                reported_cost(float(usage.cost), "usage.cost")
        except Unreadable as exc:
            return exc
    return None


def _native(plain: Mapping[str, Any], start: RunUsage) -> dict[str, Any]:
    """pydantic-ai's keywords from the plain ones, each limit counted from ``start``'s usage."""
    given = plain["usage_limits"]
    counted = {
        "request_limit": start.requests,
        "tool_calls_limit": start.tool_calls,
        "total_tokens_limit": start.total_tokens,
    }
    fields: dict[str, Any] = {
        name: counted[name] + int(given[name]) for name in counted.keys() & given.keys()
    }
    if "cost_limit" in given:
        fields["cost_limit"] = (start.cost or Decimal(0)) + Decimal(str(given["cost_limit"]))
    native: dict[str, Any] = {"usage_limits": UsageLimits(**fields)}
    if "timeout" in plain:
        native["timeout"] = plain["timeout"]
    return native


def _raised_by(exc: BaseException, usage_limits: UsageLimits) -> bool:
    """Whether one of ``usage_limits``' own checks raised ``exc``."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_locals.get("self") is usage_limits:
            return True
        tb = tb.tb_next
    return False


def _infer_name(agent: AbstractAgent[Any, Any], caller: FrameType) -> None:
    """Name the agent after the caller's variable, as ``run_sync`` called there would."""
    for scope in (caller.f_locals, caller.f_globals):
        for name, item in scope.items():
            if item is agent:
                agent.name = name
                return
