"""Whose price an `OpenAIModel` is looked up in: the provider its client's base URL names."""

from __future__ import annotations

import openai
import pytest

from budgetconf.integrations.openai import AsyncOpenAIModel, OpenAIModel


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://api.anthropic.com/v1/", "anthropic"),
        ("https://api.groq.com/openai/v1", "groq"),
        ("http://127.0.0.1:8000/v1", "openai"),  # a server that says nothing: the client's own
    ],
)
def test_the_provider_is_the_base_url_s_else_openai(url: str, provider: str) -> None:
    client = openai.OpenAI(base_url=url, api_key="local")
    assert OpenAIModel("gpt-4o-mini", client=client).provider == provider
    aclient = openai.AsyncOpenAI(base_url=url, api_key="local")
    assert AsyncOpenAIModel("gpt-4o-mini", client=aclient).provider == provider
