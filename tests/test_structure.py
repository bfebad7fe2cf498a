"""Resolution.structure: typed objects through a strict cattrs converter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

import budgetconf


@dataclass
class Loop:
    max_steps: int
    max_tool_calls_per_turn: int
    last_turn: Literal["warn", "wrap_up", "none"]
    over_cap: str


@dataclass
class Limits:
    max_tool_calls: int | None
    max_tokens: int | None
    max_cost_usd: float | None
    timeout_seconds: float | None


@dataclass
class Budget:
    loop: Loop
    limits: Limits


@dataclass
class LoopOnly:
    loop: Loop


@dataclass
class WrongLimits:
    max_cost_usd: int


@dataclass
class StrictBudget:
    limits: WrongLimits


@dataclass
class FlagSection:
    max_steps: bool


@dataclass
class FlagBudget:
    loop: FlagSection


def test_structure_builds_nested_dataclasses() -> None:
    """Sections become nested objects with the resolved values."""
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_COST_USD": "2.5"})
    budget = res.structure(Budget)
    assert budget == Budget(Loop(40, 10, "wrap_up", "reject"), Limits(None, None, 2.5, None))


def test_sections_the_class_does_not_declare_are_ignored() -> None:
    """A class may take only the sections it needs."""
    assert budgetconf.resolve(env={}).structure(LoopOnly).loop.max_steps == 40


def test_a_float_is_never_truncated_to_an_int() -> None:
    """2.5 does not become 2 for a field declared int: a ConfigError names the path."""
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_COST_USD": "2.5"})
    with pytest.raises(budgetconf.ConfigError) as caught:
        res.structure(StrictBudget)
    assert "StrictBudget" in str(caught.value)
    assert "$.limits.max_cost_usd" in str(caught.value)


def test_an_int_is_not_a_bool() -> None:
    """40 does not become True for a field declared bool."""
    with pytest.raises(budgetconf.ConfigError, match=r"\$\.loop\.max_steps"):
        budgetconf.resolve(env={}).structure(FlagBudget)


@dataclass
class NeedsTokens:
    max_tokens: int


@dataclass
class TokenBudget:
    limits: NeedsTokens


def test_an_unset_value_does_not_fit_a_required_int() -> None:
    """None for a field declared plain int is an error, not a silent zero."""
    with pytest.raises(budgetconf.ConfigError, match=r"\$\.limits\.max_tokens"):
        budgetconf.resolve(env={}).structure(TokenBudget)


def test_a_class_whose_annotations_cannot_be_resolved_is_explained() -> None:
    """A class local to a function cannot be built from string annotations; the error says so."""

    @dataclass
    class Inner:
        max_steps: int

    @dataclass
    class Local:
        loop: Inner

    with pytest.raises(budgetconf.ConfigError, match="define it at module level"):
        budgetconf.resolve(env={}).structure(Local)


def test_the_converter_is_strict_on_its_own() -> None:
    """The converter refuses bool for int and float for int even outside a resolution."""
    from budgetconf._structure import converter

    with pytest.raises(TypeError):
        converter().structure(True, int)
    with pytest.raises(TypeError):
        converter().structure(4.0, int)
    with pytest.raises(TypeError):
        converter().structure("4", int)
    assert converter().structure(4, float) == 4.0
