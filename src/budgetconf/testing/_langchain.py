"""`langchain_model`: a model script as a langchain-core chat model, in process.

The model is a ``BaseChatModel``, so langchain's ``create_agent`` and a
hand-built LangGraph graph call it as they call any chat model: ``invoke``
gives each scripted response as one ``AIMessage``, and a streamed call (a graph
streamed with ``stream_mode="messages"``) as its chunks: the text, one
``tool_call_chunks`` entry per call, and a last chunk with the usage. Each
response reports its usage as langchain does (``usage_metadata``, the cached
prompt tokens as ``input_token_details.cache_read``) and names its model in
``response_metadata``. ``bind_tools`` gives the model itself: the script, not
the tools offered, decides the calls.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

try:
    from langchain_core.language_models import BaseChatModel
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("langgraph", "langgraph", "langgraph") from None

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from budgetconf.testing._script import Script, Turn

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        CallbackManagerForLLMRun,
    )
    from langchain_core.messages import BaseMessage

    from budgetconf.testing._script import ScriptLike

#: the model a response names when its script names none (as `LoopbackServer`'s)
MODEL = "scripted"


def langchain_model(script: ScriptLike) -> BaseChatModel:
    """A langchain-core chat model playing ``script`` (``budgetconf run --model``'s form, a
    `ScriptedModel`, or a script file's path): each call, plain or streamed, gets the next
    response (the last one repeats), with its usage as ``usage_metadata``.

    >>> from budgetconf.testing import langchain_model
    >>> model = langchain_model([{"content": "done", "usage": {"prompt_tokens": 3}}])
    >>> model.invoke("go").usage_metadata["input_tokens"]
    3
    """
    return ScriptedChatModel(script=Script(script))


class ScriptedChatModel(BaseChatModel):
    """The chat model `langchain_model` makes: its ``script`` answers every call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script

    @property
    def _llm_type(self) -> str:
        return "budgetconf-scripted"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        # no model name: a cost budget prices its responses by the price fields, as the
        # executor prices a ScriptedModel's
        return {"ls_provider": "budgetconf", "ls_model_type": "chat"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """The model itself: the script decides which calls each response makes."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_message(self.script.next()))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # langchain-core hands each chunk to the callbacks (a graph's "messages" stream)
        yield from _chunks(self.script.next())

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in _chunks(self.script.next()):
            yield chunk


def _message(turn: Turn) -> AIMessage:
    """A response as one message: its text, its calls, its usage and its model."""
    calls = [
        {"name": name, "args": json.loads(arguments), "id": call_id, "type": "tool_call"}
        for call_id, name, arguments in turn.calls
    ]
    return AIMessage(
        content=turn.content or "",
        tool_calls=calls,
        usage_metadata=_usage(turn.usage),
        response_metadata=_metadata(turn),
        id=f"scripted-{turn.number}",
    )


def _chunks(turn: Turn) -> Iterator[ChatGenerationChunk]:
    """A response as a stream gives it: the text, each call, then the usage and the end."""
    made = f"scripted-{turn.number}"
    if turn.content:
        yield ChatGenerationChunk(message=AIMessageChunk(content=turn.content, id=made))
    for index, (call_id, name, arguments) in enumerate(turn.calls):
        call = {"name": name, "args": arguments, "id": call_id, "index": index}
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", tool_call_chunks=[call], id=made)  # type: ignore[list-item]
        )
    last = AIMessageChunk(
        content="",
        usage_metadata=_usage(turn.usage),
        response_metadata=_metadata(turn),
        id=made,
        chunk_position="last",
    )
    yield ChatGenerationChunk(message=last)


def _metadata(turn: Turn) -> dict[str, Any]:
    return {"model_name": turn.model or MODEL, "finish_reason": turn.finish_reason}


def _usage(usage: Mapping[str, Any] | None) -> Any:
    """A chat completion's usage as langchain's ``usage_metadata`` (None without one)."""
    if usage is None:
        return None
    found: dict[str, Any] = {
        "input_tokens": usage["prompt_tokens"],
        "output_tokens": usage["completion_tokens"],
        "total_tokens": usage["total_tokens"],
    }
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if cached:
        found["input_token_details"] = {"cache_read": int(cached)}
    return found
