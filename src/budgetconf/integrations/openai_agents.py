"""Run an openai-agents agent within a budgetconf budget, and report its stop the budgetconf way.

``Runner.run(agent, text, **limits(res))`` carries the step budget into the
framework's own keyword; ``run(agent, text, res)`` (``Runner.run_sync``) and
``await arun(agent, text, res)`` (``Runner.run``) enforce the whole budget
through the executor's `Meter`, and return a `BridgeResult` whose ``message``,
``limit``, ``usage`` and ``events`` are the executor's. ``stream(agent, text,
res)`` (iterated with ``for``) and ``astream`` (also named ``run_streamed``,
iterated with ``async for``) run ``Runner.run_streamed`` within the same
budget: a `BridgeStream` of the framework's own ``StreamEvent``s, which ends
without raising at a stop, its ``result`` then `run`'s. A streamed run asks
the model for its usage (``ModelSettings(include_usage=True)`` over the run's
settings), so that a token or cost budget counts each streamed response.

=========================== ================================================
budget                      enforced by
=========================== ================================================
``max_steps``               the bridge: ``RunConfig.call_model_input_filter``
                            refuses a model call past it, and the calls of
                            the last permitted response are answered as not
                            executed, as in the executor (``max_turns`` is
                            set one higher, never reached)
``max_tool_calls_per_turn`` the bridge: each function tool runs through a
                            wrapper, so calls past the cap are rejected (or
                            skipped) with the executor's answer
``max_tool_calls``          the bridge: the wrapper, against every call run
``max_tokens``              the bridge, from the usage each response reports
                            (``RunHooks.on_llm_end``)
``timeout_seconds``         the bridge: a deadline that cancels the run, and
                            the Meter's checks before each call and batch
``max_cost_usd``            the bridge: each response's usage priced at the
                            price of the agent's model (the run config's,
                            else the agent's: a name, or a ``Model``'s
                            ``model`` and its client's base URL); refused
                            without a price (a model with no name: but the
                            price fields), and by `limits()`
``ledger.url``              the bridge: reserved before each model call (the
                            input filter), settled with the response's tokens
                            and their cost at that price
                            (``ledger.max_cost_usd`` is drawn on at it)
=========================== ================================================

The bridge runs a copy of the agent, and of every agent reachable by handoff,
whose function tools are wrapped; the caller's agents are left as they were,
so runs of one agent may overlap. A hosted tool (run by the provider), an MCP
server's tools and an ``Agent.as_tool`` tool (a nested run the budget cannot
count) are refused by name. The last-turn notice (the preset's
``last_turn``) goes with the last permitted call, through the input filter,
when the agent has tools or handoffs.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from typing import Any, Final  # the framework imports typing: nothing saved by waiting

from budgetconf.integrations._install import missing

try:
    from agents import Agent, ModelSettings, RunConfig, Runner, RunState, StreamEvent
except ImportError:
    raise missing("openai_agents", "openai-agents", "openai-agents") from None

from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    refuse_conflicting,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._openai_agents_run import Streamed, Watch, agent_model, default_loop
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced

__all__ = ["arun", "astream", "limits", "run", "run_streamed", "stream"]

_FRAMEWORK: Final = FRAMEWORKS["openai_agents"]


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"max_turns": N}`` for ``Runner.run(agent, text, **limits(res))``.

    A budget set that ``max_turns`` cannot carry (tokens, tool calls, a
    deadline: only `run()` enforces those) is a `UsageError`.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    return _FRAMEWORK.keywords(checked, {})


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
    """``Runner.run_sync`` within ``budget``; a budget stop is a result, never an exception.

    ``framework_kwargs`` go to ``Runner.run_sync`` (``context``, ``hooks``,
    ``run_config``, ...); ``max_turns`` is refused: the budget sets it. A model
    or tool failure is a ``failed`` result whose ``native`` is the exception;
    an error of the caller's (a framework ``UserError``) is raised.
    """
    refuse_streaming(framework_kwargs)
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs
    )
    loop = default_loop()
    deadline = watch.deadline
    timer = None if deadline is None else loop.call_at(deadline, watch.expire, loop)
    try:
        native = Runner.run_sync(start, input, **kwargs)
    except (Exception, asyncio.CancelledError) as exc:
        return watch.ended(exc)
    finally:
        if timer is not None:
            timer.cancel()
    return watch.finished(native)


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
    """`run`, awaiting ``Runner.run``; the deadline cancels the run, not the caller's task."""
    refuse_streaming(framework_kwargs)
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs
    )
    seconds = watch.seconds_left()
    try:
        async with asyncio.timeout(seconds) as scope:
            native = await Runner.run(start, input, **kwargs)
    except Exception as exc:
        watch.timed_out = isinstance(exc, TimeoutError) and scope.expired()
        return watch.ended(exc)
    return watch.finished(native)


