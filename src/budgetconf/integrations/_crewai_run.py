"""One bridged CrewAI run: its model calls and tool calls, each decided by a `Meter`.

CrewAI asks its interception hooks before each model call and around each tool
call. For one run the bridge registers its hooks in an execution scope of
CrewAI's own (``scoped_hooks``, a context variable): they see the calls of this
run's context only, and leave with it, also when the run raises, so no other
run, concurrent or later, meets them. The ``before_llm_call`` hook asks the
Meter first (and returns False, which blocks the call, for a call CrewAI's LLM
makes outside the agent's loop once the run has ended); the
``before_tool_call`` hook starts each call the Meter runs and blocks the
others, whose answer the ``after_tool_call`` hook gives in CrewAI's place.

The hooks see no usage and no tool calls of a response, so the agent runs on a
copy of its LLM, lent for the run, whose completed-call report (the one CrewAI's
providers make with the response, its usage and its finish reason) is read by
the Meter first. Once the run has ended, or when it ends at the next call with
no call of the response run, the copy gives CrewAI's loop the stop's words for
an answer, so that CrewAI ends the run as an answer ends it: no call blocked,
no error through its flow, and no round of calls that runs nothing.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import Bridged
from budgetconf.loop import Call, StopReason, Usage, running

if TYPE_CHECKING:
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import AgentModel, BridgeResult
    from budgetconf.integrations._threaded import Relay
    from budgetconf.loop import Budget

_FRAMEWORK = FRAMEWORKS["crewai"]
_ERROR = "Error executing tool: "  # how CrewAI answers the model for a tool that raised


class Watch:
    """The run's `Bridged` Meter, its hooks, and the LLM it lends the agent (see above)."""

    def __init__(
        self,
        agent: Any,
        budget: Budget,
        tools: frozenset[str],
        on_event: Sink | None,
        name: str | None,
        model: AgentModel,
        relay: Relay | None = None,
    ) -> None:
        self.agent = agent
        self.relay = relay
        self.bridged = Bridged(
            _FRAMEWORK, budget, tools=tools, on_event=on_event, name=name, model=model
        )
        self.llm = _lent_llm(agent.llm, self)
        self.local = threading.local()  # the tool call in progress on each thread
        self.abandoned = False  # the deadline passed with the run on its thread

    # -- the hooks ----------------------------------------------------------------------------

    def before_llm(self, context: Any) -> bool | None:
        """CrewAI's ``before_llm_call``: once the run has ended, False blocks a call the LLM
        itself asked for (and any call, once the caller closed the stream); a call of the
        agent's loop goes on to the lent LLM, which answers it without a request
        (`_lent_llm`), so CrewAI ends the run as an answer ends it."""
        if context.llm is not self.llm:
            return None  # another model's call (a nested run's): not this run's
        if self.closed:  # the caller closed the stream: no call more
            return False
        bridged = self.bridged
        if bridged.stop is not None or bridged.call() is not None:
            return None if context.executor is not None else False
        executor = context.executor
        notice = bridged.notice(bool(getattr(executor, "_openai_tools", None)))
        if notice is not None:  # the last call: what it asks stays in no later request
            context.messages.append({"role": "user", "content": notice})
        return None

    def before_tool(self, context: Any) -> bool | None:
        """CrewAI's ``before_tool_call``: the call runs if the Meter runs it, else it is
        blocked, and `after_tool` gives its answer."""
        if context.agent is not self.agent:
            return None
        if self.closed:  # the caller closed the stream: the run runs nothing more
            return False
        decided = self.bridged.tool_started(None, context.tool_name)
        if isinstance(decided, str):
            self.local.answer = decided
            return False
        scope = running(self.bridged.meter)
        scope.__enter__()  # the tool sees the bridged run as current_run()
        self.local.running = (decided, scope)
        return None

    def after_tool(self, context: Any) -> str | None:
        """CrewAI's ``after_tool_call``: a blocked call's answer, or the call recorded."""
        if context.agent is not self.agent:
            return None
        local = self.local
        answer: str | None = getattr(local, "answer", None)
        if answer is not None:
            local.answer = None
            return answer
        started: tuple[Call, AbstractContextManager[None]] | None = getattr(local, "running", None)
        if started is None:
            return None
        local.running = None
        call, scope = started
        scope.__exit__(None, None, None)
        raw = context.raw_tool_result
        failed = isinstance(raw, str) and raw == context.tool_result and raw.startswith(_ERROR)
        error = RuntimeError(raw[len(_ERROR) :]) if failed else None
        self.bridged.tool_ended(call, error, context.tool_result)
        return None

    # -- what the lent LLM reports ------------------------------------------------------------

    def completed(self, response: Any, usage: Any, finish_reason: Any) -> None:
        """A model call of the lent LLM returned ``response`` with ``usage``."""
        bridged = self.bridged
        if bridged.stop is not None:
            return
        try:
            read = _usage(usage)
        except Unreadable as exc:
            bridged.unreadable(exc)
            return
        # a response's calls come as their list, its answer as text (a structured one too)
        calls = [_call(made) for made in response] if isinstance(response, list) else []
        text = None if calls else _text(response)
        finish = finish_reason if isinstance(finish_reason, str) else None
        bridged.answered(read, text, calls, finish)

    def answered(self, answer: Any) -> Any:
        """What the lent LLM gives CrewAI's loop for a response: the response, or, for calls
        none of which runs when the run ends at the next call (the step budget's last turn, a
        budget the response spent), the stop's words, so that CrewAI ends the run there, as
        at an answer, without a round of calls that runs nothing."""
        bridged = self.bridged
        plan = bridged.plan
        if not isinstance(answer, list) or plan is None or plan.run:
            return answer
        if plan.stop is None and not bridged.meter.last:
            return answer
        end = bridged.call()  # the calls not run are recorded, and the run ends
        return answer if end is None else end.message

    @property
    def closed(self) -> bool:
        """A streamed run whose caller has closed its stream."""
        return self.relay is not None and self.relay.closed.is_set()

    def failed(self, error: Any) -> None:
        """A model call of the lent LLM raised (after the client's retries)."""
        if self.bridged.stop is None and not self.closed:
            self.bridged.call_failed(RuntimeError(str(error)))

    # -- the run ------------------------------------------------------------------------------

    @contextmanager
    def hooks(self) -> Iterator[None]:
        """This run's hooks, in an execution scope of CrewAI's own over the caller's."""
        from crewai.hooks.dispatch import (
            InterceptionPoint,
            _scoped_hooks_var,
            scoped_hooks,
        )

        theirs = _scoped_hooks_var.get() or {}
        scope = {point: list(hooks) for point, hooks in theirs.items()}
        for point, hook in (
            (InterceptionPoint.PRE_MODEL_CALL, self.before_llm),
            (InterceptionPoint.PRE_TOOL_CALL, self.before_tool),
            (InterceptionPoint.POST_TOOL_CALL, self.after_tool),
        ):
            scope.setdefault(point, []).append(hook)
        with scoped_hooks(scope):
            yield

    @contextmanager
    def lent(self) -> Iterator[None]:
        """The agent runs on the lent LLM; its own is back afterwards, also on error."""
        agent = self.agent
        own = agent.llm
        object.__setattr__(agent, "llm", self.llm)
        try:
            yield
        finally:
            object.__setattr__(agent, "llm", own)

    def seconds_left(self) -> float | None:
        deadline = self.bridged.meter.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def kickoff(self, input: str, kwargs: dict[str, Any], threaded: bool) -> BridgeResult:
        """``agent.kickoff(input)`` within this run's hooks: inline, or on a thread of its own
        (a deadline, which abandons it; a caller inside an event loop, where CrewAI's kickoff
        would hand back a coroutine)."""
        if not threaded:
            return self._kickoff(input, kwargs)
        outcome: list[BridgeResult | BaseException] = []
        done = threading.Event()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                outcome.append(context.run(self._kickoff, input, kwargs))
            except BaseException as exc:  # handed to the caller, which raises it
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=work, name="budgetconf-crewai", daemon=True).start()
        if not done.wait(self.seconds_left()):
            self.abandoned = True
            return self.bridged.stopped(StopReason.TIMEOUT, TimeoutError("the run's deadline"))
        ended = outcome[0]
        if isinstance(ended, BaseException):
            raise ended
        return ended

    def _kickoff(self, input: str, kwargs: dict[str, Any]) -> BridgeResult:
        bridged = self.bridged
        with self.hooks():
            try:
                output = self.agent.kickoff(input, **kwargs)
            except Exception as exc:  # a blocked call, a model's failure, or the framework's
                if self.abandoned:  # the caller has the deadline's result already
                    raise
                if self.closed:
                    return bridged.cancelled(exc)
                return bridged.failed(exc)
        if bridged.stop is not None:
            return bridged.result(output)
        return bridged.result(output, _text(getattr(output, "raw", output)))


