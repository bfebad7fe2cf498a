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
    assert capsys.readouterr().out == "ok: 31 fields resolved, no warnings (preset budgetconf)\n"
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


# --- A table's variable ------------------------------------------------------------------


def test_a_tables_variable_gives_each_key_as_text() -> None:
    """``web_search=3,fetch=10`` sets two keys, each parsed as its value's type, each located
    at the variable; white space around a key or a value is no part of it."""
    res = budgetconf.resolve(env={"BUDGETCONF_TOOLS_MAX_CALLS": "web_search=3, fetch = 10 "})
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 3}
    trace = res.trace("tools.max_calls.fetch")
    assert (trace.locator, trace.winner.raw, trace.winner.text) == (
        "env:BUDGETCONF_TOOLS_MAX_CALLS",
        " 10 ",
        True,
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("=3", "not a tool name (1 to 64 ASCII letters, digits and _.-): ''"),
        (",,", "not KEY=VALUE: ''"),
        ("web_search", "not KEY=VALUE: 'web_search'"),
        ("web_search=3,web_search=4", "'web_search' is given twice; the first stands"),
    ],
)
def test_what_a_tables_variable_cannot_take_is_a_warning_said_once(text: str, said: str) -> None:
    """Under the environment's fallback policy each slip is said once, and ignored."""
    with pytest.warns(budgetconf.BudgetConfWarning):
        res = budgetconf.resolve(env={"BUDGETCONF_TOOLS_MAX_CALLS": text})
    assert res.warnings == (
        f"tools.max_calls from env:BUDGETCONF_TOOLS_MAX_CALLS: {said}; ignored",
    )
    assert res["tools.max_calls"] == ({"web_search": 3} if "web_search=3" in text else {})


def test_an_empty_tables_variable_offers_no_key(place: Place) -> None:
    """BUDGETCONF_TOOLS_MAX_CALLS= is as if unset: the file's keys stand, and no word is said."""
    place.write("settings.toml", "[tools.max_calls]\nweb_search = 3\n")
    res = budgetconf.resolve(env={"BUDGETCONF_TOOLS_MAX_CALLS": " "})  # warnings are errors here
    assert (res["tools.max_calls"], res.warnings) == ({"web_search": 3}, ())
    assert [c.source for c in res.trace("tools.max_calls.web_search").candidates] == ["project"]


def test_a_tables_first_variable_wins_key_by_key(place: Place) -> None:
    """Of a table's variables the first listed wins each key it gives; the others' keys stay."""
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "env", "invalid": "error"}],
        fields={
            "tools.max_calls": {
                "type": "table",
                "values": "int",
                "keys": "tool-name",
                "env": ["APP_CALLS", "OLD_CALLS"],
            }
        },
    )
    res = budgetconf.resolve(preset, env={"APP_CALLS": "a=1", "OLD_CALLS": "a=5,b=6"})
    assert res["tools.max_calls"] == {"a": 1, "b": 6}
    assert [(c.locator, c.status) for c in res.trace("tools.max_calls.a").candidates] == [
        ("env:OLD_CALLS", "shadowed"),
        ("env:APP_CALLS", "won"),
    ]
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={"APP_CALLS": "a=x"})
    assert str(caught.value) == "tools.max_calls.a from env:APP_CALLS: not an integer: 'x'"
