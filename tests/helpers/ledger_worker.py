"""One worker process of the ledger's load and fault tests, run as a script.

``python tests/helpers/ledger_worker.py URL --cycles N``: N turns on one scope, each a
reservation of ``--tokens`` and a settle of a random part of it (seeded), the
turns' times one second apart from ``--start`` (so a run may cross a window's
end). It prints what it settled in each day, and how many reservations were
granted and refused, as one JSON line. ``--combined`` settles each turn and
reserves the next in one call. ``--hold`` reserves once, prints ``holding``,
and waits to be killed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time

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
    args = parser.parse_args(argv)
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
            held = led.settle_and_reserve(
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


if __name__ == "__main__":
    sys.exit(main())
