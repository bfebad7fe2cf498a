"""A smolagents agent's run within a budgetconf budget.

>>> from budgetconf.integrations.smolagents import limits, run
>>> agent.run(task, **limits(res))      # the step budget, through smolagents' own max_steps
>>> result = run(agent, task, res)      # every budget, and the stop the budgetconf way
>>> with stream(agent, task, res) as items:  # the same run, smolagents' own items as they come
...     for item in items: ...
>>> items.result                        # run()'s result, once the items have ended

`run()` enforces the whole budget through the executor's `Meter`: for the
run it gives the agent a model that asks the Meter before each model call (a
step's, a plan's) and hands it each response, and, for a ``ToolCallingAgent``,
a wrapper in each tool's place, so the Meter decides each call smolagents
makes, as the executor's loop does. Its result's ``message``, ``limit``,
``usage`` and ``events`` are the executor's. `stream()` is the same run,
yielding what ``agent.run(task, stream=True)`` yields; a stop ends it without
raising, with `run()`'s result.

=========================== ================================================
budget                      enforced by
=========================== ================================================
``max_steps``               `run()`: the Meter refuses the model call past
                            it, and the calls of the last permitted response
                            are answered as not executed (smolagents'
                            ``max_steps`` is set one higher, never reached).
                            `limits()`: smolagents' ``max_steps``, as
                            ``max_steps - 1``, since at its limit smolagents
                            makes one more, tool-less, call
``max_tool_calls_per_turn`` `run()`, ``ToolCallingAgent``: the wrapped tools
                            answer the calls of a response over the cap as
                            rejected (or skip the surplus), and the run goes
                            on. Refused for a ``CodeAgent`` when set
``max_tool_calls``          `run()`, ``ToolCallingAgent``: calls past it are
                            answered as not executed, and the run stops at
                            the next model call. Refused for a ``CodeAgent``
``max_tokens``              `run()`: each response's ``token_usage``; one
                            past it runs no tools, a spent budget stops the
                            next model call
``timeout_seconds``         `run()`: checked before each model call and each
                            response's tools; a model call still running at
                            the deadline is abandoned (a streamed one, a
                            tool in progress, are not cut short)
``max_cost_usd``            `run()`: each response's ``token_usage`` priced
                            at the price of the agent's model (its
                            ``model_id``), as the tokens; refused without a
                            price (a model with no name: but the price
                            fields), and by `limits()`
``ledger.url``              `run()`: reserved before each model call (a
                            refusal stops the run before it), settled with
                            the response's ``token_usage`` and its cost at
                            that price (``ledger.max_cost_usd`` is drawn on
                            at it)
=========================== ================================================

An agent with ``stream_outputs=True`` streams its model calls; their deltas carry
input and output tokens only, so a streamed call's cached tokens are priced at the
input rate.

A ``CodeAgent`` calls its tools inside the code it writes, which smolagents'
interpreter runs: the Meter sees its responses (their steps, tokens, time and
the ledger are enforced) but no call in them, so its tools run unwrapped and
the last permitted response's code runs. One agent runs one bridged run at a
time: smolagents keeps a run's memory and steps on the agent.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager
from functools import partial
from typing import cast

try:
    from smolagents.agents import (  # type: ignore[import-untyped]
        MultiStepAgent,
        ToolCallingAgent,
    )
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("smolagents", "smolagents", "smolagents") from None

from budgetconf.errors import BudgetConfWarning, UsageError, UsageTypeError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    refuse_conflicting,
    refuse_stream_keyword,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._smolagents_run import Ended, Session, agent_model
from budgetconf.integrations._stream import BridgeStream, Closed

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from collections.abc import Callable
    from inspect import Signature
    from typing import Any, Final

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.loop import Budget

__all__ = ["limits", "run", "stream"]

_FRAMEWORK: Final = FRAMEWORKS["smolagents"]
#: ``run``'s signature, by agent class: a keyword it does not take is the caller's mistake
_SIGNATURES: dict[type, Signature] = {}


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"max_steps": max_steps - 1}``, for ``agent.run(task, **limits(res))``.

    At its limit smolagents makes one more model call, without tools, and
    returns its text: so the total is ``max_steps``, and the tools of every
    step's response run. A ``max_steps`` below 2 is a `UsageError`, and so is
    any other budget set (not by its default): only `run()` enforces those.
    An agent with ``planning_interval`` makes a model call for each plan
    besides: run it through `run()`, which counts every call.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    _step_limit(checked)
    return _FRAMEWORK.keywords(checked, {})


def run(
    agent: Any,
    task: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.run(task, **framework_kwargs)`` within ``budget``; a budget stop is a result.

    ``budget`` is what `LoopExecutor` accepts (None: the default preset);
    ``on_event`` and ``name`` are the run's, as `LoopExecutor`'s. The agent's
    model, tools and ``max_steps`` are the run's while it runs, and its own
    afterwards, also when it raises. ``max_steps=`` is refused (set the budget
    through budgetconf), and so are ``stream=True`` (`stream` streams), a
    keyword ``agent.run`` does not take, and a run of an agent already in a
    bridged run. ``native`` is what ``agent.run`` returned (smolagents'
    ``RunResult`` with ``return_full_result=True``), the exception it raised,
    or None when the budget stopped the run. A model or tool failure that ends
    smolagents' run is a ``failed`` result; ``agent.interrupt()`` a
    ``cancelled`` one.
    """
    refuse_streaming(framework_kwargs)
    opened = _opener(agent, task, budget, unenforced, on_event, name, framework_kwargs)
    with _alone(agent):
        session = opened()
        try:  # the agent is its own again before any result is made
            with session.borrowed():
                native = agent.run(task, **framework_kwargs)
        except BaseException as exc:
            return session.end(exc)
    return session.finished(native)


