"""The ``env`` source: the variables the schema names, read from env= or the process."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

import budgetconf


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
