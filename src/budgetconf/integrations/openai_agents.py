"""Run an openai-agents agent within a budgetconf budget, and report its stop the budgetconf way.

``Runner.run(agent, text, **limits(res))`` carries the step budget into the
framework's own keyword; ``run(agent, text, res)`` (``Runner.run_sync``) and
``await arun(agent, text, res)`` (``Runner.run``) enforce the whole budget
through the executor's `Meter`, and return a `BridgeResult` whose ``message``,
``limit``, ``usage`` and ``events`` are the executor's.

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
``max_cost_usd``            cannot be: the framework reports no cost
``ledger.url``              the bridge: reserved before each model call (the
                            input filter), settled with the response's tokens
                            (``ledger.max_cost_usd`` is refused: no cost)
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
import dataclasses
import inspect
import time
from collections.abc import Callable
from typing import Any, Final  # the framework imports typing: nothing saved by waiting

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import BridgeResult, bridge_budget, refuse_conflicting
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._metered import Bridged
    from budgetconf.loop import Budget, RunResult

try:
    from agents import (
        Agent,
        AgentsException,
        FunctionTool,
        Handoff,
        ItemHelpers,
        RunConfig,
        RunHooks,
        Runner,
        RunState,
        UserError,
    )
    from agents.run import AgentRunner
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool import ToolOriginType, get_function_tool_origin
except ImportError:
    raise missing("openai_agents", "openai-agents", "openai-agents") from None

__all__ = ["arun", "limits", "run"]

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
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs
    )
    loop = _default_loop()
    deadline = watch.deadline
    timer = None if deadline is None else loop.call_at(deadline, watch.expire, loop)
    try:
        native = Runner.run_sync(start, input, **kwargs)
    except UserError:  # the caller's own mistake, as the framework says it
        raise
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
    watch, start, kwargs = _prepare(
        agent, input, budget, unenforced, on_event, name, framework_kwargs
    )
    seconds = watch.seconds_left()
    try:
        async with asyncio.timeout(seconds) as scope:
            native = await Runner.run(start, input, **kwargs)
    except UserError:  # the caller's own mistake, as the framework says it
        raise
    except Exception as exc:
        watch.timed_out = isinstance(exc, TimeoutError) and scope.expired()
        return watch.ended(exc)
    return watch.finished(native)


def _prepare(
    agent: Any,
    input: object,
    budget: object,
    unenforced: Unenforced,
    on_event: Sink | None,
    name: str | None,
    kwargs: dict[str, Any],
) -> tuple[_Watch, Any, dict[str, Any]]:
    """The run's watch, its copy of the agent, and the keywords that carry both."""
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
    checked = bridge_budget(_FRAMEWORK, budget, {}, through="run", unenforced=unenforced)
    watch = _Watch(checked, kwargs.get("hooks"), on_event, name)
    start = watch.copy(agent)
    config = kwargs.get("run_config")
    if config is None:
        config = RunConfig()
    elif isinstance(config, dict):  # the framework takes one, as RunConfig's fields
        config = RunConfig(**config)
    given = config.call_model_input_filter
    steps = checked.value("max_steps")
    return (
        watch,
        start,
        {
            **kwargs,
            "max_turns": None if steps is None else int(steps) + 1,  # the Meter stops it first
            "hooks": watch,
            "run_config": dataclasses.replace(config, call_model_input_filter=watch.filter(given)),
        },
    )


class _Ended(AgentsException):
    """The Meter's end of the run, decided before a model call: raised inside the run, which
    the framework then leaves."""

    def __init__(self, end: RunResult) -> None:
        super().__init__(end.message)
        self.end = end