def stream(
    agent: Any,
    task: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Any]:
    """`run`, streamed: what ``agent.run(task, stream=True, **framework_kwargs)`` yields.

    Iterating it yields smolagents' own stream items (its steps, ``ToolCall``s,
    ``ToolOutput``s, a ``stream_outputs`` agent's ``ChatMessageStreamDelta``s,
    the ``FinalAnswerStep``); at a budget stop it ends without raising, and
    ``result`` is the result `run` gives, its ``native`` the
    ``FinalAnswerStep`` (None at a stop). The keywords and refusals are
    `run`'s, ``stream=`` the bridge's own; the run begins at the first item.
    Closing the stream before its end closes smolagents' and ends the run
    ``cancelled``.
    """
    refuse_stream_keyword(framework_kwargs)
    opened = _opener(agent, task, budget, unenforced, on_event, name, framework_kwargs)
    streamed = _Streamed(agent, opened)
    return BridgeStream(streamed.items(task, framework_kwargs), streamed.finish)


class _Streamed:
    """One streamed run: smolagents' stream within the run, and the run's end after it."""

    __slots__ = ("agent", "ending", "last", "opened", "session")

    def __init__(self, agent: Any, opened: Callable[[], Session]) -> None:
        self.agent = agent
        self.opened = opened
        self.session: Session | None = None  # from the first item on
        self.last: Any = None  # smolagents' last item: its FinalAnswerStep, at its end
        # how the run ended where `BridgeStream` hears of no exception: the Meter's stop, Ctrl-C
        self.ending: BaseException | None = None

    def items(self, task: str, kwargs: dict[str, Any]) -> Iterator[Any]:
        agent = self.agent
        with _alone(agent):
            session = self.session = self.opened()
            try:  # the agent is its own again before any result is made
                with session.borrowed():
                    steps = agent.run(task, stream=True, **kwargs)
                    try:
                        for item in steps:
                            self.last = item
                            yield item
                    finally:
                        _close(steps)
            except (Ended, KeyboardInterrupt) as exc:
                self.ending = exc
            except BaseException as exc:
                if isinstance(exc, Exception | GeneratorExit):
                    raise  # the stream hands it to `finish`, or the stream was closed
                session.end(exc)  # the process is leaving: the run ends, recorded

    def finish(self, exc: BaseException | None) -> BridgeResult:
        session = self.session
        if session is None:  # the run never began: its stream was closed first, or refused
            if not isinstance(exc, Closed):
                raise cast(BaseException, exc)
            session = self.session = self.opened()
        if exc is None:
            exc = self.ending
        return session.finished(self.last) if exc is None else session.end(exc)


