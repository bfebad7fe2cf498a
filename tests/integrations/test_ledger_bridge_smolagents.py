"""The smolagents bridge draws on the shared ledger per model call: the agent's model, wrapped
for the run, reserves before each call (a plan's, a step's) and settles it with the response's
usage; against the real smolagents with a scripted `Model`, offline, and a real SQLite ledger
and redis-server."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from smolagents import Model, ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.models import (  # type: ignore[import-untyped]
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage  # type: ignore[import-untyped]
from smolagents.utils import AgentGenerationError  # type: ignore[import-untyped]

import budgetconf
from budgetconf import BudgetConfWarning
from budgetconf.integrations import smolagents as bridge
from budgetconf.ledger import open_ledger
from budgetconf.loop import RunStatus

from helpers.ledgers import (
    LEASE,
    LINGER,
    MOST,
    PER_CALL,
    SCOPE,
    assert_stopped_before_the_third_call,
    assert_the_lease_outlived,
    assert_two_calls_settled_at_the_price,
    budget,
    sqlite_url,
    status_and_runs,
)
from helpers.redis_server import free_port


def call(name: str, args: dict[str, Any], cid: str) -> ChatMessageToolCall:
    function = ChatMessageToolCallFunction(name=name, arguments=args)
    return ChatMessageToolCall(id=cid, type="function", function=function)


class Metered(Model):  # type: ignore[misc]
    """A scripted `Model` that reports ``tokens`` per call and, at each call, what the ledger's
    scope holds then; it calls ``add`` until ``answer_at``, then gives the final answer."""

    def __init__(
        self,
        url: str,
        *,
        tokens: int = 15,
        answer_at: int = 99,
        fail_at: int = 0,
        linger: float = 0,
    ):
        super().__init__(model_id="metered")
        self.url = url
        self.linger = linger  # how long each call lasts before it reads the scope
        self.tokens = tokens
        self.answer_at = answer_at
        self.fail_at = fail_at
        self.seen: list[tuple[int, int]] = []  # (spent, reserved) tokens at each call

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        n = len(self.seen) + 1
        time.sleep(self.linger)
        if self.url.startswith("sqlite"):
            with open_ledger(self.url) as led:
                status = led.status(SCOPE, window="day")
            self.seen.append((status.spent_tokens, status.reserved_tokens))
        else:
            self.seen.append((-1, -1))
        if n == self.fail_at:
            raise RuntimeError("the provider is down")
        usage = TokenUsage(self.tokens - 5, 5)
        if not kwargs.get("tools_to_call_from"):  # the forced final answer, or a plan
            return ChatMessage(role=MessageRole.ASSISTANT, content="summary", token_usage=usage)
        if n >= self.answer_at:
            calls = [call("final_answer", {"answer": f"answer {n}"}, "fin")]
        else:
            calls = [call("add", {"a": n, "b": 1}, f"c{n}")]
        return ChatMessage(
            role=MessageRole.ASSISTANT, content=f"step {n}", tool_calls=calls, token_usage=usage
        )

    @property
    def calls(self) -> int:
        return len(self.seen)


@tool  # type: ignore[untyped-decorator]
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    return a + b


def agent(model: Model, **kwargs: Any) -> Any:
    return ToolCallingAgent(tools=[add], model=model, verbosity_level=LogLevel.OFF, **kwargs)


def test_each_model_call_is_reserved_before_it_and_settled_with_its_usage(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, answer_at=3)
    result = bridge.run(agent(model), "go", budget(url))
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.OK,
        "completed",
        "answer 3",
    )
    assert model.seen == [(0, 4096), (15, 4096), (30, 4096)]
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.spent_cost_usd) == (45, 0.0)
    assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (0, 0.0, 1)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(3, 45, "completed")]


def test_the_plans_are_reserved_too(tmp_path: Path) -> None:
    """max_steps = 6, a plan every 2 steps: six calls reserved, and no seventh (a plan)."""
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=10)
    result = bridge.run(agent(model, planning_interval=2), "go", budget(url, max_steps="6"))
    assert (result.stop_reason, result.output, result.turns) == ("max_steps", "step 6", 6)
    assert model.seen == [(10 * n, 4096) for n in range(6)]
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens) == (60, 0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(6, 60, "max_steps")]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_scopes_maximum_stops_the_run_before_the_call(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """100 tokens reserved and used per call, 250 at most: the third call is never made."""
    url = sqlite_url(tmp_path) if backend == "sqlite" else request.getfixturevalue("redis_url")
    model = Metered(url, tokens=PER_CALL)
    res = budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    result = bridge.run(agent(model), "go", res)
    assert model.calls == 2
    assert (result.turns, result.output, result.framework) == (2, "step 2", "smolagents")
    assert_stopped_before_the_third_call(result, url)


def test_a_refused_first_call_is_never_made(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url)
    res = budget(url, ledger_max_tokens="100", ledger_reserve_tokens="101")
    result = bridge.run(agent(model), "go", res)
    assert (model.calls, result.stop_reason, result.turns, result.output) == (
        0,
        "max_tokens",
        0,
        "",
    )
    assert result.native is None
    _, runs = status_and_runs(url)
    assert [(r["turns"], r["stop_reason"]) for r in runs] == [(0, "max_tokens")]


def test_the_ledgers_refusal_stops_the_last_permitted_call(tmp_path: Path) -> None:
    """max_steps = 3: two steps, then the ledger refuses the third, which is never made."""
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=100)
    res = budget(url, max_steps="3", ledger_max_tokens="250", ledger_reserve_tokens="100")
    result = bridge.run(agent(model), "go", res)
    assert (model.calls, result.stop_reason, result.turns) == (2, "max_tokens", 2)
    status, _ = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens) == (200, 0)


def test_a_failed_call_gives_its_reservation_back_and_the_run_is_recorded(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, fail_at=2)
    result = bridge.run(agent(model), "go", budget(url))
    assert (result.stop_reason, result.message) == (
        "error",
        "failed: RuntimeError: the provider is down (turn 2)",
    )
    assert isinstance(result.native, AgentGenerationError)
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, status.reserved_cost_usd) == (15, 0, 0.0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(2, 15, "error")]


def test_an_unreachable_ledger_fails_the_run_before_any_call_without_its_password() -> None:
    url = f"redis://agent:pw-SECRET@127.0.0.1:{free_port()}/0"
    model = Metered(url)
    result = bridge.run(agent(model), "go", budget(url))
    assert (model.calls, result.status, result.stop_reason) == (0, RunStatus.FAILED, "error")
    assert result.message.startswith("failed: ledger redis://agent:***@127.0.0.1:")
    assert "SECRET" not in result.message + repr(result)


def test_an_unreachable_ledger_with_continue_runs_on_and_warns_at_each_call() -> None:
    url = f"redis://agent:pw-SECRET@127.0.0.1:{free_port()}/0"
    model = Metered(url, answer_at=2)
    res = budget(url, ledger_on_unavailable="continue")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bridge.run(agent(model), "go", res)
    assert (result.status, result.output, model.calls) == (RunStatus.OK, "answer 2", 2)
    shown = [str(w.message) for w in caught if issubclass(w.category, BudgetConfWarning)]
    assert len(shown) == 2
    assert all("redis://agent:***@" in line and "SECRET" not in line for line in shown)


def test_a_ledger_cost_maximum_needs_the_price_of_the_agents_model(tmp_path: Path) -> None:
    """smolagents reports no cost: the scope's cost maximum is drawn on at the model's price,
    so a named model with no price is refused before its first call; with one, each
    response's tokens are settled at it."""
    url = sqlite_url(tmp_path)
    model = Metered(url, answer_at=2)
    unpriced = budget(url, ledger_max_cost_usd="5", price_table="none")
    with pytest.raises(budgetconf.UsageError, match=r"no price for the model 'metered', and"):
        bridge.run(agent(model), "go", unpriced)
    assert model.calls == 0
    fields = {"price_input_per_mtok": "0.15", "price_output_per_mtok": "0.6"}
    result = bridge.run(agent(model), "go", budget(url, ledger_max_cost_usd="5", **fields))
    assert (result.status, model.calls, result.usage.cost_source) == (RunStatus.OK, 2, "priced")
    assert_two_calls_settled_at_the_price(url)


def test_a_call_that_outlives_its_lease_keeps_its_reservation(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url, ledger_reserve_tokens=str(PER_CALL), ledger_lease_seconds=LEASE)
    model = Metered(url, tokens=PER_CALL, answer_at=1, linger=LINGER)
    assert bridge.run(agent(model), "go", res).status == RunStatus.OK
    assert_the_lease_outlived(model.seen)
