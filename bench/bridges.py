"""Each framework bridge's overhead per turn, against the same framework run without it.

Every bridge has its own script, ``bench/bridge_NAME.py``, whose ``rows(quick)``
runs one framework with one scripted test double, alone and through the
bridge, in alternating pairs (``bench/_paired.py``), and returns the median
time per turn of each and the median of the pairs' differences: the bridge's
cost per turn; its ``streamed_rows(quick)`` the same for the framework's own
stream against the bridge's ``stream()`` (the row ``NAME, streamed``). This
runs them all and prints one table: the two times and the cost, in absolute
terms and against the framework's own. A framework that
is not installed is left out, and said so.

    pip install -e '.[dev]'
    python bench/bridges.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from budgetconf.integrations._frameworks import FRAMEWORKS

HERE = Path(__file__).resolve().parent
NAMES = tuple(FRAMEWORKS)  # every bridge, in the table's order


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bridge_{name}", HERE / f"bridge_{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _loop_of_its_own() -> Iterator[None]:
    """A current event loop for one framework's runs, closed after them.

    A framework's sync run call (openai-agents', pydantic-ai's run_sync) reuses the
    thread's current loop, or leaves one of its own open and current: each bridge gets
    a fresh one, and every loop left is closed, so none is collected unclosed later.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # none current: one is made
                left = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # unset, by an asyncio.run()
            left = loop
        for each in {loop, left}:
            if not each.is_closed():
                each.run_until_complete(each.shutdown_asyncgens())
                each.close()
        asyncio.set_event_loop(None)


def measured(quick: bool) -> dict[str, dict[str, Any]]:
    """Per bridge: the framework alone and through the bridge, per turn, in µs."""
    found: dict[str, dict[str, Any]] = {}
    for name in NAMES:
        if not (HERE / f"bridge_{name}.py").exists():
            continue
        try:
            with _loop_of_its_own():
                script = _load(name)
                found[name] = _row(script.rows(quick))
                if hasattr(script, "streamed_rows"):
                    found[f"{name}, streamed"] = _row(script.streamed_rows(quick))
        except ImportError as exc:
            found[name] = {"skipped": str(exc)}
    return found


def _row(rows: dict[str, float]) -> dict[str, float]:
    alone, bridged, cost = rows.values()  # each script's order
    return {"alone_us": alone / 1000, "bridged_us": bridged / 1000, "overhead_us": cost / 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    found = measured(args.quick)
    print("| bridge | framework alone, per turn | through the bridge | cost per turn |")
    print("| --- | ---: | ---: | ---: |")
    for name, row in found.items():
        if "skipped" in row:
            print(f"| {name} | not installed: {row['skipped']} | | |")
            continue
        share = row["overhead_us"] / row["alone_us"] if row["alone_us"] else 0.0
        print(
            f"| {name} | {row['alone_us']:.1f} µs | {row['bridged_us']:.1f} µs"
            f" | {row['overhead_us']:+.1f} µs ({share:+.0%}) |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": found}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