def _close(steps: Any) -> None:
    """Close smolagents' stream. It yields its step from a ``finally`` block, so closed
    within a step it yields once more (a RuntimeError) and waits there: closed again, it ends."""
    try:
        steps.close()
    except RuntimeError:
        steps.close()


def _opener(
    agent: Any,
    task: str,
    budget: object,
    unenforced: Unenforced,
    on_event: Sink | None,
    name: str | None,
    kwargs: dict[str, Any],
) -> Callable[[], Session]:
    """What opens the run's `Session`, once the caller's keywords and the budget pass."""
    refuse_conflicting(_FRAMEWORK, kwargs)
    if not isinstance(agent, MultiStepAgent):
        raise UsageTypeError(f"agent: expected a smolagents agent, got {type(agent).__name__}")
    _bind(agent, task, kwargs)
    model = agent_model(agent.model)
    checked = bridge_budget(
        _FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
    )
    _step_limit(checked)
    gated = isinstance(agent, ToolCallingAgent)
    _refuse_unseen(agent, checked, gated, unenforced)
    return partial(Session, _FRAMEWORK, agent, checked, gated, on_event, name, model)


def _step_limit(budget: Budget) -> Any:
    """The budget's ``max_steps``, which every run needs."""
    limit = budget.limits.get("max_steps")
    if limit is None:
        path = budget.spec.budgets["max_steps"]
        raise UsageError(f"{path} is unset: smolagents would run its own max_steps of 20")
    return limit


def _bind(agent: Any, task: str, kwargs: dict[str, Any]) -> None:
    """Raise the caller's mistake as it is: a keyword ``agent.run`` does not take."""
    kind = type(agent)
    signature = _SIGNATURES.get(kind)
    if signature is None:
        from inspect import signature as signature_of

        signature = _SIGNATURES[kind] = signature_of(kind.run)
    try:
        signature.bind(agent, task, **kwargs)
    except TypeError as exc:
        raise UsageTypeError(f"agent.run: {exc}") from None


def _alone(agent: Any) -> AbstractContextManager[None]:
    """Within: ``agent`` is in this bridged run, and in no other (a `UsageError` if it is)."""
    from budgetconf.integrations._metered import claimed

    return claimed(
        agent,
        agent.name or type(agent).__name__,
        "smolagents keeps a run's memory and steps on its agent, so two runs of one agent cannot"
        " overlap; run another agent, or wait for that run to end",
    )


def _refuse_unseen(agent: Any, budget: Budget, gated: bool, unenforced: Unenforced) -> None:
    """Refuse (or warn about) budgets this agent would spend where the bridge cannot see."""
    found = []
    policed = False
    if not gated:  # each budget that needs every call seen, a tool's own limit among them
        fields = ("max_tool_calls", "max_tool_calls_per_turn", "max_repeats")
        for cap in [*(budget.limits.get(f) for f in fields), *budget.tools.values()]:
            if cap is None or cap.source == "default":
                continue
            policed = policed or cap.source == "policy"
            source = "the policy " if cap.source == "policy" else ""
            found.append(
                f"{cap.field} = {cap.shown()} from {source}{cap.locator} cannot be enforced by"
                f" smolagents for a {type(agent).__name__}: it calls its tools inside the code"
                " it writes"
            )
    if agent.managed_agents:
        names = ", ".join(sorted(agent.managed_agents))
        found.append(
            f"the managed agents ({names}) make model and tool calls outside the budget:"
            " run each through the bridge, or pass them as plain tools"
        )
    if not found:
        return
    what = "; ".join(found)
    if policed:  # an administrator's ceiling is never a warning
        raise UsageError(f"{what}; a budget the policy sets is never run without")
    if unenforced == "error":
        raise UsageError(f"{what}; or pass unenforced='warn' to run without it")
    warnings.warn(f"{what}; running without it", BudgetConfWarning, stacklevel=4)