def stream(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[StreamEvent]:
    """``Runner.run_streamed`` within ``budget``, iterated with ``for``: the run's
    ``StreamEvent``s, driven on the thread's default loop (``Runner.run_sync``'s).

    The stream ends without raising at a budget stop; its ``result`` is then what `run`
    returns for the same run. Its keywords, refusals and deadline are `run`'s. Closing it
    before its end (``close()``, leaving its ``with`` block) cancels the run.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # none running: the default loop can run the stream
    else:
        raise UsageError(
            "stream() runs the agent on this thread's event loop, and a loop is running here:"
            " in async code, iterate astream() (run_streamed()) with async for"
        )
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs, streamed=True
    )
    streamed = Streamed(watch, start, input, kwargs)
    return BridgeStream(streamed.items(default_loop()), streamed.finish)


def astream(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[StreamEvent]:
    """`stream`, iterated with ``async for`` on the running loop, as ``Runner.run_streamed``
    is (``result.stream_events()``); a sync call, like it. Also named `run_streamed`."""
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs, streamed=True
    )
    streamed = Streamed(watch, start, input, kwargs)
    return BridgeStream(streamed.aitems(), streamed.finish)


run_streamed = astream


def _prepare(
    agent: Any,
    input: object,
    budget: object,
    unenforced: Unenforced,
    on_event: Sink | None,
    name: str | None,
    kwargs: dict[str, Any],
    *,
    streamed: bool = False,
) -> tuple[Watch, Any, dict[str, Any]]:
    """The run's watch, its copy of the agent, and the keywords that carry both; a
    ``streamed`` run's settings ask each response for its usage (``include_usage``: a
    streamed chat completion reports it only when asked)."""
    refuse_conflicting(_FRAMEWORK, kwargs)
    if isinstance(input, RunState):
        # a resumed run keeps the max_turns of the run that made it, whatever is passed
        raise UsageError(
            f"a RunState keeps its own max_turns ({input._max_turns}), which would override"
            " the budget: start a new run, and set the budget through budgetconf instead"
            " (explicit=, --set or its variable)"
        )
    handlers = kwargs.get("error_handlers") or {}
    if "max_turns" in handlers:
        raise UsageError(
            'error_handlers["max_turns"] would never run: the budget stops the run before'
            " max_turns, and reports it as a result"
        )
    if not isinstance(agent, Agent):
        raise UsageError(f"agent: expected an openai-agents Agent, got {type(agent).__name__}")
    config = kwargs.get("run_config")
    if config is None:
        config = RunConfig()
    elif isinstance(config, dict):  # the framework takes one, as RunConfig's fields
        config = RunConfig(**config)
    model = agent_model(agent, config)
    checked = bridge_budget(
        _FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
    )
    watch = Watch(checked, kwargs.get("hooks"), on_event, name, config, model)
    start = watch.copy(agent)
    given = config.call_model_input_filter
    steps = checked.value("max_steps")
    # a copy, not dataclasses.replace: RunConfig's __post_init__ reads its own type hints
    # to coerce the model settings again (about 0.4 ms a run)
    copied = copy.copy(config)
    copied.call_model_input_filter = watch.filter(given)
    if streamed:  # settings are coerced at the config's making: a ModelSettings, or None
        copied.model_settings = dataclasses.replace(
            config.model_settings or ModelSettings(), include_usage=True
        )
    return (
        watch,
        start,
        {
            **kwargs,
            "max_turns": None if steps is None else int(steps) + 1,  # the Meter stops it first
            "hooks": watch,
            "run_config": copied,
        },
    )
