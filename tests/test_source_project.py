"""The ``project`` source: ./settings.toml in the working directory."""

from __future__ import annotations

import budgetconf

from conftest import Place


def test_project_file_is_found_in_the_working_directory(place: Place) -> None:
    """./settings.toml is read from the cwd, and its locator is absolute with a line."""
    place.write("settings.toml", "# budgets\n\n[loop]\nmax_steps = 9\n")
    res = budgetconf.resolve(env={})
    assert res.trace("loop.max_steps").locator == f"{place.work}/settings.toml:4"
