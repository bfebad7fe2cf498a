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
from budgetconf._resolution import Resolution
from budgetconf._resolve import check_request
from budgetconf._text import clipped
from budgetconf.cli._parser import OPTIONS, PRESET_ENV, CommandLine, Usage
from budgetconf.errors import PresetError, UsageError
from budgetconf.sources import Request

__all__ = ["PresetFailed", "Resolved", "chosen_preset", "resolve"]


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
    # the arguments after `--` are the application's own flags; `--set` values are text
    request = Request(os.environ, argv=line.app_args, explicit_is_text=True, **given)
    try:
        check_request(preset, request, command_line=True)
        fields = [preset.schema.lookup(f).path for f in getattr(ns, "fields", ())]
    except UsageError as exc:
        raise Usage(str(exc)) from None
    except KeyError as exc:
        raise Usage(exc.args[0]) from None
    return Resolved(resolve_request(preset, request), preset, fields)


def _value(argument: Argument, given: Any) -> Any:
    """An option's value as `resolve` takes it: ``FIELD=VALUE`` pairs as a mapping, or None."""
    if not argument.pairs:
        return given
    found = {}
    for pair in given:
        name, eq, value = pair.partition("=")
        if not eq or not name:
            raise Usage(f"{argument.option} takes FIELD=VALUE, got {clipped(pair, repr)}")
        found[name.strip()] = value
    return found or None
