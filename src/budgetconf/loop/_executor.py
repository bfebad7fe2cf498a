"""`LoopExecutor`: drives a `Run` with plain calls (`run`) or with awaits (`arun`).

Without a deadline every call is made directly, on the caller's thread. With
``limits.timeout_seconds`` set, a call that cannot be cancelled (any call in
`run`, a sync callable in `arun`) runs on a daemon worker thread, so that it
can be abandoned at the deadline; an async call in `arun` is cancelled.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from budgetconf.errors import UsageError, UsageTypeError
from budgetconf.loop._budget import Budget, budget_of
from budgetconf.loop._children import enter, leave, meter_for
from budgetconf.loop._faults import Deadline, Interrupted, Raised, describe, received
from budgetconf.loop._response import tool_specs
from budgetconf.loop._result import Event, Message, RunResult, Totals
from budgetconf.loop._run import ChildRun, Invoke, Run

if TYPE_CHECKING:
    import concurrent.futures
    import os

    from budgetconf._resolution import Resolution

#: return types that are never awaitable, so the common case skips the check
_PLAIN: Final = frozenset({dict, str, int, float, bool, list, tuple, type(None)})

Model = Callable[[list[Message], list[dict[str, Any]]], Any]
Messages = str | Sequence[Mapping[str, Any]]


class LoopExecutor:
    """Runs an agent loop within the budgets of a resolution.

    ``model(messages, tools)`` returns one response (see ``docs/loop.md``);
    ``tools`` maps names to callables called with the call's arguments as
    keywords. ``budget`` is a `Resolution`, a preset name or path (resolved
    now, from the process environment), a mapping of field values for the
    default preset's ``explicit`` source, or a `Budget`. ``on_event`` is called with each
    event as it happens (a `budgetconf.events.Sink`); ``name`` names its runs (default the
    preset's name).
    """

    __module__ = "budgetconf.loop"

    def __init__(
        self,
        model: Model,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        budget: Budget | Resolution | str | os.PathLike[str] | Mapping[str, object] | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(model):
            raise UsageTypeError(f"model: expected a callable, got {type(model).__name__}")
        self.model = model
        self.tools = dict(tools or {})
        for tool_name, tool in self.tools.items():
            if not isinstance(tool_name, str) or not tool_name or not callable(tool):
                raise UsageTypeError(
                    f"tools: expected names mapped to callables, got {tool_name!r}"
                )
        self.budget: Budget = budget_of(budget)
        self.on_event = on_event
        if name is not None and (not isinstance(name, str) or not name):
            raise UsageTypeError(f"name: expected a non-empty string, got {name!r}")
        self.name = name
        self._specs = tool_specs(self.tools) if self.tools else []

    def _start(
        self, messages: Messages, totals: Totals, budget: Budget, resumed: str | None = None
    ) -> Run:
        steps = budget.limits["max_steps"].value
        made = meter_for(
            budget,
            self.model,
            self.tools,
            self._specs,
            _conversation(messages),
            totals,
            int(steps),
            self.on_event,
            name=self.name,
            resumed_from=resumed,
            root=Run,
            child=ChildRun,
        )
        assert isinstance(made, Run)
        return made

    def run(self, messages: Messages) -> RunResult:
        """Run the loop to its end: a final answer, a budget, a fault or an interrupt.

        ``messages`` is a prompt or a list of chat messages; the list is never
        changed, and ``result.messages`` is a new one. An async model or tool
        is a `UsageError` here: use `arun`.
        """
        self._refuse_async()
        return self._drive(self._start(messages, Totals(), self.budget))

    async def arun(self, messages: Messages) -> RunResult:
        """`run`, awaiting async models and tools; a cancelled task ends the run ``cancelled``."""
        return await self._adrive(self._start(messages, Totals(), self.budget))

    def resume(
        self, result: RunResult, extra_steps: int | None = None, prompt: str | None = None
    ) -> RunResult:
        """Continue a truncated run's conversation for ``extra_steps`` more turns.

        The conversation is ``result.messages`` (plus ``prompt`` as a user
        message, if given). The counters carry over: turns, tool calls,
        tokens and cost keep counting from ``result``, so the run-wide
        ``limits.*`` budgets cap the whole conversation. The step budget of the
        continuation is ``extra_steps`` (default: the resolved step budget)
        and the deadline starts afresh.
        """
        self._refuse_async()
        messages, budget = self._resumed(result, extra_steps, prompt)
        return self._drive(self._start(messages, result.totals, budget, result.run_id or None))

    async def aresume(
        self, result: RunResult, extra_steps: int | None = None, prompt: str | None = None
    ) -> RunResult:
        """`resume`, awaiting async models and tools."""
        messages, budget = self._resumed(result, extra_steps, prompt)
        return await self._adrive(
            self._start(messages, result.totals, budget, result.run_id or None)
        )

    def _refuse_async(self) -> None:
        for name, fn in (("model", self.model), *self.tools.items()):
            if _is_async(fn):
                what = "the model" if name == "model" else f"the tool {name!r}"
                raise UsageError(f"{what} is async: run it with arun()")

    def _resumed(
        self, result: RunResult, extra_steps: int | None, prompt: str | None
    ) -> tuple[list[Message], Budget]:
        if result.status != "truncated":
            raise UsageError(f"only a truncated run can be resumed; this one is {result.status}")
        budget = self.budget
        if extra_steps is not None:
            if type(extra_steps) is not int or extra_steps < 1:
                raise UsageError(f"extra_steps: expected a positive integer, got {extra_steps!r}")
            budget = budget.with_steps(extra_steps)
        messages = list(result.messages)
        if prompt is not None:
            messages.append({"role": "user", "content": prompt})
        return messages, budget

    def _drive(self, run: Run) -> RunResult:
        steps = run.steps()
        entry = enter(run)  # its tools see it as current_run()
        try:
            action = next(steps)
            while True:
                try:
                    value = self._call(action, run.deadline)
                except BaseException as exc:  # whatever the call raised, the run is told of it
                    action = steps.throw(received(exc))
                else:
                    action = steps.send(value)
        except StopIteration as done:
            result: RunResult = done.value
            return result
        except KeyboardInterrupt:  # between calls: the run's state is whole, so end it there
            return run.cancelled()
        finally:
            leave(entry)

    def _call(self, action: Invoke, deadline: float | None) -> Any:
        if deadline is None:
            value = action.fn(*action.args, **action.kwargs)
        else:
            value = _result(_on_worker(action), deadline)
        if type(value) not in _PLAIN and inspect.isawaitable(value):
            _close(value)
            raise UsageError(f"{_name(action.fn)} is async: run it with arun()")
        return value

    async def _adrive(self, run: Run) -> RunResult:
        import asyncio  # only for async callers: a sync program never loads it

        steps = run.steps()
        entry = enter(run)
        try:
            action = next(steps)
            while True:
                try:
                    value = await self._acall(action, run.deadline)
                except asyncio.CancelledError as exc:
                    task = asyncio.current_task()
                    if task is None or not task.cancelling():  # raised by the call, not sent
                        action = steps.throw(received(exc))
                        continue
                    task.uncancel()  # the run ends here, with a result, as cancelled
                    action = steps.throw(Interrupted())
                except GeneratorExit as exc:
                    if _closing(exc):
                        raise
                    action = steps.throw(received(exc))
                except BaseException as exc:  # whatever the call raised, the run is told of it
                    action = steps.throw(received(exc))
                else:
                    action = steps.send(value)
        except StopIteration as done:
            result: RunResult = done.value
            return result
        except KeyboardInterrupt:  # between calls, as in `_drive`
            return run.cancelled()
        finally:
            leave(entry)

    async def _acall(self, action: Invoke, deadline: float | None) -> Any:
        fn = action.fn
        if deadline is None:
            try:
                value = fn(*action.args, **action.kwargs)
            except BaseException as exc:  # as it is: a coroutine would make StopIteration another
                raise Raised(exc) from None
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                return await value
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Deadline
        import asyncio

        try:
            async with asyncio.timeout(remaining) as scope:
                if _is_async(fn):
                    return await fn(*action.args, **action.kwargs)
                value = await asyncio.wrap_future(_on_worker(action))
                return await value if inspect.isawaitable(value) else value
        except TimeoutError:
            if scope.expired():
                raise Deadline from None
            raise


def _closing(exc: GeneratorExit) -> bool:
    """Whether ``exc`` closes `arun`'s own coroutine, rather than coming from the call awaited.

    ``close()`` closes the awaited coroutine, then raises GeneratorExit at the
    ``await`` itself: its traceback starts and ends in the frame awaiting. One
    that the call raised has come up through the call's frames.
    """
    return exc.__traceback__ is None or exc.__traceback__.tb_next is None


def _result(future: concurrent.futures.Future[Any], deadline: float) -> Any:
    """The worker's result, waited for until ``deadline`` however far away that is."""
    import concurrent.futures
    import threading

    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Deadline
        try:  # a wait is at most TIMEOUT_MAX (some 292 years); a longer deadline waits again
            return future.result(min(remaining, threading.TIMEOUT_MAX))
        except concurrent.futures.TimeoutError:
            continue


def _on_worker(action: Invoke) -> concurrent.futures.Future[Any]:
    """Make the call on a daemon thread, which a hung call cannot keep the process alive by."""
    import concurrent.futures
    import contextvars
    import threading

    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()  # the caller's context variables go with the call

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(action.fn, *action.args, **action.kwargs))
        except BaseException as exc:  # handed to the waiting thread, which decides
            future.set_exception(Raised(exc))

    threading.Thread(target=work, name=f"budgetconf-{_name(action.fn)}", daemon=True).start()
    return future


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # a callable object's async __call__
    )


