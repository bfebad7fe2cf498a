"""Scripted models for testing an agent's budget offline (docs/testing.md).

`ScriptedModel` plays a script of responses to the executor; `LoopbackServer`
serves the same script as an OpenAI-compatible API on 127.0.0.1, for any
client and any framework that talks to one. The script is ``budgetconf run
--model``'s: ``{"responses": [{"content": ..., "tool_calls": [...], "usage":
{...}}]}``, the last response repeating.
"""

from __future__ import annotations

from budgetconf.loop import ScriptedModel
from budgetconf.testing._loopback import LoopbackServer

__all__ = ["LoopbackServer", "ScriptedModel"]
