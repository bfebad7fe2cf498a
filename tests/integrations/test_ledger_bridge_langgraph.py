"""The LangGraph bridge draws on the shared ledger per model call where it sees each call: a
``create_agent`` graph built with `middleware()`, whose ``wrap_model_call`` reserves before the
call and settles after; any other graph refuses ``ledger.url``. Against the real framework,
offline, with langchain-core's fake model, and a real SQLite ledger and redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph

import budgetconf
from budgetconf.integrations.langgraph import arun, middleware, run
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


@tool
def add(a: int, b: int) -> int:
    """Add two ints."""
    return a + b


class Metered(GenericFakeChatModel):
    """The stock fake, bound to tools, noting at each call what the ledger's scope holds."""

    url: str = ""
    fail_at: int = 0
    linger: float = 0.0  # how long each call lasts before it reads the scope
    seen: list[tuple[int, int]] = []  # (spent, reserved) tokens at each call

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self

    def _note(self) -> None:
        time.sleep(self.linger)
        if self.url.startswith("sqlite"):
            with open_ledger(self.url) as led:
                status = led.status(SCOPE, window="day")
            self.seen.append((status.spent_tokens, status.reserved_tokens))
        else:
            self.seen.append((-1, -1))
        if len(self.seen) == self.fail_at:
            raise LookupError("the provider is down")

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self._note()
        return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        self._note()
        return super()._generate(*args, **kwargs)

    @property
    def calls(self) -> int:
        return len(self.seen)


def script(tokens: int, answer_at: int = 99) -> Iterator[AIMessage]:
    usage = {"input_tokens": tokens - 5, "output_tokens": 5, "total_tokens": tokens}
    n = 0
    while True:
        n += 1
        if n >= answer_at:
            yield AIMessage(content=f"answer {n}", usage_metadata=usage)
        else:
            calls = [{"name": "add", "args": {"a": n, "b": 1}, "id": f"c{n}"}]
            yield AIMessage(content=f"step {n}", tool_calls=calls, usage_metadata=usage)


def model(url: str, tokens: int = 15, answer_at: int = 99, fail_at: int = 0) -> Metered:
    return Metered(messages=script(tokens, answer_at), url=url, fail_at=fail_at, seen=[])


def agent(fake: Metered, res: budgetconf.Resolution) -> Any:
    return create_agent(fake, [add], middleware=middleware(res))


def hi() -> dict[str, Any]:
    return {"messages": [HumanMessage("go")]}


def test_each_model_call_is_reserved_before_it_and_settled_with_its_usage(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url)
    fake = model(url, tokens=15, answer_at=3)
    result = run(agent(fake, res), hi(), res)
    assert (result.status, result.stop_reason, result.output) == (
        RunStatus.OK,
        "completed",
        "answer 3",
    )
    assert fake.seen == [(0, 4096), (15, 4096), (30, 4096)]
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.spent_cost_usd) == (45, 0.0)
    assert (status.reserved_tokens, status.reserved_cost_usd, status.runs) == (0, 0.0, 1)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(3, 45, "completed")]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_scopes_maximum_stops_the_run_before_the_call(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """100 tokens reserved and used per call, 250 at most: the third call is never made."""
    url = sqlite_url(tmp_path) if backend == "sqlite" else request.getfixturevalue("redis_url")
    res = budget(url, ledger_max_tokens=str(MOST), ledger_reserve_tokens=str(PER_CALL))
    fake = model(url, tokens=PER_CALL)
    result = run(agent(fake, res), hi(), res)
    assert fake.calls == 2
    assert (result.turns, result.output, result.framework) == (2, "step 2", "langgraph")
    assert_stopped_before_the_third_call(result, url)


def test_a_failed_call_gives_its_reservation_back_and_the_run_is_recorded(
    tmp_path: Path,
) -> None:
    """The second call fails: the run is failed (two turns started), its share given back."""
    url = sqlite_url(tmp_path)
    res = budget(url)
    result = run(agent(model(url, fail_at=2), res), hi(), res)
    assert (result.stop_reason, str(result.native)) == ("error", "the provider is down")
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, status.reserved_cost_usd) == (15, 0, 0.0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [(2, 15, "error")]


def test_arun_draws_on_the_ledger_too(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url)
    fake = model(url, tokens=20, answer_at=2)
    result = asyncio.run(arun(agent(fake, res), hi(), res))
    assert (result.stop_reason, fake.seen) == ("completed", [(0, 4096), (20, 4096)])
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens, len(runs)) == (40, 0, 1)


