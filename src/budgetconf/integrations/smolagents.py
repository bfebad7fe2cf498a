"""A smolagents agent's run within a budgetconf budget.

>>> from budgetconf.integrations.smolagents import limits, run
>>> agent.run(task, **limits(res))      # the step budget, through smolagents' own max_steps
>>> result = run(agent, task, res)      # every budget, and the stop the budgetconf way

smolagents counts steps, and at its limit makes one more model call, without
tools, for a final answer. So the agent gets ``max_steps - 1`` steps and that
forced call is the last turn: a run never makes more than ``max_steps`` model
calls, and one that ends in the forced call is ``truncated`` (``max_steps``)
with its text as the output. With ``planning_interval``, each planning call is
a turn too, and `run()` gives the agent as many steps as fit.

Budget, and what enforces it:

- ``max_steps``: smolagents' ``max_steps``, set to ``max_steps - 1`` (fewer
  with planning).
- ``max_tool_calls``: `run()`, for a ``ToolCallingAgent``: a response whose
  calls would pass it runs none of them, and the run stops.
- ``max_tokens``: `run()`: a response that takes the run past it runs no
  tools, and no model call follows one that reaches it.
- ``timeout_seconds``: `run()`: once it has passed no tool runs and no model
  is called; a call in progress is not cut short.
- ``max_tool_calls_per_turn``: cannot be (smolagents runs a response's calls
  together); left unenforced at the preset's default, refused when set.
- ``max_cost_usd``: cannot be: smolagents reports no cost.
- ``ledger.url``: `run()`: the shared ledger is reserved before the run's
  first model call and, from each step callback, before the next one (the
  plan, the step, the forced final answer); a refusal stops the run before
  that call. Each step's token usage settles what its call held; a
  ``ledger.max_cost_usd`` is refused (smolagents reports no cost).

`run()` watches the run through a step callback and a gate in front of a
``ToolCallingAgent``'s tool calls; a budget is stopped with
``agent.interrupt()``, or by ending the run from the callback where smolagents
would ignore that (its last step, a planning step). A ``CodeAgent`` calls its
tools inside the code it writes, out of the bridge's sight: ``max_tool_calls``
is refused there, and the step that crosses a token budget or the deadline
has run its code. Tokens are counted as each step reports them; a model that
reports none counts nothing.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager

try:
    from smolagents.agents import (  # type: ignore[import-untyped]
        MultiStepAgent,
        RunResult,
        ToolCallingAgent,
    )
    from smolagents.memory import (  # type: ignore[import-untyped]
        ActionStep,
        CallbackRegistry,
        PlanningStep,
    )
    from smolagents.utils import AgentError, AgentMaxStepsError  # type: ignore[import-untyped]
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("smolagents", "smolagents", "smolagents") from None

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import BudgetConfWarning, UsageError, UsageTypeError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    ended,
    refuse_conflicting,
    stopped,
    unreadable,
)
from budgetconf.integrations._frameworks import FRAMEWORKS

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from typing import Any, Final

    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._draw import LedgerStop, Tally
    from budgetconf.loop._budget import Budget

__all__ = ["limits", "run"]

_FRAMEWORK: Final = FRAMEWORKS["smolagents"]
#: the text smolagents returns, as a list of parts, when its forced final call fails
_FAILED: Final = "Error in generating final LLM output:"


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"max_steps": max_steps - 1}``, for ``agent.run(task, **limits(res))``.

    smolagents' forced final answer is one more model call, so the total is
    ``max_steps``. A ``max_steps`` below 2 is a `UsageError`, and so is any
    other budget set (not by its default): only `run()` enforces those. An
    agent with ``planning_interval`` makes more calls than this counts: run
    it through `run()`.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    return {"max_steps": _agent_steps(checked, None)}


def run(
    agent: Any,
    task: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.run(task, **framework_kwargs)`` within ``budget``; a budget stop is a result.

    ``budget`` is what `LoopExecutor` accepts (None: the default preset).
    The agent's ``max_steps`` and step callbacks are set for the run and
    restored after it, also when it raises. ``max_steps=`` is refused (set the
    budget through budgetconf), and so is ``stream=True``: the bridge runs to
    the end. ``native`` is what ``agent.run`` returned: smolagents'
    ``RunResult`` with ``return_full_result=True``. An error smolagents raises
    that no budget caused (a model that fails) is raised unchanged.
    """
    refuse_conflicting(_FRAMEWORK, framework_kwargs)
    if framework_kwargs.get("stream"):
        raise UsageError("stream=True: the bridge runs the agent to its end; leave it out")
    if not isinstance(agent, MultiStepAgent):
        raise UsageTypeError(f"agent: expected a smolagents agent, got {type(agent).__name__}")
    checked = bridge_budget(_FRAMEWORK, budget, {}, through="run", unenforced=unenforced)
    gated = isinstance(agent, ToolCallingAgent)
    _refuse_unseen(agent, checked, gated, unenforced)
    guard = _Guard(checked, _agent_steps(checked, agent.planning_interval), gated)
    try:
        result = _run(agent, task, guard, framework_kwargs)
    except BaseException:
        guard.close("error")  # what the run holds in the shared ledger goes back at once
        raise
    guard.close(result.stop_reason)
    return result


