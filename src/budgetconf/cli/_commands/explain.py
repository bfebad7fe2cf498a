"""``budgetconf explain``: every value, where it came from and what it overrode."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import (
    Command,
    CommandLine,
    add_format_and_fields,
    add_resolution_options,
)


def _framework(text: str) -> str:
    from budgetconf.cli._for import framework_choice  # the table of frameworks, when asked

    return framework_choice(text)


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_resolution_options(parser)
    add_format_and_fields(parser)
    parser.add_argument(
        "--diff",
        action="store_true",
        help="compare with a second resolution: the options after --diff, applied on top "
        "of those before it; show the fields that differ and the source of each value",
    )
    parser.add_argument(
        "--for",
        dest="framework",
        metavar="FRAMEWORK",
        type=_framework,
        help="also show what a framework bridge gets: what its limits() passes or refuses,"
        " and what its run() enforces or refuses (openai-agents, langgraph, smolagents,"
        " pydantic-ai, praisonai)",
    )
    parser.add_argument(
        "--model-name",
        metavar="NAME",
        help="with --for, the agent's model: a cost budget is shown enforced at its price"
        " (its rates, source and locator), or refused when it has none",
    )
    parser.add_argument(
        "--via",
        choices=("run", "limits"),
        help="with --for, exit 1 when this way in would refuse a budget (default: run)",
    )


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._explain import command

    return command(line, out, err)


COMMAND: Final = Command(
    "explain",
    help="show each value, where it came from and what it overrode",
    description="Show every field's value, the source and locator that set it, "
    "and the candidates it shadowed, replaced or rejected.",
    examples=(
        "budgetconf explain loop.max_steps",
        "budgetconf explain --profile fast --format json",
        "budgetconf explain --profile fast --diff --profile slow",
        "budgetconf explain --workflow agents.yaml --diff --step review",
        "budgetconf explain --diff -- --max-steps 100",
        "budgetconf explain --for openai-agents --model-name gpt-4o-mini",
    ),
    arguments=_arguments,
    handler=_carry_out,
    budget_flags=True,
)
