"""budgetconf schema: a JSON Schema that accepts what budgetconf reads, and flags the rest."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import budgetconf
from budgetconf._text_formats import FORMATS, text_problem
from budgetconf.cli import main
from budgetconf.cli._schema import pattern

from conftest import Place
from helpers import ROOT
from helpers.presetfiles import preset_file

_NAMED = re.compile(r"^```(json|toml) (\S+)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)


def schema_of(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["schema", *args]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(document)
    return document


def errors(schema: dict[str, Any], document: object) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(document)]


def _settings_examples() -> list[tuple[str, object]]:
    """Every settings file that docs/ shows under a name (```json ~/.budgetconf/settings.json)."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for language, name, body in _NAMED.findall(page.read_text()):
            if name.startswith("~/.") and not name.startswith("~/.budgetconf/"):
                continue  # another preset's file (~/.skiller/settings/agent.json)
            if "settings" in name or "profiles/" in name:
                loaded = json.loads(body) if language == "json" else tomllib.loads(body)
                found.append((f"{page.name}: {name}", loaded))
    return found


def _uncommented(text: str) -> str:
    """A commented settings file with every `# key = value` and `# [section]` line switched on."""
    pattern = re.compile(r"^# (\[[\w.]+\]|\w+ = .+)$", flags=re.MULTILINE)
    return pattern.sub(r"\1", text)


def test_the_schema_describes_every_field_with_its_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Types, bounds, choices, defaults, aliases and a description naming the env var and flag."""
    schema = schema_of(capsys)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    loop = schema["properties"]["loop"]["properties"]
    assert loop["max_steps"]["type"] == "integer"
    assert loop["max_steps"]["minimum"] == 1
    assert loop["max_steps"]["default"] == 40
    assert "BUDGETCONF_MAX_STEPS" in loop["max_steps"]["description"]
    assert "--max-steps" in loop["max_steps"]["description"]
    assert loop["max_turns"]["description"].startswith("Another name for loop.max_steps.")
    assert loop["last_turn"]["enum"] == ["warn", "wrap_up", "none"]
    limits = schema["properties"]["limits"]["properties"]
    assert limits["max_cost_usd"] == {
        "description": limits["max_cost_usd"]["description"],
        "type": ["number", "null"],
        "exclusiveMinimum": 0,
    }


@pytest.mark.parametrize(("where", "document"), _settings_examples())
def test_the_settings_examples_in_docs_validate(
    capsys: pytest.CaptureFixture[str], where: str, document: object
) -> None:
    """Each settings file the docs show is valid for the default preset."""
    assert errors(schema_of(capsys), document) == [], where


def test_the_docs_show_settings_examples_of_each_format() -> None:
    """The parametrised test above has JSON and TOML examples to check."""
    names = [where for where, _ in _settings_examples()]
    assert any(n.endswith(".json") for n in names)
    assert any(n.endswith(".toml") for n in names)


def test_the_repositorys_settings_toml_validates_with_every_line_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """settings.toml as shipped (all comments) and with every example line uncommented."""
    text = (ROOT / "settings.toml").read_text()
    schema = schema_of(capsys)
    assert errors(schema, tomllib.loads(text)) == []
    switched_on = tomllib.loads(_uncommented(text))
    assert switched_on["loop"]["max_steps"] == 40
    assert errors(schema, switched_on) == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"loop": {"max_steps": "40"}}, "'40' is not of type 'integer'"),
        ({"loop": {"max_steps": 0}}, "0 is less than the minimum of 1"),
        ({"loop": {"max_steps": True}}, "True is not of type 'integer'"),
        ({"loop": {"last_turn": "wrapup"}}, "'wrapup' is not one of"),
        ({"loop": {"max_step": 4}}, "'max_step' was unexpected"),
        ({"lop": {"max_steps": 4}}, "'lop' does not match any of the regexes"),
        ({"limits": {"max_cost_usd": 0}}, "0 is less than or equal to the minimum of 0"),
        ({"loop": 7}, "7 is not of type 'object'"),
        ({"tools": {"max_calls": {"web_search": -1}}}, "-1 is less than the minimum of 0"),
        ({"tools": {"max_calls": {"web_search": "3"}}}, "'3' is not of type 'integer'"),
        ({"tools": {"max_calls": {"bad key": 3}}}, "'bad key' does not match '^[A-Za-z0-9_.-]"),
        ({"tools": {"max_calls": {"x" * 65: 3}}}, "does not match '^[A-Za-z0-9_.-]{1,64}$'"),
        ({"tools": {"max_calls": 3}}, "3 is not of type 'object'"),
        ({"tools": {"max_call": {"web_search": 3}}}, "'max_call' was unexpected"),
    ],
)
def test_bad_documents_fail(
    capsys: pytest.CaptureFixture[str], document: object, message: str
) -> None:
    """What budgetconf rejects or warns about, the schema flags."""
    found = errors(schema_of(capsys), document)
    assert len(found) == 1
    assert message in found[0]


def test_a_table_is_an_object_of_keys_by_its_rule_with_values_of_its_type(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[tools.max_calls]`` / ``web_search = 3`` passes the schema, and budgetconf reads it
    without a word; the table's description names its variable and flag as text takes them."""
    schema = schema_of(capsys)
    spec = schema["properties"]["tools"]["properties"]["max_calls"]
    assert {k: v for k, v in spec.items() if k != "description"} == {
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,64}$"},
        "additionalProperties": {"type": "integer", "minimum": 0},
        "default": {},
    }
    assert "BUDGETCONF_TOOLS_MAX_CALLS, KEY=VALUE pairs between commas." in spec["description"]
    assert "--tools-max-calls KEY=VALUE, repeatable." in spec["description"]
    text = '[tools.max_calls]\nweb_search = 3\n"fetch.v2" = 0\n'
    assert errors(schema, tomllib.loads(text)) == []
    place.write("settings.toml", text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = budgetconf.resolve(env={})
    assert res.sections()["tools"] == {"max_calls": {"fetch.v2": 0, "web_search": 3}}


def test_a_tables_values_have_its_entrys_rules_and_a_secret_no_default(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An application's tables: choices for an enum's values, a format's pattern for keys and
    values, and no default written for a secret table."""
    preset_file(
        place.work,
        sources=["default", {"kind": "project", "path": "settings.toml"}],
        fields={
            "agent.modes": {
                "type": "table",
                "values": "enum",
                "choices": ["a", "b"],
                "keys": "tool-name",
            },
            "agent.scopes": {
                "type": "table",
                "values": "text",
                "format": "ledger-scope",
                "keys": "ledger-scope",
                "default": {"team:a/b": "x"},
            },
            "agent.tokens": {
                "type": "table",
                "values": "text",
                "keys": "tool-name",
                "secret": True,
                "default": {"api": "s3cret"},
            },
        },
    )
    schema = schema_of(capsys, "--preset", "app.toml")
    agent = schema["properties"]["agent"]["properties"]
    assert agent["modes"]["additionalProperties"] == {"enum": ["a", "b"]}
    scope = "^[A-Za-z0-9_.:/-]{1,128}$"
    assert agent["scopes"]["propertyNames"] == {"pattern": scope}
    assert agent["scopes"]["additionalProperties"] == {"type": "string", "pattern": scope}
    assert agent["scopes"]["default"] == {"team:a/b": "x"}
    assert "default" not in agent["tokens"]
    assert "s3cret" not in json.dumps(schema)
    assert errors(schema, {"agent": {"modes": {"web_search": "b"}}}) == []
    assert errors(schema, {"agent": {"modes": {"web_search": "c"}}}) == [
        "'c' is not one of ['a', 'b']"
    ]
    assert errors(schema, {"agent": {"scopes": {"team:a": "no space"}}}) != []


@pytest.mark.parametrize(
    "text",
    [
        "web_search",
        "a",
        "A.b-c_9",
        "x" * 64,
        "x" * 65,
        "x" * 128,
        "x" * 129,
        "team:a/b",
        "",
        "bad key",
        "tool!",
        "é",
        "web_search\t",
        "-",
        ".",
    ],
)
@pytest.mark.parametrize("rule", sorted(r for r, f in FORMATS.items() if f.pattern is not None))
def test_each_pattern_takes_what_its_rule_takes(rule: str, text: str) -> None:
    """The schema's pattern of a rule and the rule itself agree, one text at a time."""
    expression = pattern(rule)
    assert expression is not None
    matches = re.fullmatch(expression.removeprefix("^").removesuffix("$"), text) is not None
    assert matches is (text_problem(rule, text) is None), (rule, text)


def test_what_the_schema_accepts_budgetconf_reads_without_a_warning(place: Place) -> None:
    """The docs' settings.json, `$schema` included, resolves cleanly as the global file."""
    (_, document), *_ = [e for e in _settings_examples() if e[0].endswith("settings.json")]
    place.write("settings.json", json.dumps(document))
    res = budgetconf.resolve(env={}, global_file="settings.json")
    assert res.warnings == ()
    assert (res["loop.max_steps"], res["limits.timeout_seconds"]) == (60, None)


def test_a_source_that_reads_some_sections_leaves_the_rest_of_its_file_open(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `sections`, other top-level keys belong to the application: the schema allows them."""
    preset_file(
        place.work,
        name="app",
        sources=[
            "default",
            {"kind": "project", "path": "app.toml", "sections": ["agent"]},
            {"kind": "global", "path": "g.json"},
        ],
        fields={
            "agent.turns": {"type": "int", "default": 5},
            "server.retries": {"type": "int", "default": 2},
        },
    )
    project = schema_of(capsys, "--preset", "app.toml", "--kind", "project")
    assert list(project["properties"]) == ["$schema", "$comment", "agent"]
    assert errors(project, {"agent": {"turns": 3}, "server": {"port": 80}}) == []
    assert errors(project, {"agent": {"turn": 3}}) != []
    global_ = schema_of(capsys, "--preset", "app.toml", "--kind", "global")
    assert errors(global_, {"other": {}}) == ["'other' does not match any of the regexes: '^\\\\$'"]


def _app(place: Place) -> Path:
    """A preset with a field that follows another, and a number field with a whole bound."""
    return preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "project", "path": "settings.toml"}],
        fields={
            "agent.cap": {"type": "int", "ge": 1, "default": 20, "help": "The cap."},
            "agent.turns": {
                "type": "int",
                "ge": 1,
                "optional": True,
                "default_from": "agent.cap",
                "help": "Turns; unset, the cap.",
            },
            "agent.budget": {
                "type": "number",
                "gt": 0.5,
                "le": 2500000,
                "default": 5.0,
                "help": "money",
            },
        },
    )


def test_a_field_that_follows_another_says_so(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A field that, unset, takes another's value: the description says that, with no default."""
    _app(place)
    schema = schema_of(capsys, "--preset", "app.toml")
    turns = schema["properties"]["agent"]["properties"]["turns"]
    assert "Default: the value of agent.cap." in turns["description"]
    assert "default" not in turns


def test_a_default_with_a_password_is_never_written_out(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A preset's default URL shows with its password masked, and the schema gives no default
    an editor would write in for the value; ``--help`` of an application's flags the same."""
    url = "redis://agent:hunter2@127.0.0.1:6379/0"
    fields = {"ledger.url": {"type": "text", "default": url, "flags": ["--ledger-url"]}}
    preset = preset_file(place.work, fields=fields, sources=["default", "project", "cli"])
    schema = schema_of(capsys, "--preset", str(preset))
    spec = schema["properties"]["ledger"]["properties"]["url"]
    assert "Default: redis://agent:***@127.0.0.1:6379/0." in spec["description"]
    assert "default" not in spec
    parser = argparse.ArgumentParser()
    budgetconf.add_arguments(parser, preset=str(preset))
    assert "hunter2" not in parser.format_help()
    assert "built-in default: redis://agent:***@127.0.0.1:6379/0" in parser.format_help()


def test_bounds_are_whole_numbers_and_help_ends_its_sentence(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``le = 2500000`` is written so, not ``2.5e+06``; a help text without a stop gets one."""
    _app(place)
    budget = schema_of(capsys, "--preset", "app.toml")["properties"]["agent"]["properties"]
    assert budget["budget"]["maximum"] == 2500000
    assert budget["budget"]["description"].startswith("money.\nDefault: 5.0.")

    assert main(["init", "--preset", "app.toml"]) == 0
    text = (place.work / "settings.toml").read_text()
    assert "# money. Takes a number > 0.5, <= 2500000. Default: 5.0.\n" in text


@pytest.mark.parametrize("preset", ["opendot", "praisonai"])
def test_a_preset_without_settings_files_has_no_schema(
    capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    """A preset that reads no settings file (a workflow YAML is not one): exit 64, one line."""
    assert main(["schema", "--preset", preset]) == 64
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        f"budgetconf: usage error: preset {preset!r} reads no settings files\n",
    )


def test_a_kind_the_preset_lacks_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """opendot reads no project file: exit 64 and one line."""
    assert main(["schema", "--preset", "opendot", "--kind", "project"]) == 64
    assert capsys.readouterr().err == (
        "budgetconf: usage error: preset 'opendot' has no project source\n"
    )


def test_any_top_level_dollar_key_is_left_to_editors(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``$id`` or ``$note`` at the top, which budgetconf skips, pass; inside a section they fail."""
    schema = schema_of(capsys)
    document = {"$schema": "./s.json", "$id": "urn:x", "$note": [1], "loop": {"max_steps": 3}}
    assert errors(schema, document) == []
    assert errors(schema, {"loop": {"$note": 1}}) != []
    assert errors(schema, {"note": 1}) != []

    place.write("settings.json", json.dumps(document))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reader skips the same keys without a word
        res = budgetconf.resolve(env={}, global_file="settings.json")
    assert res["loop.max_steps"] == 3
