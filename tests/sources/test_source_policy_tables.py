"""The policy's rules for a table: one that bounds every key, and one for a key by its name.

``{"tools": {"max_calls": RULE}}`` bounds each key of the default preset's ``tools.max_calls``;
``{"tools": {"max_calls": {"keys": {"web_search": RULE}}}}`` bounds that key alone, and
stands for the table's rule there. The installed policy is ``place.policy`` (see conftest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import budgetconf

from conftest import Place
from helpers.resolving import quiet, statuses


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def policy(place: Place, document: dict[str, Any]) -> Path:
    """The installed policy, written as ``document`` with one key a line; its path."""
    return write(place.policy, json.dumps(document, indent=2))


TABLE_TEXT = "web_search=50,fetch=2"
ENV = {"BUDGETCONF_TOOLS_MAX_CALLS": TABLE_TEXT}


def test_a_table_wide_ceiling_clamps_every_key(place: Place) -> None:
    """``max`` on the table: each key above it is clamped, each key inside it stands."""
    path = policy(place, {"tools": {"max_calls": {"max": 10}}})

    res = quiet(env=ENV)

    assert res["tools.max_calls"] == {"fetch": 2, "web_search": 10}
    assert statuses(res, "tools.max_calls.web_search") == [("env", "clamped"), ("policy", "won")]
    trace = res.trace("tools.max_calls.web_search")
    assert (trace.locator, trace.ruling) == (f"{path}:3", "ceiling")
    assert trace.candidates[0].reason == f"above the policy ceiling 10 ({path}:3)"
    assert statuses(res, "tools.max_calls.fetch") == [("env", "won")]
    assert res.to_dict()["fields"]["tools.max_calls.fetch"]["policy"] == {
        "max": 10,
        "locator": f"{path}:3",
    }


def test_a_keys_own_rule_stands_for_the_tables(place: Place) -> None:
    """Under ``keys``, web_search has a ceiling of its own, 100, in place of the table's 10;
    fetch keeps the table's."""
    path = policy(
        place, {"tools": {"max_calls": {"max": 10, "keys": {"web_search": {"max": 100}}}}}
    )

    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=50,fetch=20"})

    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 50}
    web_search = res.trace("tools.max_calls.web_search")
    assert web_search.policy is not None
    assert web_search.policy.to_dict() == {"max": 100, "locator": f"{path}:6"}
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:3"


def test_a_rejecting_ceiling_drops_the_key_and_the_next_source_competes(place: Place) -> None:
    """``on_exceed = "reject"``: the variable's 50 is dropped, the global file's 5 stands; a key
    with nothing inside the bound takes the bound."""
    policy(place, {"on_exceed": "reject", "tools": {"max_calls": {"max": 8}}})
    settings = {"tools": {"max_calls": {"web_search": 5}}}
    write(place.budgetconf_home / "settings.json", json.dumps(settings, indent=2))

    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=50,fetch=20"})

    assert res["tools.max_calls"] == {"fetch": 8, "web_search": 5}
    assert statuses(res, "tools.max_calls.web_search") == [("global", "won"), ("env", "rejected")]
    assert statuses(res, "tools.max_calls.fetch") == [("env", "rejected"), ("policy", "won")]
    assert res.to_dict()["fields"]["tools.max_calls.fetch"]["policy"]["on_exceed"] == "reject"


def test_a_lock_creates_a_key_no_source_set(place: Place) -> None:
    """A locked key exists whatever the sources say; so does a key given a default."""
    path = policy(
        place,
        {
            "tools": {
                "max_calls": {"keys": {"shell": {"value": 0}, "fetch": {"default": 3}}},
            }
        },
    )

    res = quiet(env={})

    assert res["tools.max_calls"] == {"fetch": 3, "shell": 0}
    shell = res.trace("tools.max_calls.shell")
    assert (shell.source, shell.locator, shell.ruling) == ("policy", f"{path}:5", "locked")
    assert statuses(res, "tools.max_calls.shell") == [("default", "shadowed"), ("policy", "won")]
    res = quiet(env={"BUDGETCONF_TOOLS_MAX_CALLS": "shell=5,fetch=9"})
    assert res["tools.max_calls"] == {"fetch": 9, "shell": 0}


