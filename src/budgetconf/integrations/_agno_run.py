"""One bridged agno run: its model calls and tool calls, each decided by a `Meter`.

agno's agent runs its whole tool loop in its model (``Model.response`` and its async and
streamed twins): each model call is one ``_process_model_response`` (or, streamed,
``process_response_stream``), the retries of agno and of its client within it, and each
tool call one ``run_function_call``, whose ``tool_hooks`` wrap the tool as a middleware.
For one run the bridge lends the agent a copy of its model whose

- model calls ask `Bridged.call` first (a stop ends agno's run there, without the call, as
  a cancellation: agno keeps the run in its session, ``cancelled``), add the last-turn
  notice to that call's messages only, and hand each response's usage, text and calls to
  `Bridged.answered`; agno's own ``metrics.cost`` for a response is its reported cost;
- tool calls carry one more tool hook, outermost: it runs the call when the plan says so,
  through `Bridged.tool` (the tool sees ``current_run()``), and else answers it as not
  executed; when the plan ends the run with that response, the answer is raised as
  ``StopAgentRun``, so agno ends its loop after the batch instead of calling the model.

The agent's own ``tool_call_limit`` is set aside for the run (the Meter's count is the
hard limit) and its model put back afterwards, also when the run raises.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from agno.exceptions import RunCancelledException, StopAgentRun
from agno.models.message import Message
from agno.run.base import RunStatus

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_cost, reported_tokens
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import Bridged
from budgetconf.loop import Call, Usage

if TYPE_CHECKING:
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import AgentModel, BridgeResult
    from budgetconf.loop import Budget

_FRAMEWORK: Final = FRAMEWORKS["agno"]


class Ended(RunCancelledException):
    """The Meter ended the run before a model call: agno cancels its run with the message."""


class Session:
    """The run's `Bridged` Meter, and the model the agent borrows for the run (see above)."""

    def __init__(
        self,
        agent: Any,
        budget: Budget,
        on_event: Sink | None,
        name: str | None,
        model: AgentModel,
    ) -> None:
        self.agent = agent
        #: the names of the tools agno offers the model: the calls it can run
        self.offered: set[str] = set()
        self.bridged = Bridged(
            _FRAMEWORK, budget, tools=self.offered, on_event=on_event, name=name, model=model
        )
        self.model_id: str | None = model.name
        self.text: str | None = None  # the last response's text
        self.hook, self.ahook = _hooks(self)

    @contextmanager
    def lent(self) -> Iterator[None]:
        """While the block runs, the agent's model calls and tool calls go through the Meter;
        its own model and ``tool_call_limit`` are back afterwards, also on error."""
        agent = self.agent
        own = agent.model, agent.tool_call_limit
        lent = self._lend(own[0])
        agent.model, agent.tool_call_limit = lent, None
        try:
            yield
        finally:
            agent.model, agent.tool_call_limit = own
            _kept(own[0], lent)

    def _lend(self, model: Any) -> Any:
        lent = copy.copy(model)
        for name, wrap in (
            ("_process_model_response", self._call),
            ("_aprocess_model_response", self._acall),
            ("process_response_stream", self._stream),
        ):
            setattr(lent, name, wrap(getattr(lent, name)))
        for name, hook in (
            ("response", self.hook),
            ("response_stream", self.hook),
            ("aresponse", self.ahook),
        ):
            setattr(lent, name, self._responding(getattr(lent, name), hook))
        return lent

    # -- before and after each model call -----------------------------------------------------

    def before(self, kwargs: dict[str, Any]) -> None:
        """Before a model call: the Meter's leave (else `Ended`), and the call's messages with
        the last-turn notice, if it carries one (only the call carries it, not the run)."""
        stop = self.bridged.call()
        if stop is not None:
            raise Ended(stop.message)
        notice = self.bridged.notice(bool(kwargs.get("tools")))
        if notice is not None:
            kwargs["messages"] = [*kwargs["messages"], Message(role="user", content=notice)]

    def failed(self, exc: Exception) -> None:
        """The model call raised ``exc`` (after agno's and its client's retries)."""
        if not isinstance(exc, RunCancelledException):  # the caller's cancel_run: theirs
            self.bridged.call_failed(exc)

    def after(self, message: Any) -> None:
        """After a model call: the response agno made of it (``message``) to the Meter."""
        try:
            usage = _usage(message.metrics, self.model_id)
        except Unreadable as exc:  # the run ends here, before the response's tools
            stop = self.bridged.unreadable(exc)
            raise Ended(stop.message) from None
        content = message.content
        text = content if isinstance(content, str) and content else None
        self.text = text or self.text
        calls = [_call(made) for made in message.tool_calls or ()]
        self.bridged.answered(usage, text, calls)

    def _call(self, real: Any) -> Any:
        def process(**kwargs: Any) -> None:
            self.before(kwargs)
            deadline = self.bridged.meter.deadline
            try:
                if deadline is None:
                    real(**kwargs)
                else:
                    self._until(deadline, real, kwargs)
            except Exception as exc:
                self.failed(exc)
                raise
            self.after(kwargs["assistant_message"])

        return process

    def _until(self, deadline: float, real: Any, kwargs: dict[str, Any]) -> None:
        """The call on a thread of its own, waited for until ``deadline``, as the executor
        waits for a call it cannot cancel; past it the run stops, and the call is left."""
        import concurrent.futures
        import contextvars

        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                future.set_result(context.run(real, **kwargs))
            except BaseException as exc:  # handed to the waiting thread, which decides
                future.set_exception(exc)

        threading.Thread(target=work, name="budgetconf-agno-call", daemon=True).start()
        try:
            future.result(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if not future.done():  # not the model's own TimeoutError
                raise Ended(self._timed_out()) from None
            future.result()

    def _timed_out(self) -> str:
        """The run's end at its deadline, with a model call in flight: its message."""
        return self.bridged.stopped(StopReason.TIMEOUT, None).message

    def _acall(self, real: Any) -> Any:
        async def process(**kwargs: Any) -> None:
            self.before(kwargs)
            deadline = self.bridged.meter.deadline
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                async with asyncio.timeout(left) as scope:
                    await real(**kwargs)
            except Exception as exc:
                if isinstance(exc, TimeoutError) and scope.expired():  # the call is abandoned
                    raise Ended(self._timed_out()) from None
                self.failed(exc)
                raise
            self.after(kwargs["assistant_message"])

        return process

    def _stream(self, real: Any) -> Any:
        def process(**kwargs: Any) -> Iterator[Any]:
            self.before(kwargs)
            try:
                yield from real(**kwargs)
            except Exception as exc:
                self.failed(exc)
                raise
            self.after(kwargs["assistant_message"])

        return process

    # -- each tool call -----------------------------------------------------------------------

    def _responding(self, real: Any, hook: Any) -> Any:
        """agno's tool loop (``real``), its tools carrying ``hook`` outermost: the run's own
        copies of the agent's functions, which agno makes for each run."""
        from agno.tools.function import Function

        offered = self.offered

        def response(**kwargs: Any) -> Any:
            for function in kwargs.get("tools") or ():
                if isinstance(function, Function):  # not a tool its provider runs
                    offered.add(function.name)
                    # once: agno calls its loop again after it recovers from an overflow
                    hooks = [h for h in function.tool_hooks or () if h is not hook]
                    function.tool_hooks = [hook, *hooks]
            return real(**kwargs)

        return response

    def answer(self, answer: str) -> str:
        """A call's answer in its place; raised as ``StopAgentRun`` when the plan ends the
        run with this response, so that agno's loop ends after the batch."""
        if self.bridged.stop is not None:
            raise StopAgentRun(answer)
        return answer

    # -- the end ------------------------------------------------------------------------------

    def finished(self, native: Any) -> BridgeResult:
        """The result of a run agno ended (``native``, its `RunOutput`)."""
        bridged = self.bridged
        if bridged.stop is not None or bridged.meter.ended is not None:
            return bridged.result(native)
        status = getattr(native, "status", None)
        if status == RunStatus.cancelled:
            return bridged.cancelled(native)
        if status == RunStatus.error:
            return bridged.failed(AgnoRunError(native))
        return bridged.result(native, self.output(native))

    def output(self, native: Any) -> str:
        """The run's answer: agno's structured content as JSON, else the last response's text
        (agno's ``content`` joins the text of every response of the run)."""
        content = getattr(native, "content", None)
        if content is not None and not isinstance(content, str):
            return str(native.get_content_as_string())
        return self.text or ""


def _kept(model: Any, lent: Any) -> None:
    """The clients the run's copy of ``model`` made, kept by the model, as agno keeps those
    it makes: the next run, bridged or not, reuses them and their connections."""
    for name in _CLIENTS:
        if getattr(model, name, None) is None and getattr(lent, name, None) is not None:
            setattr(model, name, getattr(lent, name))


#: where agno's models keep the clients they make at their first call
_CLIENTS: Final = ("client", "async_client")


def _hooks(session: Session) -> tuple[Any, Any]:
    """The bridge's tool hook, and its async twin: the call runs (the rest of agno's chain,
    then the tool) as the plan says, else its answer is given, raised as ``StopAgentRun`` at
    the run's end. agno reads a hook's signature eleven times a call (which arguments to
    pass it): each carries its own, read at once."""
    bridged = session.bridged

    def hook(function_name: str, function_call: Any, arguments: dict[str, Any]) -> Any:
        ran = False

        def invoke() -> Any:
            nonlocal ran
            ran = True
            return function_call(**arguments)

        value = bridged.tool(None, function_name, invoke)
        return value if ran else session.answer(value)

    async def ahook(function_name: str, function_call: Any, arguments: dict[str, Any]) -> Any:
        ran = False

        async def invoke() -> Any:
            nonlocal ran
            ran = True
            return await function_call(**arguments)

        value = await bridged.atool(None, function_name, invoke)
        return value if ran else session.answer(value)

    hook.__signature__ = ahook.__signature__ = _HOOK  # type: ignore[attr-defined]
    return hook, ahook


def _hook(function_name: str, function_call: Any, arguments: dict[str, Any]) -> Any:
    """What agno passes the bridge's hook: the tool's name, the rest of the chain, the
    call's arguments."""


_HOOK: Final = inspect.signature(_hook)


class AgnoRunError(Exception):
    """agno ended its run with an error, which it logged and did not raise (``run``: its
    `RunOutput`, whose content is the error's text)."""

    def __init__(self, run: Any) -> None:
        super().__init__(str(getattr(run, "content", None) or "agno's run ended with an error"))
        self.run = run


def _call(made: Any) -> Call:
    """One tool call of a response, as agno keeps it (the chat API's dict)."""
    function = made.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = None
    return Call(
        str(made.get("id")),
        str(function.get("name")),
        arguments if isinstance(arguments, dict) else None,
        raw if isinstance(raw, str) else json.dumps(raw),
    )


def _usage(metrics: Any, model: str | None) -> Usage:
    """A response's agno metrics as budgetconf's `Usage`, each count checked (`Unreadable`);
    its ``cost``, where agno has one, the reported cost."""
    inputs = reported_tokens(metrics.input_tokens, "metrics.input_tokens")
    outputs = reported_tokens(metrics.output_tokens, "metrics.output_tokens")
    total = metrics.total_tokens or inputs + outputs
    counted = (
        inputs,
        reported_tokens(metrics.cache_read_tokens, "metrics.cache_read_tokens"),
        outputs,
        reported_tokens(total, "metrics.total_tokens"),
    )
    cost = metrics.cost
    if cost is None:
        return Usage(*counted, model=model)
    return Usage(*counted, reported_cost(cost, "metrics.cost"), "reported", model)
