"""A ``table`` field: free keys, one type of value, each key resolved as a field of its own.

The default preset's ``tools.max_calls`` (tool name -> int >= 0) and an application's
preset with a table that replaces, falls back and keeps a secret. How each source reads
a table is in tests/sources; what the policy does with one, in test_source_policy.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import budgetconf

from conftest import Explain, Place
from helpers.pages import Session
from helpers.presetfiles import preset_file
from helpers.resolving import quiet

TOOL_NAME = "not a tool name (1 to 64 ASCII letters, digits and _.-)"


def _global(place: Place, document: dict[str, Any]) -> Path:
    """The global settings file, one key a line, so each key has a line of its own."""
    text = json.dumps(document, indent=2)
    return place.write(".budgetconf/settings.json", text, base=place.home)


def _statuses(res: budgetconf.Resolution, path: str) -> list[tuple[str, str]]:
    return [(c.source, c.status.value) for c in res.trace(path).candidates]


@pytest.fixture
def app(place: Place) -> Path:
    """An application's preset: a table with a default, whose profile replaces its section,
    whose variables fall back, and a secret table beside it."""
    return preset_file(
        place.work,
        name="app",
        home="~/.app",
        sources=[
            "default",
            {"kind": "global", "path": "{home}/settings.json"},
            {"kind": "profile", "folder": "{home}/profiles", "merge": {"tools": "replace"}},
            {"kind": "env", "invalid": "fallback"},
            "explicit",
        ],
        fields={
            "tools.max_calls": {
                "type": "table",
                "values": "int",
                "keys": "tool-name",
                "ge": 0,
                "default": {"web_search": 1},
                "env": ["APP_MAX_CALLS"],
            },
            "tools.api_keys": {
                "type": "table",
                "values": "text",
                "keys": "tool-name",
                "secret": True,
                "env": ["APP_API_KEYS"],
            },
        },
    )


def _app_global(place: Place, document: dict[str, Any]) -> Path:
    return place.write(".app/settings.json", json.dumps(document, indent=2), base=place.home)


# --- each key is a field of its own ---------------------------------------------------------


def test_a_higher_source_shadows_only_the_keys_it_sets(place: Place) -> None:
    """The variable's web_search wins over the global file's; the file's fetch stays."""
    path = _global(place, {"tools": {"max_calls": {"web_search": 5, "fetch": 2}}})

    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=3"})

    assert res["tools.max_calls"] == {"fetch": 2, "web_search": 3}
    assert _statuses(res, "tools.max_calls.web_search") == [("global", "shadowed"), ("env", "won")]
    assert _statuses(res, "tools.max_calls.fetch") == [("global", "won")]
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:5"
    assert res.trace("tools.max_calls.web_search").locator == "env:BUDGETCONF_TOOLS_MAX_CALLS"


def test_keys_are_settled_in_the_order_of_their_names_after_the_tables_place(
    place: Place,
) -> None:
    """Whatever order the sources name them in, a table's keys come sorted, where the table
    is among the fields."""
    _global(place, {"tools": {"max_calls": {"zeta": 1, "alpha": 2}}})

    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "mid=3"})

    paths = [t.field.path for t in res.traces()]
    at = paths.index("tools.max_calls.alpha")
    assert paths[at - 1] == "limits.warn_at"
    assert paths[at : at + 3] == [
        "tools.max_calls.alpha",
        "tools.max_calls.mid",
        "tools.max_calls.zeta",
    ]
    table = res["tools.max_calls"]
    assert isinstance(table, Mapping)
    assert list(table) == ["alpha", "mid", "zeta"]
    assert [t.field.table for t in res.traces()][at : at + 3] == ["tools.max_calls"] * 3


def test_a_table_nobody_sets_has_no_keys() -> None:
    """The default preset's table defaults to no keys: nothing is limited, nothing is traced."""
    res = quiet(env={})

    assert res["tools.max_calls"] == {}
    assert not any(t.field.table for t in res.traces())
    assert "tools.max_calls" not in res.to_dict()["values"]


