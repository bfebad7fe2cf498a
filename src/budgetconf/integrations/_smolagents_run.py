"""One bridged smolagents run: the agent's model and tools, wrapped for the run, feed its Meter.

smolagents makes every model call through ``agent.model`` (each step's, each
plan's, its forced final answer's) and every tool call of a
``ToolCallingAgent`` through ``agent.tools``. So a run borrows both: a model
that asks the run's `Bridged` before each call and hands it each response,
and a wrapper in each tool's place that lets the Meter decide each call
smolagents makes (run it, or answer it as not executed, rejected or skipped,
without running it). The bridge counts nothing itself.

smolagents gives a tool no call id, so a wrapper finds its call among the
response's by name and arguments. A response whose only call is smolagents'
``final_answer`` is the run's final answer, not a tool call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from smolagents.agents import RunResult  # type: ignore[import-untyped]
from smolagents.memory import FinalAnswerStep  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    LiteLLMModel,
    MessageRole,
    OpenAIModel,
    agglomerate_stream_deltas,
    parse_json_if_needed,
)
from smolagents.tools import BaseTool  # type: ignore[import-untyped]
from smolagents.utils import AgentError  # type: ignore[import-untyped]

from budgetconf._loop_table import LastTurn, StopReason
from budgetconf._usage import Unreadable, Usage, reported_tokens
from budgetconf.integrations._bridge import AgentModel

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from collections.abc import Callable
    from typing import Any, Final

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import BridgeResult
    from budgetconf.integrations._frameworks import Framework
    from budgetconf.integrations._metered import Bridged
    from budgetconf.loop import Budget

#: smolagents' own answer tool: a call of it is the run's final answer, not a tool call
FINAL_ANSWER: Final = "final_answer"


class Ended(BaseException):
    """The Meter ended the run before a model call, or during one (the deadline).

    Raised from the agent's model and caught by `run()`. Not an `Exception`:
    smolagents catches those around its model calls, wrapping a step's and
    swallowing its forced final call's, and the run must end here.
    """


class Session:
    """One run of ``agent`` within ``budget``: its `Bridged` Meter, and what it borrows.

    ``gated`` says whether its tools are wrapped (a ``ToolCallingAgent``'s);
    a ``CodeAgent`` calls its tools inside the code it writes, where no plan
    can answer a call.
    """

    def __init__(
        self,
        framework: Framework,
        agent: Any,
        budget: Budget,
        gated: bool,
        on_event: Sink | None,
        name: str | None,
        model: AgentModel,
    ) -> None:
        from budgetconf.integrations._metered import Bridged
        from budgetconf.loop import Call

        self.call_of = Call  # bound here: the loop is loaded by the run, not by the import
        self.agent = agent
        self.gated = gated
        own = [n for n in agent.tools if n != FINAL_ANSWER]
        self.bridged: Bridged = Bridged(
            framework,
            budget,
            tools=frozenset(own if gated else ()),
            on_event=on_event,
            name=name,
            model=model,
        )
        self.meter = self.bridged.meter
        if gated:  # the notice goes with a call that offers tools: a step's, not a plan's
            self.tooled = bool(own or agent.managed_agents)
        else:  # the preset's warning says that tools called now will not run: in code they do
            self.tooled = bool(own) and budget.last_turn is not LastTurn.WARN
        self.steps = int(budget.limits["max_steps"].value)
        given = getattr(agent.model, "model_id", None)  # for a response that names no model
        self.model_id = given if isinstance(given, str) and given else None
        self.claims: list[tuple[str, object, str]] = []  # the response's calls, to be found
        # a step's response without calls, whose calls smolagents parses from its text next
        self.waiting: tuple[Usage, ChatMessage] | None = None
        # held while a wrapper finds its call and the Meter decides or records it; smolagents
        # runs a response's calls on threads of its own
        self.lock = threading.Lock()

    @contextmanager
    def borrowed(self) -> Iterator[None]:
        """The agent with the run's model, tools and ``max_steps``; its own put back after."""
        agent = self.agent
        saved = agent.model, agent.tools, agent.max_steps
        model, tools = saved[0], saved[1]
        kind = _StreamingModel if hasattr(model, "generate_stream") else _Model
        if self.gated:
            tools = {n: t if n == FINAL_ANSWER else _Tool(t, self) for n, t in tools.items()}
        # max_steps above the budget, so the Meter stops the run before smolagents' forced call
        agent.model, agent.tools, agent.max_steps = kind(model, self), tools, self.steps + 1
        try:
            yield
        finally:
            agent.model, agent.tools, agent.max_steps = saved

    # -- a model call ----------------------------------------------------------------------

    def before(self, messages: list[Any], offered: bool) -> list[Any]:
        """Before a model call: the Meter's leave (or the run's end, raised), and the input
        with the last-turn notice, if the call carries one."""
        self.flush()
        if self.bridged.call() is not None:
            raise Ended
        notice = self.bridged.notice(self.tooled and (offered or not self.gated))
        if notice is None:
            return messages
        said = ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": notice}])
        return [*messages, said]

    def within(
        self, generate: Callable[..., Any], messages: list[Any], args: Any, kwargs: Any
    ) -> Any:
        """``generate(messages, ...)``, abandoned at the run's deadline; a failure the Meter's."""
        deadline = self.meter.deadline
        try:
            if deadline is None:
                return generate(messages, *args, **kwargs)
            return self._until(deadline, generate, messages, args, kwargs)
        except Exception as exc:  # smolagents ends the run with it: so does the Meter
            self.bridged.call_failed(exc)
            raise

    def _until(
        self,
        deadline: float,
        generate: Callable[..., Any],
        messages: list[Any],
        args: Any,
        kwargs: Any,
    ) -> Any:
        """The call on a thread of its own, waited for until ``deadline``, as the executor
        waits for a call it cannot cancel; past it the run stops, and the call is left."""
        import concurrent.futures
        import contextvars

        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                future.set_result(context.run(generate, messages, *args, **kwargs))
            except BaseException as exc:  # handed to the waiting thread, which decides
                future.set_exception(exc)

        threading.Thread(target=work, name="budgetconf-smolagents-call", daemon=True).start()
        try:
            return future.result(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if future.done():  # the model's own TimeoutError, or done just in time
                return future.result()
        self.bridged.stopped(StopReason.TIMEOUT, None)
        raise Ended

    def after(self, message: ChatMessage, offered: bool) -> None:
        """After a model call: its response to the Meter, or kept until smolagents has parsed
        the calls a step's response writes as text."""
        try:
            usage = _usage(message, self.model_id)
        except Unreadable as exc:  # the run ends here, before the response's tools
            self.bridged.unreadable(exc)
            raise Ended from None
        if offered and self.gated and not message.tool_calls:
            self.waiting = usage, message
            return
        self._answered(usage, message, message.tool_calls)

    def parsed(self, message: ChatMessage | None) -> None:
        """smolagents has parsed the calls of the response kept (None: it could not)."""
        waiting, self.waiting = self.waiting, None
        if waiting is not None and self.meter.ended is None:  # an ended run hears no more
            usage, kept = waiting
            self._answered(usage, kept, None if message is None else message.tool_calls)

    def flush(self) -> None:
        """A response kept for its parsed calls that smolagents never parsed: as it came."""
        if self.waiting is not None:
            self.parsed(None)

    def _answered(self, usage: Usage, message: ChatMessage, tool_calls: Any) -> None:
        call_of = self.call_of
        calls = []
        claims = []
        for made in tool_calls or ():
            function = made.function
            if function.name == FINAL_ANSWER:  # the answer, not a call the budget counts
                continue
            given = function.arguments
            value = {} if given is None else parse_json_if_needed(given)
            call_id = str(made.id)
            # not a dict: smolagents passes it as the tool's one input, and checks it
            calls.append(call_of(call_id, function.name, value if isinstance(value, dict) else {}))
            claims.append((function.name, value, call_id))
        self.claims = claims  # between a response's calls: no wrapper is running
        content = text_of(message.content)
        self.bridged.answered(usage, content or None, calls, _finish_reason(message.raw))

    # -- a tool call -----------------------------------------------------------------------

    def tool(self, wrapper: _Tool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call smolagents makes of a wrapped tool: run as the Meter decides, or answered."""
        if args:
            value: object = args[0] if len(args) == 1 else args
        else:
            value = {k: v for k, v in kwargs.items() if k != "sanitize_inputs_outputs"}
        tool = wrapper._wrapped
        lock = self.lock

        def invoke() -> Any:
            lock.release()  # other calls of the response may be decided while this one runs
            try:
                return tool(*args, **kwargs)
            finally:
                lock.acquire()

        with lock:
            return self.bridged.tool(self._claim(wrapper.name, value), wrapper.name, invoke)

    def _claim(self, name: str, value: object) -> str | None:
        """The id of the response's call this one is: the first of its name and arguments
        not yet claimed, else the first of its name (smolagents may have replaced an
        argument by a state variable's value)."""
        claims = self.claims
        found = -1
        for index, (called, given, _) in enumerate(claims):
            if called != name:
                continue
            if found < 0:
                found = index
            try:
                same = bool(given == value)
            except Exception:  # a value whose comparison is its own code
                same = False
            if same:
                found = index
                break
        return None if found < 0 else claims.pop(found)[2]

    # -- the end ---------------------------------------------------------------------------

    def end(self, exc: BaseException) -> BridgeResult:
        """The run's end, as ``exc`` (what ``agent.run`` or its stream raised) ends it; an
        exception that is no run's end (the process leaving) is raised again, once recorded."""
        if isinstance(exc, Ended):
            return self.ended()
        if isinstance(exc, KeyboardInterrupt):  # as the executor takes one: the run cancelled
            return self.cancelled(exc)
        if isinstance(exc, Exception):
            if isinstance(exc, AgentError) and self.agent.interrupt_switch:
                return self.cancelled(exc)  # the caller's agent.interrupt()
            return self.failed(exc)
        self.failed(exc)
        raise exc

    def ended(self) -> BridgeResult:
        """The Meter ended the run before (or during) a model call: smolagents neither
        returned nor raised, so there is no result of its own."""
        return self.bridged.result(None)

    def failed(self, exc: BaseException) -> BridgeResult:
        """smolagents raised ``exc``: the Meter's end if it had one, else failed."""
        self.flush()
        return self.bridged.failed(exc)

    def cancelled(self, exc: BaseException) -> BridgeResult:
        """The run was interrupted (``agent.interrupt()``, a KeyboardInterrupt): cancelled, as
        the executor's run is between calls."""
        self.flush()
        meter = self.meter
        meter.finish(StopReason.CANCELLED, f"cancelled on turn {meter.turns}")
        return self.bridged.result(exc)

    def finished(self, native: Any) -> BridgeResult:
        """smolagents ended the run with its final answer (``native``, or the ``output`` of
        its `RunResult` or of its stream's `FinalAnswerStep`)."""
        self.flush()
        answer = native.output if isinstance(native, RunResult | FinalAnswerStep) else native
        return self.bridged.result(native, text_of(answer))


class _Model:
    """The agent's model for the run: the Meter is asked before each call and told after."""

    def __init__(self, model: Any, session: Session) -> None:
        self._wrapped = model
        self._session = session

    def __getattr__(self, name: str) -> Any:  # everything else is the model's own
        if name in ("_wrapped", "_session"):
            raise AttributeError(name)
        return getattr(self._wrapped, name)

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        session = self._session
        offered = _offered(args, kwargs)
        sent = session.before(messages, offered)
        message = session.within(self._wrapped.generate, sent, args, kwargs)
        session.after(message, offered)
        return message

    __call__ = generate

    def parse_tool_calls(self, message: ChatMessage) -> ChatMessage:
        try:
            parsed = self._wrapped.parse_tool_calls(message)
        except BaseException:
            self._session.parsed(None)  # smolagents raises a parsing error: no calls
            raise
        self._session.parsed(parsed)
        return parsed


class _StreamingModel(_Model):
    """`_Model` of a model that streams: smolagents streams when asked to and it can."""

    def generate_stream(self, messages: list[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        session = self._session
        offered = _offered(args, kwargs)
        sent = session.before(messages, offered)
        deltas = []
        try:  # a stream is not abandoned at the deadline: it is checked before and after
            for delta in self._wrapped.generate_stream(sent, *args, **kwargs):
                deltas.append(delta)
                yield delta
            message = agglomerate_stream_deltas(deltas)
        except Exception as exc:
            session.bridged.call_failed(exc)
            raise
        session.after(message, offered)


class _Tool(BaseTool):  # type: ignore[misc]
    """A tool of the agent's, for the run: each call smolagents makes goes to the Meter."""

    def __init__(self, tool: Any, session: Session) -> None:
        self.name = tool.name
        self._wrapped = tool
        self._session = session
        # what smolagents reads of a tool at every call (its schema, its checks), kept here
        for name in _READ:
            if hasattr(tool, name):
                setattr(self, name, getattr(tool, name))

    def __getattr__(self, name: str) -> Any:  # its schema, prompt and the rest are the tool's
        if name in ("_wrapped", "_session"):
            raise AttributeError(name)
        return getattr(self._wrapped, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.tool(self, args, kwargs)


#: a tool's attributes smolagents reads at each model call and tool call
_READ: Final = ("description", "inputs", "output_type", "output_schema")


def _offered(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether a ``generate`` call offers tools (``tools_to_call_from``, its fourth parameter)."""
    tools = kwargs.get("tools_to_call_from", args[2] if len(args) > 2 else None)
    return bool(tools)


def agent_model(model: Any) -> AgentModel:
    """The agent's model by its ``model_id``: an OpenAI-compatible one's provider is its
    client's base URL's (``openai`` unless the host names another), a LiteLLM one's the
    ``provider/`` prefix of its id (genai-prices reads it as ``litellm``)."""
    name = getattr(model, "model_id", None)
    if isinstance(model, LiteLLMModel):
        return AgentModel(name, "litellm", getattr(model, "api_base", None))
    if isinstance(model, OpenAIModel):
        return AgentModel(name, "openai", getattr(getattr(model, "client", None), "base_url", None))
    return AgentModel(name)


def _usage(message: ChatMessage, model_id: str | None) -> Usage:
    """A response's ``token_usage`` as budgetconf's `Usage`, with the cached input tokens and
    the model's name where the raw response gives them (else ``model_id``); `Unreadable` past
    what one response can use."""
    raw = message.raw
    model = getattr(raw, "model", None)
    name = model if isinstance(model, str) and model else model_id
    used = message.token_usage
    if used is None:  # a model that reports none counts nothing
        return Usage(model=name)
    total = reported_tokens(used.total_tokens, "usage.total_tokens")
    inputs = reported_tokens(used.input_tokens, "usage.input_tokens")
    outputs = reported_tokens(used.output_tokens, "usage.output_tokens")
    details = getattr(getattr(raw, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if type(cached) is int:  # an OpenAI-compatible response's, read as the executor reads it
        cached = reported_tokens(cached, "usage.prompt_tokens_details.cached_tokens")
    else:
        cached = 0
    return Usage(inputs, cached, outputs, total, model=name)


def _finish_reason(raw: object) -> str | None:
    """Why the raw response says it ended (``length``, ``content_filter``), where it says."""
    choices = getattr(raw, "choices", None)
    if not isinstance(choices, list | tuple) or not choices:
        return None
    reason = getattr(choices[0], "finish_reason", None)
    return reason if isinstance(reason, str) and reason else None


def text_of(content: object) -> str:
    """A model's content or a final answer as text: a list of parts joined, None as ``""``."""
    if content is None:
        return ""
    if isinstance(content, list):
        parts = (p.get("text") for p in content if isinstance(p, Mapping))
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)
