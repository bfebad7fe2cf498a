"""`agno_model`: a model script played by agno's own OpenAI chat model, in process.

Each call (``invoke``, ``ainvoke``, or their streamed twins for ``agent.run(...,
stream=True)``) gets the script's next response as the chat completion (or the
chunks) a server would send, read by ``OpenAIChat``'s own parsers: so agno
sees its calls, text, usage (cached tokens included) and a reported ``cost``
exactly as it would from an OpenAI-compatible server, without one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

try:
    from agno.models.openai import OpenAIChat
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("agno", "agno", "agno") from None

from budgetconf.testing._loopback import MODEL, chunks, completion
from budgetconf.testing._script import Script, ScriptLike


def agno_model(script: ScriptLike) -> Any:
    """An agno ``OpenAIChat`` that answers each call with the script's next response.

    ``script`` is ``budgetconf run --model``'s (``{"responses": [...]}``, the
    list, a `ScriptedModel`, or a script file's path); the last response
    repeats. Its ``id`` is ``"scripted"`` (price it with the price fields), its
    ``calls`` counts the calls so far, streamed or not. A response's usage may
    carry ``cost``, which agno reports as the response's ``metrics.cost``.
    """
    return _ScriptedModel(Script(script))


class _ScriptedModel(OpenAIChat):
    """agno's `OpenAIChat`, its requests answered by a `Script` instead of a server."""

    def __init__(self, script: Script) -> None:
        super().__init__(id=MODEL, api_key="sk-scripted")
        self.script = script

    @property
    def calls(self) -> int:
        """The calls made so far."""
        return self.script.calls

    def _completion(self) -> dict[str, Any]:
        return completion(self.script.next())

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        made = ChatCompletion.model_validate(self._completion())
        return self._parse_provider_response(made, response_format=kwargs.get("response_format"))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        return self.invoke(*args, **kwargs)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for chunk in chunks(self._completion(), usage=True):
            yield self._parse_provider_response_delta(ChatCompletionChunk.model_validate(chunk))

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for delta in self.invoke_stream(*args, **kwargs):
            yield delta
