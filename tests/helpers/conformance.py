"""The conformance suite's parts: one loopback model server, the scenarios it plays, and a
driver for the executor and for each bridge, each through its framework's standard OpenAI
client.

A scenario is a budget and a way to answer each request (by its number and body: a text
answer when the request offers no tools, as a framework's final tool-less call asks). A
driver runs one agent with the one tool ``add`` on a model of the scenario's name against
the server and gives the `Outcome`: how many requests the server received, how many times
``add`` ran, and how the run ended. Every bridge must give the executor's outcome in every
scenario; in the priced scenarios (`PRICED`: a cost budget, responses that report usage and
no cost) its usage too, cost and cached tokens included.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import budgetconf

from helpers.chat_server import Failure, Reply, reply

#: the model name every driver asks for
MODEL = "conformance-model"
KEY = "sk-conformance"


@dataclass(frozen=True)
class Outcome:
    """What a run did, as the suite compares it."""

    requests: int
    tool_runs: int
    status: str
    stop_reason: str
    limit_field: str | None
    warned: tuple[str, ...] = ()  # the BudgetConfWarnings the run gave, in order


@dataclass
class Adder:
    """The one tool: adds two numbers, counting its runs; a negative ``a`` makes it fail."""

    runs: int = 0

    def __call__(self, a: int, b: int) -> int:
        self.runs += 1
        if a < 0:
            raise ValueError("a must not be negative")
        return a + b


def offered(body: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers."""
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or []]


def answer(body: dict[str, Any]) -> Reply:
    """The final answer: the framework's answer tool where it has one, else text."""
    if "final_answer" in offered(body):
        return reply(None, calls=[("fin", "final_answer", {"answer": "done"})], usage=(60, 40))
    return reply("done", usage=(60, 40))


def asking(calls: int = 1, *, same_id: bool = False) -> Callable[[int, dict[str, Any]], Reply]:
    """A model that always asks for ``calls`` calls of ``add`` (text when offered no tools)."""

    def respond(n: int, body: dict[str, Any]) -> Reply:
        if not offered(body):
            return reply("done", usage=(60, 40))
        made = [  # the same call, word for word, when the model reuses its id
            ("same", "add", {"a": 1, "b": 1})
            if same_id
            else (f"call_{n}_{i}", "add", {"a": n, "b": i})
            for i in range(calls)
        ]
        return reply(f"step {n}", calls=made, usage=(60, 40))

    return respond


def once(n: int, body: dict[str, Any]) -> Reply:
    """A tool once, then the answer."""
    return asking()(n, body) if n == 1 else answer(body)


def twice_thrice(n: int, body: dict[str, Any]) -> Reply:
    """Two calls a response for three responses (six calls), then the answer."""
    return asking(2)(n, body) if n <= 3 else answer(body)


def the_same_call(a: int) -> Callable[[int, dict[str, Any]], Reply]:
    """A model that asks for ``add(a, 1)`` every turn, with a new id each time: the same
    call, with the same answer (or the same failure: ``add`` refuses a negative ``a``)."""

    def respond(n: int, body: dict[str, Any]) -> Reply:
        if not offered(body):
            return reply("done", usage=(60, 40))
        return reply(f"step {n}", calls=[(f"call_{n}", "add", {"a": a, "b": 1})], usage=(60, 40))

    return respond


#: the outcome of a framework whose run ends at a tool's first exception: one request, one run
ENDS_AT_A_TOOL_ERROR = Outcome(1, 1, "failed", "error", None)


def told(body: dict[str, Any]) -> bool:
    """Whether a request's messages carry a budget warning (``loop.warn_model``)."""
    return "turns used" in json.dumps(body.get("messages", []))


def until_warned(n: int, body: dict[str, Any]) -> Reply:
    """A tool every turn, until the model is told of a budget warning: then the answer."""
    return answer(body) if told(body) else asking()(n, body)


SERVER_ERROR = Failure(500, {"error": {"message": "the model is down", "type": "server_error"}})


def failing_at(*numbers: int, after: int | None = None) -> Callable[[int, dict[str, Any]], Reply]:
    """HTTP 500 for the requests ``numbers`` (and every one from ``after`` on), else a tool."""

    def respond(n: int, body: dict[str, Any]) -> Reply:
        if n in numbers or (after is not None and n >= after):
            return SERVER_ERROR
        return asking()(n, body)

    return respond


@dataclass(frozen=True)
class Scenario:
    """A budget (variables, and the shared ledger's when ``ledger``) and the server's part."""

    name: str
    env: dict[str, str]
    respond: Callable[[int, dict[str, Any]], Reply]
    delay: float = 0.0
    ledger: bool = False
    model: str = MODEL  # the name of the model every driver asks for

    def budget(self, tmp_path: Path) -> budgetconf.Resolution:
        env = dict(self.env)
        if self.ledger:
            env["BUDGETCONF_LEDGER_URL"] = f"sqlite:///{tmp_path / 'ledger.db'}"
        return budgetconf.resolve(env=env)


