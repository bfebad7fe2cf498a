"""The command line's grammar: what every command shares, and the parser built from their
declarations.

Each command declares itself as a `Command` in its module of `budgetconf.cli._commands`;
`build` makes the parser from the declarations, in the order given, and the option groups
several commands take (`add_preset`, `add_resolution_options`, `add_format_and_fields`)
are written here once. A command line that cannot be carried out as given raises `Usage`,
which the `main` turns into exit code 64; argparse's own error exit is never taken.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn, TextIO, TypeAlias

from budgetconf import __version__
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped, listed
from budgetconf.cli._flags import PRESET_ENV, Flags, add_flags, flags_of, unknown_hint
from budgetconf.cli._flags import preset_option as _preset_option
from budgetconf.sources import KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from budgetconf._engine import Preset

    #: what carries a command out: the exit code of the parsed line, written to out and err
    Handler: TypeAlias = Callable[["CommandLine", TextIO, TextIO], int]

DIFF: Final = "--diff"  # splits explain's arguments into two sides, before any parsing
#: the package whose modules declare the commands, one module each
_DECLARATIONS: Final = "budgetconf.cli._commands"
#: the epilog's first words on each command that takes the preset's budget flags
_BUDGET_FLAGS: Final = (
    "The preset's budget flags (--max-steps N, ...) feed its cli source, as do the"
    " arguments after --, which are parsed as the application's own flags. A budget"
    " flag's value its field cannot take is a usage error; after --, the cli source's"
    " invalid policy judges it."
)
_EXAMPLES: Final = (
    "budgetconf explain                      every value and where it came from",
    "budgetconf explain loop.max_steps --diff --profile fast",
    "budgetconf init                         a commented ./settings.toml",
    "budgetconf COMMAND --help               one command's options",
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


class Command:
    """A command, as its module declares it: its name, help and arguments, and its handler.

    Every declaration is read to build the parser, whatever the command line
    asks for, so its module imports only what `main` has loaded; the
    handler imports what the command needs when it runs. ``budget_flags``: the
    command resolves the budgets, and takes the preset's own flags too
    (`add_flags`). ``epilog`` is said before the examples. A plain class: a
    named tuple costs a compile at start-up.
    """

    __slots__ = (
        "arguments",
        "budget_flags",
        "description",
        "epilog",
        "examples",
        "handler",
        "help",
        "name",
    )

    def __init__(
        self,
        name: str,
        *,
        help: str,
        description: str,
        examples: Sequence[str],
        handler: Handler,
        arguments: Callable[[argparse.ArgumentParser], None] | None = None,
        budget_flags: bool = False,
        epilog: str = "",
    ) -> None:
        self.name = name
        self.help = help  # the command's line in the list of commands
        self.description = description
        self.examples = examples  # each a command line, with what it does after it if need be
        self.handler = handler
        self.arguments = arguments
        self.budget_flags = budget_flags
        self.epilog = epilog


def declared(modules: Sequence[str]) -> tuple[Command, ...]:
    """The commands that the named modules of `budgetconf.cli._commands` declare, in order."""
    # __import__, not importlib.import_module: the importlib package would cost its own import
    return tuple(
        __import__(f"{_DECLARATIONS}.{module}", fromlist=["COMMAND"]).COMMAND for module in modules
    )


class Usage(Exception):
    """A command line that cannot be carried out as given."""


class _Formatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped paragraph by paragraph; examples kept as written.

    An option's help starts in a column the longest option fits before (``--ledger-reserve-
    cost-usd NUMBER``), and no line breaks inside a word: a flag or a variable cut at its
    hyphen is no name.
    """

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("max_help_position", 36)
        super().__init__(prog, **kwargs)

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        text = " ".join(text.split())
        return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        def fill(paragraph: str, width: int, indent: str) -> str:
            return textwrap.fill(
                " ".join(paragraph.split()),
                width,
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )

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

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own check: with a did-you-mean, and the value echoed clipped
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        hint = did_you_mean(value, names) if isinstance(value, str) else None
        raise argparse.ArgumentError(
            action,
            f"invalid choice: {clipped(str(value), repr)} (choose from {listed(map(repr, names))})"
            + (f"; did you mean {hint!r}?" if hint else ""),
        )

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse drops an OSError here: help or --version on a full stdout would exit 0
        if message:
            (file or sys.stderr).write(message)


def add_preset(container: argparse._ActionsContainer) -> None:
    """``--preset``, for every command that reads a preset."""
    container.add_argument(
        "--preset",
        metavar="NAME|PATH",
        help=f"a built-in preset or a preset file (default: ${PRESET_ENV}, else budgetconf)",
    )


