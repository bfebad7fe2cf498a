"""Per-turn overhead of the loop executor against a minimal hand-written loop.

All loops drive the same fake model (a tool call on every turn but the
last) and the same tool, so the difference per turn is what the executor
adds: reading the response, checking budgets, answering calls, recording
events. Building the executor (a resolution) is outside the timing. The
sub-agent row runs the same loop as a child: a parent's one tool call runs it
on a budget carved from the parent's (`current_run().carve()`), with the
parent's tokens, cost and tool calls bounded, so every child turn is checked
against the parent's remainder and charged to it; its cost over
`LoopExecutor.run` is what carving and charging add per child turn. The priced
rows run a named model that reports usage under a cost budget: over the same
model with no cost budget, they are what pricing a response adds, at a flat
price (genai-prices' gpt-4o-mini) and through calc_price (a tiered price). Prints
medians, and the best run as well, since a shared machine's slow spells
move medians; `--quick` runs few repetitions (for CI, so the script cannot
rot); `--json FILE` writes the numbers.

    python bench/loop_overhead.py [--turns 200] [--repeat 31] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from typing import Any

from budgetconf.loop import LoopExecutor, current_run

CALL = {"tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}]}
DONE = {"content": "done", "finish_reason": "stop"}


def fake_model(turns: int) -> Any:
    state = {"n": 0}

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        state["n"] += 1
        return DONE if state["n"] >= turns else CALL

    return model


#: what each response of the priced rows reports: usage, and no cost
USED = {"usage": {"prompt_tokens": 1200, "completion_tokens": 300}}


class Named:
    """`fake_model` with a name, reporting `USED` on every response: a model a run prices."""

    def __init__(self, turns: int, model: str) -> None:
        self.model = model
        self.turns = turns
        self.n = 0
        self.call = {**CALL, **USED}
        self.done = {**DONE, **USED}

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.n += 1
        return self.done if self.n >= self.turns else self.call


def echo(text: str) -> str:
    return text


def hand_written(turns: int) -> Any:
    """The least a loop must do: call the model, run the calls, append the messages."""
    model = fake_model(turns)
    tools = {"echo": echo}

    def run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for _ in range(turns):
            response = model(messages, [])
            calls = response.get("tool_calls") or []
            messages.append({"role": "assistant", "content": response.get("content")})
            if not calls:
                return
            for c in calls:
                result = tools[c["name"]](**c["arguments"])
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})

    return run


def _executor(turns: int) -> LoopExecutor:
    return LoopExecutor(fake_model(turns), {"echo": echo}, {"loop.max_steps": turns + 1})


def _check(result: Any, turns: int) -> None:
    if result.turns != turns or result.status != "ok":
        raise RuntimeError(f"the benchmark's run went wrong: {result.message}")


def executor(turns: int) -> Any:
    ex = _executor(turns)
    return lambda: _check(ex.run("go"), turns)


def reporting_usage(turns: int) -> Any:
    """The executor's loop on a named model that reports usage, with no cost budget."""
    ex = LoopExecutor(Named(turns, FLAT), {"echo": echo}, {"loop.max_steps": turns + 1})
    return lambda: _check(ex.run("go"), turns)


def _priced(turns: int, model: str) -> Any:
    budget = {"loop.max_steps": turns + 1, "limits.max_cost_usd": 1e6}
    ex = LoopExecutor(Named(turns, model), {"echo": echo}, budget)
    return lambda: _check(ex.run("go"), turns)


def priced_flat(turns: int) -> Any:
    """The same, under a cost budget: each response priced at genai-prices' flat price."""
    return _priced(turns, FLAT)


def priced_by_calc_price(turns: int) -> Any:
    """The same, for a model whose price has tiers: each response priced by calc_price."""
    return _priced(turns, TIERED)


#: a model whose genai-prices entry is flat, and one whose price has tiers
FLAT, TIERED = "gpt-4o-mini", "gemini-2.5-pro"

