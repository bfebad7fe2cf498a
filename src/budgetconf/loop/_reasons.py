"""Why a run stopped, and what that makes of the run.

The stop reasons and run statuses are the preset description's words
(`budgetconf._description`), so that a preset's renames are checked against
the same list the executor stops with.
"""

from __future__ import annotations

from typing import Final

from budgetconf._loop_table import RunStatus, StopReason

__all__ = ["BLOCKS", "RunStatus", "StopReason"]

#: a provider's finish_reason that blocks a response -> the stop it surfaces as
BLOCKS: Final = {
    "content_filter": StopReason.CONTENT_FILTERED,
    "refusal": StopReason.REFUSED,
    "length": StopReason.LENGTH_TRUNCATED,
}
