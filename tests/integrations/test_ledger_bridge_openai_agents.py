"""The openai-agents bridge draws on the shared ledger per model call, as the executor does:
reserve before each call (``RunHooks.on_llm_start``), settle after (``on_llm_end``), the
ledger's stop before the call, ``on_unavailable`` both ways, one record per run; against the
real framework with a scripted `Model`, offline, and a real SQLite ledger and redis-server."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, Usage, function_tool

import budgetconf
from budgetconf import BudgetConfWarning
from budgetconf.integrations import openai_agents
from budgetconf.ledger import open_ledger
from budgetconf.loop import RunStatus

from helpers.agents_double import _default_loop_closed, _no_tracing, call, text  # noqa: F401  (fixtures)
from helpers.ledgers import (
    LEASE,
    LINGER,
    MOST,
    PER_CALL,
    SCOPE,
    assert_stopped_before_the_third_call,
    assert_the_lease_outlived,
    budget,
    sqlite_url,
    status_and_runs,
)
from helpers.redis_server import free_port


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Metered(Model):
    """A scripted model that reports ``tokens`` per response and, at each call, what the
    ledger's scope holds then; after ``answer_at`` calls it answers without tools."""

    def __init__(
        self,
        url: str,
        *,
        tokens: int = 15,
        answer_at: int = 99,
        fail_at: int = 0,
        linger: float = 0,
    ):
        self.url = url
        self.linger = linger  # how long each call lasts before it reads the scope
        self.tokens = tokens
        self.answer_at = answer_at
        self.fail_at = fail_at
        self.seen: list[tuple[int, int]] = []  # (spent, reserved) tokens at each call

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        n = len(self.seen) + 1
        await asyncio.sleep(self.linger)
        if self.url.startswith("sqlite"):
            with open_ledger(self.url) as led:
                status = led.status(SCOPE, window="day")
            self.seen.append((status.spent_tokens, status.reserved_tokens))
        else:
            self.seen.append((-1, -1))
        if n == self.fail_at:
            raise RuntimeError("the provider is down")
        out: list[Any] = [text(f"working {n}"), call(f"c{n}")]
        if n >= self.answer_at:
            out = [text(f"answer {n}")]
        usage = Usage(requests=1, input_tokens=10, output_tokens=self.tokens - 10)
        usage.total_tokens = self.tokens
        return ModelResponse(output=out, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @property
    def calls(self) -> int:
        return len(self.seen)


def agent(model: Model) -> Agent[Any]:
    return Agent(name="calc", model=model, tools=[add])


def test_each_model_call_is_reserved_before_it_and_settled_with_its_usage(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, answer_at=3)
    result = openai_agents.run(agent(model), "go", budget(url))
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.OK,
        "completed",
        "answer 3",
    )
    # at each call, its own reservation is held, and what the earlier responses used is spent
    assert model.seen == [(0, 4096), (15, 4096), (30, 4096)]
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.spent_cost_usd) == (45, 0.0)  # what the double reported
    assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (0, 0.0, 1)
    (record,) = runs
    assert (record["turns"], record["tokens"], record["stop_reason"]) == (3, 45, "completed")
    assert record["scope"] == SCOPE


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_scopes_maximum_stops_the_run_before_the_call(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """100 tokens reserved and used per call, 250 at most: the third call is never made."""
    url = sqlite_url(tmp_path) if backend == "sqlite" else request.getfixturevalue("redis_url")
    model = Metered(url, tokens=PER_CALL)
    res = budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    result = openai_agents.run(agent(model), "go", res)
    assert model.calls == 2
    assert (result.turns, result.output, result.framework) == (2, "working 2", "openai_agents")
    assert_stopped_before_the_third_call(result, url)


def test_a_failed_call_gives_its_reservation_back_and_the_run_is_recorded(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=15, fail_at=2)
    result = openai_agents.run(agent(model), "go", budget(url))
    assert (result.stop_reason, str(result.native)) == ("error", "the provider is down")
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, status.reserved_cost_usd) == (15, 0, 0.0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(2, 15, "error")]


def test_an_unreachable_ledger_fails_the_run_before_any_call_without_its_password() -> None:
    url = f"redis://agent:pw-SECRET@127.0.0.1:{free_port()}/0"
    model = Metered(url)
    result = openai_agents.run(agent(model), "go", budget(url))
    assert model.calls == 0
    assert (result.status, result.stop_reason, result.turns) == (RunStatus.FAILED, "error", 0)
    assert result.message.startswith("failed: ledger redis://agent:***@127.0.0.1:")
    assert result.message.endswith("(turn 0)")
    assert "\n" not in result.message
    assert "SECRET" not in result.message + repr(result)


def test_an_unreachable_ledger_with_continue_runs_on_and_warns_at_each_call() -> None:
    url = f"redis://agent:pw-SECRET@127.0.0.1:{free_port()}/0"
    model = Metered(url, answer_at=2)
    res = budget(url, ledger_on_unavailable="continue")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = openai_agents.run(agent(model), "go", res)
    assert (result.status, result.output, model.calls) == (RunStatus.OK, "answer 2", 2)
    shown = [str(w.message) for w in caught if issubclass(w.category, BudgetConfWarning)]
    assert len(shown) == 2
    assert all("the run goes on without it" in line for line in shown)
    assert all("redis://agent:***@" in line and "SECRET" not in line for line in shown)


def test_arun_draws_on_the_ledger_too(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url, tokens=20, answer_at=2)
    result = asyncio.run(openai_agents.arun(agent(model), "go", budget(url)))
    assert (result.stop_reason, model.seen) == ("completed", [(0, 4096), (20, 4096)])
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, len(runs)) == (40, 0, 1)


def test_a_ledger_cost_maximum_is_refused_the_framework_reports_no_cost(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    model = Metered(url)
    with pytest.raises(budgetconf.UsageError) as caught:
        openai_agents.run(agent(model), "go", budget(url, ledger_max_cost_usd="5"))
    assert str(caught.value).startswith(
        "ledger.max_cost_usd = 5.0 from env:BUDGETCONF_LEDGER_MAX_COST_USD cannot be drawn on by"
        " openai-agents: it reports no cost to settle with"
    )
    assert model.calls == 0


def test_a_call_that_outlives_its_lease_keeps_its_reservation(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url, ledger_reserve_tokens=str(PER_CALL), ledger_lease_seconds=LEASE)
    model = Metered(url, tokens=PER_CALL, answer_at=1, linger=LINGER)
    assert openai_agents.run(agent(model), "go", res).status == RunStatus.OK
    assert_the_lease_outlived(model.seen)
