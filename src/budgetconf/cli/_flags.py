"""The preset's budget flags on explain, check and run: ``--max-steps 5`` where the user is.

A stop message recommends a field's flags (``raise it with
BUDGETCONF_MAX_STEPS or --max-steps``), so each command that resolves takes
them as options of its own: ``budgetconf run --model s.json --max-steps 5
hi`` is ``budgetconf run --model s.json hi -- --max-steps 5``. The flags
reach the ``cli`` source as the user typed them, in order, before the
arguments after ``--``, and are located as the flag. A value its field cannot
take (``--max-steps 5O``) is a usage error as it is read (`refusal`), whatever
the source's invalid policy, which judges the application's arguments after
``--``: here the user is at the terminal, and is told rather than given a
budget other than the one typed.

Which flags there are depends on the preset, which ``--preset`` may name as
a file, so the command line is read in two steps: the preset first
(`preset_option`, `flags_of`), then the grammar with its flags. A command's
own option wins over a preset's flag of the same name; explain and check
warn that the preset's flag is shadowed there (`shadowed`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from budgetconf._arguments import flag_help, flag_metavar
from budgetconf._engine import Preset, load_preset
from budgetconf._field import Field, Invalid, Kind
from budgetconf._spelling import did_you_mean
from budgetconf._table import table_value
from budgetconf.errors import PresetError

#: the variable that names the preset when --preset does not
PRESET_ENV: Final = "BUDGETCONF_PRESET"
#: the namespace attribute that holds the flags given, as ``--max-steps=5`` each, in order
DEST: Final = "budget_flags"
_PRESET: Final = "--preset"
_SHORTEST: Final = len("--pre")  # argparse takes a prefix that no other option has


class Flags:
    """The preset a command line chose, whose flags it may give, or why it could not be loaded.

    A plain class: a named tuple costs a compile at start-up, which every command pays.
    """

    __slots__ = ("preset", "problem")

    def __init__(self, preset: Preset | None, problem: str | None = None) -> None:
        self.preset = preset
        self.problem = problem  # why the preset could not be loaded, for an unknown flag

    @property
    def reads_flags(self) -> bool:
        """Whether the preset has a cli source, and so flags to give."""
        return self.preset is not None and self.preset.has_source("cli")


def preset_option(args: Sequence[str]) -> str | None:
    """The value of the last ``--preset`` in ``args`` (``--pre x`` and ``--preset=x`` too).

    Read before the grammar is built, since the grammar depends on it, as
    argparse reads it: the whole name or a prefix no other option has (the
    other resolution options begin ``--pro``), with its value after ``=`` or
    next. Where argparse would refuse the line instead, it does so next.
    """
    found = None
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if len(name) < _SHORTEST or not _PRESET.startswith(name):
            continue
        if eq:
            found = value
        elif i + 1 < len(args):
            found = args[i + 1]
    return found


def flags_of(named: str | None, env: Mapping[str, str]) -> Flags:
    """The preset the command line chose (``--preset``, else ``$BUDGETCONF_PRESET``), loaded.

    A preset that cannot be loaded gives no flags: resolving reports it, in
    the command's own way. An empty ``--preset`` is refused after the parse.
    """
    if named == "":
        return Flags(None)
    name = named or env.get(PRESET_ENV) or "budgetconf"
    try:
        return Flags(load_preset(name))
    except PresetError as exc:
        return Flags(None, str(exc))


class BudgetFlag(argparse.Action):
    """A preset's flag: its text, kept as ``--flag=text`` in the order given, for the cli source.

    The text must be a value of each of the ``fields`` the flag sets, as their
    `Field.parse_text` reads it, or the command line is refused (argparse's
    error, which is `Usage`). What it then becomes is the cli source's to
    say, under the policy's bounds, as for the arguments after ``--``.
    ``words`` are the values completion offers: an enum field's choices.
    """

    words: tuple[str, ...] = ()
    fields: tuple[Field, ...] = ()

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        problem = refusal(self.fields, values)
        if problem is not None:  # `argument --max-steps: not an integer: '5O'`
            raise argparse.ArgumentError(self, problem)
        given = list(getattr(namespace, self.dest, None) or ())  # never the shared default
        given.append(f"{option_string or self.option_strings[0]}={values}")
        setattr(namespace, self.dest, given)


def add_flags(command: argparse.ArgumentParser, preset: Preset) -> None:
    """Give ``command`` the preset's flags that are not already options of its own."""
    by_flag = preset.schema.by_flag
    taken = command._option_string_actions  # the command's own options win
    free = [flag for flag in by_flag if flag not in taken]
    if not free:
        return
    has_env = preset.has_source("env")
    group = command.add_argument_group(f"budget flags of preset {preset.name} (the cli source)")
    for flag in free:
        fields = by_flag[flag]
        action = group.add_argument(
            flag,
            action=BudgetFlag,
            dest=DEST,
            default=None,
            metavar=flag_metavar(fields[0]),
            help=_flag_help(fields, has_env=has_env),
        )
        assert isinstance(action, BudgetFlag)
        action.fields = fields
        action.words = fields[0].choices  # for completion; argparse checks no choices of ours