def test_the_presets_default_keys_are_built_in_defaults(app: Path, place: Place) -> None:
    """A default table's keys are candidates like any default: lowest, and shadowed."""
    _app_global(place, {"tools": {"max_calls": {"web_search": 4}}})

    res = quiet(preset=app, env={})

    trace = res.trace("tools.max_calls.web_search")
    assert res["tools.max_calls"] == {"web_search": 4}
    assert [(c.source, c.locator, c.value, c.status) for c in trace.candidates] == [
        ("default", "built-in default", 1, "shadowed"),
        ("global", f"{place.home}/.app/settings.json:4", 4, "won"),
    ]


# --- replace -------------------------------------------------------------------------------


def test_a_replacing_source_replaces_every_key_below_it(app: Path, place: Place) -> None:
    """The profile's tools section replaces the global file's keys, all of them: web_search
    goes back to its default, search is unset, and fetch is the profile's."""
    _app_global(place, {"tools": {"max_calls": {"web_search": 5, "fetch": 2, "search": 4}}})
    profile = place.write(
        ".app/profiles/p.json",
        json.dumps({"tools": {"max_calls": {"fetch": 9}}}, indent=2),
        base=place.home,
    )

    res = quiet(preset=app, env={"APP_MAX_CALLS": "other=7"}, profile="p")

    why = f"section tools replaced whole by profile {profile}:2"
    assert res["tools.max_calls"] == {"fetch": 9, "other": 7, "web_search": 1}
    web_search = res.trace("tools.max_calls.web_search")
    assert _statuses(res, "tools.max_calls.web_search") == [
        ("default", "won"),
        ("global", "replaced"),
    ]
    assert web_search.candidates[1].reason == why
    search = res.trace("tools.max_calls.search")
    assert (search.value, search.source, search.winner.status) == (None, "default", "won")
    assert [(c.source, c.status, c.reason) for c in search.candidates[1:]] == [
        ("global", "replaced", why),
    ]
    assert _statuses(res, "tools.max_calls.fetch") == [("global", "replaced"), ("profile", "won")]
    assert res.trace("tools.max_calls.fetch").merge == "replace"
    assert res.to_dict(["tools.max_calls.fetch"])["fields"]["tools.max_calls.fetch"]["merge"] == (
        "replace"
    )
    assert res.trace("tools.max_calls.other").merge == "field"  # the environment is above it


def test_a_replacing_source_without_the_section_replaces_nothing(app: Path, place: Place) -> None:
    """A profile that says nothing of tools leaves the global file's keys in force."""
    _app_global(place, {"tools": {"max_calls": {"fetch": 2}}})
    place.write(".app/profiles/p.json", "{}", base=place.home)

    res = quiet(preset=app, env={}, profile="p")

    assert res["tools.max_calls"] == {"fetch": 2, "web_search": 1}


# --- what a table cannot take ----------------------------------------------------------------


def test_a_bad_key_in_a_file_is_an_error_naming_the_table_the_line_and_the_key(
    place: Place,
) -> None:
    """Under the project file's error policy, a key that is no tool name is a ConfigError."""
    path = place.write("settings.toml", '[tools.max_calls]\nweb_search = 3\n"bad key" = 1\n')

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})

    error = caught.value
    assert str(error) == f"tools.max_calls from {path}:3 (project): {TOOL_NAME}: 'bad key'"
    assert (error.field, error.source, error.locator) == ("tools.max_calls", "project", f"{path}:3")


def test_each_bad_key_of_a_file_is_its_own_error(place: Place) -> None:
    """Two keys that are no tool names are two errors, each at its line: neither is taken for
    the table set twice."""
    path = place.write("settings.toml", '[tools.max_calls]\n"bad key" = 1\n"bad too" = 2\nok = 3\n')

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})

    assert [(e.locator, e.reason) for e in caught.value.errors] == [
        (f"{path}:2", f"{TOOL_NAME}: 'bad key'"),
        (f"{path}:3", f"{TOOL_NAME}: 'bad too'"),
    ]


