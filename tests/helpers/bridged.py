"""What the bridges' tests share: a budget from its variables, and a stream's result held to
its run's."""

from __future__ import annotations

from typing import Any

import budgetconf


def env(**values: str) -> budgetconf.Resolution:
    """The budget the ``BUDGETCONF_*`` variables give: ``env(max_steps="3")``."""
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})


def same_run(streamed: Any, ran: Any) -> None:
    """The stream's result is the run's: its end, its turns, its usage, its events' kinds."""
    fields = ("status", "stop_reason", "message", "output", "turns", "limit", "usage")
    assert [getattr(streamed, f) for f in fields] == [getattr(ran, f) for f in fields]
    assert [e["type"] for e in streamed.events] == [e["type"] for e in ran.events]
    assert streamed.tool_calls_executed == ran.tool_calls_executed
