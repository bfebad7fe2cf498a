"""Resolution.structure: typed objects through a strict cattrs converter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

import budgetconf

from conftest import Place
from helpers.presetfiles import preset_file


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


@dataclass
class Turns:
    last_turn: Literal["stop"]
    max_steps: float
    max_tool_calls_per_turn: bool


@dataclass
class TurnBudget:
    loop: Turns


def test_an_error_names_the_type_it_wanted_and_never_the_value() -> None:
    """A Literal, a number, a bool: each problem says what it expected; no value is quoted."""
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "7"})
    with pytest.raises(budgetconf.ConfigError) as caught:
        res.structure(TurnBudget)
    assert str(caught.value) == (
        "resolved values do not fit TurnBudget: invalid value for type, expected "
        "typing.Literal['stop'] @ $.loop.last_turn; expected a boolean, got an integer @ "
        "$.loop.max_tool_calls_per_turn"
    )
    assert "wrap_up" not in str(caught.value)


@dataclass
class Missing:
    max_steps: int
    not_a_field: int


@dataclass
class MissingBudget:
    loop: Missing


@dataclass
class Listed:
    max_steps: list[int]


@dataclass
class ListedBudget:
    loop: Listed


def test_a_missing_field_and_a_wrong_container_are_named_by_path() -> None:
    """A field the values lack, a list where a number is: each named, with no value quoted."""
    res = budgetconf.resolve(env={})
    with pytest.raises(budgetconf.ConfigError) as missing:
        res.structure(MissingBudget)
    with pytest.raises(budgetconf.ConfigError) as listed:
        res.structure(ListedBudget)
    assert str(missing.value) == (
        "resolved values do not fit MissingBudget: required field missing @ $.loop.not_a_field"
    )
    assert str(listed.value) == (
        "resolved values do not fit ListedBudget: invalid value for type, expected list[int] @ "
        "$.loop.max_steps"
    )


def test_a_problem_placed_on_no_type_is_an_invalid_value() -> None:
    """cattrs may report an error it cannot place on a type; its text is not repeated."""
    from budgetconf._structure import _described

    assert _described(ValueError("sk-secret-dddd"), None) == "invalid value"


@dataclass
class Agent:
    quiet: bool
    label: str
    cost: float


@dataclass
class AgentBudget:
    agent: Agent


@dataclass
class Swapped:
    quiet: float
    cost: str


@dataclass
class SwappedBudget:
    agent: Swapped


class Opaque:
    """A plain class: cattrs has no way to build it."""


@dataclass
class OpaqueSection:
    label: Opaque


@dataclass
class OpaqueBudget:
    agent: OpaqueSection


def _agent_preset(folder: Path) -> Path:
    return preset_file(
        folder,
        fields={
            "agent.quiet": {"type": "bool", "default": True},
            "agent.label": {"type": "text", "default": "scout"},
            "agent.cost": {"type": "number", "default": 1.5},
        },
    )


def test_structure_builds_booleans_text_and_numbers_of_a_preset(place: Place) -> None:
    """An application's bool, text and number fields become the class's typed attributes."""
    res = budgetconf.resolve(_agent_preset(place.work), env={})
    assert res.structure(AgentBudget) == AgentBudget(Agent(True, "scout", 1.5))


def test_a_bool_is_no_number_and_a_number_is_no_text(place: Place) -> None:
    """A bool for a float and a float for a str are each named by path and expected type."""
    res = budgetconf.resolve(_agent_preset(place.work), env={})
    with pytest.raises(budgetconf.ConfigError) as caught:
        res.structure(SwappedBudget)
    assert str(caught.value) == (
        "resolved values do not fit SwappedBudget: expected a number, got a boolean @ "
        "$.agent.quiet; expected a string, got a float @ $.agent.cost"
    )


def test_a_class_cattrs_cannot_build_is_a_config_error(place: Place) -> None:
    """A field of a plain class has no structure hook: a ConfigError names the class."""
    res = budgetconf.resolve(_agent_preset(place.work), env={})
    with pytest.raises(budgetconf.ConfigError, match=r"^cannot build OpaqueBudget: ") as caught:
        res.structure(OpaqueBudget)
    assert "Opaque" in str(caught.value)
