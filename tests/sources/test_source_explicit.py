"""The ``explicit`` source: values passed in code (explicit=) or with --set."""

from __future__ import annotations

import json

import pytest

import budgetconf
from budgetconf.cli import main


def test_an_unknown_explicit_field_is_an_error_with_a_suggestion() -> None:
    """A typo in code is an error, never a warning, naming the field and source.

    The value is not kept in ``raw``: it belongs to no field, so it may be a secret.
    """
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"loop.max_step": 5})
    assert str(caught.value) == (
        "loop.max_step from explicit: unknown field; did you mean 'loop.max_steps'?"
    )
    assert (caught.value.field, caught.value.source, caught.value.raw) == (
        "loop.max_step",
        "explicit",
        None,
    )


def test_every_unknown_explicit_field_is_reported() -> None:
    """Two typos are two errors, even when neither has a suggestion."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"zzz.aaa": 1, "qqq.bbb": 2})
    assert [e.field for e in caught.value.errors] == ["zzz.aaa", "qqq.bbb"]


def test_explicit_accepts_aliases() -> None:
    """loop.max_turns is loop.max_steps by its alias."""
    res = budgetconf.resolve(env={}, explicit={"loop.max_turns": 50})
    assert res["loop.max_steps"] == 50
    assert res.trace("loop.max_steps").winner.alias == "max_turns"


def test_several_errors_are_raised_together() -> None:
    """Every problem is reported at once, each on its own line."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"loop.max_steps": 0, "limits.max_tokens": "x"})
    assert len(caught.value.errors) == 2
    assert str(caught.value).splitlines() == [
        "2 configuration errors:",
        "  - loop.max_steps from explicit: must be >= 1, got 0",
        '  - limits.max_tokens from explicit: not an integer: "x" (a string)',
    ]


def test_a_table_is_given_in_code_whole_or_key_by_key() -> None:
    """``{"tools.max_calls": {...}}`` and ``{"tools.max_calls.fetch": 10}`` both set keys, each
    located at ``explicit``; a key given alone is a field of its own."""
    res = budgetconf.resolve(
        env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=1,fetch=1,search=1"},
        explicit={"tools.max_calls": {"web_search": 3}, "tools.max_calls.fetch": 10},
    )
    assert res["tools.max_calls"] == {"fetch": 10, "search": 1, "web_search": 3}
    for key in ("web_search", "fetch"):
        trace = res.trace(f"tools.max_calls.{key}")
        assert [(c.source, c.status) for c in trace.candidates] == [
            ("env", "shadowed"),
            ("explicit", "won"),
        ]
        assert trace.winner.text is False


def test_a_key_of_a_table_it_cannot_take_is_refused_saying_why() -> None:
    """``tools.max_calls.bad key`` names no key the table may have: the table's rule says so."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"tools.max_calls.bad key": 3})
    assert caught.value.field == "tools.max_calls.bad key"
    assert str(caught.value) == (
        "tools.max_calls.bad key from explicit: tools.max_calls: not a tool name (1 to 64"
        " ASCII letters, digits and _.-): 'bad key'"
    )


def test_set_gives_a_table_as_text_whole_or_key_by_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--set tools.max_calls=web_search=3,fetch=10`` and ``--set tools.max_calls.fetch=4``
    are text, parsed as a variable's."""
    args = ["--set", "tools.max_calls=web_search=3,fetch=10", "--set", "tools.max_calls.fetch=4"]
    assert main(["explain", "--format", "json", *args, "tools.max_calls"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["values"] == {"tools.max_calls.fetch": 4, "tools.max_calls.web_search": 3}
    fetch = document["fields"]["tools.max_calls.fetch"]["candidates"]
    assert [(c["source"], c["raw"], c["status"]) for c in fetch] == [
        ("explicit", "10", "shadowed"),
        ("explicit", "4", "won"),
    ]
