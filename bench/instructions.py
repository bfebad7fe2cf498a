"""Each bridge's cost per turn in instructions: repeatable, where a machine's clock is not.

For each framework, one process per side runs the same set-up as
``bench/bridge_NAME.py``, warms every side (three runs each, so lazy imports
and caches are the same in all), then makes ``--runs`` runs of its own side,
under valgrind's cachegrind (``--cache-sim=no``) with a fixed hash seed. A
side's instructions per turn are its count less the count of a process that
makes no run, divided by the turns; a bridge's cost is the difference from the
framework alone. Two processes run at a time.

    python bench/instructions.py [--runs 10] [FRAMEWORK ...]   # needs valgrind
    python bench/instructions.py --side FRAMEWORK SIDE RUNS    # one process, no valgrind
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import budgetconf


def _openai_agents() -> tuple[int, dict[str, Callable[[], Any]]]:
    import bridge_openai_agents as b
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    turns = 20
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns + 1})
    return turns, {
        "alone": lambda: b._once(turns, False, budget),
        "bridged": lambda: b._once(turns, True, budget),
    }


def _langgraph() -> tuple[int, dict[str, Callable[[], Any]]]:
    import bridge_langgraph as b

    turns = 20
    res = budgetconf.resolve(
        explicit={
            "loop.max_steps": turns + 1,
            "limits.max_tool_calls": turns,
            "limits.max_tokens": 10**6,
        }
    )
    return turns, {
        "alone": lambda: b.alone(b.agent(turns, []), turns),
        "empty middleware": lambda: b.alone(b.agent(turns, [b.Hooks()]), turns),
        "bridged": lambda: b.bridged(b.agent(turns, b.middleware()), res),
        "bridged without middleware()": lambda: b.bridged(b.agent(turns, []), res),
    }


def _smolagents() -> tuple[int, dict[str, Callable[[], Any]]]:
    import bridge_smolagents as b
    from smolagents import ToolCallingAgent
    from smolagents.monitoring import LogLevel

    turns = 20
    agent = ToolCallingAgent(tools=[b.add], model=b.Looping(), verbosity_level=LogLevel.OFF)
    budget = budgetconf.resolve(explicit={"loop.max_steps": turns})
    return turns, {
        "alone": lambda: agent.run("go", max_steps=turns - 1),
        "bridged": lambda: b.run(agent, "go", budget),
    }


def _pydantic_ai() -> tuple[int, dict[str, Callable[[], Any]]]:
    import bridge_pydantic_ai as b

    from budgetconf.integrations import pydantic_ai as bridge

    agent = b._agent()
    res = budgetconf.resolve(
        env={}, explicit={"loop.max_steps": b.TURNS, "limits.max_tokens": 10_000}
    )
    keywords = bridge.limits(res)
    return b.TURNS, {
        "alone": lambda: agent.run_sync("go", **keywords),
        "empty capability": lambda: agent.run_sync("go", **keywords, capabilities=[b._Nothing()]),
        "bridged": lambda: bridge.run(agent, "go", res),
    }


def _praisonai() -> tuple[int, dict[str, Callable[[], Any]]]:
    import bridge_praisonai as b

    _held.enter_context(b.served())  # for the process's life
    return b.TURNS, b.sides()


_held = contextlib.ExitStack()

FRAMEWORKS: dict[str, Callable[[], tuple[int, dict[str, Callable[[], Any]]]]] = {
    "openai_agents": _openai_agents,
    "langgraph": _langgraph,
    "smolagents": _smolagents,
    "pydantic_ai": _pydantic_ai,
    "praisonai": _praisonai,
}


def side(framework: str, name: str, runs: int) -> tuple[int, list[str]]:
    """One process's work: warm every side of ``framework``, then ``runs`` runs of ``name``;
    the turns of a run and the names of the sides."""
    loop = asyncio.new_event_loop()  # for the frameworks' sync run calls
    asyncio.set_event_loop(loop)
    try:
        turns, sides = FRAMEWORKS[framework]()
        for each in sides.values():
            for _ in range(3):
                each()
        for _ in range(runs):
            sides[name]()
    finally:
        _held.close()
        loop.close()
        asyncio.set_event_loop(None)
    return turns, list(sides)


def _counted(framework: str, name: str, runs: int) -> tuple[int, int, list[str]]:
    """The instructions of one process of ``side``, counted by cachegrind, and what it told."""
    command = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, __file__, "--side", framework, name, str(runs),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    assert found is not None, done.stderr
    turns, sides = json.loads(done.stdout.splitlines()[-1])
    return int(found.group(1).replace(",", "")), turns, sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each side (default 10)")
    parser.add_argument("--side", nargs=3, metavar=("FRAMEWORK", "SIDE", "RUNS"))
    parser.add_argument("frameworks", nargs="*", metavar="FRAMEWORK", help=", ".join(FRAMEWORKS))
    args = parser.parse_args(argv)
    unknown = sorted(set(args.frameworks) - set(FRAMEWORKS))
    if unknown:
        parser.error(f"no such framework: {', '.join(unknown)} (one of {', '.join(FRAMEWORKS)})")
    if args.side:
        framework, name, runs = args.side
        print(json.dumps(side(framework, name, int(runs))))
        return 0
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (apt-get install valgrind)")
    print("| framework | side | instructions per turn | over the framework alone |")
    print("| --- | --- | ---: | ---: |")
    for framework in args.frameworks or FRAMEWORKS:
        base, turns, sides = _counted(framework, "alone", 0)  # no run: the set-up's count
        with ThreadPoolExecutor(2) as pool:
            jobs = [(framework, name, args.runs) for name in sides]
            counts = pool.map(lambda job: _counted(*job)[0], jobs)
            per_side = dict(zip(sides, counts, strict=True))
        alone = (per_side["alone"] - base) / (args.runs * turns)
        for name, count in per_side.items():
            each = (count - base) / (args.runs * turns)
            print(
                f"| {framework} | {name} | {each / 1000:,.0f}k"
                f" | {(each - alone) / 1000:+,.0f}k ({each / alone - 1:+.1%}) |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