#: the parent of the sub-agent row: every shared budget but the deadline bounded (a deadline
#: puts every call on a worker thread, which would measure threads, not the charges)
PARENT = {
    "loop.max_steps": 3,
    "limits.max_tokens": 10**12,
    "limits.max_cost_usd": 1e9,
    "limits.max_tool_calls": 10**12,
}
SUB = {"tool_calls": [{"id": "s", "name": "sub", "arguments": {"task": "go"}}]}


def executor_child(turns: int) -> Any:
    """The executor's loop as a sub-agent: one parent turn runs it, on a carved budget."""

    def sub(task: str) -> str:
        handle = current_run()
        assert handle is not None
        budget = handle.carve(max_steps=turns + 1)
        result = LoopExecutor(fake_model(turns), {"echo": echo}, budget).run(task)
        _check(result, turns)
        return result.output

    def lead(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return SUB if len(messages) == 1 else DONE

    ex = LoopExecutor(lead, {"sub": sub}, PARENT)
    return lambda: _check(ex.run("go"), 2)


_RUNNER = asyncio.Runner()  # one event loop for every repetition: its start-up is not the loop's


def executor_async(turns: int) -> Any:
    ex = _executor(turns)
    return lambda: _check(_RUNNER.run(ex.arun("go")), turns)


LOOPS = {
    "hand-written loop": hand_written,
    "LoopExecutor.run": executor,
    "LoopExecutor.arun": executor_async,
    "LoopExecutor.run, as a sub-agent": executor_child,
    "LoopExecutor.run, reporting usage": reporting_usage,
    "LoopExecutor.run, with a priced cost budget": priced_flat,
    "LoopExecutor.run, priced by calc_price": priced_by_calc_price,
}
#: the rows measured against another row rather than the hand-written loop: the row each is over
OVER: dict[str, str] = {
    "LoopExecutor.run, as a sub-agent": "LoopExecutor.run",
    "LoopExecutor.run, with a priced cost budget": "LoopExecutor.run, reporting usage",
    "LoopExecutor.run, priced by calc_price": "LoopExecutor.run, reporting usage",
}


def measure(turns: int, repeat: int) -> dict[str, list[int]]:
    """Nanoseconds per run of each loop, interleaved so that all see the same machine.

    Each repetition builds every loop afresh (outside the timing) and runs
    each once, in turn: a slow spell of the machine hits all three alike.
    """
    times: dict[str, list[int]] = {name: [] for name in LOOPS}
    for build in LOOPS.values():
        build(turns)()  # warm up: imports, the preset cache
    for _ in range(repeat):
        for name, build in LOOPS.items():
            run = build(turns)
            start = time.perf_counter_ns()
            run()
            times[name].append(time.perf_counter_ns() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 20 turns")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    turns, repeat = (20, 3) if args.quick else (args.turns, args.repeat)

    times = measure(turns, repeat)
    _RUNNER.close()
    floor = statistics.median(times["hand-written loop"])
    best_floor = min(times["hand-written loop"])
    print(f"{turns} turns, one tool call each; {repeat} interleaved repetitions")
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"{'loop':<32} {'median/turn':>12} {'overhead':>10} {'best overhead':>14}")
    report: dict[str, Any] = {"turns": turns, "repeat": repeat, "rows": {}}
    for name, runs in times.items():
        per_turn = statistics.median(runs) / turns / 1000
        overhead = (statistics.median(runs) - floor) / turns / 1000
        best = (min(runs) - best_floor) / turns / 1000
        print(f"{name:<32} {per_turn:>9.2f} µs {overhead:>7.2f} µs {best:>11.2f} µs")
        report["rows"][name] = {
            "per_turn_us": per_turn,
            "overhead_per_turn_us": overhead,
            "best_overhead_per_turn_us": best,
        }
    for name, base in OVER.items():
        over = (statistics.median(times[name]) - statistics.median(times[base])) / turns / 1000
        best = (min(times[name]) - min(times[base])) / turns / 1000
        print(f"{name}: {over:+.2f} µs per turn over {base} (best {best:+.2f} µs)")
        report["rows"][name]["over_per_turn_us"] = over
        report["rows"][name]["best_over_per_turn_us"] = best
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