def _name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name else type(fn).__name__


def _close(value: Any) -> None:
    close = getattr(value, "close", None)
    if close is not None:
        close()  # a coroutine that will never run: close it so Python does not warn


def _conversation(messages: Messages) -> list[Message]:
    """A copy of the caller's messages, nested content included, which the run may extend.

    Nothing the model, a tool or the caller does to the run's conversation (or
    to ``result.messages``) reaches the caller's list, and nothing the caller
    does to its list afterwards reaches the run's.
    """
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, Sequence):
        raise UsageTypeError(f"messages: expected a prompt or a list of messages, got {messages!r}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise UsageTypeError(f"messages[{i}]: expected a dict, got {type(message).__name__}")
        try:
            out.append({key: _copied(value) for key, value in message.items()})
        except RecursionError:
            raise UsageError(f"messages[{i}]: nested too deeply to copy") from None
        except Exception as exc:  # a value deepcopy cannot copy: a lock, an open file
            raise UsageTypeError(f"messages[{i}]: cannot be copied: {describe(exc)}") from None
    return out


#: values that are never changed in place, so a copy may share them
_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None), bytes})


def _copied(value: Any) -> Any:
    """``value`` copied all the way down: JSON's shapes directly, anything else by deepcopy."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    import copy

    return copy.deepcopy(value)
