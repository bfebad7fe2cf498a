"""Each bridge's cost per turn in instructions: repeatable, where a machine's clock is not.

For each framework, one process per side takes the sides of
``bench/bridge_NAME.py`` (its ``sides()``: one run of ``TURNS`` turns each way,
within its ``served()`` where its fake model needs serving), warms every side
(three runs each, so lazy imports and caches are the same in all), then makes
``--runs`` runs of its own side, under valgrind's cachegrind
(``--cache-sim=no``) with a fixed hash seed. A side's instructions per turn are
its count less the count of a process that makes no run, divided by the turns;
a bridge's cost is the difference from the framework alone. Two processes run
at a time.

    python bench/instructions.py [--runs 10] [FRAMEWORK ...]   # needs valgrind
    python bench/instructions.py --side FRAMEWORK SIDE RUNS    # one process, no valgrind
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from bridges import NAMES as FRAMEWORKS


def side(framework: str, name: str, runs: int) -> tuple[int, list[str]]:
    """One process's work: warm every side of ``framework``, then ``runs`` runs of ``name``;
    the turns of a run and the names of the sides."""
    script = importlib.import_module(f"bridge_{framework}")
    loop = asyncio.new_event_loop()  # for the frameworks' sync run calls
    asyncio.set_event_loop(loop)
    try:
        with getattr(script, "served", contextlib.nullcontext)():
            sides = script.sides()
            for each in sides.values():
                for _ in range(3):
                    each()
            for _ in range(runs):
                sides[name]()
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return script.TURNS, list(sides)


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