class _Watch(RunHooks[Any]):
    """The run's hooks and input filter, feeding its `Bridged` Meter; and its agents' copies."""

    def __init__(
        self, budget: Budget, inner: RunHooks[Any] | None, on_event: Sink | None, name: str | None
    ) -> None:
        from budgetconf.integrations._metered import Bridged

        super().__init__()
        self.budget = budget
        self.inner = inner
        self.tools: set[str] = set()
        self.copies: dict[int, Any] = {}  # the caller's agent's id -> its copy for this run
        self.bridged: Bridged = Bridged(
            _FRAMEWORK, budget, tools=self.tools, on_event=on_event, name=name
        )
        self.deadline = self._deadline()
        self.timed_out = False

    def _deadline(self) -> float | None:
        """The run's deadline on the default event loop's clock, for `run`'s timer."""
        left = self.seconds_left()
        return None if left is None else _default_loop().time() + left

    def seconds_left(self) -> float | None:
        """What is left of the Meter's deadline, in seconds; None without one."""
        deadline = self.bridged.meter.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    # -- the agents' copies, their tools wrapped ----------------------------------------------

    def copy(self, agent: Any) -> Any:
        """The run's copy of ``agent``: its function tools wrapped, its handoffs copied too."""
        found = self.copies.get(id(agent))
        if found is not None:
            return found
        refused = _unwrappable(agent)
        if refused:
            raise UsageError(
                f"the agent {agent.name!r} has {refused}: the bridge cannot answer a call in"
                " its place, as the budget may need; give it function tools only"
            )
        copy = agent.clone()
        self.copies[id(agent)] = copy  # before its handoffs: one may lead back to it
        copy.tools = [self._wrapped(tool) for tool in agent.tools]
        copy.handoffs = [self._handoff(h) for h in agent.handoffs]
        return copy

    def _wrapped(self, tool: FunctionTool) -> FunctionTool:
        self.tools.add(tool.name)
        invoke = tool.on_invoke_tool
        bridged = self.bridged

        async def on_invoke_tool(context: Any, arguments: str) -> Any:
            call_id = getattr(context, "tool_call_id", None)
            return await bridged.atool(call_id, tool.name, lambda: invoke(context, arguments))

        return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)

    def _handoff(self, handoff: Any) -> Any:
        if not isinstance(handoff, Handoff):
            return self.copy(handoff)
        given = handoff.on_invoke_handoff

        async def on_invoke_handoff(context: Any, arguments: str) -> Any:
            return self.copy(await given(context, arguments))

        return dataclasses.replace(handoff, on_invoke_handoff=on_invoke_handoff)

    # -- the input filter: before each model call ---------------------------------------------

    def filter(self, given: Callable[[CallModelData[Any]], Any] | None) -> Callable[..., Any]:
        """The run's ``call_model_input_filter``: the caller's, then the Meter, then the notice."""

        async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            if given is not None:
                model_data = given(data)
                if inspect.isawaitable(model_data):
                    model_data = await model_data
            end = self.bridged.call()  # after the caller's filter: its time is the run's
            if end is not None:
                raise _Ended(end)
            agent = data.agent
            has_tools = bool(agent.tools or agent.handoffs)
            notice = self.bridged.notice(has_tools)
            if notice is None:
                return model_data
            notice_item: Any = {"role": "user", "content": notice}
            return ModelInputData([*model_data.input, notice_item], model_data.instructions)

        return call_model_input_filter

    # -- hooks --------------------------------------------------------------------------------

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, items: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        from budgetconf.loop import Call

        handoffs = _handoff_names(agent)
        calls = [
            Call(item.call_id, item.name, {}, item.arguments)
            for item in response.output
            if getattr(item, "type", None) == "function_call" and item.name not in handoffs
        ]
        text = ""
        for item in response.output:
            text = ItemHelpers.extract_last_text(item) or text
        try:
            usage = _usage(response.usage, agent)
        except Unreadable as exc:  # the run ends here, as the executor's does
            raise _Ended(self.bridged.unreadable(exc)) from None
        self.bridged.answered(usage, text or None, calls)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    # -- the end ------------------------------------------------------------------------------

    def expire(self, loop: asyncio.AbstractEventLoop) -> None:
        """The deadline: cancel the run ``Runner.run_sync`` drives on ``loop``."""
        self.timed_out = True
        for task in asyncio.all_tasks(loop):
            frame = getattr(task.get_coro(), "cr_frame", None)
            if frame is not None and isinstance(frame.f_locals.get("self"), AgentRunner):
                task.cancel()

    def finished(self, native: Any) -> BridgeResult:
        """The result of a run the framework ended normally."""
        output = native.final_output
        text = output if isinstance(output, str) else ("" if output is None else str(output))
        return self.bridged.result(native, text)

    def ended(self, exc: BaseException) -> BridgeResult:
        """The result of a run that raised: the Meter's stop, the deadline, or a failure."""
        if isinstance(exc, _Ended):
            return self.bridged.failed(exc)  # the Meter's end, decided already
        if self.timed_out:
            return self.bridged.stopped(StopReason.TIMEOUT, exc)
        return self.bridged.failed(exc)


def _unwrappable(agent: Any) -> str:
    """What of ``agent``'s tools the bridge cannot answer a call of, as a phrase; or ""."""
    hosted = [type(t).__name__ for t in agent.tools if not isinstance(t, FunctionTool)]
    if hosted:
        return f"tools the framework or the provider runs itself ({', '.join(hosted)})"
    nested = [
        t.name
        for t in agent.tools
        if (origin := get_function_tool_origin(t)) is not None
        and origin.type is ToolOriginType.AGENT_AS_TOOL
    ]
    if nested:
        return (
            f"agents as tools ({', '.join(nested)}), whose own model calls this run cannot"
            " count (run such an agent inside a tool, through the bridge, on"
            " current_run().carve())"
        )
    if getattr(agent, "mcp_servers", None):
        return "MCP servers, whose tools the framework lists and runs itself"
    return ""


def _handoff_names(agent: Any) -> set[str]:
    return {
        h.tool_name if isinstance(h, Handoff) else Handoff.default_tool_name(h)
        for h in agent.handoffs
    }


def _usage(usage: Any, agent: Any) -> Any:
    """A response's openai-agents ``Usage`` as budgetconf's, with the agent's model name."""
    from budgetconf.loop import Usage

    model = agent.model if isinstance(agent.model, str) else getattr(agent.model, "model", None)
    if usage is None:
        return Usage(model=model if isinstance(model, str) else None)
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    return Usage(
        reported_tokens(usage.input_tokens, "usage.input_tokens"),
        reported_tokens(cached, "usage.input_tokens_details.cached_tokens"),
        reported_tokens(usage.output_tokens, "usage.output_tokens"),
        reported_tokens(usage.total_tokens, "usage.total_tokens"),
        model=model if isinstance(model, str) else None,
    )


def _default_loop() -> asyncio.AbstractEventLoop:
    """The thread's default loop, as ``Runner.run_sync`` finds or makes it (and then reuses)."""
    import warnings

    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # run_sync asks the same way
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            loop = None
    if loop is None or loop.is_closed():
        loop = policy.new_event_loop()
        policy.set_event_loop(loop)
    return loop
