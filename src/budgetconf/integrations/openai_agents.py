"""Run an openai-agents agent within a budgetconf budget, and report its stop the budgetconf way.

``Runner.run(agent, text, **limits(res))`` carries the step budget into the
framework's own keyword; ``run(agent, text, res)`` (``Runner.run_sync``) and
``await arun(agent, text, res)`` (``Runner.run``) enforce the whole budget and
return a `BridgeResult` whose ``message`` and ``limit`` are the executor's.

=========================== ================================================
budget                      enforced by
=========================== ================================================
``max_steps``               the framework: ``max_turns`` (its N responses'
                            tools run; turn N+1 raises ``MaxTurnsExceeded``)
``max_tool_calls_per_turn`` the bridge, ``RunHooks.on_llm_end``: a response
                            with more tool calls stops the run before any of
                            them runs (a hook cannot answer a call unrun)
``max_tool_calls``          the bridge, ``RunHooks.on_llm_end``: a response
                            whose calls would pass the cap stops the run
                            before any of them runs; ``on_tool_start`` counts
``max_tokens``              the bridge, from the usage each response reports:
                            a response past the cap stops the run before its
                            tools run; a spent budget stops the next call
``timeout_seconds``         the bridge: a deadline that cancels the run, and
                            checks before each model call and tool batch
``max_cost_usd``            cannot be: the framework reports no cost
``ledger.url``              the bridge: ``RunHooks.on_llm_start`` reserves
                            before each model call (a refusal stops the run
                            before it), ``on_llm_end`` settles with the usage
                            the response reports (its tokens; a
                            ``ledger.max_cost_usd`` is refused: no cost)
=========================== ================================================

The last-turn notice (the preset's ``last_turn``) goes to the model with the
last permitted call, through ``RunConfig.call_model_input_filter``, when the
agent has tools or handoffs. The framework still runs the tools that call asks
for, so ``warn`` sends a notice that promises nothing about them (the preset's
own ``warn_message`` when it has one); ``wrap_up`` sends the preset's text, and
a final answer to it ends the run ``truncated`` (``max_steps``), as in the
executor.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final  # the framework imports typing: nothing saved by waiting

from budgetconf._loop_table import WARN_MESSAGE, BudgetName, LastTurn, StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import UsageError
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
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._draw import LedgerStop, Tally
    from budgetconf.loop._budget import Budget

try:
    from agents import (
        AgentsException,
        Handoff,
        ItemHelpers,
        MaxTurnsExceeded,
        MessageOutputItem,
        RunConfig,
        RunHooks,
        Runner,
        RunResult,
        RunState,
    )
    from agents.run import AgentRunner
    from agents.run_config import CallModelData, ModelInputData
except ImportError:
    raise missing("openai_agents", "openai-agents", "openai-agents") from None

__all__ = ["arun", "limits", "run"]

_FRAMEWORK: Final = FRAMEWORKS["openai_agents"]

#: the notice ``last_turn = "warn"`` sends here: the framework runs the tools this call asks for
LAST_TURN_NOTICE: Final = (
    "This is your last turn. Give your final answer now, without calling tools."
)

#: the output items of tool calls the framework runs itself (hosted tools run at the provider)
_LOCAL_CALLS: Final = frozenset(
    {
        "function_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "custom_tool_call",
    }
)


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
    **framework_kwargs: Any,
) -> BridgeResult:
    """``Runner.run_sync`` within ``budget``; a budget stop is a result, never an exception.

    ``framework_kwargs`` go to ``Runner.run_sync`` (``context``, ``hooks``,
    ``run_config``, ...); ``max_turns`` is refused: the budget sets it.
    """
    watch, kwargs = _prepare(input, budget, unenforced, framework_kwargs)
    timer = None if watch.timeout is None else _arm(watch)
    try:
        try:
            native = Runner.run_sync(agent, input, **kwargs)
        except (AgentsException, asyncio.CancelledError, Unreadable) as exc:
            return watch.end(watch.raised(exc))
        finally:
            if timer is not None:
                timer.cancel()
        return watch.end(watch.finished(native))
    finally:
        watch.close("error")  # an error re-raised: what the run holds goes back at once


async def arun(
    agent: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run`, awaiting ``Runner.run``; the deadline cancels the run, not the caller's task."""
    watch, kwargs = _prepare(input, budget, unenforced, framework_kwargs)
    watch.start()
    try:
        try:
            if watch.timeout is None:
                native = await Runner.run(agent, input, **kwargs)
            else:
                async with asyncio.timeout(watch.timeout) as scope:
                    native = await Runner.run(agent, input, **kwargs)
        except TimeoutError as exc:
            if watch.timeout is None or not scope.expired():
                raise
            watch.timed_out = True
            return watch.end(watch.raised(exc))
        except (AgentsException, Unreadable) as exc:
            return watch.end(watch.raised(exc))
        return watch.end(watch.finished(native))
    finally:
        watch.close("error")  # an error re-raised: what the run holds goes back at once