def test_an_unreachable_ledger_fails_the_run_before_any_call_without_its_password() -> None:
    url = f"redis://agent:pw-SECRET@127.0.0.1:{free_port()}/0"
    res = budget(url)
    fake = model(url)
    result = run(agent(fake, res), hi(), res)
    assert (fake.calls, result.status, result.stop_reason) == (0, RunStatus.FAILED, "error")
    assert result.message.startswith("failed: ledger redis://agent:***@127.0.0.1:")
    assert "SECRET" not in result.message + repr(result)


def test_a_graph_without_the_middleware_refuses_the_ledger(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    fake = model(url)
    g: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    g.add_node("agent", lambda state: {"messages": [fake.invoke(state["messages"])]})
    g.add_edge(START, "agent")
    with pytest.raises(budgetconf.UsageError) as caught:
        run(g.compile(), hi(), budget(url))
    assert str(caught.value).startswith(
        f"ledger.url = {url} from env:BUDGETCONF_LEDGER_URL cannot be drawn on by langgraph:"
    )
    assert fake.calls == 0


def test_the_middlewares_graph_invoked_without_the_bridge_stops_before_any_call(
    tmp_path: Path,
) -> None:
    """Its own graph.invoke would spend outside the ledger: refused at the run's start."""
    url = sqlite_url(tmp_path)
    fake = model(url)
    with pytest.raises(budgetconf.UsageError, match=r"only when it runs through .*run\(\)"):
        agent(fake, budget(url)).invoke(hi())
    assert fake.calls == 0


def test_a_ledger_cost_maximum_is_drawn_on_at_the_price_or_refused_by_run(
    tmp_path: Path,
) -> None:
    """LangGraph reports no cost: middleware() takes the scope's cost maximum, and run() draws
    on it at the model's price (the price fields', any model's), or refuses it for a fake
    model with no name, which nothing else can price."""
    url = sqlite_url(tmp_path)
    res = budget(url, ledger_max_cost_usd="5")
    fake = model(url, answer_at=2)
    with pytest.raises(
        budgetconf.UsageError,
        match=r"ledger\.max_cost_usd = 5\.0 from env:.* cannot be drawn on by langgraph: it",
    ):
        run(agent(fake, res), hi(), res)
    assert fake.calls == 0
    priced = budget(
        url, ledger_max_cost_usd="5", price_input_per_mtok="0.15", price_output_per_mtok="0.6"
    )
    result = run(agent(fake, priced), hi(), priced)
    assert (result.status, fake.calls, result.usage.cost_source) == (RunStatus.OK, 2, "priced")
    assert_two_calls_settled_at_the_price(url)


def test_arun_gives_a_failed_calls_reservation_back(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url)
    result = asyncio.run(arun(agent(model(url, fail_at=1), res), hi(), res))
    assert (result.status, result.stop_reason) == (RunStatus.FAILED, "error")
    assert isinstance(result.native, LookupError)
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens) == (0, 0)
    assert [(r["turns"], r["stop_reason"]) for r in runs] == [(1, "error")]


def test_the_middleware_draws_on_the_runs_ledger_whatever_it_was_built_from(
    tmp_path: Path,
) -> None:
    """middleware() carries no ledger of its own: the run's budget names the one drawn on."""
    url = sqlite_url(tmp_path)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    built = agent(model(other, answer_at=1), budget(url))
    assert run(built, hi(), budget(other)).stop_reason == "completed"
    assert [len(status_and_runs(u)[1]) for u in (url, other)] == [0, 1]


def test_a_call_that_outlives_its_lease_keeps_its_reservation(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    res = budget(url, ledger_reserve_tokens=str(PER_CALL), ledger_lease_seconds=LEASE)
    fake = Metered(messages=script(PER_CALL, answer_at=1), url=url, seen=[], linger=LINGER)
    assert run(agent(fake, res), hi(), res).status == RunStatus.OK
    assert_the_lease_outlived(fake.seen)