def refusal(fields: Sequence[Field], text: str) -> str | None:
    """Why ``text`` is not a value of a flag that sets ``fields``, or None when it is.

    The first refusal's reason, which quotes the text (masked for a secret
    field). When the flag sets fields that do not all refuse it so, the reason
    names those that do: ``not an integer: 'warn' (for agent.turns)``.
    """
    refused: dict[str, list[str]] = {}
    for f in fields:
        try:
            table_value(f, text, True) if f.kind is Kind.TABLE else f.parse_text(text)
        except Invalid as exc:
            refused.setdefault(exc.reason, []).append(f.path)
    if not refused:
        return None
    reason, paths = next(iter(refused.items()))
    return reason if len(paths) == len(fields) else f"{reason} (for {', '.join(paths)})"


def _flag_help(fields: Sequence[Field], *, has_env: bool) -> str:
    text = flag_help(fields[0], env=has_env)
    if len(fields) > 1:  # one flag for several fields: praisonai-code's --max-steps
        text += "; sets " + ", ".join(f.path for f in fields)
    return text.replace("%", "%%")  # argparse formats help with %


def given_flags(ns: argparse.Namespace) -> list[str]:
    """The preset's flags the command line gave, as ``--max-steps=5``, in the order given."""
    given: list[str] | None = getattr(ns, DEST, None)
    return given or []


def shadowed(preset: Preset, parser: argparse.ArgumentParser, taking: Sequence[str]) -> list[str]:
    """A warning for each flag of ``preset`` that a command's own option shadows, on the
    commands ``taking`` the preset's flags."""
    if not preset.has_source("cli"):
        return []  # its flags are options nowhere, so nothing shadows them
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    hidden: dict[str, list[str]] = {}
    for name in taking:
        own = commands.choices[name]._option_string_actions
        for flag in preset.schema.by_flag:
            action = own.get(flag)
            if action is not None and not isinstance(action, BudgetFlag):
                hidden.setdefault(flag, []).append(name)
    warnings = []
    for flag, names in hidden.items():
        paths = ", ".join(f.path for f in preset.schema.by_flag[flag])
        where = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        warnings.append(
            f"the preset's flag {flag} ({paths}) is shadowed on {where} by the command's own"
            f" {flag}: there, give it after -- (budgetconf {names[0]} ... -- {flag} VALUE)"
        )
    return warnings


def unknown_hint(
    unknown: Sequence[str], args: Sequence[str], flags: Flags, command: argparse.ArgumentParser
) -> str:
    """What to add to ``unrecognized arguments: ...``: the way that works, or why none does.

    A flag given to a preset that reads none is answered with the ``--set``
    that sets the field it names (``--max-steps`` -> ``agent.max_steps``); a
    near miss with the option meant.
    """
    first = next((a for a in unknown if a.startswith("--")), None)
    if first is None:
        return ""
    if flags.problem is not None:
        return f" (the preset's flags are not known: {flags.problem})"
    flag, _, value = first.partition("=")
    preset = flags.preset
    if preset is not None and not flags.reads_flags:
        return f"; preset {preset.name!r} reads no flags" + _set_instead(preset, flag, value, args)
    hint = did_you_mean(flag, list(command._option_string_actions))
    return f"; did you mean {hint}?" if hint else ""


def _set_instead(preset: Preset, flag: str, value: str, args: Sequence[str]) -> str:
    """``: use --set agent.max_steps=5`` for ``--max-steps 5``, when the preset can take it."""
    fields = preset.schema.by_flag.get(flag)
    if fields is None:  # not the preset's flag: the field its name names, if any
        named = preset.schema.suggest(flag.removeprefix("--").replace("-", "_"))
        fields = () if named is None else (preset.schema.lookup(named),)
    if not fields or not preset.has_source("explicit"):
        return ""
    if not value:  # the value as given, after the flag; argparse may have taken it elsewhere
        at = args.index(flag) + 1 if flag in args else len(args)
        value = args[at] if at < len(args) and not args[at].startswith("--") else "VALUE"
    return ": use " + " ".join(f"--set {f.path}={value}" for f in fields)