def _prepare(
    input: object, budget: object, unenforced: Unenforced, kwargs: dict[str, Any]
) -> tuple[_Watch, dict[str, Any]]:
    """The run's watch, and the keywords that carry it and the budget into the framework."""
    refuse_conflicting(_FRAMEWORK, kwargs)
    if isinstance(input, RunState):
        # a resumed run keeps the max_turns of the run that made it, whatever is passed
        raise UsageError(
            f"a RunState keeps its own max_turns ({input._max_turns}), which would override"
            " the budget: start a new run, and set the budget through budgetconf instead"
            " (explicit=, --set or its variable)"
        )
    checked = bridge_budget(_FRAMEWORK, budget, {}, through="run", unenforced=unenforced)
    watch = _Watch(checked, kwargs.get("hooks"))
    config = kwargs.get("run_config")
    config = RunConfig() if config is None else config
    handlers = dict(kwargs.get("error_handlers") or {})
    if "max_turns" in handlers:
        handlers["max_turns"] = watch.handler(handlers["max_turns"])
    given = config.call_model_input_filter
    return watch, {
        **kwargs,
        **_FRAMEWORK.keywords(checked, {}),
        "hooks": watch,
        "run_config": replace(config, call_model_input_filter=watch.filter(given)),
        **({"error_handlers": handlers} if handlers else {}),
    }


class _Stop(AgentsException):
    """The bridge's own stop, raised inside the run so that the framework attaches its run_data."""

    def __init__(self, reason: StopReason, budget: BudgetName) -> None:
        super().__init__(f"budget stop: {budget}")
        self.reason = reason
        self.budget = budget


class _Refused(AgentsException):
    """The shared ledger's stop before a model call, raised inside the run (for its run_data)."""

    def __init__(self, stop: LedgerStop) -> None:
        super().__init__(f"ledger stop: {stop.reason.value}")
        self.stop = stop


