"""An application's own ``argparse`` parser, given a preset's flags, and its answers fed back.

`add_arguments` adds one option per flag of the preset, as text with no
default, so argparse checks nothing and a flag the user did not give leaves
``None``. `argv_from` turns the parsed namespace back into the flags that were
given, for ``resolve(argv=...)``, each as the user typed it (an alias stays
an alias): the ``cli`` source then judges them by the preset's rules and
policy, and explain names ``--max-steps`` as the locator.
"""

from __future__ import annotations

import os

from budgetconf._engine import Preset, load_preset
from budgetconf._field import Field, Kind, shown_default
from budgetconf.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


def _preset(preset: str | os.PathLike[str]) -> Preset:
    loaded = load_preset(preset)
    if not loaded.has_source("cli"):
        raise UsageError(f"preset {loaded.name!r} has no cli source: it reads no flags")
    return loaded


def _dest(flag: str) -> str:
    """The namespace attribute of a flag, as argparse names it: ``--max-steps`` -> ``max_steps``."""
    return flag.removeprefix("--").replace("-", "_")


def _flags(preset: Preset) -> dict[str, list[Field]]:
    """The options for the preset's flags: each field's first flag, with the fields it sets."""
    found: dict[str, list[Field]] = {}
    for f in preset.schema:
        if f.flags:
            found.setdefault(f.flags[0], []).append(f)
    return found


class _Given(str):
    """A flag's text that keeps the option the user typed: ``--t``, not ``--turns``."""

    flag: str


def _given_action() -> type[argparse.Action]:
    """An action that stores the text as a `_Given`; argparse is imported only when it is used."""
    import argparse

    class Given(argparse.Action):
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: Any,
            option_string: str | None = None,
        ) -> None:
            given = _Given(values)
            given.flag = option_string or self.option_strings[0]
            if self.nargs is None and self.const == "table":  # a table's flag: KEY=VALUE each
                setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or ()), given])
            else:
                setattr(namespace, self.dest, given)

    return Given


def flag_metavar(f: Field) -> str:
    """A flag's metavar in help: its type, or its choices."""
    if f.kind is Kind.ENUM:
        return "{" + ",".join(f.choices) + "}"
    if f.kind is Kind.TABLE:  # a table's choices are its help's: they would not wrap here
        entry = f.entry()
        return "KEY=" + ("CHOICE" if entry.kind is Kind.ENUM else flag_metavar(entry))
    return {Kind.INT: "INT", Kind.NUMBER: "NUMBER", Kind.BOOL: "BOOL", Kind.TEXT: "TEXT"}[f.kind]


def flag_help(f: Field, *, env: bool) -> str:
    """A flag's help: the field's, with its default and (with ``env``) its variables."""
    notes = [f"built-in default: {shown_default(f)}"]  # what is in effect, explain says
    if env and f.env:
        notes.append("env: " + ", ".join(f.env))
    return f"{f.help} ({'; '.join(notes)})".strip()


def add_arguments(
    parser: argparse.ArgumentParser,
    preset: str | os.PathLike[str] = "budgetconf",
    *,
    title: str | None = None,
) -> argparse._ArgumentGroup:
    """Add the flags of ``preset`` to ``parser``, in an argument group, and return the group.

    Each flag is text with a ``None`` default: argparse neither converts nor
    checks it, and a flag the user left out does not hide the sources below
    the ``cli`` source. The help shows the field's built-in default and environment
    variable. Pass the parsed namespace to `argv_from` to resolve with it.
    Raises `UsageError` when the preset has no ``cli`` source.
    """
    loaded = _preset(preset)
    has_env = loaded.has_source("env")
    group = parser.add_argument_group(title or f"budgets (preset {loaded.name})")
    options = _flags(loaded)
    taken = set(options)  # an option's own flag; a field's further flags are its aliases
    action = _given_action()
    for flag, fields in options.items():
        first = fields[0]
        names = [flag, *(name for name in first.flags[1:] if name not in taken)]
        taken.update(names)
        group.add_argument(
            *names,
            action=action,
            dest=_dest(flag),
            default=None,
            const="table" if first.kind is Kind.TABLE else None,  # repeatable: KEY=VALUE each
            metavar=flag_metavar(first),
            help=flag_help(first, env=has_env).replace("%", "%%"),
        )
    return group


def argv_from(
    namespace: argparse.Namespace, preset: str | os.PathLike[str] = "budgetconf"
) -> list[str]:
    """The flags of ``preset`` that ``namespace`` holds a value for, as ``resolve(argv=...)`` takes.

    ``namespace`` comes from a parser that `add_arguments` filled with the
    same preset; attributes left ``None`` were not given and are left out.
    """
    argv: list[str] = []
    attributes: dict[str, Any] = vars(namespace)
    for flag in _flags(_preset(preset)):
        value = attributes.get(_dest(flag))
        for given in value if isinstance(value, list) else () if value is None else (value,):
            # the flag as typed, so the locator is the one the user wrote
            argv.append(f"{getattr(given, 'flag', flag)}={given}")
    return argv
