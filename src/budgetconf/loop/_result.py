"""What a run gives back: `RunResult`, and the `Totals` a resumed run carries over."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from budgetconf._loop_table import RunStatus, StopReason
from budgetconf._usage import NO_USAGE, Usage

Message = dict[str, Any]
Event = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Totals:
    """What a conversation has consumed; a resumed run carries these over.

    ``tokens`` is the responses' total; ``input_tokens`` (cached ones included),
    ``cached_input_tokens`` and ``output_tokens`` its parts, where they said.
    """

    __module__ = "budgetconf.loop"

    turns: int = 0
    tool_calls_executed: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended, and everything it did.

    ``turns``, ``tool_calls_executed``, ``tokens`` and ``cost_usd`` count the
    whole conversation, so they include the runs it resumes, and so does
    ``usage``, the same with the tokens split (input, cached, output) and how
    the cost is known. ``events`` are this run's own. ``limit`` is set when a
    budget stopped the run; ``run_id`` is the id every one of its events carries.
    """

    __module__ = "budgetconf.loop"

    status: RunStatus
    stop_reason: str  # a StopReason value, or the preset's name for it
    stop_kind: StopReason
    message: str
    output: str
    turns: int
    tool_calls_executed: int
    tokens: int
    cost_usd: float
    # left out of the repr: a long run's transcript is no summary of it
    messages: list[Message] = field(repr=False)
    events: list[Event] = field(repr=False)
    limit: dict[str, Any] | None = None
    run_id: str = ""  # the ``run_id`` of every event of the run
    usage: Usage = NO_USAGE

    @property
    def totals(self) -> Totals:
        usage = self.usage
        return Totals(
            self.turns,
            self.tool_calls_executed,
            self.tokens,
            self.cost_usd,
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """The run as ``budgetconf run --output json`` prints it: ``result`` (the document's
        name since its first version) and ``output`` (the result's own) are the same text."""
        return {
            "status": self.status.value,
            "stop_reason": self.stop_reason,
            "result": self.output,
            "output": self.output,
            "message": self.message,
            "turns": self.turns,
            "tool_calls_executed": self.tool_calls_executed,
            "limit": self.limit,
            "events": self.events,
        }
