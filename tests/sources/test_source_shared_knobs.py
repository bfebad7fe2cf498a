"""One variable or flag for several fields: the env and cli sources offer it to each."""

from __future__ import annotations

from pathlib import Path

import pytest

import budgetconf

from conftest import Place
from helpers.presetfiles import preset_file


def _shared(place: Place) -> Path:
    """Two fields that list the same variable and the same flag, each with one of its own."""
    return preset_file(
        place.work,
        name="shared",
        file="shared.toml",
        sources=[
            "default",
            {"kind": "env", "invalid": "fallback"},
            {"kind": "cli", "invalid": "fallback"},
        ],
        fields={
            "run.steps": {
                "type": "int",
                "ge": 1,
                "default": 200,
                "env": ["APP_BUDGET"],
                "flags": ["--budget"],
            },
            "run.calls": {
                "type": "int",
                "ge": 1,
                "default": 100,
                "env": ["APP_BUDGET", "APP_CALLS"],
                "flags": ["--budget", "--calls"],
            },
        },
    )


def test_one_variable_sets_every_field_that_lists_it(place: Place) -> None:
    """A variable listed by two fields offers its value to both, each located at it."""
    res = budgetconf.resolve(_shared(place), env={"APP_BUDGET": "300"})
    assert res.values == {"run.steps": 300, "run.calls": 300}
    assert {t.locator for t in res.traces()} == {"env:APP_BUDGET"}


def test_one_flag_sets_every_field_that_lists_it(place: Place) -> None:
    """A flag listed by two fields offers its value to both; a field's own flag is its own."""
    path = _shared(place)
    res = budgetconf.resolve(path, env={}, argv=["--budget", "300"])
    assert res.values == {"run.steps": 300, "run.calls": 300}
    res = budgetconf.resolve(path, env={}, argv=["--budget=300", "--calls", "7"])
    assert res.values == {"run.steps": 300, "run.calls": 7}


def test_a_bad_shared_value_falls_back_in_every_field(place: Place) -> None:
    """Rejected under fallback, the shared value leaves each field to its next candidate."""
    path = _shared(place)
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"APP_BUDGET": "300"}, argv=["--budget", "0"])
    assert res.values == {"run.steps": 300, "run.calls": 300}
    tail = "from --budget (cli): must be >= 1, got '0'; ignored, using 300 from env:APP_BUDGET"
    assert [str(w.message) for w in caught] == [f"run.steps {tail}", f"run.calls {tail}"]
