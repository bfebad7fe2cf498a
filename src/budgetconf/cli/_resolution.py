"""The step explain, check, run and diff share: the command line's options, resolved.

The preset comes from ``--preset``, else ``$BUDGETCONF_PRESET``, else
budgetconf; the other resolution options become the `Request`, checked
against the preset before anything is read.
"""

from __future__ import annotations

import argparse
import os
from typing import Final, NamedTuple

from budgetconf.cli._parser import PRESET_ENV, CommandLine, Usage
from budgetconf.errors import PresetError, UsageError
from budgetconf.presets import Preset, is_preset_path, load_preset
from budgetconf.resolve import Resolution, check_request, resolve_request
from budgetconf.sources import Request

__all__ = ["PresetFailed", "Resolved", "chosen_preset", "resolve"]

_OPTION_NAMES: Final = {
    "argv": "arguments after --",
    "global_file": "--global",
    "project_file": "--project",
    "profile": "--profile",
    "workflow": "--workflow",
    "step": "--step",
    "explicit": "--set",
}


class PresetFailed(Exception):
    """A preset file that could not be loaded: a failure to report, not a usage error.

    Each command reports it its own way (explain's JSON document, run's); the
    message is the `PresetError`'s.
    """

    def __init__(self, preset: str, error: PresetError) -> None:
        super().__init__(str(error))
        self.preset = preset


class Resolved(NamedTuple):
    """A command line's resolution, its preset and the fields it asks for (none: all)."""

    res: Resolution
    preset: Preset
    fields: list[str]


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
    request = Request(
        env=os.environ,
        argv=line.app_args,
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
    return Resolved(resolve_request(preset, request), preset, fields)


def _sets(pairs: list[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name:
            raise Usage(f"--set takes FIELD=VALUE, got {pair!r}")
        found[name.strip()] = value
    return found
