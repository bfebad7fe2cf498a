"""An OpenAI-compatible server's chat completions as a model for `LoopExecutor`.

>>> import openai
>>> from budgetconf.integrations.openai import OpenAIModel
>>> client = openai.OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="local")
>>> model = OpenAIModel("my-model", client=client)

Each turn is one ``chat.completions.create`` request: the conversation as it
is, and the executor's tools as function tools. The first choice becomes the
response the executor reads. A failed request raises `ModelError`, whose one
line says what went wrong, and the executor ends the run with ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

try:
    import openai
except ImportError:
    raise ImportError(
        "budgetconf.integrations.openai needs the openai package: pip install 'budgetconf[openai]'"
    ) from None

from budgetconf.errors import ModelError, UsageError
from budgetconf.integrations._keys import key_flaw, masked
from budgetconf.integrations._urls import shown_url

__all__ = ["AsyncOpenAIModel", "ModelError", "OpenAIModel"]

#: request parameters the adapter sets itself
_OWN: Final = frozenset({"model", "messages", "tools"})


class _Base:
    def __init__(self, model: str, options: Mapping[str, Any]) -> None:
        if not isinstance(model, str) or not model:
            raise UsageError(f"model: expected a model name, got {model!r}")
        taken = sorted(_OWN & set(options))
        if taken:
            raise UsageError(f"{taken[0]}: set by the adapter, not an option")
        self.model = model
        self.options = dict(options)

    def _check_key(self, key: object) -> None:
        """Refuse a key no HTTP header can hold, before the library quotes it in an error."""
        flaw = key_flaw(key) if isinstance(key, str) else None
        if flaw is not None:
            raise UsageError(f"api_key: the client's API key {flaw}; strip it where it is read")

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], key: object
    ) -> dict[str, Any]:
        self._check_key(key)  # again at each request: a client's key may be changed
        request: dict[str, Any] = {"model": self.model, "messages": messages, **self.options}
        if tools:  # an empty list is refused by some servers
            request["tools"] = tools
        return request


class OpenAIModel(_Base):
    """``model(messages, tools)`` through an ``openai.OpenAI`` client, for `LoopExecutor.run`.

    ``client`` defaults to ``openai.OpenAI()``, configured from the environment
    as openai does (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``). ``options`` go
    into every request (``temperature=0``, ``max_completion_tokens=512``).
    """

    def __init__(self, model: str, *, client: openai.OpenAI | None = None, **options: Any) -> None:
        super().__init__(model, options)
        self.client = openai.OpenAI() if client is None else client
        self._check_key(self.client.api_key)

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        key = self.client.api_key
        request = self._request(messages, tools, key)
        try:
            completion = self.client.chat.completions.create(**request)
        except openai.OpenAIError as exc:  # not chained: its text may hold the key
            # the key sent, and the key as the client has it now (a provider may have set it)
            raise _error(exc, self.client.base_url, key, self.client.api_key) from None
        return _response(completion)


class AsyncOpenAIModel(_Base):
    """`OpenAIModel` through an ``openai.AsyncOpenAI`` client, for `LoopExecutor.arun`."""

    def __init__(
        self, model: str, *, client: openai.AsyncOpenAI | None = None, **options: Any
    ) -> None:
        super().__init__(model, options)
        self.client = openai.AsyncOpenAI() if client is None else client
        self._check_key(self.client.api_key)

    async def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        key = self.client.api_key
        request = self._request(messages, tools, key)
        try:
            completion = await self.client.chat.completions.create(**request)
        except openai.OpenAIError as exc:  # not chained: its text may hold the key
            # the key sent, and the key as the client has it now (a provider may have set it)
            raise _error(exc, self.client.base_url, key, self.client.api_key) from None
        return _response(completion)


def _response(completion: Any) -> dict[str, Any]:
    """The first choice as the executor reads a response; it reads the call objects itself."""
    choices = getattr(completion, "choices", None)
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = getattr(choice, "message", None)
    if message is None:
        raise ModelError(f"the server's answer is not a chat completion: {_show(completion)}")
    content = getattr(message, "content", None)
    calls = getattr(message, "tool_calls", None)
    finish = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    if refusal and not content and not calls:
        content, finish = refusal, "refusal"  # the API's refusal ends with "stop"
    return {
        "content": content,
        "tool_calls": calls,
        "finish_reason": finish,
        "usage": getattr(completion, "usage", None),
    }


def _show(value: object) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:79] + "…"


def _error(exc: openai.OpenAIError, base_url: object, *keys: object) -> ModelError:
    """One line for a failed request, naming the server; the API key is never in it.

    The URL is shown without its user name and password, and every form of the
    key (escaped, stripped, cut at a line end) is masked in whatever the server
    or the connection said.
    """
    where = shown_url(base_url)
    if isinstance(exc, openai.APITimeoutError):
        message, status = f"{where} did not answer in time", None
    elif isinstance(exc, openai.APIConnectionError):
        message = f"cannot reach {where}: {_reason(exc)}"
        status = None
    elif isinstance(exc, openai.APIStatusError):
        body = exc.body
        detail = body.get("message") if isinstance(body, Mapping) else None
        if not isinstance(detail, str) or not detail:
            detail = exc.response.reason_phrase or "no reason given"
        message = f"{where} answered HTTP {exc.status_code}: {detail}"
        status = exc.status_code
    else:
        message, status = f"{where}: {exc}", None
    return ModelError(masked(message, *keys), status=status)


def _reason(exc: BaseException) -> str:
    """The innermost cause of a connection error: ``[Errno 111] Connection refused``, say."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__
