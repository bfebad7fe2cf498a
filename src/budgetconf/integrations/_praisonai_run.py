"""One bridged praisonaiagents run: its model calls and tool calls, each decided by a `Meter`.

The OpenAI-native loop of praisonaiagents (``OpenAIClient.achat_completion_with_tools``)
makes every model request through its client's ``acreate_completion`` and runs every
tool call through the agent's ``execute_tool``. For one run the bridge lends the agent:

- a copy of its client whose ``acreate_completion`` asks `Bridged.call` first (a stop
  ends the run there, without the request), adds the last-turn notice to the request,
  waits at most until the deadline, and hands the response to `Bridged.answered`; the
  client is global to the process, so the copy, not the client, is what changes;
- an ``execute_tool`` that runs a call only when the plan says so, through
  `Bridged.tool` (the tool sees ``current_run()``), and else answers it as not executed;
- a cancel token that the loop checks before each request and before a response's
  tools, set once the Meter has ended the run (or when the caller's own token is set, or
  a streamed run's caller has closed its stream, which ``execute_tool`` also reads before
  each call).

A streamed run (`stream()`) is the same run with a `Relay`: its client asks for each
response streamed, and hands the text to the caller as it comes (_praisonai_stream.py).

Whatever the Meter stops, or whatever fails, leaves the framework as `Stop`, a
BaseException: the framework's handlers of ``Exception`` would log it as a model error,
retry it, or try a fallback model (whose requests the bridge could not count).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from budgetconf._loop_table import StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.integrations._bridge import NAMELESS
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import Bridged
from budgetconf.integrations._stream import Closed
from budgetconf.loop import Call, Usage

if TYPE_CHECKING:
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import AgentModel, BridgeResult
    from budgetconf.integrations._praisonai_stream import Relay
    from budgetconf.loop import Budget

_FRAMEWORK: Final = FRAMEWORKS["praisonai"]

#: the agent's attributes a run lends over: its client, its dispatcher, its tool execution
_LENT: Final = ("_Agent__openai_client", "_unified_dispatcher", "execute_tool")


class Stop(BaseException):
    """The run ends here: the Meter has decided its end (``Watch.bridged.stop``), or the
    deadline passed; ``native`` is what the framework's client or tool raised, if anything.

    A BaseException, so that no ``except Exception`` of the framework takes it for a model
    or tool error to log, retry or answer the model with.
    """

    def __init__(self, native: BaseException | None = None) -> None:
        super().__init__("the budget ended the run")
        self.native = native


class ToolError(Exception):
    """praisonaiagents answered a call with an error dict (``result``: its approval, policy or
    loop guard refused it, or the tool failed): the call counts, and failed, as the Meter
    records it (the bridge cannot tell whether the tool ran, so it counts it)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(str(result.get("error")))
        self.result = result


class Deadline(Exception):
    """A tool was still running at the run's deadline: it is left running."""

    def __str__(self) -> str:
        return "still running at the run's deadline"


