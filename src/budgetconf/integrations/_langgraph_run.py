"""One bridged run of a LangGraph graph: its `Bridged` Meter, and what the streamed states show.

`budgetconf.integrations.langgraph.run` (and `arun`) makes a `GraphRun` per
run and streams the graph with ``stream_mode="values"``, handing it each state.

- A ``create_agent`` graph that carries the bridge's `middleware()` is driven
  by that middleware (``_langchain_middleware``), which finds the run through
  `METERING`: it asks the Meter before each model call and routes each tool
  call through it. The states only keep the last one, and end the stream once
  the Meter has stopped the run and the stopping response's calls have their
  answers.
- Any other graph is driven by its states, after each step: an AI message not
  seen before is a model response (`Bridged.answered`), a tool message
  answering one of its calls is a call that ran, and a state whose last message
  waits for the model's answer is where the next model call is asked for
  (`Bridged.call`), before the model's node runs. When the Meter does not run
  every call of a response, the stream ends there, before the tools node.

Nothing of the caller's is changed: the graph, its nodes and its config are
read, never set, so one graph may serve runs at once. `graph_model` finds the
chat model a graph's nodes call (``create_agent``'s model node holds it), whose
price a cost budget holds at.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Container, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.integrations._bridge import NAMELESS, AgentModel
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._metered import Bridged
from budgetconf.loop import Call, Usage

if TYPE_CHECKING:
    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import BridgeResult
    from budgetconf.loop import Budget, RunResult

#: the bridged run the graph is running in, if any: what the bridge's middleware drives
METERING: ContextVar[GraphRun | None] = ContextVar("budgetconf_langgraph_run", default=None)
_AI: Final = frozenset({"ai", "AIMessageChunk"})


class Ended(Exception):
    """The Meter's end of the run, decided inside the graph (before a model call, or at an
    unreadable response): raised there, so the graph's run stops."""

    def __init__(self, end: RunResult) -> None:
        super().__init__(end.message)
        self.end = end


class Everything:
    """The tools of a graph whose tool node the bridge cannot see: every call may run."""

    def __contains__(self, name: object) -> bool:
        return True


class ToolFailed(Exception):
    """A tool message with ``status="error"``: the call ran and failed (its text is why)."""