def test_a_bad_value_in_a_file_is_an_error_naming_the_key_and_its_line(place: Place) -> None:
    """A key's value its entry cannot take is the error of that key, at its line."""
    path = place.write("settings.toml", "[tools.max_calls]\nweb_search = -1\nfetch = 2\n")

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})

    error = caught.value
    assert str(error) == (
        f"tools.max_calls.web_search from {path}:2 (project): must be >= 0, got -1"
    )
    assert (error.field, error.locator, error.raw) == (
        "tools.max_calls.web_search",
        f"{path}:2",
        -1,
    )


def test_a_value_that_is_no_table_is_an_error_under_error(place: Place) -> None:
    """``max_calls = 3`` gives the table no keys at all: a ConfigError naming what it is."""
    path = place.write("settings.toml", "[tools]\nmax_calls = 3\n")

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={})

    assert str(caught.value) == (
        f"tools.max_calls from {path}:2 (project): not a table of tool-name keys: 3 (an integer)"
    )
    assert caught.value.field == "tools.max_calls"


def test_under_fallback_each_bad_piece_is_a_warning_and_the_other_keys_stay(place: Place) -> None:
    """The variable falls back: its bad key, its piece without ``=`` and its bad value are each
    a warning; its good key wins, and the file's value stands for the bad one."""
    path = _global(place, {"tools": {"max_calls": {"web_search": 5}}})
    env = {"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=x,fetch=2,bad key=1,oops,fetch=3"}

    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env=env)

    where = "tools.max_calls from env:BUDGETCONF_TOOLS_MAX_CALLS"
    assert res["tools.max_calls"] == {"fetch": 2, "web_search": 5}
    assert res.warnings == (
        f"{where}: not KEY=VALUE: 'oops'; ignored",
        f"{where}: {TOOL_NAME}: 'bad key'; ignored",
        f"{where}: 'fetch' is given twice; the first stands; ignored",
        "tools.max_calls.web_search from env:BUDGETCONF_TOOLS_MAX_CALLS: not an integer: 'x';"
        f" ignored, using 5 from {path}:4",
    )
    rejected = res.trace("tools.max_calls.web_search").candidates[-1]
    assert (rejected.status, rejected.raw, rejected.reason) == (
        "rejected",
        "x",
        "not an integer: 'x'",
    )


def test_a_variable_that_is_no_table_is_a_warning_under_fallback() -> None:
    """``BUDGETCONF_TOOLS_MAX_CALLS=3`` names no key: it is said, and ignored."""
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={"BUDGETCONF_TOOLS_MAX_CALLS": "3"})

    assert res["tools.max_calls"] == {}
    assert res.warnings == (
        "tools.max_calls from env:BUDGETCONF_TOOLS_MAX_CALLS: not KEY=VALUE: '3'; ignored",
    )


def test_a_bad_value_in_code_is_an_error_naming_the_key() -> None:
    """Code's error policy: each bad key and value of the mapping given is its own error."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"tools.max_calls": {"web_search": "3", "": 1}})

    assert [(e.field, e.locator, e.reason) for e in caught.value.errors] == [
        ("tools.max_calls", "explicit", f"{TOOL_NAME}: ''"),
        ("tools.max_calls.web_search", "explicit", 'not an integer: "3" (a string)'),
    ]


def test_an_integer_too_long_to_read_in_a_mapping_is_out_of_range() -> None:
    """10**5000 in a table given in code is refused as out of range, never read whole."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"tools.max_calls": {"web_search": 10**5000}})

    assert str(caught.value) == (
        "tools.max_calls.web_search from explicit: out of range: 100000000000000000000000…"
        " (too many digits to read; must be between 0 and 9223372036854775807)"
    )


# --- a secret table ----------------------------------------------------------------------


