"""A small agent app that reads its budget through budgetconf.

It summarises the pages of a report, reading one page per turn with its
``read_page`` tool. The budget comes from budgetconf's ranked sources; the
app adds the budget flags to its own parser, so ``--max-steps 20`` works
here too and ``budgetconf explain`` names it. Run it with
``python examples/agent.py "Summarise the report"``; ``--help`` lists the flags.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import budgetconf
from budgetconf.loop import LoopExecutor

PAGES = 12  # the report's length: the task takes 13 turns, 12 reads and the answer


def read_page(page: int) -> str:
    """Return the text of one page of the report."""
    return f"page {page} of {PAGES}: nothing alarming"


def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A stand-in for a real model: it reads the next page, and sums up once it has all."""
    read = sum(1 for message in messages if message["role"] == "tool")
    if read < PAGES and tools and "budget" not in messages[-1].get("content", ""):
        return {"tool_calls": [{"name": "read_page", "arguments": {"page": read + 1}}]}
    return {"content": f"Summary of {read} of {PAGES} pages: nothing alarming."}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarise a report, within a budget.")
    parser.add_argument("task", help="what to do with the report")
    budgetconf.add_arguments(parser)
    args = parser.parse_args(argv)

    budget = budgetconf.resolve(argv=budgetconf.argv_from(args))
    result = LoopExecutor(model, tools={"read_page": read_page}, budget=budget).run(args.task)
    print(result.output)
    if result.status != "ok":
        print(result.message, file=sys.stderr)
    return 0 if result.status == "ok" else 2


if __name__ == "__main__":
    sys.exit(main())
