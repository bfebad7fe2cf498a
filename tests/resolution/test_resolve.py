"""``resolve()``'s arguments: each is of the type its signature says, or the call is refused.

A value of another type is never read as something else: a string where a
list of strings belongs would be read one character at a time, and find no
flag at all. Each wrong type is a `UsageTypeError` that names the argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.errors import UsageTypeError

from conftest import Place

ENV = "env=: expected a mapping of variable names to values, "
EXPLICIT = "explicit=: expected a mapping of field paths to values, "
PATHS = " (str or os.PathLike[str])"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"argv": "--max-steps=5"}, "argv=: expected a list of strings, got str"),
        ({"argv": b"--max-steps=5"}, "argv=: expected a list of strings, got bytes"),
        ({"argv": [b"--max-steps=5"]}, "argv=: expected a list of strings, got bytes at index 0"),
        ({"argv": ["--max-steps", 5]}, "argv=: expected a list of strings, got int at index 1"),
        ({"argv": iter(["--max-steps=5"])}, "argv=: expected a list of strings, got list_iterator"),
        ({"env": ["BUDGETCONF_MAX_STEPS=5"]}, ENV + "got list"),
        ({"env": "BUDGETCONF_MAX_STEPS=5"}, ENV + "got str"),
        ({"env": {5: "x"}}, ENV + "got int as a name"),
        ({"global_file": 5}, "global_file=: expected a path" + PATHS + ", got int"),
        ({"project_file": b"s.toml"}, "project_file=: expected a path" + PATHS + ", got bytes"),
        ({"profile": ["fast"]}, "profile=: expected a name or a path" + PATHS + ", got list"),
        ({"workflow": b"w.yaml"}, "workflow=: expected a path" + PATHS + ", got bytes"),
        ({"workflow": "w.yaml", "step": 3}, "step=: expected a string, got int"),
        ({"workflow": "w.yaml", "step": b"review"}, "step=: expected a string, got bytes"),
        ({"explicit": [("loop.max_steps", 3)]}, EXPLICIT + "got list"),
        ({"explicit": "loop.max_steps=3"}, EXPLICIT + "got str"),
        ({"explicit": {3: 4}}, EXPLICIT + "got int as a path"),
    ],
)  # fmt: skip
def test_an_argument_of_the_wrong_type_is_refused(arguments: dict[str, Any], message: str) -> None:
    """A str for argv, a list for env, bytes for a path: a UsageTypeError naming the argument."""
    with pytest.raises(UsageTypeError) as caught:
        budgetconf.resolve(**arguments)
    assert str(caught.value) == message


def test_a_path_like_and_a_tuple_of_flags_are_taken(place: Place) -> None:
    """os.PathLike paths and any sequence of strings (a tuple too) are what the types say."""
    place.write("settings.toml", "[loop]\nmax_steps = 4\n")
    res = budgetconf.resolve(env={}, project_file=Path("settings.toml"), argv=("--max-steps=5",))
    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (5, "--max-steps")


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        (5, "preset: expected a preset name or path" + PATHS + ", got int"),
        (b"opendot", "preset: expected a preset name or path" + PATHS + ", got bytes"),
    ],
)
def test_a_preset_of_the_wrong_type_is_refused(preset: object, message: str) -> None:
    """resolve(5) and resolve(b"opendot") are refused as such, not as a failed lookup."""
    with pytest.raises(UsageTypeError) as caught:
        budgetconf.resolve(preset)  # type: ignore[arg-type]  # the wrong type on purpose
    assert str(caught.value) == message


def test_an_empty_preset_name_is_a_usage_error() -> None:
    """resolve("") is refused like an empty path, not looked up as a preset named ''."""
    with pytest.raises(budgetconf.UsageError) as caught:
        budgetconf.resolve("")
    assert str(caught.value) == "preset= is empty"


def test_factory_checks_the_types_at_once() -> None:
    """factory() refuses a wrong type when it is made, not at the first construction."""
    with pytest.raises(UsageTypeError) as caught:
        budgetconf.factory("loop.max_steps", argv="--max-steps=5")
    assert str(caught.value) == "argv=: expected a list of strings, got str"


def _flags() -> Iterator[str]:
    yield "--max-steps=5"


def test_a_generator_is_refused_rather_than_read_once() -> None:
    """A generator would be used up by the first reading; it is refused, not half-read."""
    with pytest.raises(UsageTypeError) as caught:
        budgetconf.resolve(argv=_flags())  # type: ignore[arg-type]  # the wrong type on purpose
    assert str(caught.value) == "argv=: expected a list of strings, got generator"
