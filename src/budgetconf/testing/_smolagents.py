"""`smolagents_model`: a model script played by a smolagents `Model`, in process.

Each call (``generate``, or ``generate_stream`` for an agent with
``stream_outputs=True``) gets the script's next response, as smolagents'
``OpenAIServerModel`` would make it of the same response from a server: a
``ChatMessage`` with its calls and ``token_usage``, whose ``raw`` reads as the
chat completion (its model, finish reason and usage, cached tokens included),
or the ``ChatMessageStreamDelta``\\ s of its text, its calls and its usage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

try:
    from smolagents.models import (  # type: ignore[import-untyped]
        ChatMessage,
        ChatMessageStreamDelta,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        ChatMessageToolCallStreamDelta,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import TokenUsage  # type: ignore[import-untyped]
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("smolagents", "smolagents", "smolagents") from None

from budgetconf.testing._loopback import MODEL, completion
from budgetconf.testing._script import Script, ScriptLike, Turn


def smolagents_model(script: ScriptLike) -> Any:
    """A smolagents `Model` that answers each call with the script's next response.

    ``script`` is ``budgetconf run --model``'s (``{"responses": [...]}``, the
    list, a `ScriptedModel`, or a script file's path); the last response
    repeats. Its ``model_id`` is ``"scripted"`` (price it with the price
    fields), its ``calls`` counts the calls so far. A response's calls are
    smolagents tool calls (with a ``ToolCallingAgent``, its final answer is a
    call of ``final_answer``); its content is the text a ``CodeAgent`` reads
    its code from. Each response reports its usage as ``token_usage``, and its
    cached input tokens where a chat completion does (``raw.usage``); a
    streamed response's deltas carry its input and output tokens only, as
    smolagents' own streams do.
    """
    return _ScriptedModel(Script(script))


class _ScriptedModel(Model):  # type: ignore[misc]
    """A smolagents `Model` playing a `Script`."""

    def __init__(self, script: Script) -> None:
        super().__init__(model_id=MODEL)
        self.script = script

    @property
    def calls(self) -> int:
        """The calls made so far, streamed or not."""
        return self.script.calls

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatMessage:
        turn = self.script.next()
        calls = [
            ChatMessageToolCall(
                id=call_id,
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            for call_id, name, arguments in turn.calls
        ]
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=turn.content,
            tool_calls=calls or None,
            raw=_read_as_attributes(completion(turn)),
            token_usage=_token_usage(turn),
        )

    def generate_stream(
        self, messages: list[Any], *args: Any, **kwargs: Any
    ) -> Iterator[ChatMessageStreamDelta]:
        turn = self.script.next()
        if turn.content:
            yield ChatMessageStreamDelta(content=turn.content)
        for index, (call_id, name, arguments) in enumerate(turn.calls):
            function = ChatMessageToolCallFunction(name=name, arguments=arguments)
            call = ChatMessageToolCallStreamDelta(
                index=index, id=call_id, type="function", function=function
            )
            yield ChatMessageStreamDelta(tool_calls=[call])
        usage = _token_usage(turn)
        if usage is not None:  # last, as a server's usage chunk comes
            yield ChatMessageStreamDelta(content="", token_usage=usage)


def _token_usage(turn: Turn) -> TokenUsage | None:
    usage = turn.usage
    if usage is None:
        return None
    return TokenUsage(input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"])


def _read_as_attributes(value: Any) -> Any:
    """A chat completion's JSON read by attribute, as the ``openai`` client's objects are."""
    if isinstance(value, Mapping):
        return SimpleNamespace(**{k: _read_as_attributes(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_read_as_attributes(v) for v in value]
    return value
