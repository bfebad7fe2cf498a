"""The ``env`` source: the variables the schema names, read from env= or the process."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file


def test_unknown_budgetconf_variables_are_reported_with_a_suggestion() -> None:
    """BUDGETCONF_MAX_STEP is not a variable; the warning suggests BUDGETCONF_MAX_STEPS."""
    env = {
        "BUDGETCONF_MAX_STEP": "9",
        "BUDGETCONF_HOME": "/nowhere",
        "BUDGETCONF_PRESET": "x",
        "BUDGETCONF_QQQ": "1",
    }
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env=env)
    assert res.warnings == (
        "BUDGETCONF_MAX_STEP is not a known variable; did you mean BUDGETCONF_MAX_STEPS?",
        "BUDGETCONF_QQQ is not a known variable",
    )


def test_a_budgetconf_variable_in_the_wrong_case_is_reported() -> None:
    """budgetconf_max_steps is ignored like any unknown name, but not silently."""
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={"budgetconf_max_steps": "9", "Budgetconf_Home": "/x"})
    assert res["loop.max_steps"] == 40
    assert res.warnings == (
        "Budgetconf_Home is not a known variable; did you mean BUDGETCONF_HOME?",
        "budgetconf_max_steps is not a known variable; did you mean BUDGETCONF_MAX_STEPS?",
    )


class _Changing(Mapping[str, str]):
    """An environment another thread changes while it is copied, the first two times."""

    def __init__(self, data: dict[str, str]) -> None:
        self._data = data
        self.copies = 0

    def __getitem__(self, name: str) -> str:
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        self.copies += 1
        if self.copies == 1:
            raise RuntimeError("dictionary changed size during iteration")
        if self.copies == 2:  # a variable unset between listing the names and reading it
            return iter([*self._data, "BUDGETCONF_GONE"])
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_an_environment_that_changes_while_it_is_read_is_read_again() -> None:
    """A copy interrupted by a change in size or a vanished variable is taken again, whole."""
    env = _Changing({"BUDGETCONF_MAX_STEPS": "7"})
    res = budgetconf.resolve(env=env)
    assert res["loop.max_steps"] == 7
    assert env.copies >= 3  # the two interrupted copies were taken again


def test_the_environment_is_read_on_every_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without env=, os.environ is read afresh each time."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "6")
    first = budgetconf.resolve()["loop.max_steps"]
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    assert (first, budgetconf.resolve()["loop.max_steps"]) == (6, 7)


# --- An empty variable is unset ---------------------------------------------------------


def test_an_empty_variable_leaves_a_lower_source_in_force(place: Place) -> None:
    """BUDGETCONF_MAX_STEPS= offers nothing: the project's value stands, and no word is said."""
    place.write("settings.toml", "[loop]\nmax_steps = 12\n")
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": ""})  # warnings are errors here
    trace = res.trace("loop.max_steps")
    assert (res["loop.max_steps"], trace.source, res.warnings) == (12, "project", ())
    assert [c.status for c in trace.candidates] == ["shadowed", "won", "empty"]
    env = next(s for s in res.to_dict()["sources"] if s["source"] == "env")
    assert env["offered"] == 0  # an empty variable offers no value


def test_check_passes_and_the_table_shows_an_empty_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` is ok with an empty variable; explain's table lists it as empty, quoted."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "")
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 23 fields resolved, no warnings (preset budgetconf)\n"
    assert main(["explain", "loop.max_steps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == [
        "loop.max_steps 40 built-in default",
        "  empty        '' env:BUDGETCONF_MAX_STEPS",
    ]


def test_an_empty_first_variable_lets_the_next_one_set_the_field(place: Place) -> None:
    """Of a field's variables, the first one that holds a value is the field's, without a word."""
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "env", "invalid": "error"}],
        fields={"loop.max_steps": {"type": "int", "default": 40, "env": ["APP_STEPS", "OLD"]}},
    )
    res = budgetconf.resolve(preset, env={"APP_STEPS": " ", "OLD": "9"})
    assert res["loop.max_steps"] == 9
    assert [(c.locator, c.status) for c in res.trace("loop.max_steps").candidates] == [
        ("built-in default", "shadowed"),
        ("env:OLD", "won"),
        ("env:APP_STEPS", "empty"),
    ]
