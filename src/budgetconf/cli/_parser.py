"""The command line's grammar: every command, its options and help, and how it is parsed.

A command line that cannot be carried out as given raises `Usage`, which the
`main` turns into exit code 64; argparse's own error exit is never taken.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Final, NoReturn

from budgetconf import __version__
from budgetconf.cli._flags import PRESET_ENV, RESOLVING, Flags, add_flags, flags_of, unknown_hint
from budgetconf.cli._flags import preset_option as _preset_option
from budgetconf.sources import KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from budgetconf._engine import Preset

__all__ = ["FILE_KINDS", "OPTIONS", "PRESET_ENV", "CommandLine", "Usage", "build", "parse", "split"]

DIFF: Final = "--diff"  # splits explain's arguments into two sides, before any parsing
_PRESET_HELP: Final = (
    f"a built-in preset or a preset file (default: ${PRESET_ENV}, else budgetconf)"
)


#: the resolution options: each source kind's `Argument` that the command line has an option for
OPTIONS: Final = tuple(
    source.KIND.argument
    for source in KINDS.values()
    if source.KIND.argument is not None and source.KIND.argument.option is not None
)
#: the kinds that read a settings file of sections, with its format: the project's first, as
#: the kind `init` writes unless told another, then in rank order
FILE_KINDS: Final = dict(
    sorted(
        ((kind, source.KIND.format) for kind, source in KINDS.items() if source.KIND.format),
        key=lambda item: item[0] != "project",
    )
)


def _framework(text: str) -> str:
    from budgetconf.cli._for import framework_choice  # the table of frameworks, when asked

    return framework_choice(text)


class Usage(Exception):
    """A command line that cannot be carried out as given."""


class _Formatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped paragraph by paragraph; examples kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        parts = text.split("\n\n")
        return "\n\n".join(
            p if p.startswith("examples:") else fill(p, width, indent) for p in parts
        )


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        raise Usage(message)


def build(flags: Preset | None = None) -> argparse.ArgumentParser:
    """The whole command line: the top level and every command, options in help order.

    With ``flags``, a preset with a cli source, explain, check and run also
    take its flags (those that are not options of their own).
    """
    parser = _Parser(
        prog="budgetconf",
        description="Resolve and explain agent loop budgets from ranked sources.",
        epilog=_EXAMPLES["budgetconf"],
    )
    parser.add_argument("--version", action="version", version=f"budgetconf {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    resolution = _Parser(add_help=False)
    group = resolution.add_argument_group("resolution options")
    group.add_argument(
        "--preset",
        metavar="NAME|PATH",
        help=_PRESET_HELP,
    )
    for argument in OPTIONS:  # each source kind's own option, in rank order
        assert argument.option is not None
        repeated = {"action": "append", "default": []} if argument.pairs else {}
        group.add_argument(
            argument.option,
            dest=argument.name,
            metavar=argument.metavar,
            help=argument.help,
            **repeated,  # type: ignore[arg-type]  # argparse's keywords, typed loosely
        )
    shown = _Parser(add_help=False)
    shown.add_argument(
        "--format",
        choices=("table", "json", "toml"),
        default="table",
        help="output format (default: table)",
    )
    shown.add_argument("fields", nargs="*", metavar="FIELD", help="fields to show (default: all)")

    epilog = (
        "The preset's budget flags (--max-steps N, ...) feed its cli source, as do the"
        " arguments after --, which are parsed as the application's own flags."
    )
    explain = commands.add_parser(
        "explain",
        parents=[resolution, shown],
        epilog=f"{epilog}\n\n{_EXAMPLES['explain']}",
        help="show each value, where it came from and what it overrode",
        description="Show every field's value, the source and locator that set it, "
        "and the candidates it shadowed, replaced or rejected.",
    )
    explain.add_argument(
        "--diff",
        action="store_true",
        help="compare with a second resolution: the options after --diff, applied on top "
        "of those before it; show the fields that differ and the source of each value",
    )
    explain.add_argument(
        "--for",
        dest="framework",
        metavar="FRAMEWORK",
        type=_framework,
        help="also show what a framework bridge gets: the keywords its limits() passes and"
        " the budgets it cannot enforce (openai-agents, langgraph, smolagents, pydantic-ai,"
        " praisonai)",
    )
    check = commands.add_parser(
        "check",
        parents=[resolution, shown],
        epilog=f"{epilog}\n\n{_EXAMPLES['check']}",
        help="exit 1 on any error or warning (for CI)",
        description="Resolve and report problems; exit 1 on any error or warning.",
    )
    run = commands.add_parser(
        "run",
        parents=[resolution],
        epilog=epilog
        + " Exit codes: 0 ok, 1 failed, 2 truncated, 3 blocked, 64 usage."
        + f"\n\n{_EXAMPLES['run']}",
        help="run an agent loop within the resolved budgets",
        description="Run the loop executor with a scripted model, or a model on an "
        "OpenAI-compatible server, and the demo tools echo and add, within the budgets the "
        "options resolve; say what stopped it.",
    )
    model = run.add_mutually_exclusive_group(required=True)
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
    server = run.add_argument_group("server options (with --base-url)")
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
    run.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: the answer on stdout, problems on stderr; json: the run as one document",
    )
    run.add_argument(
        "--events", metavar="FILE", help="append each event to FILE as a JSON line, as it happens"
    )
    run.add_argument(
        "--report",
        metavar="FILE",
        help="write the run as a self-contained HTML page to FILE (see budgetconf report)",
    )
    run.add_argument("prompt", metavar="PROMPT", help="the user's message")
    if flags is not None:
        for command in (explain, check, run):
            add_flags(command, flags)
    commands.add_parser(
        "presets",
        epilog=_EXAMPLES["presets"],
        help="list the built-in presets",
        description="List the built-in presets, one line each.",
    )
    _add_file_commands(commands)
    _add_ledger_command(commands, resolution)
    return parser


def _add_ledger_command(commands: argparse._SubParsersAction[_Parser], resolution: _Parser) -> None:
    ledger = commands.add_parser(
        "ledger",
        epilog=_EXAMPLES["ledger"],
        help="the shared ledger: a scope's spend in its window, and the runs it recorded",
        description="Read the shared ledger that ledger.url names, as the options resolve it.",
    )
    views = ledger.add_subparsers(dest="view", metavar="VIEW", parser_class=_Parser)
    views.required = True
    for view, what in (("status", "spent, reserved and left"), ("runs", "the latest runs")):
        sub = views.add_parser(view, parents=[resolution], help=f"a scope's {what}")
        sub.add_argument("--scope", metavar="S", help="the scope (default: ledger.scope)")
        if view == "runs":
            sub.add_argument("--limit", metavar="N", type=_count, default=20, help="default 20")
        sub.add_argument("--format", choices=("table", "json"), default="table")


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10000, got {text!r}")
    return int(text)


_EXAMPLES: Final = {
    "budgetconf": """examples:
  budgetconf explain                      every value and where it came from
  budgetconf explain loop.max_steps --diff --profile fast
  budgetconf init                         a commented ./settings.toml
  budgetconf COMMAND --help               one command's options""",
    "explain": """examples:
  budgetconf explain loop.max_steps
  budgetconf explain --profile fast --format json
  budgetconf explain --profile fast --diff --profile slow
  budgetconf explain --workflow agents.yaml --diff --step review
  budgetconf explain --diff -- --max-steps 100""",
    "check": """examples:
  budgetconf check
  budgetconf check --preset app-budgets.toml --project ci/settings.toml""",
    "run": """examples:
  budgetconf run --model script.json 'Say hi'
  budgetconf run --base-url http://127.0.0.1:8000/v1 --model-name NAME 'Say hi'
  BUDGETCONF_MAX_STEPS=3 budgetconf run --model script.json --output json 'Say hi'""",
    "presets": """examples:
  budgetconf presets""",
    "schema": """examples:
  budgetconf schema > budgetconf.schema.json
  budgetconf schema --preset skiller --kind profile""",
    "init": """examples:
  budgetconf init                         ./settings.toml, the project file
  budgetconf init --kind global           ~/.budgetconf/settings.json
  budgetconf init --kind profile fast     ~/.budgetconf/profiles/fast.json
  budgetconf init ci/settings.toml --force""",
    "report": """examples:
  budgetconf run --model script.json --events events.jsonl 'Say hi'
  budgetconf report events.jsonl                   writes events.html
  budgetconf report events.jsonl -o ci/report.html""",
    "ledger": """examples:
  budgetconf ledger status                the scope's window: spent, reserved, left
  budgetconf ledger status --scope team-a --format json
  budgetconf ledger runs --limit 5""",
    "completion": """examples:
  source <(budgetconf completion bash)    in ~/.bashrc
  source <(budgetconf completion zsh)     in ~/.zshrc, after compinit""",
}