class Offered:
    """The tool names whose calls praisonaiagents runs: the agent's, and a name it repairs to
    exactly one of them (case, ``_``, ``-`` and spaces aside), as ``_self_repair_tool_name``."""

    __slots__ = ("folded", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.folded = Counter(_fold(n) for n in self.names)

    def __contains__(self, name: object) -> bool:
        if name in self.names:
            return True
        return isinstance(name, str) and self.folded.get(_fold(name)) == 1

    def __iter__(self) -> Iterator[str]:  # the agent's own names, which a run's limits name
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def _fold(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")


class Watch:
    """The run's `Bridged` Meter, and what it lends the agent (see above).

    ``theirs`` is the cancel token the caller passed, else the agent's interrupt
    controller: the framework reads only the token it is given, so this one answers for
    theirs too, through the framework's own per-turn view of it (``_turn_cancel_token``).
    ``relay`` streams the run's requests, for `stream()`.
    """

    def __init__(
        self,
        agent: Any,
        budget: Budget,
        theirs: Any,
        on_event: Sink | None,
        name: str | None,
        model: AgentModel = NAMELESS,
        relay: Relay | None = None,
    ) -> None:
        self.agent = agent
        self.relay = relay
        source = theirs if theirs is not None else getattr(agent, "interrupt_controller", None)
        self.theirs = (
            None
            if source is None
            else agent._turn_cancel_token(source, explicit=theirs is not None)
        )
        own = vars(agent)  # what the run lends over, as the agent holds it before the run
        self.saved = {name: own[name] for name in _LENT if name in own}
        # the process's OpenAI client, made now if not yet (before the Meter: a key missing is
        # the caller's error, raised before any run starts)
        self.client = agent._openai_client
        self.offered = Offered(agent._available_active_tool_names())
        self.bridged = Bridged(
            _FRAMEWORK, budget, tools=self.offered, on_event=on_event, name=name, model=model
        )
        self.timed_out = False
        self.cancelled = False  # the caller's token stopped the run

    # -- the cancel token the framework checks ------------------------------------------------

    def is_set(self) -> bool:
        if self.bridged.stop is not None or self.closed:
            return True
        theirs = self.theirs
        if theirs is not None and theirs.is_set():
            self.cancelled = True
            return True
        return False

    @property
    def closed(self) -> bool:
        """A streamed run whose caller has closed its stream."""
        return self.relay is not None and self.relay.closed.is_set()

    @property
    def reason(self) -> str | None:
        if self.bridged.stop is not None:
            return "the budget ended the run"
        return getattr(self.theirs, "reason", None)

    # -- what the agent borrows ---------------------------------------------------------------

    @contextmanager
    def lent(self) -> Iterator[None]:
        """While the block runs, the agent's model calls and tool calls go through the Meter;
        its own client, dispatcher and ``execute_tool`` are back afterwards, also on error."""
        agent = self.agent
        own, saved = vars(agent), self.saved
        try:
            client = copy.copy(self.client)
            client.acreate_completion = self._completion(client.acreate_completion)
            agent._Agent__openai_client = client
            agent._unified_dispatcher = None  # the framework makes the next one from the copy
            agent.execute_tool = self._execute(agent.execute_tool)
            yield
        finally:
            for name in _LENT:
                if name in saved:
                    setattr(agent, name, saved[name])
                else:
                    own.pop(name, None)
            if self.theirs is not None:
                self.theirs.close()  # the agent's interrupt controller: this turn is over

    # -- before and after each model call -----------------------------------------------------

    def _completion(self, real: Any) -> Any:
        bridged = self.bridged
        relay = self.relay

        async def acreate_completion(messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            if self.closed:
                raise Stop(Closed())
            if bridged.call() is not None:
                raise Stop
            notice = bridged.notice(bool(kwargs.get("tools")))
            if notice is not None:  # only the request carries it, not the loop's history
                messages = [*messages, {"role": "user", "content": notice}]
            try:
                async with asyncio.timeout(self.seconds_left()) as scope:
                    if relay is None:
                        completion = await real(messages, *args, **kwargs)
                    else:
                        completion = await relay.completion(real, messages, args, kwargs)
            except Closed as exc:  # the caller closed the stream: the request is abandoned
                raise Stop(exc) from None
            except Exception as exc:  # after the client's own retries: the run failed
                if isinstance(exc, TimeoutError) and scope.expired():
                    self.timed_out = True  # the deadline: the request is abandoned
                else:
                    bridged.call_failed(exc)
                raise Stop(exc) from None
            try:
                response = _read(completion)
            except (Unreadable, _Malformed) as exc:
                bridged.unreadable(exc)
                raise Stop from None
            bridged.answered(*response)
            return completion

        return acreate_completion

    def seconds_left(self) -> float | None:
        """What is left of the run's deadline, in seconds; None without one."""
        deadline = self.bridged.meter.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    # -- each tool call -----------------------------------------------------------------------

    def _execute(self, real: Any) -> Any:
        bridged = self.bridged
        offered = self.offered

        def execute_tool(
            function_name: str, arguments: Any, tool_call_id: str | None = None, **kwargs: Any
        ) -> Any:
            if self.closed:  # the loop reads its token only before a response's calls
                raise Stop(Closed())
            if function_name not in offered or not isinstance(arguments, dict):
                # a tool it does not have, or arguments it cannot pass: the framework answers
                # the model itself and runs nothing, and the Meter counted no such call
                return real(function_name, arguments, tool_call_id=tool_call_id, **kwargs)

            def invoke() -> Any:
                result = self._within(
                    lambda: real(function_name, arguments, tool_call_id=tool_call_id, **kwargs)
                )
                if isinstance(result, dict) and result.get("error") is not None:
                    raise ToolError(result)  # praisonaiagents answers the model with it
                return result

            try:
                return bridged.tool(tool_call_id, function_name, invoke, _unguarded)
            except ToolError as failed:
                return failed.result
            except Deadline as exc:
                self.timed_out = True
                raise Stop(exc) from None

        return execute_tool

    def _within(self, invoke: Any) -> Any:
        """``invoke()``, or `Deadline` when the run's deadline passes first (left running)."""
        left = self.seconds_left()
        if left is None:
            return invoke()
        done = threading.Event()
        outcome: list[tuple[bool, Any]] = []
        context = contextvars.copy_context()  # current_run(), and the framework's own context

        def work() -> None:
            try:
                outcome.append((True, context.run(invoke)))
            except BaseException as exc:  # handed to the caller, which raises it
                outcome.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=work, name="budgetconf-tool", daemon=True).start()
        if not done.wait(left):
            raise Deadline
        returned, value = outcome[0]
        if returned:
            return value
        raise value

    # -- the end ------------------------------------------------------------------------------

    def stopped(self, stop: Stop) -> BridgeResult:
        """The result of a run that `Stop` ended: the Meter's end, or the deadline."""
        native: BaseException = stop if stop.native is None else stop.native
        if self.timed_out:
            return self.bridged.stopped(StopReason.TIMEOUT, native)
        return self.bridged.failed(native)

    def finished(self, answer: object) -> BridgeResult:
        """The result of a run that praisonaiagents ended itself, with ``answer``."""
        bridged = self.bridged
        if bridged.stop is not None or bridged.meter.ended is not None:
            return bridged.result(answer)  # the Meter's end: its output is the last text
        if self.cancelled or self.closed:
            return self.interrupted(answer)
        if answer is None and self.agent.last_stop_reason == "error":
            return bridged.failed(
                RuntimeError(
                    "praisonaiagents ended the run with an error, which it logged and did not raise"
                )
            )
        return bridged.result(answer, _text(answer))

    def interrupted(self, native: object) -> BridgeResult:
        """The caller's cancel token ended the run (``native``: the framework's answer, or the
        InterruptedError it raised for a token set before the run's first call)."""
        if self.closed:  # the caller closed the stream, which the token answers for
            return self.bridged.cancelled(native)
        meter = self.bridged.meter
        turns = meter.turns
        done = f"{turns} turn{'' if turns == 1 else 's'}"
        why = f"cancelled: the run's cancel token was set after {done}"
        meter.finish(StopReason.CANCELLED, why)
        return self.bridged.result(native)


class _Malformed(Exception):
    """A response the loop cannot read as a chat completion."""


def _read(completion: Any) -> tuple[Usage, str | None, list[Call], str | None]:
    """A chat completion as the Meter reads a response: its usage, text, calls and finish
    reason (a refusal without text or calls is the ``refusal`` the executor reads it as)."""
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _Malformed(f"the server's answer is not a chat completion: {_show(completion)}")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise _Malformed(f"the server's answer has no message: {_show(choice)}")
    from praisonaiagents.llm.openai_client import (  # type: ignore[import-untyped]
        _extract_tool_call_name_and_args,
    )

    content = getattr(message, "content", None)
    finish = getattr(choice, "finish_reason", None)
    calls = []
    for made in getattr(message, "tool_calls", None) or ():
        name, arguments, call_id, _ = _extract_tool_call_name_and_args(made)
        raw = getattr(getattr(made, "function", None), "arguments", "{}")
        calls.append(
            Call(
                str(call_id),
                str(name),
                arguments if isinstance(arguments, dict) else None,
                raw if isinstance(raw, str) else json.dumps(raw),
            )
        )
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal and not content and not calls:
        content, finish = refusal, "refusal"  # the API's refusal ends with "stop"
    text = content if isinstance(content, str) else None
    return _usage(completion), text, calls, finish if isinstance(finish, str) else None


def _usage(completion: Any) -> Usage:
    """The response's usage as budgetconf's, each count checked (`Unreadable`)."""
    model = getattr(completion, "model", None)
    model = model if isinstance(model, str) and model else None
    usage = getattr(completion, "usage", None)
    if usage is None:
        return Usage(model=model)
    prompt = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    total = getattr(usage, "total_tokens", None)
    inputs = 0 if prompt is None else reported_tokens(prompt, "usage.prompt_tokens")
    outputs = (
        0
        if completion_tokens is None
        else reported_tokens(completion_tokens, "usage.completion_tokens")
    )
    total = reported_tokens(
        inputs + outputs if total is None else total,
        "usage.prompt_tokens + usage.completion_tokens" if total is None else "usage.total_tokens",
    )
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
    cached = (
        0
        if cached is None
        else reported_tokens(cached, "usage.prompt_tokens_details.cached_tokens")
    )
    return Usage(inputs, cached, outputs, total, model=model)


def _show(value: object) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:79] + "…"


def _text(answer: object) -> str:
    """The run's answer as text: ``start()`` gives None after an error."""
    if answer is None:
        return ""
    return answer if isinstance(answer, str) else str(answer)


#: how praisonaiagents adds its loop guard's notice to a tool's text (tool_execution.py)
_GUARD_TEXT = "\n\n[loop-guard] "


def _unguarded(result: Any) -> Any:
    """What the tool itself returned, without the notice praisonaiagents' loop guard adds to
    the result of a call it has seen repeat (a suffix of text, a key of a dict, or a dict
    around any other value)."""
    if isinstance(result, str):
        return result.partition(_GUARD_TEXT)[0]
    if isinstance(result, dict) and "_loop_guard" in result:
        if set(result) == {"value", "_loop_guard"}:
            return result["value"]
        return {k: v for k, v in result.items() if k != "_loop_guard"}
    return result