class GraphRun:
    """One run of a graph within a budget (see above).

    ``owners`` are the bridge's middleware in the graph (none: the states drive
    the Meter); ``tools`` the names of the tools its tool nodes run.
    """

    __slots__ = ("asked", "bridged", "lock", "owners", "see", "seen", "state", "tools", "waiting")

    def __init__(
        self,
        budget: Budget,
        *,
        owners: tuple[object, ...],
        tools: Container[str],
        on_event: Sink | None,
        name: str | None,
        model: AgentModel = NAMELESS,
    ) -> None:
        self.owners = owners
        self.tools = tools
        self.bridged = Bridged(
            FRAMEWORKS["langgraph"], budget, tools=tools, on_event=on_event, name=name, model=model
        )
        # the middleware's sync tool calls run on worker threads, one per call of a response:
        # their bookkeeping in the Meter is taken in turn
        self.lock = threading.Lock()
        self.state: object = None
        self.seen: set[object] | None = None  # the messages of the states seen so far
        self.asked = False  # the next model call was asked for, and its response not yet seen
        self.waiting: set[str] = set()  # the calls of the last response not yet answered
        self.see = self._carried if owners else self._streamed

    # -- the states ----------------------------------------------------------------------------

    def _carried(self, state: object) -> bool:
        """With the middleware: True once the Meter has stopped the run and the stopping
        response's calls have their answers (the next step would only be refused)."""
        self.state = state
        if self.bridged.stop is None:
            return False
        messages = _messages(state)
        last = messages[-1] if messages else None
        return not (_is_ai(last) and getattr(last, "tool_calls", None))

    def _streamed(self, state: object) -> bool:
        """Without it: the state drives the Meter; True when the stream must end here."""
        self.state = state
        messages = _messages(state)
        seen = self.seen
        if seen is None:  # the input, or the state a resumed thread starts from
            self.seen = {_key(m) for m in messages}
            return self._ask(messages)
        new = []
        for message in reversed(messages):  # what this step added is at the end
            key = _key(message)
            if key in seen:
                break
            seen.add(key)
            new.append(message)
        for message in reversed(new):
            kind = getattr(message, "type", None)
            if kind == "tool":
                self._ran(message)
            elif kind in _AI and self._answered(message):
                return True
        return self._ask(messages)

    def _ask(self, messages: list[Any]) -> bool:
        """Ask for the next model call when the state waits for the model's answer: its last
        message is not the model's, and every call of the last response has its answer."""
        if self.asked or self.waiting or (messages and _is_ai(messages[-1])):
            return False
        self.asked = True
        return self.bridged.call() is not None

    def _answered(self, message: object) -> bool:
        """A model response: True when the Meter stopped the run (its calls do not run: the
        budget leaves the graph no per-response cap to answer in their place)."""
        bridged = self.bridged
        if not self.asked and bridged.call() is not None:  # made already: the run ends here
            return True
        self.asked = False
        try:
            usage = usage_of(message)
        except Unreadable as exc:
            bridged.unreadable(exc)
            return True
        calls = calls_of(message)
        plan = bridged.answered(usage, text_of(message) or None, calls, finish_of(message))
        self.waiting = {c.id for c in calls}
        return plan.stop is not None

    def _ran(self, message: Any) -> None:
        """A tool message: the call it answers ran, if the Meter let it run."""
        call_id = getattr(message, "tool_call_id", None)
        self.waiting.discard(call_id)
        plan = self.bridged.plan
        if plan is None:  # no response of this run asked for it (a resumed thread's)
            return
        name = next((c.name for c in plan.calls if c.id == call_id), None)
        if name is None or name not in self.tools:
            return
        if getattr(message, "status", None) != "error":
            self.bridged.tool(call_id, name, lambda: text_of(message))  # it has run already
            return
        with contextlib.suppress(ToolFailed):  # it failed in the tool node: so it is told
            self.bridged.tool(call_id, name, _raiser(ToolFailed(text_of(message))))

    # -- the end -------------------------------------------------------------------------------

    def seconds_left(self) -> float | None:
        """What is left of the Meter's deadline, in seconds; None without one."""
        import time

        deadline = self.bridged.meter.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def result(self) -> BridgeResult:
        """The graph's run ended (the stream ran out, or was ended here): its result, with the
        last state as ``native``; a completed run's output is its last AI text."""
        bridged = self.bridged
        if bridged.stop is None and bridged.meter.ended is None:
            return bridged.result(self.state, last_text(self.state))
        return bridged.result(self.state)


def _raiser(exc: BaseException) -> Any:
    def invoke() -> None:
        raise exc

    return invoke


def graph_model(bound: list[Any]) -> AgentModel:
    """The chat model of `chat_model`, named by its LangSmith parameters, with its client's
    base URL; `NAMELESS` when none is found, or one that gives no name (a fake chat model)."""
    model = chat_model(bound)
    return NAMELESS if model is None else _named(model)


def chat_model(bound: list[Any]) -> Any:
    """The chat model the graph's nodes call (what ``bound``, each node's runnable, holds in
    its function's closure, as ``create_agent``'s model node does); None when none is found
    (a node that reaches its model otherwise)."""
    for runnable in bound:
        for function in (getattr(runnable, "func", None), getattr(runnable, "afunc", None)):
            for cell in getattr(function, "__closure__", None) or ():
                model = _chat_model(cell)
                if model is not None:
                    return model
    return None