class _Watch(RunHooks[Any]):
    """The run's counters and checks, fed by the framework's hooks and its input filter."""

    def __init__(self, budget: Budget, inner: RunHooks[Any] | None) -> None:
        super().__init__()
        self.budget = budget
        self.inner = inner
        self.limits = {name: limit.value for name, limit in budget.limits.items()}
        timeout = budget.value(BudgetName.TIMEOUT_SECONDS)
        self.timeout = None if timeout is None else float(timeout)
        self.deadline: float | None = None
        self.timed_out = False
        self.calls = 0  # model calls let through the input filter
        self.turns = 0  # model responses seen
        self.executed = 0
        self.tokens = 0
        self.output = ""  # the last non-empty assistant text
        self.wrapped = 0  # the call the wrap-up notice went with
        self.handled = False  # whether the caller's max_turns error handler made the output
        self.tally: Tally | None = None  # the shared ledger's draw, when the budget names one
        if budget.ledger is not None:
            from budgetconf.integrations._draw import Tally  # only a run with a ledger loads it

            self.tally = Tally(budget)

    # -- checks -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the deadline's clock: the running loop's, as the framework's own timers use."""
        if self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    def _late(self) -> bool:
        return self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline

    def _spent(self) -> _Stop | None:
        """A budget that leaves no room for another model call, in the executor's order."""
        cap = self.limits.get(BudgetName.MAX_TOKENS)
        if cap is not None and self.tokens >= cap:
            return _Stop(StopReason.MAX_TOKENS, BudgetName.MAX_TOKENS)
        if self._late():
            return _Stop(StopReason.TIMEOUT, BudgetName.TIMEOUT_SECONDS)
        return None

    def _judge(self, calls: int) -> _Stop | None:
        """A budget this response's tool calls would break, before any of them runs."""
        if not calls:
            return None  # a final answer: the framework ends the run with it
        limits = self.limits
        cap = limits.get(BudgetName.MAX_TOKENS)
        if cap is not None and self.tokens > cap:
            return _Stop(StopReason.MAX_TOKENS, BudgetName.MAX_TOKENS)
        per_turn = limits.get(BudgetName.MAX_TOOL_CALLS_PER_TURN)
        if per_turn is not None and calls > per_turn:
            return _Stop(StopReason.MAX_TOOL_CALLS, BudgetName.MAX_TOOL_CALLS_PER_TURN)
        total = limits.get(BudgetName.MAX_TOOL_CALLS)
        if total is not None and self.executed + calls > total:
            return _Stop(StopReason.MAX_TOOL_CALLS, BudgetName.MAX_TOOL_CALLS)
        if self._late():
            return _Stop(StopReason.TIMEOUT, BudgetName.TIMEOUT_SECONDS)
        return None

    # -- the input filter: before each model call ---------------------------------------------

    def filter(self, given: Callable[[CallModelData[Any]], Any] | None) -> Callable[..., Any]:
        """The run's ``call_model_input_filter``: the caller's, then the checks and the notice."""

        async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            if given is not None:
                model_data = given(data)
                if inspect.isawaitable(model_data):
                    model_data = await model_data
            spent = self._spent()  # after the caller's filter: its time is the run's
            if spent is not None:
                raise spent
            self.calls += 1
            notice = self._notice(data.agent)
            if notice is None:
                return model_data
            notice_item: Any = {"role": "user", "content": notice}
            return ModelInputData([*model_data.input, notice_item], model_data.instructions)

        return call_model_input_filter

    def _notice(self, agent: Any) -> str | None:
        """The last-turn notice this call carries, if it is the last and the agent has tools."""
        steps = self.limits.get(BudgetName.MAX_STEPS)
        behaviour = self.budget.last_turn
        if steps is None or self.calls < steps or behaviour is LastTurn.NONE:
            return None
        if not (agent.tools or agent.handoffs or getattr(agent, "mcp_servers", None)):
            return None
        spec = self.budget.spec
        if behaviour is LastTurn.WRAP_UP:
            self.wrapped = self.calls
            return spec.wrap_up_message
        # the built-in warning says the tools will not run: here they do
        return LAST_TURN_NOTICE if spec.warn_message == WARN_MESSAGE else spec.warn_message

    # -- hooks --------------------------------------------------------------------------------

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, items: Any) -> None:
        # the last thing before the model call: the framework calls it when nothing can stop
        # the call but this hook raising
        if self.tally is not None:
            refused = self.tally.reserve()
            if refused is not None:
                raise _Refused(refused)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self.turns += 1
        usage = response.usage  # a count no response can report ends the run (Unreadable)
        used = 0 if usage is None else reported_tokens(usage.total_tokens, "usage.total_tokens")
        self.tokens += used
        if self.tally is not None:  # the response replaces what its call held in the ledger
            self.tally.settle(used, 0.0)
        for item in response.output:
            text = ItemHelpers.extract_last_text(item)
            if text:
                self.output = text
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)
        stop = self._judge(_tool_calls(agent, response.output))
        if stop is not None:
            raise stop

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
        self.executed += 1
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    # -- results ------------------------------------------------------------------------------

    def handler(self, given: Callable[..., Any]) -> Callable[..., Any]:
        """The caller's ``max_turns`` error handler, noting that it made the run's output."""

        def max_turns(data: Any) -> Any:
            self.handled = True
            return given(data)

        return max_turns

    def finished(self, native: RunResult) -> BridgeResult:
        """The result of a run the framework ended normally."""
        output = native.final_output
        text = output if isinstance(output, str) else ("" if output is None else str(output))
        if self.handled or (self.wrapped and self.wrapped == self.turns):
            # the step budget ended it: the caller's handler, or an answer to the wrap-up
            return self._stopped(StopReason.MAX_STEPS, BudgetName.MAX_STEPS, text, native)
        turns = self.turns
        message = f"completed in {turns} turn{'' if turns == 1 else 's'}"
        completed = StopReason.COMPLETED
        return ended(_FRAMEWORK, completed, message, output=text, turns=turns, native=native)

    def raised(self, exc: BaseException) -> BridgeResult:
        """The result of a run that a budget the bridge set stopped; any other error re-raised."""
        if isinstance(exc, _Stop):
            return self._stopped(exc.reason, exc.budget, self._text(exc), exc)
        if isinstance(exc, _Refused):
            return exc.stop.result(_FRAMEWORK, self.budget, self._text(exc), self.turns, exc)
        if isinstance(exc, Unreadable):
            return unreadable(_FRAMEWORK, exc, output=self.output, turns=self.turns, native=exc)
        if isinstance(exc, MaxTurnsExceeded) and self._mine(exc):
            spent = self._spent()  # tokens or time spent too: the executor names them first
            reason = (spent.reason, spent.budget) if spent is not None else None
            reason = reason or (StopReason.MAX_STEPS, BudgetName.MAX_STEPS)
            return self._stopped(*reason, self._text(exc), exc)
        if self.timed_out:
            return self._stopped(StopReason.TIMEOUT, BudgetName.TIMEOUT_SECONDS, self.output, exc)
        raise exc

    def end(self, result: BridgeResult) -> BridgeResult:
        """The run has ended with ``result``: the ledger's draw ends with it."""
        self.close(result.stop_reason)
        return result

    def close(self, stop_reason: str) -> None:
        """End the ledger's draw, once: what the run holds goes back, its record is written."""
        tally, self.tally = self.tally, None
        if tally is not None:
            tally.end(stop_reason)

    def _mine(self, exc: MaxTurnsExceeded) -> bool:
        """Whether the run's own max_turns, the one the bridge set, raised ``exc``."""
        steps = self.limits.get(BudgetName.MAX_STEPS)
        return steps is not None and exc.message == f"Max turns ({steps}) exceeded"

    def _text(self, exc: AgentsException) -> str:
        """The last assistant text of the run: its run_data's, else the last the hooks saw."""
        data = exc.run_data
        items = [] if data is None else data.new_items
        texts = [
            ItemHelpers.text_message_output(i) for i in items if isinstance(i, MessageOutputItem)
        ]
        kept = [text for text in texts if text]
        # the hooks saw a response the run's data has not kept (one a hook stopped the run at)
        return kept[-1] if kept and self.output in ("", kept[-1]) else self.output

    def _stopped(
        self, reason: StopReason, budget: BudgetName, output: str, native: object
    ) -> BridgeResult:
        return stopped(
            _FRAMEWORK,
            self.budget,
            reason,
            output=output,
            turns=self.turns,
            native=native,
            by=budget,
        )


def _tool_calls(agent: Any, output: list[Any]) -> int:
    """How many calls in a response the framework will run as tools: handoffs are not tools."""
    calls = [item for item in output if getattr(item, "type", None) in _LOCAL_CALLS]
    if not calls or not agent.handoffs:
        return len(calls)
    handoffs = {
        h.tool_name if isinstance(h, Handoff) else Handoff.default_tool_name(h)
        for h in agent.handoffs
    }
    return sum(1 for item in calls if getattr(item, "name", None) not in handoffs)


def _arm(watch: _Watch) -> asyncio.TimerHandle:
    """Cancel the run at its deadline, on the loop ``Runner.run_sync`` will drive it on."""
    assert watch.timeout is not None
    loop = _default_loop()
    watch.deadline = loop.time() + watch.timeout

    def at_deadline() -> None:
        watch.timed_out = True
        for task in asyncio.all_tasks(loop):
            frame = getattr(task.get_coro(), "cr_frame", None)
            if frame is not None and isinstance(frame.f_locals.get("self"), AgentRunner):
                task.cancel()

    return loop.call_at(watch.deadline, at_deadline)


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
