"""The shared ledger's middleware for langchain's ``create_agent``: one draw per model call.

`budgetconf.integrations.langgraph.middleware` adds a `LedgerMiddleware` when
its budget names a ledger (``ledger.url``). Its ``wrap_model_call`` is the
last thing before each model call: it reserves there (a refusal raises
`Refused`, which `run()` reports as the ledger's stop, before the call), gives
back what the call held at once when the call raises (a retry reserves anew),
and settles with the ``usage_metadata`` of the response's AI messages. The
draw is the bridge run's (`run()` or `arun()`), found through a context
variable, so one graph may serve runs at once; a graph built with it and
invoked without the bridge stops at its start with a `UsageError`: the budget
would go undrawn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware

from budgetconf._usage import reported_tokens
from budgetconf.errors import UsageError
from budgetconf.integrations._draw import Refused, Tally

if TYPE_CHECKING:
    from budgetconf.loop._budget import Budget

__all__ = ["LedgerMiddleware", "drawing"]

#: the draw of the bridge run the graph is running in, if any
_DRAWING: ContextVar[Tally | None] = ContextVar("budgetconf_ledger_draw", default=None)


@contextmanager
def drawing(tally: Tally) -> Iterator[None]:
    """Within: the graph's `LedgerMiddleware` draws on the ledger for ``tally``'s run."""
    token = _DRAWING.set(tally)
    try:
        yield
    finally:
        _DRAWING.reset(token)


class LedgerMiddleware(AgentMiddleware[Any, Any, Any]):
    """Reserve before each model call of a ``create_agent`` graph, settle after (see above)."""

    #: how the bridge knows it in a graph (its ``_budgetconf_budget`` is the budget's)
    draws_ledger = True

    def __init__(self, budget: Budget) -> None:
        super().__init__()
        self.budget = budget

    @property
    def name(self) -> str:
        return "BudgetconfLedger"

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        _tally()  # a graph run without the bridge: refused before its first model call
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        _tally()
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        tally = _reserve()
        try:
            response = handler(request)
        except BaseException:
            tally.release()
            raise
        tally.settle(_used(response), 0.0)  # langchain reports no cost
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        tally = _reserve()
        try:
            response = await handler(request)
        except BaseException:
            tally.release()
            raise
        tally.settle(_used(response), 0.0)
        return response


def _tally() -> Tally:
    tally = _DRAWING.get()
    if tally is None:
        raise UsageError(
            "this graph's middleware() draws on the shared ledger (ledger.url) only when it"
            " runs through budgetconf.integrations.langgraph.run() or arun()"
        )
    return tally


def _reserve() -> Tally:
    tally = _tally()
    refused = tally.reserve()
    if refused is not None:
        raise Refused(refused)
    return tally


def _used(response: object) -> int:
    """The tokens the AI messages of a model call's response report."""
    inner = getattr(response, "model_response", response)  # an ExtendedModelResponse's
    messages = getattr(inner, "result", None)
    total = 0
    for message in messages if isinstance(messages, list) else [inner]:
        usage = getattr(message, "usage_metadata", None)
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int) and getattr(message, "type", "") == "ai":
            total += reported_tokens(tokens, "usage_metadata.total_tokens")  # or Unreadable
    return total
