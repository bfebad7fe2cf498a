"""What importing each framework bridge adds to importing budgetconf and its framework.

Each sample is a fresh interpreter that imports ``budgetconf`` and the
framework first, then times ``import budgetconf.integrations.NAME`` alone: the
bridge's own cost, in a process that has paid for everything else already, as
an application that uses the framework has. The row is the median of the
samples. A framework not installed here is left out, and said so: CrewAI's
environment is nox's (``.nox/crewai/bin/python bench/imports.py crewai``).

    pip install -e '.[dev]'
    python bench/imports.py [--quick] [--json FILE] [NAME ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from budgetconf.integrations._frameworks import FRAMEWORKS as TABLE

#: each bridge -> the module its framework imports as
FRAMEWORKS = {name: framework.imports for name, framework in TABLE.items()}
#: the child: the bridge's import timed after budgetconf's and the framework's
PROBE = (
    "import time, budgetconf, {framework}\n"
    "start = time.perf_counter_ns()\n"
    "import budgetconf.integrations.{bridge}\n"
    "print(time.perf_counter_ns() - start)\n"
)
TARGET_MS = 5.0


def sample(bridge: str) -> float:
    """One fresh interpreter's import of ``bridge``, in ms, from its compiled bytecode, as an
    installed package imports (the first sample writes it, where it may)."""
    code = PROBE.format(framework=FRAMEWORKS[bridge], bridge=bridge)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return int(done.stdout.split()[-1]) / 1e6


def measured(names: list[str], samples: int) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for bridge in names:
        if importlib.util.find_spec(FRAMEWORKS[bridge]) is None:
            found[bridge] = {"skipped": f"{FRAMEWORKS[bridge]} is not installed here"}
            continue
        sample(bridge)  # the bytecode written
        times = [sample(bridge) for _ in range(samples)]
        median = statistics.median(times)
        found[bridge] = {"median_ms": median, "samples": samples, "holds": median <= TARGET_MS}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(FRAMEWORKS)}")
    parser.add_argument("--quick", action="store_true", help="3 samples: a smoke run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(FRAMEWORKS))
    if unknown:
        parser.error(f"unknown bridge {unknown[0]!r}")
    found = measured(args.names or list(FRAMEWORKS), 3 if args.quick else 21)
    print(f"| bridge | its import, over budgetconf's and its framework's | ≤ {TARGET_MS:g} ms |")
    print("| --- | ---: | --- |")
    for bridge, row in found.items():
        if "skipped" in row:
            print(f"| {bridge} | not measured: {row['skipped']} | |")
        else:
            holds = "yes" if row["holds"] else "no"
            print(f"| {bridge} | {row['median_ms']:.2f} ms | {holds} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": found}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
