"""The ``profile`` source: a profile by name from the profiles folder, or by path."""

from __future__ import annotations

import pytest

import budgetconf

from conftest import Place


@pytest.mark.parametrize("given", ["fast", "~/fast.json", "./fast.json", "fast.json"])
def test_profile_names_and_paths(place: Place, given: str) -> None:
    """A bare name is looked up in the profiles folder; a separator, ~ or .json makes a path."""
    place.write(".budgetconf/profiles/fast.json", '{"loop": {"max_steps": 11}}', base=place.home)
    place.write("fast.json", '{"loop": {"max_steps": 12}}', base=place.home)
    place.write("fast.json", '{"loop": {"max_steps": 13}}')
    expected = {"fast": 11, "~/fast.json": 12, "./fast.json": 13, "fast.json": 13}[given]
    assert budgetconf.resolve(env={}, profile=given)["loop.max_steps"] == expected


def test_a_named_profile_that_does_not_exist_is_an_error(place: Place) -> None:
    """--profile NAME must name an existing profile."""
    with pytest.raises(
        budgetconf.SourceError, match=r"profile .*/profiles/ghost.json: no such file"
    ):
        budgetconf.resolve(env={}, profile="ghost")
