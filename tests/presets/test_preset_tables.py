"""A preset file's ``type = "table"`` fields: their ``values`` and ``keys``, their default, and
what the reader refuses, each a PresetError naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import budgetconf
from budgetconf._engine import load_preset

from conftest import Place
from helpers.pages import Session
from helpers.presetfiles import preset_file
from helpers.resolving import quiet

TABLES: dict[str, dict[str, object]] = {
    "tools.max_calls": {
        "type": "table",
        "values": "int",
        "keys": "tool-name",
        "ge": 0,
        "default": {"web_search": 3},
        "env": ["APP_MAX_CALLS"],
        "flags": ["--max-calls"],
    },
    "tools.share": {"type": "table", "values": "number", "keys": "tool-name", "gt": 0, "le": 1},
    "tools.mode": {
        "type": "table",
        "values": "enum",
        "keys": "ledger-scope",
        "choices": ["fast", "careful"],
        "default": {"team/a": "fast"},
    },
    "tools.note": {"type": "table", "values": "text", "keys": "ledger-scope"},
}


def _app(place: Place, fields: dict[str, dict[str, object]] = TABLES) -> Path:
    return preset_file(
        place.work,
        name="app",
        sources=[
            "default",
            {"kind": "project", "path": "budgets.toml"},
            {"kind": "env", "invalid": "fallback"},
            "cli",
            "explicit",
        ],
        fields=fields,
    )


def test_an_applications_tables_resolve_from_its_own_sources(place: Place) -> None:
    """Tables of integers, numbers, choices and text, keyed by tool names or ledger scopes,
    each key read from the project file, a variable, a flag or code."""
    preset = _app(place)
    path = place.write(
        "budgets.toml",
        '[tools.share]\nweb_search = 0.5\n\n[tools.mode]\n"team/b" = "careful"\n\n'
        '[tools.note]\n"team/a:x" = "the first team"\n',
    )

    res = quiet(
        preset,
        env={"APP_MAX_CALLS": "fetch=2"},
        argv=["--max-calls", "search=1"],
        explicit={"tools.share.fetch": 1},
    )

    assert res.values == {
        "tools.max_calls": {"fetch": 2, "search": 1, "web_search": 3},
        "tools.share": {"fetch": 1.0, "web_search": 0.5},
        "tools.mode": {"team/a": "fast", "team/b": "careful"},
        "tools.note": {"team/a:x": "the first team"},
    }
    assert res.trace("tools.mode.team/b").locator == f"{path}:5"
    assert res.trace("tools.mode.team/a").locator == "built-in default"
    assert type(res["tools.share.fetch"]) is float
    assert res.sections() == {
        "tools": {
            "max_calls": {"fetch": 2, "search": 1, "web_search": 3},
            "share": {"fetch": 1.0, "web_search": 0.5},
            "mode": {"team/a": "fast", "team/b": "careful"},
            "note": {"team/a:x": "the first team"},
        }
    }


def test_the_values_of_an_applications_table_are_judged_by_its_rules(place: Place) -> None:
    """Each key by the table's rule of keys, each value by its type and bounds or choices."""
    preset = _app(place)
    place.write(
        "budgets.toml",
        '[tools.share]\nweb_search = 1.5\n\n[tools.mode]\n"team a" = "fast"\nb = "quick"\n',
    )

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={})

    assert [(e.field, e.reason) for e in caught.value.errors] == [
        ("tools.share.web_search", "must be > 0 and <= 1, got 1.5"),
        (
            "tools.mode",
            "not a ledger scope (1 to 128 ASCII letters, digits and -_.:/): 'team a'",
        ),
        ("tools.mode.b", 'not one of fast, careful: "quick"'),
    ]


