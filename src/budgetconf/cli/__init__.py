"""The ``budgetconf`` command: explain, check, run, and the commands around them.

Exit codes of explain and check: 0 when every field resolved, 1 when a value
was rejected under the ``error`` policy or a source could not be read
(``check`` also on any warning), 64 on a usage error; run's are in
``_run``. Errors print as one line each, never as a traceback. rich is
imported only to draw the table.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, Literal, NoReturn, TextIO, TypeAlias, overload

from budgetconf import __version__
from budgetconf.cli._output import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    document,
    plural,
    problems,
    say,
    write_json,
)
from budgetconf.cli._schema import FILE_KINDS
from budgetconf.errors import PresetError, UsageError
from budgetconf.presets import Preset, is_preset_path, load_preset, preset_names
from budgetconf.resolve import Resolution, check_request, resolve_request
from budgetconf.sources import Request

__all__ = ["main"]

PRESET_ENV: Final = "BUDGETCONF_PRESET"
_PRESET_HELP: Final = (
    f"a built-in preset or a preset file (default: ${PRESET_ENV}, else budgetconf)"
)


class _Usage(Exception):
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
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
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
    group.add_argument(
        "--global",
        dest="global_file",
        metavar="PATH",
        help="the global settings file (JSON) instead of the default location",
    )
    group.add_argument(
        "--project",
        dest="project_file",
        metavar="PATH",
        help="the project settings file (TOML) instead of ./settings.toml",
    )
    group.add_argument("--profile", metavar="NAME|PATH", help="a profile by name or path")
    group.add_argument("--workflow", metavar="PATH", help="a workflow YAML file")
    group.add_argument("--step", metavar="NAME", help="the workflow step whose overrides apply")
    group.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a value for the explicit source, parsed like a flag's (repeatable)",
    )
    shown = _Parser(add_help=False)
    shown.add_argument(
        "--format",
        choices=("table", "json", "toml"),
        default="table",
        help="output format (default: table)",
    )
    shown.add_argument("fields", nargs="*", metavar="FIELD", help="fields to show (default: all)")

    epilog = "Arguments after -- are parsed as the application's own flags (the cli source)."
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
    commands.add_parser(
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
    run.add_argument("prompt", metavar="PROMPT", help="the user's message")
    commands.add_parser(
        "presets",
        epilog=_EXAMPLES["presets"],
        help="list the built-in presets",
        description="List the built-in presets, one line each.",
    )
    _add_file_commands(commands)
    return parser


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
    "completion": """examples:
  source <(budgetconf completion bash)    in ~/.bashrc
  source <(budgetconf completion zsh)     in ~/.zshrc, after compinit""",
}


def _add_file_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
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
    completion = commands.add_parser(
        "completion",
        epilog=_EXAMPLES["completion"],
        help="print a shell completion script",
        description="Print the completion script for bash or zsh.",
    )
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # a path may hold bytes the locale cannot encode
            stream.reconfigure(errors="backslashreplace")
    try:
        return _main(args, sys.stdout, sys.stderr)
    except _Usage as exc:
        say(sys.stderr, f"budgetconf: usage error: {exc}")
        return EXIT_USAGE
    except BrokenPipeError:  # before OSError, its base class
        # the reader went away (`| head`); stop quietly, without a second error at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except OSError as exc:  # the working directory was removed, and the like
        say(sys.stderr, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _main(args: list[str], out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._diff import render, split

    args, second = split(args)
    if second is None:
        return _command(args, out, err)
    first = _command(args, out, err, diff=True)
    if isinstance(first, int):
        return first
    after = _command(second, out, err, diff=True)
    if isinstance(after, int):
        return after
    before = first[0]
    res, fields, fmt = after  # the second side's fields: the first's and any after --diff
    if fmt == "toml":
        raise _Usage("explain --diff shows a table or json")
    for error in dict.fromkeys(str(e) for e in (*before.errors, *res.errors)):
        say(err, f"budgetconf: error: {error}")
    for warning in dict.fromkeys(str(w) for w in (*before.warnings, *res.warnings)):
        say(err, f"budgetconf: warning: {warning}")
    render(before, res, fields, fmt, out)
    return EXIT_ERROR if before.errors or res.errors else EXIT_OK


_Compared: TypeAlias = tuple[Resolution, list[str], str]


@overload
def _command(args: list[str], out: TextIO, err: TextIO, *, diff: Literal[False] = ...) -> int: ...
@overload
def _command(
    args: list[str], out: TextIO, err: TextIO, *, diff: Literal[True]
) -> int | _Compared: ...
def _command(args: list[str], out: TextIO, err: TextIO, *, diff: bool = False) -> int | _Compared:
    """Carry out a command; with ``diff``, only resolve and give what explain would show."""
    app_args: list[str] | None = None
    if "--" in args:
        split = args.index("--")
        args, app_args = args[:split], args[split + 1 :]
    parser = _parser()
    ns, extra = parser.parse_known_args(args)
    if extra and (not hasattr(ns, "fields") or any(a.startswith("-") for a in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:  # fields after an option: `--profile fast --diff loop.last_turn` gives both sides'
        ns.fields += extra
    if ns.command is None:
        parser.print_help(err)
        return EXIT_USAGE
    if diff and ns.command != "explain":
        raise _Usage("--diff is an option of explain")
    if ns.command in ("presets", "schema", "init", "completion") and app_args is not None:
        raise _Usage(f"{ns.command} takes no application arguments")
    if ns.command == "presets":
        for name in preset_names():
            out.write(f"{name:<16} {load_preset(name).summary}\n")
        return EXIT_OK
    if ns.command == "completion":
        from budgetconf.cli._completion import script

        fields = [f.path for f in load_preset("budgetconf").schema]
        out.write(script(ns.shell, parser, {"preset": preset_names(), "fields": fields}))
        return EXIT_OK

    preset_arg = ns.preset or os.environ.get(PRESET_ENV) or "budgetconf"
    try:
        preset = load_preset(preset_arg)
    except PresetError as exc:
        if not is_preset_path(preset_arg):
            raise _Usage(str(exc)) from None
        if ns.command == "run":
            from budgetconf.cli._run import not_run

            return not_run([str(exc)], ns.output, out, err)
        return _preset_failed(preset_arg, exc, getattr(ns, "format", "table"), out, err)
    if ns.command == "schema":
        from budgetconf.cli._schema import json_schema

        if ns.kind is not None and not preset.has_source(ns.kind):
            raise _Usage(f"preset {preset.name!r} has no {ns.kind} source")
        if not any(preset.has_source(kind) for kind in FILE_KINDS):
            raise _Usage(f"preset {preset.name!r} reads no settings files")
        write_json(json_schema(preset, ns.kind), out)
        return EXIT_OK
    if ns.command == "init":
        return _init_command(preset, ns, out, err)

    request = Request(
        env=os.environ,
        argv=app_args,
        global_file=ns.global_file,
        project_file=ns.project_file,
        profile=ns.profile,
        workflow=ns.workflow,
        step=ns.step,
        explicit=_sets(ns.sets) or None,
        explicit_is_text=True,
    )
    try:
        check_request(preset, request, _OPTION_NAMES)
        fields = [preset.schema.lookup(f).path for f in getattr(ns, "fields", ())]
    except UsageError as exc:
        raise _Usage(str(exc)) from None
    except KeyError as exc:
        raise _Usage(exc.args[0]) from None
    res = resolve_request(preset, request)
    if ns.command == "run":
        from budgetconf.cli._run import chosen_model, opened, run

        try:  # a usage error goes first: nothing else matters
            with opened(chosen_model(ns)) as model:
                return run(res, model, ns.prompt, ns.output, ns.events, out, err)
        except UsageError as exc:
            raise _Usage(str(exc)) from None
    if ns.command == "check":
        return _check(res, preset, fields, ns.format, out, err)
    if diff:
        return res, fields, ns.format
    return _explain(res, preset, fields, ns.format, out, err)


def _init_command(preset: Preset, ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from budgetconf.cli._init import WriteError, init

    try:
        init(preset, ns.path, ns.kind, ns.file_format, ns.force, out)
    except UsageError as exc:
        raise _Usage(str(exc)) from None
    except WriteError as exc:
        say(err, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    return EXIT_OK


_OPTION_NAMES: Final = {
    "argv": "arguments after --",
    "global_file": "--global",
    "project_file": "--project",
    "profile": "--profile",
    "workflow": "--workflow",
    "step": "--step",
    "explicit": "--set",
}


def _sets(pairs: list[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name:
            raise _Usage(f"--set takes FIELD=VALUE, got {pair!r}")
        found[name.strip()] = value
    return found


def _explain(
    res: Resolution, preset: Preset, fields: list[str], fmt: str, out: TextIO, err: TextIO
) -> int:
    if fmt == "json":
        document(res, fields, out)
    elif fmt == "toml":
        problems(res, err, warnings=True)
        out.write(_toml(res, fields))
    else:
        problems(res, err, warnings=False)  # the table shows the warnings itself
        from budgetconf.cli._table import render

        render(res, preset, fields, out)
    return EXIT_ERROR if res.errors else EXIT_OK


def _check(
    res: Resolution, preset: Preset, fields: list[str], fmt: str, out: TextIO, err: TextIO
) -> int:
    failed = bool(res.errors or res.warnings)
    if fmt == "json":
        document(res, fields, out)
    else:
        problems(res, err, warnings=True)
        if failed:
            out.write(
                f"check failed: {plural(len(res.errors), 'error')}, "
                f"{plural(len(res.warnings), 'warning')} (preset {preset.name})\n"
            )
        else:
            count = plural(len(fields or res.values), "field")
            out.write(f"ok: {count} resolved, no warnings (preset {preset.name})\n")
    return EXIT_ERROR if failed else EXIT_OK


def _toml(res: Resolution, fields: list[str]) -> str:
    """The resolved values as a project file: a table per section, unset fields left out.

    A value taken from another field is left out too: written down, it would
    stop following that field.
    """
    import tomli_w

    chosen = set(fields or res.values)
    sections: dict[str, dict[str, object]] = {}
    secret: list[str] = []
    for trace in res.traces():
        f = trace.field
        if f.path not in chosen or trace.value is None or trace.winner.derived_from:
            continue  # unset, or standing in for another field: left to follow that field
        if f.secret:
            secret.append(f.path)
            continue
        sections.setdefault(f.section, {})[f.name] = trace.value
    header = [f"# Resolved by budgetconf explain, preset {res.preset}."]
    header += [f"# {path} is secret and left out." for path in secret]
    return "\n".join(header) + "\n\n" + tomli_w.dumps(sections)


def _preset_failed(preset: str, exc: PresetError, fmt: str, out: TextIO, err: TextIO) -> int:
    """A preset file that cannot be loaded: a one-line error, and an empty document in JSON."""
    if fmt == "json":
        empty = {
            "version": 1,
            "preset": preset,
            "values": {},
            "fields": {},
            "sources": [],
            "warnings": [],
            "errors": [str(exc)],
        }
        write_json(empty, out)
    else:
        say(err, f"budgetconf: error: {exc}")
    return EXIT_ERROR
