"""An OpenAI-compatible server's chat completions as a model for `LoopExecutor`.

>>> import openai
>>> from budgetconf.integrations.openai import OpenAIModel
>>> client = openai.OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="local")
>>> model = OpenAIModel("my-model", client=client)

Each turn is one ``chat.completions.create`` request: the conversation as it
is, and the executor's tools as function tools. The first choice becomes the
response the executor reads. A failed request raises `ModelError`, whose one
line says what went wrong, and the executor ends the run with ``error``.

The client's ``timeout`` bounds each read and write of a request, so a server
that sends a byte now and then keeps it alive for ever; ``total_timeout``
bounds the whole call, its retries included.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

try:
    import openai
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("openai", "openai", "openai") from None

from budgetconf.errors import ModelError, UsageError
from budgetconf.integrations._keys import key_flaw, masked
from budgetconf.integrations._urls import shown_url

__all__ = ["AsyncOpenAIModel", "ModelError", "OpenAIModel"]

#: request parameters the adapter sets itself
_OWN: Final = frozenset({"model", "messages", "tools"})


class _Base:
    def __init__(self, model: str, options: Mapping[str, Any], total_timeout: float | None) -> None:
        if not isinstance(model, str) or not model:
            raise UsageError(f"model: expected a model name, got {model!r}")
        taken = sorted(_OWN & set(options))
        if taken:
            raise UsageError(f"{taken[0]}: set by the adapter, not an option")
        if total_timeout is not None and not _positive(total_timeout):
            raise UsageError(
                f"total_timeout: expected a number of seconds above 0, got {total_timeout!r}"
            )
        self.model = model
        self.options = dict(options)
        self.total_timeout = total_timeout

    client: openai.OpenAI | openai.AsyncOpenAI

    @property
    def provider(self) -> str:
        """Whose price table prices this model (docs/prices.md): the provider the client's
        base URL names, else ``openai``."""
        from budgetconf._prices._genai import provider_for_url

        return provider_for_url(str(self.client.base_url)) or "openai"

    def _late(self, base_url: object) -> ModelError:
        seconds = f"{self.total_timeout:g}"
        return ModelError(f"{shown_url(base_url)} did not answer within {seconds} s")

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
    ``total_timeout`` is the most seconds one call may take in all, however
    slowly the server answers: the request is then left to its thread, which
    ends when the connection does, and the call raises `ModelError`.
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.OpenAI | None = None,
        total_timeout: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, options, total_timeout)
        self.client = openai.OpenAI() if client is None else client
        self._check_key(self.client.api_key)

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        key = self.client.api_key
        request = self._request(messages, tools, key)
        create = self.client.chat.completions.create
        try:
            if self.total_timeout is None:
                completion = create(**request)
            else:
                completion = _within(self.total_timeout, create, request)
        except _Late:
            raise self._late(self.client.base_url) from None
        except openai.OpenAIError as exc:  # not chained: its text may hold the key
            # the key sent, and the key as the client has it now (a provider may have set it)
            raise _error(exc, self.client.base_url, key, self.client.api_key) from None
        return _response(completion)


class AsyncOpenAIModel(_Base):
    """`OpenAIModel` through an ``openai.AsyncOpenAI`` client, for `LoopExecutor.arun`."""

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        total_timeout: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, options, total_timeout)
        self.client = openai.AsyncOpenAI() if client is None else client
        self._check_key(self.client.api_key)

    async def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        import asyncio

        key = self.client.api_key
        request = self._request(messages, tools, key)
        try:  # cancelled at the deadline: an async request can be
            async with asyncio.timeout(self.total_timeout) as scope:
                completion = await self.client.chat.completions.create(**request)
        except TimeoutError:
            if scope.expired():
                raise self._late(self.client.base_url) from None
            raise
        except openai.OpenAIError as exc:  # not chained: its text may hold the key
            # the key sent, and the key as the client has it now (a provider may have set it)
            raise _error(exc, self.client.base_url, key, self.client.api_key) from None
        return _response(completion)


class _Late(Exception):
    """The call did not return within its total_timeout."""


def _within(seconds: float, fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """``fn(**kwargs)`` on a daemon thread, waited for ``seconds`` at most; else `_Late`."""
    import contextvars
    import threading

    done = threading.Event()
    outcome: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome.append((True, context.run(fn, **kwargs)))
        except BaseException as exc:  # handed to the caller, which raises it
            outcome.append((False, exc))
        finally:
            done.set()

    deadline = time.monotonic() + seconds  # before the request starts: nothing outlasts it
    threading.Thread(target=work, name="budgetconf-request", daemon=True).start()
    while True:
        remaining = deadline - time.monotonic()
        # a wait is at most TIMEOUT_MAX (some 292 years); a longer deadline waits again
        if remaining <= 0 or done.wait(min(remaining, threading.TIMEOUT_MAX)):
            break
    returned, value = outcome[0] if outcome else (False, None)
    if returned:
        return value
    if value is None or time.monotonic() >= deadline:  # a read timeout of the same length too
        raise _Late
    raise value


def _positive(seconds: object) -> bool:
    return (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
        and seconds > 0
    )


#: what a message of the chat format is not
_NOT_A_MESSAGE: Final = (str, bytes, int, float, list, tuple)


def _response(completion: Any) -> dict[str, Any]:
    """The first choice as the executor reads a response; it reads the call objects itself.

    What the executor cannot tell from an empty message is refused here: a
    message that is text or a number, a refusal that is not text.
    """
    choices = getattr(completion, "choices", None)
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = getattr(choice, "message", None)
    if message is None:
        raise ModelError(f"the server's answer is not a chat completion: {_show(completion)}")
    if isinstance(message, _NOT_A_MESSAGE):
        raise ModelError(
            "the server's answer is not a chat completion: choices[0].message is"
            f" {_show(message)}, not an object"
        )
    content = getattr(message, "content", None)
    calls = getattr(message, "tool_calls", None)
    finish = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    if refusal is not None and not isinstance(refusal, str):
        raise ModelError(f"the server's answer has a refusal that is not text: {_show(refusal)}")
    if refusal and not content and not calls:
        content, finish = refusal, "refusal"  # the API's refusal ends with "stop"
    return {
        "content": content,
        "tool_calls": calls,
        "finish_reason": finish,
        "usage": getattr(completion, "usage", None),
        "model": getattr(completion, "model", None),
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
