"""`pydantic_ai_model`: a pydantic-ai model playing a model script, in process.

Each request, streamed or not, gets the script's next response as a
``ModelResponse``: its text, its calls (``ToolCallPart`` with the script's ids
and arguments), its usage as pydantic-ai's ``RequestUsage`` (input, output and
cached input tokens) and the model it names. A streamed request replays the
same response as pydantic-ai's own events (``CompletedStreamedResponse``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final

from budgetconf.integrations._install import missing
from budgetconf.testing._script import Script

try:
    from pydantic_ai.messages import ModelResponse, ModelResponsePart, TextPart, ToolCallPart
    from pydantic_ai.models import CompletedStreamedResponse, Model
    from pydantic_ai.usage import RequestUsage
except ImportError:
    raise missing("pydantic_ai", "pydantic-ai-slim", "pydantic-ai") from None

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import FinishReason, ModelMessage
    from pydantic_ai.models import ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings

    from budgetconf.testing._script import ScriptLike, Turn

#: the model a response names when the script names none (the loopback server's too)
MODEL: Final = "scripted"
#: the model's system: the bridge reads it as a test double's, whose usage is reported as told
SYSTEM: Final = "scripted"
#: a chat completion's finish reasons as pydantic-ai names them (its OpenAI models' mapping)
_FINISHES: Final[Mapping[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "content_filter": "content_filter",
}


def pydantic_ai_model(script: ScriptLike) -> Model:
    """A pydantic-ai ``Model`` that plays ``script``: ``Agent(pydantic_ai_model(script))``.

    ``script`` is ``budgetconf run --model``'s (``{"responses": [...]}``, the
    list, a `ScriptedModel`, or a script file's path); each request gets its
    next response (the last one repeats), through ``agent.run`` and through
    pydantic-ai's streams alike (``run_stream_events``, ``event_stream_handler=``),
    with the script's usage as pydantic-ai reports a provider's.
    """
    return ScriptModel(Script(script))


class ScriptModel(Model):
    """The model `pydantic_ai_model` makes: one script, played request by request."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script

    @property
    def model_name(self) -> str:
        return MODEL

    @property
    def system(self) -> str:
        return SYSTEM

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        return response(self.script.next())

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        _, parameters = self.prepare_request(model_settings, model_request_parameters)
        made = response(self.script.next())
        # the response replayed as pydantic-ai's events: each part's start, then its end
        yield CompletedStreamedResponse(
            made, model_request_parameters=parameters, replay_events=True
        )


def response(turn: Turn) -> ModelResponse:
    """One scripted response as pydantic-ai's ``ModelResponse``."""
    parts: list[ModelResponsePart] = []
    if turn.content:
        parts.append(TextPart(turn.content))
    parts.extend(ToolCallPart(name, arguments, call_id) for call_id, name, arguments in turn.calls)
    return ModelResponse(
        parts=parts,
        usage=_usage(turn.usage),
        model_name=turn.model or MODEL,
        provider_name=SYSTEM,
        finish_reason=_FINISHES.get(turn.finish_reason),
    )


def _usage(usage: Mapping[str, Any] | None) -> RequestUsage:
    """A response's usage (the chat completion's names) as pydantic-ai's."""
    if usage is None:
        return RequestUsage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return RequestUsage(
        input_tokens=usage["prompt_tokens"],
        output_tokens=usage["completion_tokens"],
        cache_read_tokens=int(cached or 0),
    )
