"""The ``explicit`` source: values passed in code (explicit=) or with --set."""

from __future__ import annotations

import pytest

import budgetconf


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