def _add_file_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    # imported here, not above: the schema command imports this module for `Usage`

    preset = _Parser(add_help=False)
    preset.add_argument(
        "--preset",
        metavar="NAME|PATH",
        help=_PRESET_HELP,
    )
    schema = commands.add_parser(
        "schema",
        parents=[preset],
        epilog=_EXAMPLES["schema"],
        help="print the JSON Schema of the preset's settings files, for editors",
        description="Print the JSON Schema (draft 2020-12) of the settings files the preset "
        "reads: its sections and fields with their types, bounds, defaults and variables.",
    )
    schema.add_argument(
        "--kind", choices=tuple(FILE_KINDS), help="describe only this source's file"
    )
    init = commands.add_parser(
        "init",
        parents=[preset],
        epilog=_EXAMPLES["init"],
        help="write a commented settings file that sets nothing yet",
        description="Write a settings file for the preset that describes every field and "
        "sets none, so it changes nothing until edited. Never overwrites without --force.",
    )
    init.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="where to write (default: where the preset reads that kind of file); "
        "for a profile, a NAME or a PATH",
    )
    init.add_argument(
        "--kind",
        choices=tuple(FILE_KINDS),
        help="which source's file: project (TOML, the default), global or profile (JSON)",
    )
    init.add_argument(
        "--format",
        dest="file_format",
        choices=("toml", "json"),
        help="toml for the project file, json for the global one (default: from PATH's "
        "extension; a check against --kind and PATH)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    report = commands.add_parser(
        "report",
        epilog=_EXAMPLES["report"],
        help="draw an events file's runs as one self-contained HTML page",
        description="Read an events file (budgetconf run --events, or on_event's JSON lines)"
        " and write one HTML page of its runs: the stop, a chart per budget, the budgets with"
        " where they were set, the turns. Exit 1 when a line is not an event (the page is"
        " written from the others, and each such line is told on stderr), or when the file"
        " cannot be read; 0 otherwise.",
    )
    report.add_argument("events", metavar="EVENTS.jsonl", help="the events file to read")
    report.add_argument(
        "-o",
        "--output",
        dest="page",
        metavar="FILE",
        help="where to write the page (default: the events file's name with .html; - for"
        " standard output)",
    )
    completion = commands.add_parser(
        "completion",
        epilog=_EXAMPLES["completion"],
        help="print a shell completion script",
        description="Print the completion script for bash or zsh.",
    )
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell")