def add_table_or_json(parser: argparse.ArgumentParser) -> None:
    """``--format table|json``: aligned lines for a person, or one document for a tool."""
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table: aligned lines for a person (the default); json: one document",
    )


def add_resolution_options(parser: argparse.ArgumentParser) -> None:
    """``--preset`` and each source kind's own option, in rank order: what a resolution reads."""
    group = parser.add_argument_group("resolution options")
    add_preset(group)
    for argument in OPTIONS:
        assert argument.option is not None
        repeated = {"action": "append", "default": []} if argument.pairs else {}
        group.add_argument(
            argument.option,
            dest=argument.name,
            metavar=argument.metavar,
            help=argument.help,
            **repeated,  # type: ignore[arg-type]  # argparse's keywords, typed loosely
        )


def add_format_and_fields(
    parser: argparse.ArgumentParser, formats: tuple[str, ...] = ("table", "json", "toml")
) -> None:
    """``--format``, of the ``formats`` the command writes, and the fields to show: how
    explain and check show a resolution."""
    parser.add_argument(
        "--format",
        choices=formats,
        default="table",
        help="output format (default: table)",
    )
    parser.add_argument("fields", nargs="*", metavar="FIELD", help="fields to show (default: all)")


def build(commands: Sequence[Command], flags: Preset | None = None) -> argparse.ArgumentParser:
    """The whole command line: the top level and each command, in the order given.

    With ``flags``, a preset with a cli source, the commands that take budget
    flags also take its flags (those that are not options of their own).
    """
    parser = _Parser(
        prog="budgetconf",
        description="Resolve and explain agent loop budgets from ranked sources.",
        epilog=_examples(_EXAMPLES),
    )
    parser.add_argument("--version", action="version", version=f"budgetconf {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in commands:
        sub = subparsers.add_parser(
            command.name,
            epilog=_epilog(command),
            help=command.help,
            description=command.description,
        )
        if command.arguments is not None:
            command.arguments(sub)
        if flags is not None and command.budget_flags:  # last: the command's own options win
            add_flags(sub, flags)
    return parser


def _epilog(command: Command) -> str:
    """What a command's help says after its options: its budget flags, epilog and examples."""
    flags = _BUDGET_FLAGS if command.budget_flags else ""
    said = " ".join(text for text in (flags, command.epilog) if text)
    examples = _examples(command.examples)
    return f"{said}\n\n{examples}" if said else examples


def _examples(lines: Sequence[str]) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


class CommandLine:
    """A parsed command line, and the parser that read it (for help and completion).

    A plain class: a named tuple costs a compile at start-up, which every command pays.
    """

    __slots__ = ("app_args", "command", "commands", "ns", "parser")

    def __init__(
        self,
        ns: argparse.Namespace,
        app_args: list[str] | None,
        parser: argparse.ArgumentParser,
        commands: Sequence[Command],
    ) -> None:
        self.ns = ns
        self.app_args = app_args  # the arguments after `--`: the application's own flags
        self.parser = parser
        self.commands = commands  # those the parser was built from, to parse or build again
        #: the declaration of the command asked for; None when the line names no command
        self.command = next((c for c in commands if c.name == ns.command), None)

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


def parse(args: list[str], commands: Sequence[Command]) -> CommandLine:
    """Parse ``args`` by the ``commands``; fields may also follow the options. Raises `Usage`.

    The grammar of a command that takes budget flags holds the chosen preset's
    flags, so the preset is found first, read as argparse reads ``--preset``
    (see `preset_option`), then the grammar is built with its flags.
    """
    app_args: list[str] | None = None
    if "--" in args:
        split = args.index("--")
        args, app_args = args[:split], args[split + 1 :]
    flags = _flags(args, commands)
    parser = build(commands, flags.preset if flags.reads_flags else None)
    ns, extra = parser.parse_known_args(args)
    _refuse_empty(parser, ns)  # first: an empty --preset is why its flags are unknown
    if extra and (not hasattr(ns, "fields") or any(a.startswith("-") for a in extra)):
        command = parser if ns.command is None else _subcommands(parser)[ns.command]
        hint = unknown_hint(extra, args, flags, command)
        parser.error(f"unrecognized arguments: {_unrecognized(extra)}{hint}")
    if extra:  # fields after an option: `--profile fast --diff loop.last_turn` gives both sides'
        ns.fields += extra
        _refuse_empty(parser, ns)
    return CommandLine(ns, app_args, parser, commands)


def _flags(args: list[str], commands: Sequence[Command]) -> Flags:
    """The preset the line chose, whose flags it may give: read for a command that takes them."""
    if not args or not any(c.budget_flags and c.name == args[0] for c in commands):
        return Flags(None)
    return flags_of(_preset_option(args), os.environ)


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
