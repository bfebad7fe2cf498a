"""The pydantic-ai bridge's part inside the framework's run: a capability that meters it.

`Metering` is one run's pydantic-ai capability, given to ``agent.run(...,
capabilities=[...])``, so the caller's agent is never changed. It wraps:

- each model that serves a request (`get_wrapper_model`, called for every
  attempt, whichever model serves it: the agent's, the run's ``model=``, an
  ``override(model=...)``, a capability's choice) in a `MeteredModel`, whose
  request asks the run's `Bridged` first, carries the last-turn notice and
  hands the response to the Meter before pydantic-ai runs any of its tools;
- the run's assembled toolset (`get_wrapper_toolset`: the agent's tools, its
  toolsets and the run's ``toolsets=``; output tools are not among them) in a
  `MeteredTools`, whose ``call_tool`` goes through `Bridged.atool`, so the
  Meter decides each call and a call it does not run is answered with its text.

`agent_model` names the run's model, whose price prices a response pydantic-ai
could not price itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Self

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.messages import ModelRequest, ToolCallPart, UserPromptPart
from pydantic_ai.models.instrumented import InstrumentedModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.toolsets.wrapper import WrapperToolset

from budgetconf._usage import Unreadable, reported_cost, reported_tokens
from budgetconf.integrations._bridge import NAMELESS, AgentModel

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

    from budgetconf.integrations._metered import Bridged
    from budgetconf.loop import Call, RunResult, Usage

#: pydantic-ai's finish reasons that mean what the executor's ``length`` and
#: ``content_filter`` mean (a response cut short, or blocked); the others are read from the calls
_BLOCKS: Final = {"length": "length", "content_filter": "content_filter"}


class Ended(AgentRunError):
    """The Meter's end of the run, decided before a model call (or on a response no model can
    give): raised from the model's place, so pydantic-ai leaves the run without the call."""

    def __init__(self, end: RunResult) -> None:
        super().__init__(end.message)
        self.end = end


@dataclass(eq=False)  # one run's own: equal to itself only
class Metering(AbstractCapability[Any]):
    """One bridged run's capability: its model and its tools go through ``bridged``."""

    bridged: Bridged
    #: the names of the function tools the current request offers: the calls the run can run
    tools: set[str]
    _: KW_ONLY
    #: the wrapper of each model that has served this run, by the model's identity
    models: dict[int, MeteredModel] = field(default_factory=dict)
    #: the models (by name, provider and its address) pydantic-ai has no price for: not asked
    #: again in this run, since pydantic-ai asks once more itself
    unpriced: set[tuple[str | None, str | None, str | None]] = field(default_factory=set)
    #: the loop's `Call` and `Usage`, what each response is told to the Meter as
    call_type: type[Call] = field(init=False, repr=False)
    usage_type: type[Usage] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from budgetconf.loop import Call, Usage  # loaded already: the run has its Meter

        self.call_type, self.usage_type = Call, Usage

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # a run's own object, never written into an agent's spec

    def get_wrapper_model(self, model: Model) -> Model | None:
        models = self.models
        wrapper = models.get(id(model))
        if wrapper is None:
            wrapper = models[id(model)] = MeteredModel(model, self)
        return wrapper

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        return MeteredTools(toolset, bridged=self.bridged)

    # -- the Meter's side of each request -------------------------------------------------------

    def before(
        self, messages: list[ModelMessage], parameters: ModelRequestParameters
    ) -> list[ModelMessage]:
        """Before a model call: the Meter's stop (raised as `Ended`), else the messages to send,
        with the last-turn notice where the Meter gives one."""
        tools = self.tools
        tools.clear()
        tools.update(t.name for t in parameters.function_tools if t.kind == "function")
        bridged = self.bridged
        end = bridged.call()
        if end is not None:
            raise Ended(end)
        notice = bridged.notice(bool(tools))
        if notice is None:
            return messages
        return _with_notice(messages, notice)

    def after(self, response: ModelResponse, parameters: ModelRequestParameters) -> None:
        """After a model call: the response told to the Meter, which plans its calls before
        pydantic-ai runs any (a usage no response can report fails the run here)."""
        bridged = self.bridged
        if response.usage.cost is None:
            self._price(response)
        try:
            usage = _usage(response, self.usage_type)
        except Unreadable as exc:
            raise Ended(bridged.unreadable(exc)) from None
        outputs = parameters.output_tools
        answers = {t.name for t in outputs} if outputs else ()
        call = self.call_type
        calls = [
            call(part.tool_call_id, part.tool_name, _arguments(part.args))
            for part in response.parts
            if isinstance(part, ToolCallPart) and part.tool_name not in answers
        ]
        finish = response.finish_reason
        bridged.answered(usage, response.text, calls, _BLOCKS.get(finish) if finish else None)

    def _price(self, response: ModelResponse) -> None:
        """Give ``response`` the cost pydantic-ai prices it at once the model has returned (it
        never prices a response twice), so the Meter counts it before the response's tools run."""
        key = (response.model_name, response.provider_name, response.provider_url)
        if key in self.unpriced:
            return
        _priced(response)
        if response.usage.cost is None:
            self.unpriced.add(key)


class MeteredModel(WrapperModel):
    """A model whose every request the run's Meter allows first and reads after."""

    def __init__(self, wrapped: Model, metering: Metering) -> None:
        super().__init__(wrapped)
        self.metering = metering

    # pydantic-ai enters a capability's wrapper around each attempt it serves, the wrapped model
    # borrowed (its owner enters it): there is nothing of the wrapper's own to enter or leave
    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None


