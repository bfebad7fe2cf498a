"""Events files for the report's tests, written from real runs of the executor, and the page
read back as a browser's parser reads it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from budgetconf import BudgetConfWarning, Resolution, resolve
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel

from helpers.loops import Echo, answer, budget, call, calls, usage

#: every budget the executor enforces, each set, so that the page draws each chart
ALL_BUDGETS = budget(
    max_steps=6,
    max_tool_calls_per_turn=2,
    max_tokens=10_000,
    max_cost_usd=1.0,
    max_tool_calls=40,
    timeout_seconds=60,
    last_turn="warn",
)


def priced(response: dict[str, Any], tokens: int, cost: float) -> dict[str, Any]:
    return {**response, **usage(tokens), "cost_usd": cost}


#: price fields, for the priced runs' tests: any model's, or a named model's
PRICES = {
    "prices.input_per_mtok": 0.15,
    "prices.output_per_mtok": 0.6,
    "prices.cached_input_per_mtok": 0.075,
}


class Named:
    """A scripted model with a name, as `OpenAIModel` has one: its run is priced by it."""

    def __init__(self, name: str, responses: list[dict[str, Any]]) -> None:
        self.model = name
        self._script = ScriptedModel(responses, record=False)

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return self._script(messages, tools)


def used(inputs: int, outputs: int, cached: int = 0, **extra: Any) -> dict[str, Any]:
    """A response asking for one tool call, with its usage split as OpenAI reports it."""
    counts: dict[str, Any] = {"prompt_tokens": inputs, "completion_tokens": outputs}
    counts["prompt_tokens_details"] = {"cached_tokens": cached}
    return {**calls(1), "usage": counts, **extra}


def stopped_run(budget: Any = None, **fields: Any) -> RunResult:
    """A run that a response over the cap, the last-turn notice and the step budget all mark."""
    model = ScriptedModel(
        [
            priced(calls(1), 300, 0.01),
            priced(calls(3), 500, 0.02),  # over the cap of 2: rejected
            priced(calls(2), 400, 0.015),
        ],
        record=False,
    )
    chosen = {**ALL_BUDGETS, **fields} if budget is None else budget
    return LoopExecutor(model, {"echo": Echo()}, chosen).run("go")


def from_environment() -> Resolution:
    """ALL_BUDGETS, but the step budget set by its variable: a stop that says what raises it."""
    explicit = {k: v for k, v in ALL_BUDGETS.items() if k != "loop.max_steps"}
    return resolve(env={"BUDGETCONF_MAX_STEPS": "6"}, explicit=explicit)


def completed_run() -> RunResult:
    model = ScriptedModel([priced(calls(1), 100, 0.001), priced(answer("all done"), 50, 0.001)])
    return LoopExecutor(model, {"echo": Echo()}, budget(max_steps=5)).run("go")


def long_run(turns: int) -> RunResult:
    """A run of ``turns`` turns, each calling a tool, stopped by its step budget."""
    model = ScriptedModel([priced(calls(1), 10, 0.0001)], record=False)
    fields = budget(max_steps=turns, max_tokens=10 * turns + 5, last_turn="warn")
    return LoopExecutor(model, {"echo": Echo()}, fields).run("go")


def lines(events: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(event, default=str) + "\n" for event in events)


def write_events(path: Path, *results: RunResult, extra: str = "") -> Path:
    """The runs' events appended to one file, as `budgetconf run --events` appends them."""
    path.write_text("".join(lines(r.events) for r in results) + extra, encoding="utf-8")
    return path


class Page(HTMLParser):
    """A page's elements (tag and attributes) and its text, as a browser's parser sees them."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def having(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [
            a
            for t, a in self.elements
            if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())
        ]

    def with_class(self, tag: str, name: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if t == tag and name in (a.get("class") or "").split()]


def search(q: str) -> str:
    """A web search that finds nothing, whatever it is asked."""
    return f"nothing for {q}"


def limited_run() -> RunResult:
    """Two tools with limits of their own, each asked for every turn: web_search twice a
    response (3 allowed: turn 2 runs one, turn 3 none), fetch once (3 of 5 run)."""
    asked = {
        "tool_calls": [
            call("web_search", q="budgets"),
            call("web_search", q="limits"),
            call("fetch", q="a page"),
        ]
    }
    model = ScriptedModel([asked, asked, asked, answer("nothing found")], record=False)
    fields = {**budget(max_steps=6), "tools.max_calls": {"web_search": 3, "fetch": 5}}
    tools: dict[str, Callable[..., Any]] = {"web_search": search, "fetch": search, "echo": Echo()}
    return LoopExecutor(model, tools, fields).run("go")


def watched_run() -> RunResult:
    """A run that has every watch: web_search's own limit of 2 (reached in turn 2, a call past
    it in turn 3), warnings at half of each limit (web_search in turn 1; tokens and turns in
    turn 4), and an echo of the same text that gives the same answer in four turns running:
    stopped in turn 4, no progress, by loop.max_repeats = 3."""
    asked = {
        "tool_calls": [call("web_search", q="budgets"), call("echo", text="again")],
        "usage": {"total_tokens": 150},
    }
    model = ScriptedModel([asked], record=False)
    fields = {
        **budget(max_steps=8, max_tokens=1000),
        "tools.max_calls": {"web_search": 2},
        "loop.max_repeats": 3,
        "limits.warn_at": 0.5,
    }
    with pytest.warns(BudgetConfWarning, match="budget warning"):
        return LoopExecutor(model, {"web_search": search, "echo": Echo()}, fields).run("go")