def test_a_secret_tables_values_are_masked_and_its_keys_shown(app: Path) -> None:
    """Its traces, its document and the resolution's repr show each key with ``***``."""
    res = quiet(preset=app, env={"APP_API_KEYS": "openai=sk-aaaa,anthropic=sk-bbbb"})

    assert res["tools.api_keys"] == {"anthropic": "sk-bbbb", "openai": "sk-aaaa"}
    document = res.to_dict(["tools.api_keys"])
    assert document["values"] == {"tools.api_keys.anthropic": "***", "tools.api_keys.openai": "***"}
    candidate = document["fields"]["tools.api_keys.openai"]["candidates"][0]
    assert (candidate["value"], candidate["raw"]) == ("***", "***")
    assert "'tools.api_keys': {'anthropic': '***', 'openai': '***'}" in repr(res)
    shown = repr(res) + json.dumps(res.to_dict()) + repr(res.traces())
    assert "sk-" not in shown


def test_a_secret_tables_warnings_and_errors_show_no_value(app: Path) -> None:
    """A piece without ``=`` is masked whole (it may be the secret); a key is shown."""
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(app, env={"APP_API_KEYS": "openai=sk-aaaa,sk-bbbb,bad key=sk-c"})

    assert res["tools.api_keys"] == {"openai": "sk-aaaa"}
    assert res.warnings == (
        "tools.api_keys from env:APP_API_KEYS: not KEY=VALUE: ***; ignored",
        f"tools.api_keys from env:APP_API_KEYS: {TOOL_NAME}: 'bad key'; ignored",
    )
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(app, env={}, explicit={"tools.api_keys": {"openai": "x" * 5000}})
    assert str(caught.value) == (
        "tools.api_keys.openai from explicit: longer than 4096 characters: ***"
    )
    assert caught.value.raw == "***"


# --- reading a table ---------------------------------------------------------------------


def test_the_table_is_a_read_only_mapping_of_the_keys_set() -> None:
    """res["tools.max_calls"] cannot be changed; a key reads alone, and one no source set is
    unset."""
    res = quiet(env={}, explicit={"tools.max_calls.web_search": 3})

    table = res["tools.max_calls"]
    assert table == {"web_search": 3}
    with pytest.raises(TypeError):
        table["web_search"] = 100  # type: ignore[index]
    assert res["tools.max_calls.web_search"] == 3
    assert res["tools.max_calls.fetch"] is None
    assert "tools.max_calls.fetch" in res
    assert "tools.max_calls.bad key" not in res
    assert res.values["tools.max_calls"] == {"web_search": 3}


def test_a_key_no_source_set_is_traced_as_unset() -> None:
    """trace() of any key the table may have answers: unset, at the built-in default."""
    res = quiet(env={})

    trace = res.trace("tools.max_calls.fetch")
    assert (trace.value, trace.source, trace.locator) == (None, "default", "built-in default")
    assert [c.status for c in trace.candidates] == ["won"]
    assert res.to_dict(["tools.max_calls.fetch"])["fields"] == {
        "tools.max_calls.fetch": {
            "value": None,
            "source": "default",
            "locator": "built-in default",
            "merge": "field",
            "candidates": [
                {"source": "default", "locator": "built-in default", "value": None, "status": "won"}
            ],
        }
    }


def test_the_table_itself_is_traced_by_its_keys() -> None:
    """A table has no one trace: asking for one says to trace a key; a bad key is refused."""
    res = quiet(env={})

    with pytest.raises(KeyError, match=r"tools\.max_calls is a table: trace one of its keys"):
        res.trace("tools.max_calls")
    with pytest.raises(KeyError, match=r"tools\.max_calls: not a tool name .*: 'bad key'"):
        res.trace("tools.max_calls.bad key")