def streams_no_usage(model: object) -> bool:
    """Whether ``model`` streams its responses without their usage: a chat model that reports
    it only when asked (langchain-openai's ``stream_usage``, left unset for a ``base_url`` of
    the caller's) and is not asked."""
    fields = getattr(type(model), "model_fields", {})
    if "stream_usage" not in fields or getattr(model, "stream_usage", None) is True:
        return False
    options = (getattr(model, "model_kwargs", None) or {}).get("stream_options") or {}
    return options.get("include_usage") is not True


def asking_usage(model: Any) -> Any:
    """``model``, asking for each streamed response's usage (`streams_no_usage`): a copy,
    the caller's model unchanged."""
    return model.model_copy(update={"stream_usage": True}) if streams_no_usage(model) else model


def _chat_model(cell: Any) -> Any:
    """The chat model a closure's cell holds, itself or bound (``bind_tools``), or None."""
    from langchain_core.language_models import BaseChatModel

    try:
        value = cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None
    for _ in range(3):  # a binding of a binding of the model, at most
        if isinstance(value, BaseChatModel):
            return value
        value = getattr(value, "bound", None)
    return None


def _named(model: Any) -> AgentModel:
    """A chat model's name and provider as LangSmith reads them (``ls_model_name``,
    ``ls_provider``), and the base URL its client calls (``openai_api_base``, ``base_url``)."""
    try:
        params = model._get_ls_params()
    except Exception:  # a model of the caller's whose parameters fail: read what it has
        params = {}
    name = params.get("ls_model_name") or getattr(model, "model_name", None)
    url = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None)
    return AgentModel(name, params.get("ls_provider"), url)


def usage_of(message: object) -> Usage:
    """An AI message's ``usage_metadata`` as budgetconf's `Usage` (`Unreadable` when a count
    cannot be one response's), with the model its ``response_metadata`` names."""
    meta = getattr(message, "response_metadata", None)
    model = meta.get("model_name") if isinstance(meta, Mapping) else None
    model = model if isinstance(model, str) and model else None
    usage = getattr(message, "usage_metadata", None)
    if not isinstance(usage, Mapping):
        return Usage(model=model)
    total = reported_tokens(usage.get("total_tokens", 0), "usage_metadata.total_tokens")
    details = usage.get("input_token_details")
    cached = details.get("cache_read") if isinstance(details, Mapping) else None
    return Usage(
        reported_tokens(usage.get("input_tokens", 0), "usage_metadata.input_tokens"),
        reported_tokens(
            0 if cached is None else cached, "usage_metadata.input_token_details.cache_read"
        ),
        reported_tokens(usage.get("output_tokens", 0), "usage_metadata.output_tokens"),
        total,
        model=model,
    )


def calls_of(message: object) -> tuple[Call, ...]:
    """An AI message's tool calls as the Meter's `Call`s."""
    found = getattr(message, "tool_calls", None)
    if not found:
        return ()
    calls = []
    for found_call in found:
        args = found_call.get("args")
        calls.append(
            Call(
                found_call.get("id") or "",
                found_call.get("name", ""),
                args if isinstance(args, dict) else None,
            )
        )
    return tuple(calls)


def finish_of(message: object) -> str | None:
    """The ``finish_reason`` an AI message's provider reported, if it did."""
    meta = getattr(message, "response_metadata", None)
    found = meta.get("finish_reason") if isinstance(meta, Mapping) else None
    return found if isinstance(found, str) and found else None


def text_of(message: object) -> str:
    """A message's text: its content, or the text blocks of its content."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(
        p if isinstance(p, str) else str(p.get("text", ""))
        for p in parts
        if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
    )


def last_text(state: object) -> str:
    """The text of the last AI message of ``state``, or ""."""
    for message in reversed(_messages(state)):
        if _is_ai(message):
            return text_of(message)
    return ""


def _messages(state: object) -> list[Any]:
    found = (
        state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    )
    return found if isinstance(found, list) else []


def _is_ai(message: object) -> bool:
    return getattr(message, "type", None) in _AI


def _key(message: object) -> object:
    found = getattr(message, "id", None)
    return found if found is not None else id(message)
