"""`crewai_llm`: a model script played by a CrewAI `BaseLLM`, in process.

Each ``call`` gets the script's next response, as CrewAI's own OpenAI-native
LLM hands it to its agent executor: the response's tool calls as chat
completion tool calls (read by attribute, as the ``openai`` client's are), or
its text; and it reports the call as that LLM does, its hooks asked first and
its usage (cached tokens included) in the completed call's event.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

try:
    from crewai.events.types.llm_events import LLMCallType
    from crewai.llms.base_llm import BaseLLM, llm_call_context
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("crewai", "crewai", "crewai") from None

from budgetconf.testing._loopback import MODEL
from budgetconf.testing._script import Script, ScriptLike


def crewai_llm(script: ScriptLike) -> Any:
    """A CrewAI LLM (a `BaseLLM`) that answers each call with the script's next response.

    ``script`` is ``budgetconf run --model``'s (``{"responses": [...]}``, the
    list, a `ScriptedModel`, or a script file's path); the last response
    repeats. Its ``model`` is ``"scripted"`` (price it with the price fields),
    its ``calls`` counts the calls so far. It calls tools natively, as
    CrewAI's OpenAI LLM does: a response with calls comes back as their list,
    for the agent's executor to run; one without, as its text.
    """
    return _ScriptedLLM(Script(script))


class _ScriptedLLM(BaseLLM):  # type: ignore[misc]
    """A CrewAI `BaseLLM` playing a `Script`."""

    def __init__(self, script: Script) -> None:
        super().__init__(model=MODEL, provider="scripted")
        object.__setattr__(self, "script", script)

    @property
    def calls(self) -> int:
        """The calls made so far."""
        script: Script = self.__dict__["script"]
        return script.calls

    def supports_function_calling(self) -> bool:
        return True

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        with llm_call_context():
            formatted = self._format_messages(messages)
            self._invoke_before_llm_call_hooks(formatted, from_agent)
            script: Script = self.__dict__["script"]
            turn = script.next()
            usage = dict(turn.usage or {"total_tokens": 0})
            if "prompt_tokens_details" in usage:
                cached = (usage.pop("prompt_tokens_details") or {}).get("cached_tokens", 0)
                usage["cached_prompt_tokens"] = cached
            self._track_token_usage_internal(usage)
            calls = [
                SimpleNamespace(
                    id=call_id,
                    type="function",
                    function=SimpleNamespace(name=name, arguments=arguments),
                )
                for call_id, name, arguments in turn.calls
            ]
            response: Any = calls if calls else (turn.content or "")
            self._emit_call_completed_event(
                response=response,
                call_type=LLMCallType.TOOL_CALL if calls else LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=formatted,
                usage=usage,
                finish_reason=turn.finish_reason,
            )
            if calls:
                return calls
            return self._invoke_after_llm_call_hooks(formatted, response, from_agent)
