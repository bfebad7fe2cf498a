"""``budgetconf run``: the loop executor with a scripted model, or a server's, and demo tools."""

from __future__ import annotations

import argparse
from typing import Final, TextIO

from budgetconf.cli._parser import Command, CommandLine, add_resolution_options


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_resolution_options(parser)
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument(
        "--model",
        metavar="SCRIPT.json",
        help='a scripted model: {"responses": [...]}; the last response repeats',
    )
    model.add_argument(
        "--base-url",
        metavar="URL",
        help="an OpenAI-compatible server's API (http://127.0.0.1:8000/v1), with --model-name",
    )
    server = parser.add_argument_group("server options (with --base-url)")
    server.add_argument("--model-name", metavar="NAME", help="the model the server runs")
    server.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the variable that holds the API key (default: OPENAI_API_KEY); never printed",
    )
    server.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        help="how long one request may take (default: 60)",
    )
    server.add_argument(
        "--max-retries",
        metavar="N",
        help="retries of a request that could not connect or met a server error (default: 2)",
    )
    parser.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: the answer on stdout, problems on stderr; json: the run as one document",
    )
    parser.add_argument(
        "--events", metavar="FILE", help="append each event to FILE as a JSON line, as it happens"
    )
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write the run as a self-contained HTML page to FILE (see budgetconf report)",
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user's message")


def _carry_out(line: CommandLine, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._run import command  # the loop, and a server's client when asked

    return command(line, out, err)


COMMAND: Final = Command(
    "run",
    help="run an agent loop within the resolved budgets",
    description="Run the loop executor with a scripted model, or a model on an "
    "OpenAI-compatible server, and the demo tools echo and add, within the budgets the "
    "options resolve; say what stopped it.",
    epilog="Exit codes: 0 ok, 1 failed, 2 truncated, 3 blocked, 64 usage.",
    examples=(
        "budgetconf run --model script.json 'Say hi'",
        "budgetconf run --base-url http://127.0.0.1:8000/v1 --model-name NAME 'Say hi'",
        "BUDGETCONF_MAX_STEPS=3 budgetconf run --model script.json --output json 'Say hi'",
    ),
    arguments=_arguments,
    handler=_carry_out,
    budget_flags=True,
)
