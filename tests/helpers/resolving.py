"""Resolving in a test that must hear no warning, and what became of a field's candidates."""

from __future__ import annotations

import warnings
from typing import Any

import budgetconf


def quiet(*preset: Any, **kwargs: Any) -> budgetconf.Resolution:
    """``budgetconf.resolve(*preset, **kwargs)``, where any warning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return budgetconf.resolve(*preset, **kwargs)


def statuses(res: budgetconf.Resolution, path: str) -> list[tuple[str, str]]:
    """Each candidate of the field at ``path``: its source, and what became of it."""
    return [(c.source, c.status.value) for c in res.trace(path).candidates]