async def _request(
    self: MeteredModel,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    model_request_parameters: ModelRequestParameters,
) -> ModelResponse:
    metering = self.metering
    sent = metering.before(messages, model_request_parameters)
    response = await self.wrapped.request(sent, model_settings, model_request_parameters)
    metering.after(response, model_request_parameters)
    return response


@asynccontextmanager
async def _request_stream(
    self: MeteredModel,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    model_request_parameters: ModelRequestParameters,
    run_context: RunContext[Any] | None = None,
) -> AsyncIterator[StreamedResponse]:
    """A streamed request (``event_stream_handler=``): the Meter reads the whole response once
    the stream has ended, before pydantic-ai runs its tools."""
    metering = self.metering
    sent = metering.before(messages, model_request_parameters)
    async with self.wrapped.request_stream(
        sent, model_settings, model_request_parameters, run_context
    ) as stream:
        yield stream
    metering.after(stream.get(), model_request_parameters)


# Given after the class is made: pydantic-ai wraps the request methods each Model subclass
# defines (a download budget per request, special tokens restored), which the wrapped model's
# own request has already; a second time would only cost each call more.
MeteredModel.request = _request  # type: ignore[method-assign,assignment]
MeteredModel.request_stream = _request_stream  # type: ignore[method-assign,assignment]


@dataclass
class MeteredTools(WrapperToolset[Any]):
    """The run's toolset: each call runs, or is answered, as the run's Meter decides."""

    _: KW_ONLY
    bridged: Bridged

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        call: Callable[[], Any] = lambda: self.wrapped.call_tool(name, tool_args, ctx, tool)  # noqa: E731
        return await self.bridged.atool(ctx.tool_call_id, name, call)


#: the systems of the test doubles (pydantic-ai's own, and `budgetconf.testing.pydantic_ai_model`),
#: which report their usage (and cost) as told
_DOUBLES: Final = ("function", "test", "scripted")


def agent_model(model: object) -> AgentModel:
    """The run's model: a pydantic-ai ``Model`` by its ``model_name``, its ``system`` the
    provider (after the one its base URL's host names); a name as pydantic-ai reads one
    (``openai:gpt-4o``). The test doubles (``FunctionModel``, ``TestModel``,
    ``budgetconf.testing.pydantic_ai_model``) and a ``FallbackModel`` (whose responses each
    name their own model) are not named."""
    if isinstance(model, str):
        provider, _, name = model.partition(":") if ":" in model else ("", "", model)
        return AgentModel(name, provider)
    system = getattr(model, "system", None)
    if not isinstance(system, str) or system in _DOUBLES or system.startswith("fallback:"):
        return NAMELESS
    return AgentModel(getattr(model, "model_name", None), system, getattr(model, "base_url", None))


def traces_itself(agent: object, model: object) -> bool:
    """Whether pydantic-ai's own instrumentation traces the run's model and tool calls:
    ``Agent.instrument_all()``, ``agent.instrument`` or an ``InstrumentedModel``, as the agent
    reads them when it runs (docs/telemetry.md)."""
    if isinstance(model, InstrumentedModel):
        return True
    # how an Agent reads instrument_all() and agent.instrument; a wrapper agent has none
    resolve = getattr(agent, "_resolve_instrumentation_settings", None)
    return resolve is not None and resolve() is not None


def _with_notice(messages: list[ModelMessage], notice: str) -> list[ModelMessage]:
    """``messages`` whose last request also carries ``notice``: a copy, so only this call's input
    has it, never the run's history."""
    last = messages[-1] if messages else None
    part = UserPromptPart(notice)
    if isinstance(last, ModelRequest):
        return [*messages[:-1], replace(last, parts=[*last.parts, part])]
    return [*messages, ModelRequest(parts=[part])]


def _arguments(args: object) -> dict[str, Any] | None:
    """A call's arguments as the Meter reads them (a dict, or its JSON text): None when they
    cannot be read (the call cannot run, and pydantic-ai asks the model again)."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if not isinstance(args, str):
        return None
    try:
        found = json.loads(args) if args.strip() else {}
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


_price: Callable[[ModelResponse], None] | None = None


def _priced(response: ModelResponse) -> None:
    """Price ``response`` as pydantic-ai does, where it has a price for its model."""
    global _price
    if _price is None:
        try:  # pydantic-ai's own pricing, as its run applies it after each response
            from pydantic_ai._genai_prices import fill_response_cost
        except ImportError:  # pragma: no cover - another release: a cost only where one is reported
            fill_response_cost = _unpriced
        _price = fill_response_cost
    _price(response)


def _unpriced(response: ModelResponse) -> None:  # pragma: no cover - see `_priced`
    """No pricing: a response's cost is only what its model reported."""


def _usage(response: ModelResponse, usage_type: type[Usage]) -> Usage:
    """A response's pydantic-ai usage as budgetconf's `Usage`, each count checked (`Unreadable`)."""
    usage = response.usage
    total = reported_tokens(usage.total_tokens, "usage.total_tokens")
    counted = (
        reported_tokens(usage.input_tokens, "usage.input_tokens"),
        reported_tokens(usage.cache_read_tokens, "usage.cache_read_tokens"),
        reported_tokens(usage.output_tokens, "usage.output_tokens"),
        total,
    )
    cost = usage.cost
    model = response.model_name or None
    if cost is None:
        return usage_type(*counted, model=model)
    return usage_type(*counted, reported_cost(float(cost), "usage.cost"), "reported", model)
