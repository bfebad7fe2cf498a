"""One test per precedence pair of the nine sources of the default stack."""

from __future__ import annotations

import itertools

import pytest

from conftest import Place
from helpers.layers import KINDS, Layers

PAIRS = list(itertools.combinations(KINDS, 2))
FIELD = "loop.max_steps"


def _value(kind: str) -> int:
    return 40 if kind == "default" else 100 + KINDS.index(kind)


@pytest.mark.parametrize(("lower", "higher"), PAIRS, ids=[f"{lo}<{hi}" for lo, hi in PAIRS])
def test_higher_source_wins_and_lower_is_shadowed(place: Place, lower: str, higher: str) -> None:
    """Of two sources that set the same field, the higher-ranked one wins; the other is shadowed."""
    layers = Layers(place.work, place.home)
    for kind in (lower, higher):
        if kind != "default":
            layers.set(kind, FIELD, _value(kind))

    res = layers.resolve()

    assert res[FIELD] == _value(higher)
    trace = res.trace(FIELD)
    assert (trace.source, trace.locator) == (higher, layers.locator(higher, FIELD))
    statuses = {(c.source, c.locator, c.value): c.status for c in trace.candidates}
    assert statuses[(lower, layers.locator(lower, FIELD), _value(lower))] == "shadowed"
    assert [c.source for c in trace.candidates] == sorted(
        {"default", lower, higher}, key=KINDS.index
    )