def test_a_table_set_by_its_name_and_an_alias_in_one_place_keeps_the_name(place: Place) -> None:
    """A key given under the table's name and under its alias, in one file, is set twice: the
    name's stands, and the alias's is refused at its line, key by key."""
    fields = {"tools.max_calls": {**TABLES["tools.max_calls"], "aliases": ["calls"]}}
    preset = _app(place, fields)
    path = place.write(
        "budgets.toml", "[tools.max_calls]\nfetch = 1\n\n[tools.calls]\nfetch = 2\nshell = 0\n"
    )

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={})

    assert str(caught.value) == (
        f"tools.max_calls.fetch from {path}:5 (project): calls is an alias of max_calls, which"
        f" is set too at {path}:2"
    )


def test_a_key_given_in_code_by_the_tables_name_and_its_alias_is_set_twice(
    place: Place,
) -> None:
    """``tools.max_calls.fetch`` and ``tools.calls.fetch`` in one mapping: the name's stands,
    the alias's is refused; a key given by the alias alone is taken, and says so."""
    fields = {"tools.max_calls": {**TABLES["tools.max_calls"], "aliases": ["calls"]}}
    preset = _app(place, fields)

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(
            preset, env={}, explicit={"tools.max_calls.fetch": 1, "tools.calls.fetch": 2}
        )
    assert str(caught.value) == (
        "tools.max_calls.fetch from explicit: tools.calls is an alias of tools.max_calls, which"
        " is given too"
    )
    res = quiet(preset, env={}, explicit={"tools.calls.fetch": 2})
    assert res["tools.max_calls"] == {"fetch": 2, "web_search": 3}
    assert res.trace("tools.max_calls.fetch").winner.alias == "calls"


def test_a_table_without_a_default_has_no_keys(place: Place) -> None:
    """Leaving ``default`` out is no error for a table, optional or not: it has no keys."""
    schema = load_preset(_app(place)).schema
    assert (schema.by_path["tools.share"].default, schema.by_path["tools.note"].default) == ({}, {})
    assert schema.by_path["tools.max_calls"].default == {"web_search": 3}


def test_a_tables_entries_carry_its_rules(place: Place) -> None:
    """An entry is a field of the table's type of values, with its bounds and its secrecy."""
    schema = load_preset(_app(place)).schema
    entry = schema.at("tools.share.web_search")
    assert (entry.path, entry.kind, entry.gt, entry.le, entry.table, entry.key) == (
        "tools.share.web_search",
        "number",
        0,
        1,
        "tools.share",
        "web_search",
    )
    assert schema.lookup("tools.share.web_search") == entry
    with pytest.raises(KeyError, match="not a tool name"):
        schema.at("tools.share.bad key")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"values": None}, 'fields."tools.t".values: expected one of int, number, bool, enum,'),
        ({"keys": None}, 'fields."tools.t".keys: expected one of ledger-url, ledger-scope,'),
        ({"values": "table"}, 'fields."tools.t".values: expected one of int, number, bool, enum,'),
        ({"values": 3}, 'fields."tools.t".values: expected a string, got 3'),
        ({"keys": "tool"}, 'fields."tools.t".keys: expected one of ledger-url, ledger-scope,'),
        ({"default": {"bad key": 1}}, 'fields."tools.t".default: not a tool name'),
        ({"default": {"a": -1}}, 'fields."tools.t".default: must be >= 0, got -1'),
        ({"default": {"a": True}}, 'fields."tools.t".default: not an integer: true (a boolean)'),
        ({"default": 3}, 'fields."tools.t".default: not a table of tool-name keys: 3 (an integer)'),
        ({"choices": ["a"]}, 'fields."tools.t".choices: enum fields need choices'),
        ({"format": "ledger-url"}, 'fields."tools.t".format: only text fields take a format'),
        (
            {"optional": True, "default_from": "tools.u"},
            'fields."tools.t".default_from: a table takes no default from another field',
        ),
    ],
)
def test_a_bad_table_field_is_refused_naming_the_key(
    place: Place, change: dict[str, object], message: str
) -> None:
    """A table without its ``values`` or ``keys``, with a bad one, or with a default its own
    rules refuse, is a PresetError naming the file and the key."""
    table: dict[str, object] = {"type": "table", "values": "int", "keys": "tool-name", "ge": 0}
    table.update(change)
    fields: dict[str, dict[str, object]] = {
        "tools.t": {k: v for k, v in table.items() if v is not None},
        "tools.u": {"type": "table", "values": "int", "keys": "tool-name"},
    }
    path = _app(place, fields)

    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)

    assert str(caught.value).startswith(f"preset {path}: {message}")


