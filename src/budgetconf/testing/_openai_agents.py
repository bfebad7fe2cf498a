"""`openai_agents_model`: a model script played by openai-agents' own scripted `Model`.

The framework's ``agents.testing.ScriptedModel`` answers both its model calls:
``get_response`` with a ``ModelResponse``, ``stream_response`` with the
Responses-API events a streamed run reads (``response.created``, each output
item's events, ``response.completed`` carrying the whole ``Response`` and its
usage). Each call gets the script's next response (the last one repeats): its
text as a message, its calls as function calls, its usage as the framework's
``Usage`` (cached tokens in ``input_tokens_details``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetconf.integrations._install import missing

try:
    from agents import Usage
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
    from openai.types.responses.response_usage import InputTokensDetails
except ImportError:
    raise missing("openai_agents", "openai-agents", "openai-agents") from None

from budgetconf.testing._script import Script, Turn

if TYPE_CHECKING:
    from agents.testing import ModelCall

    from budgetconf.testing._script import ScriptLike


def openai_agents_model(script: ScriptLike) -> ScriptedModel:
    """An openai-agents ``Model`` (the framework's ``agents.testing.ScriptedModel``) playing
    ``script``, in process, to ``Runner.run`` and ``Runner.run_streamed`` alike.

    The script is ``budgetconf run --model``'s (``{"responses": [...]}``, the list, a
    `ScriptedModel` or a script file's path); each model call gets its next response, the
    last one repeating. Its ``usage`` (``prompt_tokens``, ``completion_tokens``,
    ``prompt_tokens_details.cached_tokens``) is each response's ``Usage``; the model has no
    name, so a cost budget prices it at the price fields (``--price-input-per-mtok``, ...).
    """
    played = Script(script)
    model = ScriptedModel()

    def respond(call: ModelCall) -> ModelStep:
        model.enqueue(ModelStep.respond(respond))  # the next call's, for ever
        return _step(played.next())

    model.enqueue(ModelStep.respond(respond))
    return model


def _step(turn: Turn) -> ModelStep:
    """The framework's step of one scripted response."""
    output: list[Any] = []
    if turn.content is not None:
        output.append(assistant_message(turn.content, item_id=f"msg_{turn.number}"))
    output.extend(
        function_call(name, arguments, call_id=call_id, item_id=f"fc_{turn.number}_{i}")
        for i, (call_id, name, arguments) in enumerate(turn.calls)
    )
    return ModelStep(output=output, usage=_usage(turn.usage), response_id=f"resp_{turn.number}")


def _usage(usage: dict[str, Any] | None) -> Usage:
    """A response's usage as openai-agents counts it: one request, its tokens."""
    if usage is None:
        return Usage(requests=1)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    return Usage(
        requests=1,
        input_tokens=usage["prompt_tokens"],
        output_tokens=usage["completion_tokens"],
        total_tokens=usage["total_tokens"],
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
    )
