"""The ``profile`` source: a profile by name from the profiles folder, or by path."""

from __future__ import annotations

import pytest

import budgetconf
from budgetconf.cli import main

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


# --- a profile that is not there: the one most likely meant -------------------------------


def test_a_misspelt_profile_name_suggests_the_profile_meant(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--profile fsat with fast.json in the folder: did you mean 'fast'? (as fields and steps)."""
    place.write(".budgetconf/profiles/fast.json", '{"loop": {"max_steps": 11}}', base=place.home)
    place.write(".budgetconf/profiles/slow.json", '{"loop": {"max_steps": 60}}', base=place.home)
    missing = place.budgetconf_home / "profiles" / "fsat.json"
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, profile="fsat")
    assert str(caught.value) == f"profile {missing}: no such file; did you mean 'fast'?"
    assert caught.value.locator == str(missing)
    assert main(["check", "--profile", "fsat"]) == 1
    assert "did you mean 'fast'?" in capsys.readouterr().err


def test_a_misspelt_profile_path_suggests_the_file_beside_it(place: Place) -> None:
    """A path is answered with a path: the file of the nearest name in that folder."""
    fast = place.write("profiles/fast.json", '{"loop": {"max_steps": 11}}')
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, profile="profiles/fsat.json")
    assert str(caught.value).endswith(f"no such file; did you mean {str(fast)!r}?")


def test_a_profile_with_no_near_name_or_no_folder_just_does_not_exist(place: Place) -> None:
    """Nothing close, or no profiles folder at all: the message says no such file, no more."""
    with pytest.raises(budgetconf.SourceError, match=r"ghost\.json: no such file$"):
        budgetconf.resolve(env={}, profile="ghost")  # no folder
    place.write(".budgetconf/profiles/fast.json", "{}", base=place.home)
    with pytest.raises(budgetconf.SourceError, match=r"ghost\.json: no such file$"):
        budgetconf.resolve(env={}, profile="ghost")


def test_a_folder_of_many_profiles_is_looked_at_only_so_far(place: Place) -> None:
    """Thousands of profiles: the suggestion comes from the first thousand, and does come."""
    folder = place.budgetconf_home / "profiles"
    folder.mkdir(parents=True)
    for i in range(1500):
        (folder / f"p{i:04}.json").write_text("{}", encoding="utf-8")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, profile="p00x1")
    assert "no such file; did you mean 'p" in str(caught.value)


def test_a_profile_sets_a_tables_keys_over_the_global_files(place: Place) -> None:
    """A profile's key shadows the global file's same key; the global file's other keys stay."""
    place.write(
        ".budgetconf/settings.json",
        '{"tools": {"max_calls": {"web_search": 3, "fetch": 10}}}',
        base=place.home,
    )
    profile = place.write(
        ".budgetconf/profiles/fast.json",
        '{\n"tools": {\n"max_calls": {\n"web_search": 1\n}\n}\n}\n',
        base=place.home,
    )
    res = budgetconf.resolve(env={}, profile="fast")
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 1}
    trace = res.trace("tools.max_calls.web_search")
    assert (trace.source, trace.locator) == ("profile", f"{profile}:4")
    assert [c.status for c in trace.candidates] == ["shadowed", "won"]