@pytest.mark.parametrize("key", ["values", "keys"])
def test_values_and_keys_are_refused_on_a_field_that_is_no_table(place: Place, key: str) -> None:
    """``values`` or ``keys`` on an int field: a PresetError naming the one given."""
    given = {"values": "int", "keys": "tool-name"}[key]
    path = _app(place, {"loop.max_steps": {"type": "int", "default": 5, key: given}})

    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)

    assert str(caught.value) == (
        f'preset {path}: fields."loop.max_steps".{key}: only a table field takes it, and this'
        " one is int"
    )


def test_a_field_cannot_take_its_default_from_a_table(place: Place) -> None:
    """A table is no int: ``default_from`` naming one is refused as any other type's."""
    fields: dict[str, dict[str, object]] = {
        "tools.max_calls": {"type": "table", "values": "int", "keys": "tool-name"},
        "tools.calls": {"type": "int", "optional": True, "default_from": "tools.max_calls"},
    }
    path = _app(place, fields)

    with pytest.raises(budgetconf.PresetError, match=r"tools\.max_calls is a table of tool-name"):
        load_preset(path)


def test_the_json_schema_of_an_applications_table_is_json(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preset's fields, a table's default among them, are written as JSON by ``schema``."""
    from budgetconf.cli import main

    preset = _app(place)
    assert main(["schema", "--preset", str(preset)]) == 0
    json.loads(capsys.readouterr().out)


def test_the_format_pages_table_runs_as_written(session: Session) -> None:
    """docs/presets-format.md's table: its preset, its file and what explain prints of them."""
    session.run_page("presets-format.md")


def test_a_whole_table_given_in_code_by_the_name_and_its_alias_is_set_twice(
    place: Place,
) -> None:
    """``{"tools.max_calls": {...}, "tools.calls": {...}}``: the alias's whole table is
    refused, as any field's second name in one place."""
    fields = {"tools.max_calls": {**TABLES["tools.max_calls"], "aliases": ["calls"]}}
    preset = _app(place, fields)
    given = {"tools.max_calls": {"fetch": 1}, "tools.calls": {"fetch": 2}}
    with pytest.raises(budgetconf.ConfigError, match=r"tools\.calls is an alias of tools"):
        budgetconf.resolve(preset, env={}, explicit=given)


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ({"max_calls_by_tool": "loop.max_steps"}, "loop.max_steps is an integer, not a table"),
        ({"max_calls_by_tool": "tools.share"}, "tools.share is a table of tool-name keys, not a"),
        ({"warn_at": "loop.max_steps"}, "loop.warn_at: loop.max_steps is an integer, not a number"),
        ({"warn_model": "loop.max_steps"}, "loop.warn_model: loop.max_steps is an integer, not a"),
    ],
)
def test_the_loop_table_names_a_table_of_integers_and_settings_of_their_type(
    place: Place, loop: dict[str, object], message: str
) -> None:
    """Each tool's own limit is a table of integers; warn_at a number, warn_model a bool."""
    fields: dict[str, dict[str, object]] = {
        "loop.max_steps": {"type": "int", "default": 5},
        "tools.share": TABLES["tools.share"],
    }
    path = preset_file(place.work, fields=fields, loop={"max_steps": "loop.max_steps", **loop})
    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)
    assert message in str(caught.value)