def _run(agent: Any, task: str, guard: _Guard, kwargs: dict[str, Any]) -> BridgeResult:
    if guard.draw() is not None:  # the shared ledger refuses the first model call
        return guard.stopped(None)
    with _borrowed(agent, guard):
        try:
            # not return_full_result=True for its state: building that result serializes every
            # step's messages, which costs more than the run; the forced step says the same
            native = agent.run(task, **kwargs)
        except _Stop as exc:
            return guard.stopped(exc)
        except Unreadable as exc:  # a usage no response can report: the run failed
            return unreadable(_FRAMEWORK, exc, output=guard.text, turns=guard.turns, native=exc)
        except AgentError as exc:
            if guard.reason is None or not agent.interrupt_switch:
                raise  # not the bridge's interrupt: smolagents' own error
            return guard.stopped(exc)
    return guard.finished(native)


def _agent_steps(budget: Budget, planning_interval: object) -> int:
    """The steps smolagents may take so that every model call fits in ``max_steps``."""
    path = budget.spec.budgets["max_steps"]
    limit = budget.limits.get("max_steps")
    if limit is None:
        raise UsageError(f"{path} is unset: smolagents would run its own max_steps of 20")
    total = int(limit.value)
    if planning_interval is None:
        steps, least = total - 1, "2 (its forced final answer is one more model call)"
    elif isinstance(planning_interval, int) and planning_interval >= 1:
        steps, least = _planned_steps(total, planning_interval), "3 with planning_interval"
    else:
        raise UsageError(
            f"planning_interval: expected an int of 1 or more, got {planning_interval!r}"
        )
    if steps < 1:
        raise UsageError(
            f"{limit.field} = {limit.shown()} from {limit.locator}:"
            f" smolagents needs at least {least}"
        )
    return steps


def _calls(steps: int, interval: int) -> int:
    """Model calls of a run of ``steps`` (1 or more) that reaches its limit, the plans (step 1,
    then every ``interval`` steps) and the forced final call included."""
    return steps + 1 + (steps - 1) // interval + 1


