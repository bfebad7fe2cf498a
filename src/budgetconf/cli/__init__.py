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
from typing import Final, Literal, TextIO, TypeAlias, overload

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
from budgetconf.cli._parser import PRESET_ENV, Usage, parse
from budgetconf.cli._schema import FILE_KINDS
from budgetconf.errors import PresetError, UsageError
from budgetconf.presets import Preset, is_preset_path, load_preset, preset_names
from budgetconf.resolve import Resolution, check_request, resolve_request
from budgetconf.sources import Request

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # a path may hold bytes the locale cannot encode
            stream.reconfigure(errors="backslashreplace")
    try:
        return _main(args, sys.stdout, sys.stderr)
    except Usage as exc:
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
        raise Usage("explain --diff shows a table or json")
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
    ns, app_args, parser = parse(args)
    if ns.command is None:
        parser.print_help(err)
        return EXIT_USAGE
    if diff and ns.command != "explain":
        raise Usage("--diff is an option of explain")
    if ns.command in ("presets", "schema", "init", "completion") and app_args is not None:
        raise Usage(f"{ns.command} takes no application arguments")
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
            raise Usage(str(exc)) from None
        if ns.command == "run":
            from budgetconf.cli._run import not_run

            return not_run([str(exc)], ns.output, out, err)
        return _preset_failed(preset_arg, exc, getattr(ns, "format", "table"), out, err)
    if ns.command == "schema":
        from budgetconf.cli._schema import json_schema

        if ns.kind is not None and not preset.has_source(ns.kind):
            raise Usage(f"preset {preset.name!r} has no {ns.kind} source")
        if not any(preset.has_source(kind) for kind in FILE_KINDS):
            raise Usage(f"preset {preset.name!r} reads no settings files")
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
        raise Usage(str(exc)) from None
    except KeyError as exc:
        raise Usage(exc.args[0]) from None
    res = resolve_request(preset, request)
    if ns.command == "run":
        from budgetconf.cli._run import chosen_model, opened, run

        try:  # a usage error goes first: nothing else matters
            with opened(chosen_model(ns)) as model:
                return run(res, model, ns.prompt, ns.output, ns.events, out, err)
        except UsageError as exc:
            raise Usage(str(exc)) from None
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
        raise Usage(str(exc)) from None
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
            raise Usage(f"--set takes FIELD=VALUE, got {pair!r}")
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
