"""Per-turn overhead of the loop executor against a minimal hand-written loop.

Both loops drive the same fake model (a tool call on every turn but the
last) and the same tool, so the difference per turn is what the executor
adds: reading the response, checking budgets, answering calls, recording
events. Prints medians; `--quick` runs few repetitions (for CI, so the
script cannot rot); `--json FILE` writes the numbers.

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

from budgetconf.loop import LoopExecutor

CALL = {"tool_calls": [{"id": "c", "name": "echo", "arguments": {"text": "hi"}}]}
DONE = {"content": "done", "finish_reason": "stop"}


def fake_model(turns: int) -> Any:
    state = {"n": 0}

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        state["n"] += 1
        return DONE if state["n"] >= turns else CALL

    return model


def echo(text: str) -> str:
    return text


def hand_written(turns: int) -> None:
    """The least a loop must do: call the model, run the calls, append the messages."""
    model = fake_model(turns)
    tools = {"echo": echo}
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


def executor(turns: int) -> None:
    ex = LoopExecutor(fake_model(turns), {"echo": echo}, {"loop.max_steps": turns + 1})
    result = ex.run("go")
    if result.turns != turns or result.status != "ok":
        raise RuntimeError(f"the benchmark's run went wrong: {result.message}")


_RUNNER = asyncio.Runner()  # one event loop for every repetition: its start-up is not the loop's


def executor_async(turns: int) -> None:
    ex = LoopExecutor(fake_model(turns), {"echo": echo}, {"loop.max_steps": turns + 1})
    result = _RUNNER.run(ex.arun("go"))
    if result.turns != turns or result.status != "ok":
        raise RuntimeError(f"the benchmark's run went wrong: {result.message}")


def median_ns(fn: Any, turns: int, repeat: int) -> float:
    fn(turns)  # warm up: imports, preset cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn(turns)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times)


def construction_ns(turns: int, repeat: int) -> float:
    """One LoopExecutor built from field values: a resolution, the budget, the tool specs."""
    return median_ns(
        lambda _: LoopExecutor(fake_model(1), {"echo": echo}, {"loop.max_steps": 5}), turns, repeat
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 20 turns")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    turns, repeat = (20, 3) if args.quick else (args.turns, args.repeat)

    floor = median_ns(hand_written, turns, repeat)
    build = construction_ns(turns, repeat)
    rows = {
        "hand-written loop": floor,
        "LoopExecutor.run": median_ns(executor, turns, repeat) - build,
        "LoopExecutor.arun": median_ns(executor_async, turns, repeat) - build,
    }
    print(f"{turns} turns, one tool call each; medians of {repeat} runs")
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"{'loop':<20} {'per turn':>10} {'overhead/turn':>14}")
    report = {"turns": turns, "repeat": repeat, "construction_us": build / 1000, "rows": {}}
    for name, total in rows.items():
        per_turn = total / turns / 1000
        overhead = (total - floor) / turns / 1000
        print(f"{name:<20} {per_turn:>8.2f} µs {overhead:>11.2f} µs")
        report["rows"][name] = {"per_turn_us": per_turn, "overhead_per_turn_us": overhead}
    print(f"(executor construction, excluded above: {build / 1000:.1f} µs)")
    _RUNNER.close()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
