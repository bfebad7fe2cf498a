"""The registry of source kinds: the one table of them, and every list read from it."""

from __future__ import annotations

import inspect

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.cli._parser import FILE_KINDS, OPTIONS
from budgetconf.sources import KINDS, SourceKind


def test_each_kind_is_registered_under_the_name_it_declares() -> None:
    """A class's KIND names the key it is registered by, and the registry keeps rank order."""
    for name, source in KINDS.items():
        assert isinstance(source.KIND, SourceKind)
        assert source.KIND.name == name
    stack = load_preset("budgetconf").description.source_kinds
    assert [kind for kind in KINDS if kind in stack] == list(stack)


def test_resolve_takes_exactly_the_arguments_the_kinds_declare() -> None:
    """resolve()'s keywords, the environment aside, are the registry's arguments, one per kind."""
    keywords = set(inspect.signature(budgetconf.resolve).parameters) - {"preset", "env"}
    arguments = [s.KIND.argument.name for s in KINDS.values() if s.KIND.argument is not None]
    assert sorted(arguments) == sorted(keywords)


def test_the_command_line_has_an_option_for_each_kind_that_declares_one() -> None:
    """The resolution options are the kinds' options, in rank order, with their help."""
    declared = [
        s.KIND.argument.option
        for s in KINDS.values()
        if s.KIND.argument is not None and s.KIND.argument.option is not None
    ]
    assert [a.option for a in OPTIONS] == declared
    assert declared == [
        "--global",
        "--project",
        "--profile",
        "--workflow",
        "--step",
        "--set",
        "--policy",
    ]
    assert all(a.help and a.metavar for a in OPTIONS)


def test_schema_and_init_describe_the_kinds_that_read_a_settings_file() -> None:
    """The kinds with a settings-file format, the project's first, each with init's title."""
    assert FILE_KINDS == {"project": "toml", "global": "json", "profile": "json"}
    assert all(KINDS[kind].KIND.title for kind in FILE_KINDS)
