"""Scripted models for testing an agent's budget offline (docs/testing.md).

`ScriptedModel` plays a script of responses to the executor; `LoopbackServer`
serves the same script as an OpenAI-compatible API on 127.0.0.1, for any
client and any framework that talks to one; and each bridged framework has a
model of its own kind playing it in process (`openai_agents_model`,
`langchain_model`, `smolagents_model`, `pydantic_ai_model`, `crewai_llm`,
`agno_model`), imported with its
framework when first named. The script is ``budgetconf run --model``'s:
``{"responses": [{"content": ..., "tool_calls": [...], "usage": {...}}]}``, the
last response repeating.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from budgetconf.loop import ScriptedModel
from budgetconf.testing._loopback import LoopbackServer

if TYPE_CHECKING:  # each framework's model is imported with its framework, when first named
    from budgetconf.testing._agno import agno_model
    from budgetconf.testing._crewai import crewai_llm
    from budgetconf.testing._langchain import langchain_model
    from budgetconf.testing._openai_agents import openai_agents_model
    from budgetconf.testing._pydantic_ai import pydantic_ai_model
    from budgetconf.testing._smolagents import smolagents_model

__all__ = [
    "LoopbackServer",
    "ScriptedModel",
    "agno_model",
    "crewai_llm",
    "langchain_model",
    "openai_agents_model",
    "pydantic_ai_model",
    "smolagents_model",
]

#: each framework's scripted model -> the module that makes it (and imports its framework)
_MODELS = {
    "openai_agents_model": "budgetconf.testing._openai_agents",
    "langchain_model": "budgetconf.testing._langchain",
    "smolagents_model": "budgetconf.testing._smolagents",
    "pydantic_ai_model": "budgetconf.testing._pydantic_ai",
    "crewai_llm": "budgetconf.testing._crewai",
    "agno_model": "budgetconf.testing._agno",
}


def __getattr__(name: str) -> Any:
    module = _MODELS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
