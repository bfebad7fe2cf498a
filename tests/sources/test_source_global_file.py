"""The ``global`` source: the user-wide file under BUDGETCONF_HOME or ~/.budgetconf."""

from __future__ import annotations

import pytest

import budgetconf

from conftest import Place


def test_budgetconf_home_moves_the_global_file(place: Place) -> None:
    """BUDGETCONF_HOME, read from the env mapping, replaces ~/.budgetconf."""
    place.write("elsewhere/settings.json", '{"loop": {"max_steps": 3}}')
    res = budgetconf.resolve(env={"BUDGETCONF_HOME": str(place.work / "elsewhere")})
    assert res["loop.max_steps"] == 3
    assert res.trace("loop.max_steps").locator == f"{place.work}/elsewhere/settings.json:1"


def test_budgetconf_home_is_read_from_the_process_when_the_mapping_lacks_it(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A control variable missing from env= falls back to the process environment."""
    place.write("elsewhere/settings.json", '{"loop": {"max_steps": 4}}')
    monkeypatch.setenv("BUDGETCONF_HOME", str(place.work / "elsewhere"))
    assert budgetconf.resolve(env={})["loop.max_steps"] == 4


def test_home_in_the_env_mapping_locates_the_user_folder(place: Place) -> None:
    """HOME given in env= is where ~ points, not the process's home."""
    other = place.work / "other-home"
    place.write("other-home/.budgetconf/settings.json", '{"loop": {"max_steps": 5}}')
    assert budgetconf.resolve(env={"HOME": str(other)})["loop.max_steps"] == 5


def test_a_table_in_the_global_file_offers_each_key_at_its_own_line(place: Place) -> None:
    """``{"tools": {"max_calls": {...}}}``: each key is a candidate located at its line."""
    path = place.write(
        ".budgetconf/settings.json",
        '{\n  "tools": {\n    "max_calls": {\n      "web_search": 3,\n      "fetch": 10\n'
        "    }\n  }\n}\n",
        base=place.home,
    )
    res = budgetconf.resolve(env={})
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 3}
    assert res.trace("tools.max_calls.web_search").locator == f"{path}:4"
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:5"
    assert {s.source: s.offered for s in res.sources}["global"] == 2
