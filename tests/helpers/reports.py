"""Events files for the report's tests, written from real runs of the executor."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from budgetconf import Resolution, resolve
from budgetconf.loop import LoopExecutor, RunResult, ScriptedModel

from helpers.loops import Echo, answer, budget, calls, usage

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