def _lent_llm(llm: Any, watch: Watch) -> Any:
    """A copy of the agent's LLM whose completed and failed calls ``watch`` reads first (and,
    for a streamed run, which streams each call, its text handed to the stream's relay)."""
    copy = llm.model_copy()
    relay = watch.relay
    if relay is not None:
        pieces = copy._emit_stream_chunk_event

        def emit_chunk(chunk: Any, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("tool_call") is None:
                relay.piece(chunk)
            pieces(chunk, *args, **kwargs)

        object.__setattr__(copy, "stream", True)
        object.__setattr__(copy, "_emit_stream_chunk_event", emit_chunk)
    completed, failed = copy._emit_call_completed_event, copy._emit_call_failed_event

    def emit_completed(response: Any, *args: Any, **kwargs: Any) -> None:
        watch.completed(response, kwargs.get("usage"), kwargs.get("finish_reason"))
        completed(response, *args, **kwargs)

    def emit_failed(error: Any, *args: Any, **kwargs: Any) -> None:
        watch.failed(error)
        failed(error, *args, **kwargs)

    def call(*args: Any, **kwargs: Any) -> Any:
        # the run has ended: the loop's call (its hook passed it on) is answered with no
        # request, by the stop's words, and CrewAI's loop ends there, as at an answer
        stop = watch.bridged.stop
        if stop is not None:
            return stop.message
        return watch.answered(real(*args, **kwargs))

    real = copy.call
    object.__setattr__(copy, "call", call)
    object.__setattr__(copy, "_emit_call_completed_event", emit_completed)
    object.__setattr__(copy, "_emit_call_failed_event", emit_failed)
    return copy


def _call(made: Any) -> Call:
    """A tool call of a response, as CrewAI's executor reads it (its name sanitized)."""
    import json

    from crewai.utilities.agent_utils import (
        extract_tool_call_info,
    )

    call_id, name, arguments = extract_tool_call_info(made) or ("", "", "{}")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        raw = arguments
    else:
        parsed, raw = arguments, json.dumps(arguments)
    return Call(str(call_id), str(name), parsed if isinstance(parsed, dict) else None, raw)


def _usage(usage: Any) -> Usage:
    """CrewAI's usage of one response (its provider's, as a dict) as budgetconf's."""
    if not isinstance(usage, dict):
        return Usage()
    counts = {
        key: reported_tokens(usage[key], f"usage.{key}")
        for key in ("prompt_tokens", "completion_tokens", "total_tokens", "cached_prompt_tokens")
        if usage.get(key) is not None
    }
    inputs = counts.get("prompt_tokens", 0)
    outputs = counts.get("completion_tokens", 0)
    total = counts.get("total_tokens") or inputs + outputs
    return Usage(inputs, counts.get("cached_prompt_tokens", 0), outputs, total)


def _text(answer: object) -> str:
    return answer if isinstance(answer, str) else str(answer)