SCENARIOS = [
    Scenario("a tool once, then an answer", {"BUDGETCONF_MAX_STEPS": "5"}, once),
    Scenario("always a tool", {"BUDGETCONF_MAX_STEPS": "3"}, asking()),
    Scenario(
        "three calls a response, two allowed",
        {"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "2"},
        asking(3),
    ),
    Scenario(
        "three calls a response, four in all",
        {"BUDGETCONF_MAX_STEPS": "3", "BUDGETCONF_MAX_TOOL_CALLS": "4"},
        asking(3),
    ),
    Scenario("one server error, retried", {"BUDGETCONF_MAX_STEPS": "3"}, failing_at(2)),
    Scenario("server errors from the second", {"BUDGETCONF_MAX_STEPS": "3"}, failing_at(after=2)),
    Scenario("100 tokens a reply", {"BUDGETCONF_MAX_TOKENS": "250"}, asking()),
    Scenario(
        "100 tokens a reply, a ledger's maximum",
        {"BUDGETCONF_LEDGER_MAX_TOKENS": "250", "BUDGETCONF_LEDGER_RESERVE_TOKENS": "100"},
        asking(),
        ledger=True,
    ),
    # the first reply ends a second before the deadline: a slow start on a busy machine fits
    Scenario("2 s a reply", {"BUDGETCONF_TIMEOUT_SECONDS": "3"}, asking(), delay=2.0),
    Scenario(
        "one call id in every response", {"BUDGETCONF_MAX_TOOL_CALLS": "2"}, asking(same_id=True)
    ),
    Scenario(
        "add three times allowed, the model asks six times",
        {"BUDGETCONF_MAX_STEPS": "5", "BUDGETCONF_TOOLS_MAX_CALLS": "add=3"},
        twice_thrice,
    ),
    Scenario(
        "the same failing call every turn under max_repeats = 3",
        {"BUDGETCONF_MAX_STEPS": "6", "BUDGETCONF_MAX_REPEATS": "3"},
        the_same_call(-1),
    ),
    Scenario(
        "the same call, the same answer every turn under max_repeats = 3",
        {"BUDGETCONF_MAX_STEPS": "6", "BUDGETCONF_MAX_REPEATS": "3"},
        the_same_call(1),
    ),
    Scenario(
        "a limit for a tool the run does not have",
        {"BUDGETCONF_MAX_STEPS": "5", "BUDGETCONF_TOOLS_MAX_CALLS": "serach=2"},
        once,
    ),
    Scenario(
        "warned at 60 % of the steps, and told",
        {"BUDGETCONF_MAX_STEPS": "5", "BUDGETCONF_WARN_AT": "0.6", "BUDGETCONF_WARN_MODEL": "1"},
        until_warned,
    ),
]

#: the tokens of each response in the priced scenarios: at $0.15 / $0.60 per million tokens,
#: $0.00075 a response; with `CACHED` of the prompt's cached at $0.075, $0.00069
PROMPT, COMPLETION, CACHED = 1000, 1000, 800
#: the price fields' price, and its cached rate
FIELDS = {"BUDGETCONF_PRICE_INPUT_PER_MTOK": "0.15", "BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0.6"}
CACHED_FIELDS = {**FIELDS, "BUDGETCONF_PRICE_CACHED_INPUT_PER_MTOK": "0.075"}


def priced(cached: int = 0) -> Callable[[int, dict[str, Any]], Reply]:
    """A model that always asks for ``add``, each response reporting `PROMPT` + `COMPLETION`
    tokens (``cached`` of the prompt's cached, as ``prompt_tokens_details`` says) and no cost,
    and naming the model it was asked for, as a real server does."""
    usage: dict[str, Any] = {
        "prompt_tokens": PROMPT,
        "completion_tokens": COMPLETION,
        "total_tokens": PROMPT + COMPLETION,
    }
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}

    def respond(n: int, body: dict[str, Any]) -> Reply:
        made = asking()(n, body)
        assert isinstance(made, dict)
        return {**made, "model": body.get("model", MODEL), "usage": usage}

    return respond


#: a cost budget of $0.002 (the third response crosses it), with room for ten steps
COST = {"BUDGETCONF_MAX_COST_USD": "0.002", "BUDGETCONF_MAX_STEPS": "10"}

