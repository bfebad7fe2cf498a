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