def test_the_explain_document_has_a_row_for_each_key(place: Place) -> None:
    """to_dict(["tools.max_calls"]) gives each key's field; "values" holds each key's value."""
    path = _global(place, {"tools": {"max_calls": {"web_search": 5, "fetch": 2}}})

    res = quiet(env={}, argv=["--tools-max-calls", "web_search=3"])

    document = res.to_dict(["tools.max_calls"])
    assert document["values"] == {"tools.max_calls.fetch": 2, "tools.max_calls.web_search": 3}
    assert document["fields"] == {
        "tools.max_calls.fetch": {
            "value": 2,
            "source": "global",
            "locator": f"{path}:5",
            "merge": "field",
            "candidates": [
                {"source": "global", "locator": f"{path}:5", "value": 2, "status": "won"}
            ],
        },
        "tools.max_calls.web_search": {
            "value": 3,
            "source": "cli",
            "locator": "--tools-max-calls",
            "merge": "field",
            "candidates": [
                {"source": "global", "locator": f"{path}:4", "value": 5, "status": "shadowed"},
                {
                    "source": "cli",
                    "locator": "--tools-max-calls",
                    "value": 3,
                    "raw": "3",
                    "status": "won",
                },
            ],
        },
    }
    whole = res.to_dict()
    assert list(whole["fields"]) == list(whole["values"])
    assert "tools.max_calls" not in whole["values"]
    json.dumps(whole)


def test_sections_nest_the_table_as_a_plain_dict() -> None:
    """res.sections()["tools"] is a dict of dicts: a copy the caller may change."""
    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=3,fetch=10"})

    sections = res.sections()
    assert sections["tools"] == {"max_calls": {"fetch": 10, "web_search": 3}}
    assert type(sections["tools"]["max_calls"]) is dict
    sections["tools"]["max_calls"]["web_search"] = 100
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 3}


@dataclass
class Tools:
    max_calls: dict[str, int]


@dataclass
class WithTools:
    tools: Tools


@dataclass
class TextTools:
    max_calls: dict[str, str]


@dataclass
class WithTextTools:
    tools: TextTools


def test_structure_builds_a_class_holding_the_table() -> None:
    """A cattrs class with ``dict[str, int]`` takes the table; one that wants text does not."""
    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=3,fetch=10"})

    assert res.structure(WithTools) == WithTools(Tools({"fetch": 10, "web_search": 3}))
    with pytest.raises(budgetconf.ConfigError) as caught:
        res.structure(WithTextTools)
    assert str(caught.value).startswith("resolved values do not fit WithTextTools: ")
    assert "expected a string, got an integer" in str(caught.value)


def test_resolve_and_explain_give_one_document(explained: Explain, place: Place) -> None:
    """A table from a file, the environment, flags and code reads the same both ways."""
    path = _global(place, {"tools": {"max_calls": {"web_search": 5, "fetch": 2}}})

    document = explained(
        "budgetconf",
        env={"BUDGETCONF_TOOLS_MAX_CALLS": "fetch=4,search=1"},
        argv=["--tools-max-calls", "search=2"],
        explicit={"tools.max_calls.web_search": 3},
    )

    assert {k: v for k, v in document["values"].items() if k.startswith("tools.")} == {
        "tools.max_calls.fetch": 4,
        "tools.max_calls.search": 2,
        "tools.max_calls.web_search": 3,
    }
    fields = document["fields"]
    assert [c["locator"] for c in fields["tools.max_calls.web_search"]["candidates"]] == [
        f"{path}:4",
        "explicit",
    ]
    assert [c["status"] for c in fields["tools.max_calls.search"]["candidates"]] == [
        "shadowed",
        "won",
    ]


def test_the_merge_page_runs_as_written(session: Session) -> None:
    """docs/merge.md's tables, merged key by key and replaced, show what explain prints."""
    session.run_page("merge.md")


def test_a_path_past_a_field_that_is_no_table_is_an_unknown_field() -> None:
    """``loop.max_steps.x`` names no key: only a table has keys."""
    res = quiet(env={})
    with pytest.raises(KeyError, match=r"unknown field 'loop\.max_steps\.x'"):
        res["loop.max_steps.x"]