def _planned_steps(total: int, interval: int) -> int:
    """The most steps whose calls, planning ones included, fit in ``total``; 0 when none do."""
    # never too many: s + (s - 1) // interval <= s * (interval + 1) / interval <= total - 2
    steps = max(0, (total - 2) * interval // (interval + 1))
    while _calls(steps + 1, interval) <= total:
        steps += 1
    return steps


def _refuse_unseen(agent: Any, budget: Budget, gated: bool, unenforced: Unenforced) -> None:
    """Refuse (or warn about) budgets this agent would spend where the bridge cannot see."""
    found = []
    cap = budget.limits.get("max_tool_calls")
    if cap is not None and not gated:
        found.append(
            f"{cap.field} = {cap.shown()} from {cap.locator} cannot be enforced by smolagents"
            f" for a {type(agent).__name__}: it calls its tools inside the code it writes"
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
    if unenforced == "error":
        raise UsageError(f"{what}; or pass unenforced='warn' to run without it")
    warnings.warn(f"{what}; running without it", BudgetConfWarning, stacklevel=3)


class _Stop(Exception):
    """Ends the run from inside smolagents where an interrupt would come too late."""


class _Guard:
    """Counts one run's model calls, tool calls, tokens and time, and stops it at a budget."""

    def __init__(self, budget: Budget, steps: int, gated: bool) -> None:
        self.budget = budget
        self.steps = steps  # the agent's max_steps for the run
        self.turns = 0  # model calls, planning and the forced final one included
        self.tokens = 0
        self.executed = 0  # tool calls let through; the final_answer tool is the answer, not one
        self.text = ""  # the last assistant text, for a stop that leaves no answer
        self.reason: StopReason | None = None
        self.forced = False  # smolagents made its tool-less final call: the steps ran out
        value = budget.value
        tools = value("max_tool_calls") if gated else None
        tokens, seconds = value("max_tokens"), value("timeout_seconds")
        self.max_tools = None if tools is None else int(tools)
        self.max_tokens = None if tokens is None else int(tokens)
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.tally: Tally | None = None  # the shared ledger's draw, when the budget names one
        self.refused: LedgerStop | None = None  # the ledger's stop before a model call
        if budget.ledger is not None:
            from budgetconf.integrations._draw import Tally  # only a run with a ledger loads it

            self.tally = Tally(budget)

    def step(self, step: Any, agent: Any) -> None:
        """After each step: count it, and stop the run when a budget leaves no room."""
        self.turns += 1
        used = _used(step)
        self.tokens += used
        if self.tally is not None:
            self._settle(step, used)
        if isinstance(step, ActionStep):
            message = step.model_output_message
            said = _text(None if message is None else message.content)
            self.text = said or self.text
            self.forced = isinstance(step.error, AgentMaxStepsError)
            if message is None or step.is_final_answer or self.forced:
                return  # the model failed (smolagents raises that), or the run is over
        if self.reason is not None:
            return  # the gate stopped this step
        reason = self._spent() or self.draw()  # the ledger's share of the next model call
        if reason is None:
            return
        self.reason = reason
        if isinstance(step, PlanningStep) or step.step_number >= self.steps:
            # smolagents acts on an interrupt at the next step only: after a planning step
            # comes this step's model call, and after the last one its forced final call
            raise _Stop(reason)
        agent.interrupt()

    def gate(self, step: Any, calls: int) -> None:
        """Before a response's tool calls run: stop the run if a budget forbids them."""
        tokens = self.tokens + _used(step)
        reason = None
        if self.max_tokens is not None and tokens > self.max_tokens:
            reason = StopReason.MAX_TOKENS
        elif self.max_tools is not None and self.executed + calls > self.max_tools:
            reason = StopReason.MAX_TOOL_CALLS
        elif self.deadline is not None and time.monotonic() >= self.deadline:
            reason = StopReason.TIMEOUT
        if reason is not None:
            self.reason = reason
            raise _Stop(reason)
        self.executed += calls

    def _settle(self, step: Any, used: int) -> None:
        """The step's usage replaces what its model call held in the shared ledger."""
        assert self.tally is not None
        failed = isinstance(step, ActionStep) and step.model_output_message is None
        if failed and not isinstance(step.error, AgentMaxStepsError):
            return  # its model call raised: smolagents raises it, and the share goes back
        self.tally.settle(used, 0.0)

    def draw(self) -> StopReason | None:
        """Reserve the next model call's share of the shared ledger; its stop when refused."""
        if self.tally is None:
            return None
        self.refused = self.tally.reserve()
        if self.refused is None:
            return None
        self.reason = self.refused.reason
        return self.reason

    def close(self, stop_reason: str) -> None:
        """The run has ended: what it holds in the shared ledger goes back, its record written."""
        tally, self.tally = self.tally, None
        if tally is not None:
            tally.end(stop_reason)

    def _spent(self) -> StopReason | None:
        """A budget that leaves no room for another model call."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return StopReason.MAX_TOKENS
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return StopReason.TIMEOUT
        return None

    def stopped(self, exc: Exception | None) -> BridgeResult:
        assert self.reason is not None
        if self.refused is not None:  # the shared ledger's stop, in the executor's words
            return self.refused.result(_FRAMEWORK, self.budget, self.text, self.turns, exc)
        return stopped(
            _FRAMEWORK, self.budget, self.reason, output=self.text, turns=self.turns, native=exc
        )

    def finished(self, native: Any) -> BridgeResult:
        """The result of a run smolagents ended: its final answer, or its forced one."""
        answer = native.output if isinstance(native, RunResult) else native
        output = _text(answer)
        if not self.forced:
            turns = self.turns
            message = f"completed in {turns} turn{'' if turns == 1 else 's'}"  # the executor's
            return ended(
                _FRAMEWORK, StopReason.COMPLETED, message, output=output, turns=turns, native=native
            )
        if isinstance(answer, list) and output.startswith(_FAILED):
            output = self.text  # the forced call failed: its text is smolagents' error
        return stopped(
            _FRAMEWORK,
            self.budget,
            StopReason.MAX_STEPS,
            output=output,
            turns=self.turns,
            native=native,
        )


@contextmanager
def _borrowed(agent: Any, guard: _Guard) -> Iterator[None]:
    """Give the agent the run's max_steps, step callback and tool gate; put its own back."""
    saved = agent.max_steps, agent.step_callbacks, vars(agent).get("process_tool_calls")
    registry = CallbackRegistry()  # a copy: smolagents' registry has no way to unregister
    for cls, callbacks in agent.step_callbacks._callbacks.items():
        for callback in callbacks:
            registry.register(cls, callback)
    registry.register(ActionStep, guard.step)
    registry.register(PlanningStep, guard.step)
    agent.max_steps, agent.step_callbacks = guard.steps, registry
    if isinstance(agent, ToolCallingAgent):
        agent.process_tool_calls = _gated(agent.process_tool_calls, guard)
    try:
        yield
    finally:
        agent.max_steps, agent.step_callbacks, process = saved
        if process is None:
            vars(agent).pop("process_tool_calls", None)
        else:
            agent.process_tool_calls = process
        agent.interrupt_switch = False  # the bridge's interrupt ends with its run


def _gated(process: Any, guard: _Guard) -> Any:
    """``process_tool_calls`` that asks the guard first, for the whole response's calls."""

    def gated(chat_message: Any, memory_step: Any) -> Generator[Any, None, None]:
        calls = sum(1 for c in chat_message.tool_calls or () if c.function.name != "final_answer")
        if calls:
            guard.gate(memory_step, calls)
        yield from process(chat_message, memory_step)

    return gated


def _used(step: Any) -> int:
    """The tokens a step's model call reports; `Unreadable` past what a response can use."""
    usage = step.token_usage
    return 0 if usage is None else reported_tokens(usage.total_tokens, "usage.total_tokens")


def _text(content: object) -> str:
    """A model's content or a final answer as text: a list of parts joined, None as ``""``."""
    if content is None:
        return ""
    if isinstance(content, list):
        parts = (p.get("text") for p in content if isinstance(p, Mapping))
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)
