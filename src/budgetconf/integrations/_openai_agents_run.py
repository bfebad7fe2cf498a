"""One bridged openai-agents run: the hooks and input filter that feed its `Bridged` Meter.

`budgetconf.integrations.openai_agents.run` (and `arun`) makes a `Watch` per
run and passes it to the framework as the run's hooks, with its input filter
in the run's config:

- the input filter runs before each model call: the caller's filter first,
  then `Bridged.call` (a stop ends the run there, as `_Ended`), then the
  last-turn notice, added to the input of the call that carries it;
- ``on_llm_end`` hands each response's usage, text and function calls to
  `Bridged.answered` (a handoff is no tool call); the caller's own hooks hear
  every hook after the bridge;
- the run starts from a copy of the agent, and of each agent a handoff
  leads to, whose function tools run through `Bridged.atool`; an agent with a
  tool the bridge cannot answer a call of in its place is refused.

The deadline cancels the framework's run (`Watch.expire`, for ``run_sync``'s
loop); how the run ended becomes its `BridgeResult` (`Watch.finished`,
`Watch.ended`). `agent_model` names the model the run's first call uses, whose price a
cost budget holds at.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

from agents import (
    AgentsException,
    FunctionTool,
    Handoff,
    ItemHelpers,
    RunHooks,
    Runner,
    RunResultStreaming,
    StreamEvent,
    UserError,
)
from agents.models.multi_provider import MultiProvider
from agents.run import AgentRunner
from agents.run_config import CallModelData, ModelInputData
from agents.tool import ToolOriginType, get_function_tool_origin

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import AgentModel
from budgetconf.integrations._frameworks import FRAMEWORKS

if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from agents import RunConfig

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import BridgeResult
    from budgetconf.integrations._metered import Bridged
    from budgetconf.loop import Budget, RunResult

_FRAMEWORK: Final = FRAMEWORKS["openai_agents"]


class _Ended(AgentsException):
    """The Meter's end of the run, decided before a model call: raised inside the run, which
    the framework then leaves."""

    def __init__(self, end: RunResult) -> None:
        super().__init__(end.message)
        self.end = end


class Watch(RunHooks[Any]):
    """The run's hooks and input filter, feeding its `Bridged` Meter; and its agents' copies."""

    def __init__(
        self,
        budget: Budget,
        inner: RunHooks[Any] | None,
        on_event: Sink | None,
        name: str | None,
        config: RunConfig,
        model: AgentModel,
    ) -> None:
        from budgetconf.integrations._metered import Bridged

        super().__init__()
        self.budget = budget
        self.inner = inner
        self.tools: set[str] = set()
        self.copies: dict[int, Any] = {}  # the caller's agent's id -> its copy for this run
        self.bridged: Bridged = Bridged(
            _FRAMEWORK, budget, tools=self.tools, on_event=on_event, name=name, model=model
        )
        # the model every agent of the run uses, when the run's config names one
        self.model = _named(config.model)
        self.deadline = self._deadline()
        self.timed_out = False

    def _deadline(self) -> float | None:
        """The run's deadline on the default event loop's clock, for `run`'s timer."""
        left = self.seconds_left()
        return None if left is None else default_loop().time() + left

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
            usage = _usage(response.usage, self.model or _named(agent.model))
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
        """The result of a run the framework ended normally (a stream the deadline cancelled
        ends so too)."""
        if self.timed_out:
            return self.bridged.stopped(StopReason.TIMEOUT, native)
        output = native.final_output
        text = output if isinstance(output, str) else ("" if output is None else str(output))
        return self.bridged.result(native, text)

    def ended(self, exc: BaseException) -> BridgeResult:
        """The result of a run that raised: the Meter's stop, the deadline, or a failure; a
        `UserError` (the framework saying it was called wrong) is the caller's, raised."""
        if isinstance(exc, UserError):
            raise exc
        if isinstance(exc, _Ended):
            return self.bridged.failed(exc)  # the Meter's end, decided already
        if self.timed_out:
            return self.bridged.stopped(StopReason.TIMEOUT, exc)
        return self.bridged.failed(exc)


