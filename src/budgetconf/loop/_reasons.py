"""Why a run stopped, and what that makes of the run."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["RunStatus", "StopReason"]


class RunStatus(StrEnum):
    """The outcome of a run, as a caller branches on it."""

    OK = "ok"
    TRUNCATED = "truncated"
    FAILED = "failed"
    BLOCKED = "blocked"


class StopReason(StrEnum):
    """Why a run stopped. A preset may give a budget stop its own name (``max_turns_exhausted``)."""

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_COST = "max_cost"
    TIMEOUT = "timeout"
    ERROR = "error"
    CANCELLED = "cancelled"
    CONTENT_FILTERED = "content_filtered"
    REFUSED = "refused"
    LENGTH_TRUNCATED = "length_truncated"

    @property
    def status(self) -> RunStatus:
        return _STATUS[self]

    @property
    def budget(self) -> str | None:
        """The budget (a key of a preset's loop table) whose exhaustion this is, if any."""
        return _BUDGET.get(self)


_STATUS: Final = {
    StopReason.COMPLETED: RunStatus.OK,
    StopReason.MAX_STEPS: RunStatus.TRUNCATED,
    StopReason.MAX_TOOL_CALLS: RunStatus.TRUNCATED,
    StopReason.MAX_TOKENS: RunStatus.TRUNCATED,
    StopReason.MAX_COST: RunStatus.TRUNCATED,
    StopReason.TIMEOUT: RunStatus.TRUNCATED,
    StopReason.ERROR: RunStatus.FAILED,
    StopReason.CANCELLED: RunStatus.FAILED,
    StopReason.CONTENT_FILTERED: RunStatus.BLOCKED,
    StopReason.REFUSED: RunStatus.BLOCKED,
    StopReason.LENGTH_TRUNCATED: RunStatus.BLOCKED,
}
_BUDGET: Final = {
    StopReason.MAX_STEPS: "max_steps",
    StopReason.MAX_TOOL_CALLS: "max_tool_calls",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.MAX_COST: "max_cost_usd",
    StopReason.TIMEOUT: "timeout_seconds",
}
#: a provider's finish_reason that blocks a response -> the stop it surfaces as
BLOCKS: Final = {
    "content_filter": StopReason.CONTENT_FILTERED,
    "refusal": StopReason.REFUSED,
    "length": StopReason.LENGTH_TRUNCATED,
}
