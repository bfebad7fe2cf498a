"""Why a run stopped, and what that makes of the run.

The stop reasons and run statuses are the preset description's words
(`budgetconf._description`), so that a preset's renames are checked against
the same list the executor stops with.
"""

from __future__ import annotations

from typing import Final

from budgetconf._loop_table import StopReason

#: a provider's finish_reason that blocks a response -> the stop it surfaces as
BLOCKS: Final = {
    "content_filter": StopReason.CONTENT_FILTERED,
    "refusal": StopReason.REFUSED,
    "length": StopReason.LENGTH_TRUNCATED,
}


def blocked_message(finish_reason: str, turn: int, has_text: bool) -> str:
    """What a block means, and what to do about it, for the run's message."""
    why = f"(finish_reason {finish_reason})"
    if finish_reason == "length":
        kept = "its partial text is the output" if has_text else "it holds no text"
        return (
            f"blocked: the answer on turn {turn} was cut off at the model's length limit {why},"
            f" and {kept}; raise the model's limit on one answer (max_completion_tokens or"
            " max_tokens in an OpenAI-compatible request; limits.max_tokens is the run's"
            " budget, not this) or ask for a shorter answer"
        )
    if finish_reason == "content_filter":
        return (
            f"blocked: the provider's content filter stopped the answer on turn {turn} {why};"
            " rephrase the request, or see the provider's filter settings"
        )
    said = "; what it said is the output" if has_text else ""
    return f"blocked: the model refused on turn {turn} {why}{said}"