class Streamed:
    """One bridged run of ``Runner.run_streamed``: its events, and its end as a result.

    The framework's run starts at the first item asked for, on the loop that iterates it
    (`aitems`), or in a task of its own on the thread's default loop, which `items` runs
    while the caller waits for an item (as ``Runner.run_sync`` runs its run there). The
    deadline cancels the framework's run (``RunResultStreaming.cancel``), whose events
    then end; so does a stream closed before its end.
    """

    def __init__(self, watch: Watch, start: Any, input: Any, kwargs: dict[str, Any]) -> None:
        self.watch = watch
        self.start = start
        self.input = input
        self.kwargs = kwargs
        self.native: RunResultStreaming | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.arrived: asyncio.Future[None] | None = None  # what `items` waits for

    def _started(self) -> RunResultStreaming:
        """The framework's streamed run, started on the running loop, with its deadline."""
        native = Runner.run_streamed(self.start, self.input, **self.kwargs)
        self.native = native
        seconds = self.watch.seconds_left()
        if seconds is not None:
            self.timer = asyncio.get_running_loop().call_later(seconds, self._expire)
        return native

    def _expire(self) -> None:
        self.watch.timed_out = True
        self.cancel()

    def cancel(self) -> None:
        """End the framework's run now; its events end with it. Only a started run has a
        deadline, or a stream to close in its middle."""
        native = self.native
        assert native is not None
        native.cancel()

    async def aitems(self) -> AsyncIterator[StreamEvent]:
        """The framework's events, as ``stream_events()`` yields them on the running loop."""
        # an async generator, which the framework types as an iterator
        events = cast("AsyncGenerator[StreamEvent, None]", self._started().stream_events())
        try:
            async for event in events:
                yield event
        except GeneratorExit:  # closed before its end
            self.cancel()
            await events.aclose()
            raise
        finally:
            if self.timer is not None:
                self.timer.cancel()

    def items(self, loop: asyncio.AbstractEventLoop) -> Iterator[StreamEvent]:
        """`aitems`, for ``for``: a task on ``loop`` takes each event as the framework queues
        it, and the loop runs only while no event is waiting (one entry for a response's
        events, not one an event)."""
        waiting: deque[StreamEvent] = deque()
        task = loop.create_task(self._pump(waiting))
        try:
            while True:
                while waiting:
                    yield waiting.popleft()
                if task.done():
                    task.result()  # the run's exception, if it raised
                    return
                self.arrived = loop.create_future()
                loop.run_until_complete(self.arrived)
        except GeneratorExit:  # closed before its end
            self.cancel()
            with contextlib.suppress(Exception):  # the end is the caller's: cancelled
                loop.run_until_complete(task)  # its events end with the run
            raise

    async def _pump(self, waiting: deque[StreamEvent]) -> None:
        try:
            async for event in self.aitems():
                waiting.append(event)
                self._arrive()
        finally:
            self._arrive()

    def _arrive(self) -> None:
        arrived = self.arrived
        if arrived is not None and not arrived.done():
            arrived.set_result(None)

    def finish(self, exc: BaseException | None) -> BridgeResult:
        """`BridgeStream`'s end: the result of the run, ended (None) or raised (``exc``)."""
        if exc is None:
            return self.watch.finished(self.native)
        return self.watch.ended(exc)


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


def _named(model: object) -> str | None:
    """The name of a model as an agent or a run config gives it: a name, or a `Model`'s."""
    name = model if isinstance(model, str) else getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def agent_model(agent: Any, config: RunConfig) -> AgentModel:
    """The model the run's first call uses, as openai-agents chooses it: the run config's, else
    the agent's, else the framework's default; a `Model` by its ``model`` and its client's
    base URL, a name as the run's model provider makes it (the OpenAI client's, for the
    default provider and a name without a prefix, or an ``openai/`` one)."""
    from agents.models import get_default_model

    chosen = config.model if config.model is not None else agent.model
    if chosen is None:
        chosen = get_default_model()
    if not isinstance(chosen, str):  # a Model: an OpenAI one has a client
        client = getattr(chosen, "_client", None)
        url = getattr(client, "base_url", None)
        return AgentModel(_named(chosen), "openai" if url is not None else None, url)
    if not isinstance(config.model_provider, MultiProvider):
        return AgentModel(chosen)  # a provider of the caller's: genai-prices' own match
    prefix, _, rest = chosen.partition("/") if "/" in chosen else ("", "", chosen)
    if prefix not in ("", "openai"):
        return AgentModel(rest, prefix)  # litellm/anthropic/...: genai-prices reads the rest
    from agents.models._openai_shared import get_default_openai_client

    client = get_default_openai_client()
    url = os.environ.get("OPENAI_BASE_URL") if client is None else client.base_url
    return AgentModel(rest, "openai", url)


def _usage(usage: Any, model: str | None) -> Any:
    """A response's openai-agents ``Usage`` as budgetconf's, with its model's name."""
    from budgetconf.loop import Usage

    if usage is None:
        return Usage(model=model)
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    return Usage(
        reported_tokens(usage.input_tokens, "usage.input_tokens"),
        reported_tokens(cached, "usage.input_tokens_details.cached_tokens"),
        reported_tokens(usage.output_tokens, "usage.output_tokens"),
        reported_tokens(usage.total_tokens, "usage.total_tokens"),
        model=model,
    )


def default_loop() -> asyncio.AbstractEventLoop:
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