class CommandLine:
    """A parsed command line, and the parser that read it (for help and completion).

    A plain class: a named tuple costs a compile at start-up, which every command pays.
    """

    __slots__ = ("app_args", "ns", "parser")

    def __init__(
        self, ns: argparse.Namespace, app_args: list[str] | None, parser: argparse.ArgumentParser
    ) -> None:
        self.ns = ns
        self.app_args = app_args  # the arguments after `--`: the application's own flags
        self.parser = parser

    def no_app_args(self) -> None:
        """Refuse arguments after ``--``, for a command that resolves nothing from them."""
        if self.app_args is not None:
            raise Usage(f"{self.ns.command} takes no application arguments")


def split(args: list[str]) -> tuple[list[str], list[str] | None]:
    """The arguments of the first resolution, and of the second (None without ``--diff``).

    ``--diff`` counts only before ``--``: after it, arguments are the
    application's. The second resolution's arguments are the first's followed
    by those after ``--diff``, so that later options override earlier ones.
    """
    end = args.index("--") if "--" in args else len(args)
    if DIFF not in args[:end]:
        return args, None
    at = args.index(DIFF)
    return args[:at], args[:at] + args[at + 1 :]


def parse(args: list[str]) -> CommandLine:
    """Parse ``args``; fields may also follow the options. Raises `Usage`.

    The grammar of explain, check and run holds the chosen preset's flags, so
    the preset is found first, read as argparse reads ``--preset`` (see
    `preset_option`), then the grammar is built with its flags.
    """
    app_args: list[str] | None = None
    if "--" in args:
        split = args.index("--")
        args, app_args = args[:split], args[split + 1 :]
    resolving = bool(args) and args[0] in RESOLVING
    named = _preset_option(args) if resolving else None
    flags = flags_of(named, os.environ) if resolving else Flags(None)
    parser = build(flags.preset if flags.reads_flags else None)
    ns, extra = parser.parse_known_args(args)
    _refuse_empty(parser, ns)  # first: an empty --preset is why its flags are unknown
    if extra and (not hasattr(ns, "fields") or any(a.startswith("-") for a in extra)):
        command = parser if ns.command is None else _subcommands(parser)[ns.command]
        hint = unknown_hint(extra, args, flags, command)
        parser.error(f"unrecognized arguments: {_unrecognized(extra)}{hint}")
    if extra:  # fields after an option: `--profile fast --diff loop.last_turn` gives both sides'
        ns.fields += extra
        _refuse_empty(parser, ns)
    return CommandLine(ns, app_args, parser)


def _unrecognized(extra: list[str]) -> str:
    """The unknown options by name; what follows one, or its ``=``, may be a secret value."""
    options = [arg.partition("=")[0] for arg in extra if arg.startswith("-")]
    return " ".join(options or extra)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name."""
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _refuse_empty(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """A name or path given empty (``--preset ''``, ``--events ''``, ``init ''``) never means
    its default: it is refused. A prompt may be anything, so ``run`` takes an empty one."""
    if ns.command is None:
        return
    for action in _subcommands(parser)[ns.command]._actions:
        value = getattr(ns, action.dest, None) if action.dest != "prompt" else None
        if value == "" or (isinstance(value, list) and "" in value):
            named = action.option_strings[0] if action.option_strings else action.metavar
            raise Usage(f"{named} is empty")
