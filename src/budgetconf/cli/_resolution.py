"""The step explain, check, run and diff share: the command line's options, resolved.

The preset comes from ``--preset``, else ``$BUDGETCONF_PRESET``, else
budgetconf; the other resolution options become the `Request`, checked
against the preset before anything is read.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from budgetconf._description import Argument
from budgetconf._engine import Preset, is_preset_path, load_preset, resolve_request
from budgetconf._field import BadKey, Field, Kind
from budgetconf._resolution import Resolution
from budgetconf._resolve import check_request
from budgetconf._schema import Schema
from budgetconf._text import clipped
from budgetconf._trace import FieldTrace
from budgetconf.cli._flags import PRESET_ENV, given_flags, shadowed
from budgetconf.cli._parser import OPTIONS, CommandLine, Usage
from budgetconf.errors import PresetError, UsageError
from budgetconf.sources import Request

#: the warning of a resolution made in a working directory that was removed
GONE = (
    "the working directory no longer exists: no file is read from it (a relative path names none)"
)


class PresetFailed(Exception):
    """A preset file that could not be loaded: a failure to report, not a usage error.

    Each command reports it its own way (explain's JSON document, run's); the
    message is the `PresetError`'s.
    """

    def __init__(self, preset: str, error: PresetError) -> None:
        super().__init__(str(error))
        self.preset = preset


class Resolved:
    """A command line's resolution, its preset and the fields it asks for (none: all).

    A plain class: a named tuple costs a compile at start-up, which every command pays.
    """

    __slots__ = ("fields", "preset", "res")

    def __init__(self, res: Resolution, preset: Preset, fields: list[str]) -> None:
        self.res = res
        self.preset = preset
        self.fields = fields


def chosen_preset(ns: argparse.Namespace) -> Preset:
    """The preset the command line asks for. Raises `Usage`, `PresetFailed`.

    An unknown name is a usage error; a preset file that cannot be read is not.
    """
    name = ns.preset or os.environ.get(PRESET_ENV) or "budgetconf"
    try:
        return load_preset(name)
    except PresetError as exc:
        if not is_preset_path(name):
            raise Usage(str(exc)) from None
        raise PresetFailed(name, exc) from None


def resolve(line: CommandLine) -> Resolved:
    """Resolve the command line's options. Raises `Usage`, `PresetFailed`."""
    ns = line.ns
    preset = chosen_preset(ns)
    given = {a.name: _value(a, getattr(ns, a.name)) for a in OPTIONS}
    # the preset's flags, then the arguments after `--`, are the cli source's; `--set` values
    # are text
    flags = given_flags(ns)
    argv = None if not flags and line.app_args is None else [*flags, *(line.app_args or ())]
    request = Request(os.environ, argv=argv, explicit_is_text=True, **given)
    try:
        check_request(preset, request, command_line=True)
    except UsageError as exc:
        raise Usage(str(exc)) from None
    fields = chosen_fields(preset.schema, getattr(ns, "fields", []))
    res = resolve_request(preset, request)
    notes = _notes(line, preset)
    if notes:
        res = _noted(res, preset, notes)
    return Resolved(res, preset, fields)


def _notes(line: CommandLine, preset: Preset) -> list[str]:
    """What the command line adds to a resolution's warnings: what it left unread, and why.

    Every command that takes the preset's flags also says which of them a
    command's own option shadows: explain and check, which report on the
    resolution, for every command; any other (run) for itself, as it takes its
    own option.
    """
    taking = [c.name for c in line.commands if c.budget_flags]  # the commands with its flags
    command = line.ns.command
    reported = taking if command in ("explain", "check") else [command]
    notes = shadowed(preset, line.parser, reported) if command in taking else []
    try:
        os.getcwd()
    except FileNotFoundError:
        notes.append(GONE)
    return notes


def _noted(res: Resolution, preset: Preset, notes: list[str]) -> Resolution:
    """``res`` with the command line's ``notes`` after its own warnings: a new resolution, as a
    resolution is shared by every request that reads the same (see the memo)."""
    traces = {trace.field.path: trace for trace in res.traces()}
    return Resolution(preset.description, traces, res.sources, (*res.warnings, *notes), res.errors)


def chosen_fields(schema: Schema, names: list[str]) -> list[str]:
    """The paths of the fields ``names`` asks for, each once: a section stands for its fields.

    ``explain loop`` shows every field of ``loop``, as ``explain loop.max_steps
    loop.max_tool_calls_per_turn ...`` would. A table stands for its keys, and one
    key may be asked for alone (``tools.max_calls.web_search``). Raises `Usage` for a
    name that is neither a field (nor an alias of one, nor a table's key) nor a
    section, with the nearest of both.
    """
    paths: list[str] = []
    for name in names:
        section = schema.sections.get(name)
        if section is not None:
            paths += [f.path for f in section]
            continue
        try:
            paths.append(schema.lookup(name).path)
        except BadKey as exc:  # a table's, with a key its rule refuses
            raise Usage(exc.args[0]) from None
        except KeyError as exc:
            if "." in name:  # a field's path, misspelt: the nearest field
                raise Usage(exc.args[0]) from None
            hint = schema.suggest(name, sections=True)
            suggestion = f"; did you mean {hint!r}?" if hint else ""
            sections = ", ".join(schema.sections)
            raise Usage(
                f"unknown field or section {clipped(name, repr)}{suggestion} (sections: {sections})"
            ) from None
    return list(dict.fromkeys(paths))


def chosen_traces(res: Resolution, fields: list[str]) -> list[tuple[Field, list[FieldTrace]]]:
    """Each field ``fields`` asks for (none: every field), in the schema's order, with the
    traces that show it: its own; a table's keys' (none when no key is set), or those
    asked for by name, a key no source set shown unset."""
    keys: dict[str, dict[str, FieldTrace]] = {}
    for trace in res.traces():
        keys.setdefault(trace.field.table or trace.field.path, {})[trace.field.path] = trace
    found: list[tuple[Field, list[FieldTrace]]] = []
    for f in res.schema:
        traces = keys.get(f.path, {})
        asked = [p for p in fields if p.startswith(f.path + ".")] if f.kind is Kind.TABLE else []
        if fields and f.path not in fields:
            if not asked:
                continue
            traces = {p: traces[p] for p in asked if p in traces}
        if asked:
            traces |= {p: res.trace(p) for p in asked if p not in traces}
            traces = dict(sorted(traces.items()))  # by key, as the merge settles them
        found.append((f, list(traces.values())))
    return found


def _value(argument: Argument, given: Any) -> Any:
    """An option's value as `resolve` takes it: ``FIELD=VALUE`` pairs as a mapping, or None."""
    if not argument.pairs:
        return given
    found = {}
    for pair in given:
        name, eq, value = pair.partition("=")
        if not eq or not name:  # not quoted: what was meant as a value may be a secret
            missing = "'='" if not eq else "field before '='"
            raise Usage(f"{argument.option} takes FIELD=VALUE, got one with no {missing}")
        found[name.strip()] = value
    return found or None