def test_a_keys_ceiling_limits_it_though_no_source_sets_it(place: Place) -> None:
    """As any field left unset takes its ceiling, a key named with a ``max`` is limited to it
    even when no source names the key: a ceiling means there is a limit."""
    path = policy(place, {"tools": {"max_calls": {"keys": {"shell": {"max": 2}}}}})

    res = quiet(env={})

    assert res["tools.max_calls"] == {"shell": 2}
    trace = res.trace("tools.max_calls.shell")
    assert (trace.locator, trace.ruling) == (f"{path}:5", "ceiling")
    assert trace.candidates[0].reason == f"unset, so it takes the policy ceiling 2 ({path}:5)"


def test_a_table_wide_ceiling_bounds_only_the_keys_that_are_set(place: Place) -> None:
    """No key is named, so no key is made: the table's rule bounds what the sources set."""
    policy(place, {"tools": {"max_calls": {"max": 10}}})

    res = quiet(env={})

    assert res["tools.max_calls"] == {}


def test_a_bad_key_under_keys_is_a_source_error_naming_the_file_and_line(place: Place) -> None:
    """The rule of a key the table cannot have fails closed, at the key's line."""
    path = policy(place, {"tools": {"max_calls": {"keys": {"bad key": {"max": 1}}}}})

    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={})

    assert str(caught.value) == (
        f"policy {path}:5: tools.max_calls: keys: not a tool name (1 to 64 ASCII letters, digits"
        " and _.-): 'bad key'"
    )


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"keys": []}, "tools.max_calls: keys: expected an object of rules, got a list"),
        ({"keys": {}}, "tools.max_calls: a rule needs max, min, value, default or keys"),
        ({"max": "3"}, 'tools.max_calls: max: not an integer: "3" (a string)'),
        ({"max": -1}, "tools.max_calls: max: must be >= 0, got -1"),
        (
            {"keys": {"fetch": {"min": 5, "max": 2}}},
            "tools.max_calls.fetch: min 5 is above max 2",
        ),
    ],
)
def test_a_bad_table_rule_fails_closed(place: Place, rule: object, problem: str) -> None:
    """A table's rule is judged by the table's values; a key's, by its key's."""
    path = policy(place, {"tools": {"max_calls": rule}})

    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={})

    assert str(caught.value).endswith(problem)
    assert str(caught.value).startswith(f"policy {path}:")


def test_a_table_and_its_key_are_not_given_two_rules(place: Place) -> None:
    """A table named twice, by another of its names, is refused like any field's second rule."""
    write(
        place.policy,
        '{"tools": {\n"max_calls": {"max": 3},\n"max_calls": {"max": 4}}}',
    )

    with pytest.raises(budgetconf.SourceError, match="duplicate key 'max_calls'"):
        budgetconf.resolve(env={})


def test_two_policy_files_combine_per_key_the_stricter_winning(place: Place) -> None:
    """The installed table-wide ceiling of 10 and an added file's ceiling of 100 for web_search
    alone: web_search stays at 10, since no file loosens another's bound; an added ceiling of
    4 for fetch is stricter, and wins."""
    installed = policy(place, {"tools": {"max_calls": {"max": 10}}})
    added = write(
        place.work / "try.json",
        json.dumps(
            {"tools": {"max_calls": {"keys": {"web_search": {"max": 100}, "fetch": {"max": 4}}}}},
            indent=2,
        ),
    )

    res = quiet(
        env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=50,fetch=20,other=30"}, policy_file=added
    )

    assert res["tools.max_calls"] == {"fetch": 4, "other": 10, "web_search": 10}
    assert res.trace("tools.max_calls.web_search").locator == f"{installed}:3"
    assert res.trace("tools.max_calls.fetch").locator == f"{added}:8"
    assert res.trace("tools.max_calls.other").locator == f"{installed}:3"


def test_two_policy_files_that_lock_a_key_to_two_values_are_an_error(place: Place) -> None:
    """The installed file locks every key to 1, the added one shell to 0: a SourceError."""
    installed = policy(place, {"tools": {"max_calls": {"value": 1}}})
    added = write(
        place.work / "try.json",
        json.dumps({"tools": {"max_calls": {"keys": {"shell": {"value": 0}}}}}, indent=2),
    )

    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, policy_file=added)

    assert str(caught.value) == (
        f"policy {added}:5: tools.max_calls.shell: locked to 0 here and to 1 by {installed}:3"
    )