PRICED = [
    Scenario("$0.00075 a reply at the fields' price", {**COST, **FIELDS}, priced()),
    Scenario(
        "$0.00069 a reply at the fields' price, 800 tokens cached",
        {**COST, **CACHED_FIELDS},
        priced(CACHED),
    ),
    Scenario("gpt-4o-mini at genai-prices' price", COST, priced(), model="gpt-4o-mini"),
    Scenario(
        "gpt-4o-mini at genai-prices' price, 800 tokens cached",
        COST,
        priced(CACHED),
        model="gpt-4o-mini",
    ),
    # a reservation of 1,000 tokens at the higher rate, $0.0006: after two responses the
    # scope's $0.0015 and it pass $0.002, and the third call is refused before it is made
    Scenario(
        "a ledger's cost maximum at the fields' price",
        {
            "BUDGETCONF_LEDGER_MAX_COST_USD": "0.002",
            "BUDGETCONF_LEDGER_RESERVE_TOKENS": "1000",
            "BUDGETCONF_MAX_STEPS": "10",
            **FIELDS,
        },
        priced(),
        ledger=True,
    ),
]


#: a driver: the server's base URL, the budget, the tool and the model's name in, the run's end
#: out
Driver = Callable[[str, budgetconf.Resolution, Adder, str], Any]


def outcome(result: Any, requests: int, adder: Adder, warned: tuple[str, ...] = ()) -> Outcome:
    """The `Outcome` of a run's result (a `RunResult` or a `BridgeResult`), which gave the
    budget warnings ``warned``."""
    limit = result.limit
    return Outcome(
        requests,
        adder.runs,
        result.status.value,
        result.stop_reason,
        None if limit is None else limit["field"],
        warned,
    )


def executor(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    """`LoopExecutor` with `OpenAIModel`, as the baseline every bridge is held to."""
    import openai

    from budgetconf.integrations.openai import OpenAIModel
    from budgetconf.loop import LoopExecutor

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=2)
    return LoopExecutor(OpenAIModel(model, client=client), {"add": add}, res).run("Add.")


DRIVERS: dict[str, Driver] = {}
#: the drivers whose framework reports no cached input tokens, as docs/frameworks.md says
UNCACHED: set[str] = set()
#: the drivers whose framework prices its own responses by genai-prices: where it knows the
#: model, its cost is the one reported
PRICES_ITSELF: set[str] = set()
#: the drivers of a bridge's ``stream()`` (``"NAME, streamed"``: each bridge's streamed twin)
#: whose framework streams each model request: every request the server gets asks for a stream
STREAMS: set[str] = set()
#: driver -> scenario -> what the UsageError says: the refusals BRIDGES.md allows
REFUSALS: dict[str, dict[str, str]] = {}
#: driver -> scenario -> (what the bridge does, the framework's reason as docs/frameworks.md
#: words it): where the framework itself does otherwise, and the bridge stays within budget
DIFFERENCES: dict[str, dict[str, tuple[Outcome, str]]] = {}


def driver(
    name: str,
    *,
    needs: str,
    refuses: dict[str, str] | None = None,
    differs: dict[str, tuple[Outcome, str]] | None = None,
    uncached: bool = False,
    prices_itself: bool = False,
    streams: bool = False,
) -> Callable[[Driver], Driver]:
    """Register a bridge's driver under ``name``, where its framework (the module ``needs``)
    is installed: each test environment plays the bridges it has (noxfile.py). ``refuses``
    names the scenarios its bridge refuses (a `UsageError` matching the text), ``differs``
    those where its framework does otherwise, each with the framework's reason, which
    docs/frameworks.md gives; ``uncached`` says its framework reports no cached input
    tokens, ``prices_itself`` that it prices its responses by genai-prices, ``streams`` that
    it streams each model request."""

    def register(fn: Driver) -> Driver:
        if find_spec(needs) is None:
            return fn
        DRIVERS[name] = fn
        if streams:
            STREAMS.add(name)
        if uncached:
            UNCACHED.add(name)
        if prices_itself:
            PRICES_ITSELF.add(name)
        REFUSALS[name] = refuses or {}
        DIFFERENCES[name] = differs or {}
        return fn

    return register


def register_every_driver() -> None:
    """Import every bridge's drivers (tests/helpers/conformance_NAME.py): each registers where
    its framework is installed, so this environment plays the bridges it has (noxfile.py)."""
    for module in sorted(Path(__file__).parent.glob("conformance_*.py")):
        import_module(f"helpers.{module.stem}")


def drained(stream: Any) -> Any:
    """The result of a bridge's `BridgeStream`, iterated to its end: it yielded items."""
    items = list(stream)
    assert items, "the stream yielded nothing"
    return stream.result


async def adrained(stream: Any) -> Any:
    """`drained`, for a stream iterated with ``async for``."""
    items = [item async for item in stream]
    assert items, "the stream yielded nothing"
    return stream.result


def requests_bodies(received: list[Any]) -> str:
    """The requests' bodies, for a failing comparison's message."""
    return json.dumps([r.body.get("messages", [])[-1:] for r in received], default=str)[:2000]
