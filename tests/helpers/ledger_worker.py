"""One worker process of the ledger's load and fault tests, run as a script.

``python tests/helpers/ledger_worker.py URL --cycles N``: N turns on one scope, each a
reservation of ``--tokens`` and a settle of a random part of it (seeded), the
turns' times one second apart from ``--start`` (so a run may cross a window's
end). It prints what it settled in each day, and how many reservations were
granted and refused, as one JSON line. ``--combined`` settles each turn and
reserves the next in one call. ``--hold`` reserves once, prints ``holding``,
and waits to be killed.

``python tests/helpers/ledger_worker.py URL --run``: one run of the loop executor, its
budget resolved from the environment the test gave the process (``BUDGETCONF_LEDGER_*``),
against a scripted model that calls a tool every turn and reports usage: tokens from
``--used-tokens LO:HI`` and a cost from ``--used-micro LO:HI`` millionths of a dollar
(seeded), after sleeping ``--sleep`` seconds, so the run goes on until the ledger refuses
it. With ``--wait`` it prints ``ready`` once built and starts at a ``go`` line on stdin.
With ``--report-calls`` each response's usage is printed as it is returned (``used TOKENS
NANO``); with ``--block-at K`` the K-th call prints ``blocking`` and never returns. The run
prints one JSON line at its end: what its model reported, and what its result says.
The run's clock (which picks the ledger's windows) is ``--at``, so that a run near midnight
UTC does not cross a window's end; leases keep the backend's clock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from typing import Any

from budgetconf.ledger import Ledger, Reservation, open_ledger

PRICE_NANO = 1000  # a token costs a millionth of a dollar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--scope", default="load")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--lease", type=float, default=60.0)
    parser.add_argument("--start", default="2026-03-14T23:59:50+00:00")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--combined", action="store_true")
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--used-tokens", default="100:100")
    parser.add_argument("--used-micro", default="0:0")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--report-calls", action="store_true")
    parser.add_argument("--block-at", type=int, default=0)
    parser.add_argument("--at")
    args = parser.parse_args(argv)
    if args.run:
        print(json.dumps(_run(args)), flush=True)
        return 0
    start = dt.datetime.fromisoformat(args.start)
    with open_ledger(args.url) as led:
        if args.hold:
            assert _reserve(led, args, start) is not None
            print("holding", flush=True)
            time.sleep(600)
            return 1
        print(json.dumps(_cycles(led, args, start)), flush=True)
    return 0


def _reserve(led: Ledger, args: argparse.Namespace, at: dt.datetime) -> Reservation | None:
    return led.reserve(
        args.scope,
        tokens=args.tokens,
        cost_usd=args.tokens * PRICE_NANO / 1e9,
        lease_seconds=args.lease,
        max_tokens=args.max_tokens,
        at=at,
    )


def _cycles(led: Ledger, args: argparse.Namespace, start: dt.datetime) -> dict[str, object]:
    rng = random.Random(args.seed)
    settled: dict[str, list[int]] = {}
    granted = refused = 0
    held: Reservation | None = None
    for turn in range(args.cycles):
        at = start + dt.timedelta(seconds=turn)
        if held is None:
            held = _reserve(led, args, at)
        if held is None:
            refused += 1
            continue
        granted += 1
        used = rng.randint(0, args.tokens)
        day = at.date().isoformat()
        total = settled.setdefault(day, [0, 0])
        total[0] += used
        total[1] += used * PRICE_NANO
        cost = used * PRICE_NANO / 1e9
        if args.combined and turn + 1 < args.cycles:
            held, _ = led.settle_and_reserve(
                held,
                tokens=used,
                cost_usd=cost,
                reserve_tokens=args.tokens,
                reserve_cost_usd=args.tokens * PRICE_NANO / 1e9,
                lease_seconds=args.lease,
                max_tokens=args.max_tokens,
                at=at + dt.timedelta(seconds=1),
            )
        else:
            led.settle(held, tokens=used, cost_usd=cost)
            held = None
    return {"settled": settled, "granted": granted, "refused": refused}


class Model:
    """The scripted model of ``--run``: a tool call a turn (new arguments each time, so no
    repeat check ends the run), reporting seeded usage."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.rng = random.Random(args.seed)
        self.tokens = _span(args.used_tokens)
        self.micro = _span(args.used_micro)
        self.sleep = args.sleep
        self.report = args.report_calls
        self.block_at = args.block_at
        self.calls = 0
        self.used_tokens = 0
        self.used_nano = 0

    def __call__(self, messages: object, tools: object) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.block_at:
            print("blocking", flush=True)
            time.sleep(600)  # held here until the test kills the process
        if self.sleep:
            time.sleep(self.sleep)
        tokens = self.rng.randint(*self.tokens)
        micro = self.rng.randint(*self.micro)
        self.used_tokens += tokens
        self.used_nano += micro * 1000
        if self.report:
            print(f"used {tokens} {micro * 1000}", flush=True)
        call = {"id": f"c{self.calls}", "name": "t", "arguments": json.dumps({"n": self.calls})}
        return {
            "content": "",
            "tool_calls": [call],
            "usage": {"total_tokens": tokens},
            "cost_usd": micro / 1e6,
        }


def _span(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    return int(low), int(high or low)


def _run(args: argparse.Namespace) -> dict[str, object]:
    import budgetconf
    from budgetconf.loop import LoopExecutor
    from budgetconf.loop import _ledger as drawing

    if args.at:  # the run's clock, which picks the windows and stamps the record
        moment = dt.datetime.fromisoformat(args.at)
        drawing.now = lambda: moment
    model = Model(args)
    executor = LoopExecutor(model, {"t": lambda n: "ok"}, budgetconf.resolve())
    if args.wait:
        print("ready", flush=True)
        if sys.stdin.readline() != "go\n":
            raise SystemExit(1)
    result = executor.run("work until the ledger says stop")
    return {
        "calls": model.calls,
        "used_tokens": model.used_tokens,
        "used_nano": model.used_nano,
        "run_id": result.run_id,
        "status": result.status.value,
        "stop_reason": result.stop_reason,
        "message": result.message,
        "turns": result.turns,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "limit": result.limit,
    }


if __name__ == "__main__":
    sys.exit(main())
