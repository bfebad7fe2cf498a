"""The opendot preset, sentence by sentence from its seed, through budgetconf.factory.

The seed's AgentConfig, rebuilt on budgetconf:

    @dataclass
    class AgentConfig:
        max_steps: int = field(
            default_factory=budgetconf.factory("agent.max_steps", preset="opendot")
        )
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pytest

import budgetconf


@dataclass
class AgentConfig:
    max_steps: int = field(  # type: ignore[assignment]  # factory() is typed for any field's value
        default_factory=budgetconf.factory("agent.max_steps", preset="opendot")
    )


# The seed's six cases ("tests/test_config.py with six focused cases").


def test_default_is_40_when_the_variable_is_unset() -> None:
    """Seed: "default is 40 when OPENDOT_MAX_STEPS is unset"."""
    assert AgentConfig().max_steps == 40
    assert budgetconf.resolve("opendot").trace("agent.max_steps").source == "default"


def test_a_valid_env_override_is_honored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed: "valid env override is honored"."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "120")
    assert AgentConfig().max_steps == 120


@pytest.mark.parametrize("raw", ["", "  "])
def test_an_empty_variable_is_unset_and_keeps_40(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    """Seed: "default is 40 when OPENDOT_MAX_STEPS is unset": an empty one is unset, silently."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", raw)
    assert AgentConfig().max_steps == 40  # warnings are errors: there is none
    statuses = [c.status for c in budgetconf.resolve("opendot").trace("agent.max_steps").candidates]
    assert statuses == ["won", "empty"]


@pytest.mark.parametrize("raw", ["abc", "4.5", "1e3", "forty"])
def test_non_integer_values_fall_back_to_40(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    """Seed: "non-integer ... values fall back to 40"."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", raw)
    with pytest.warns(budgetconf.BudgetConfWarning, match="OPENDOT_MAX_STEPS"):
        assert AgentConfig().max_steps == 40


@pytest.mark.parametrize("raw", ["0", "-1", "-40"])
def test_non_positive_values_fall_back_to_40(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    """Seed: "non-positive values fall back to 40"."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", raw)
    with pytest.warns(budgetconf.BudgetConfWarning, match="must be >= 1"):
        assert AgentConfig().max_steps == 40


def test_agent_config_reads_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed: "AgentConfig() reads the env var"."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "7")
    assert AgentConfig().max_steps == 7


def test_an_explicit_argument_overrides_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed: "an explicit max_steps argument overrides the env var": AgentConfig(max_steps=100)."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "7")
    assert AgentConfig(max_steps=100).max_steps == 100
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "junk")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the factory is not even called
        assert AgentConfig(max_steps=100).max_steps == 100


# The rest of the seed's contract.


def test_the_value_is_resolved_at_every_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed: "The factory resolves the value at every AgentConfig() construction"."""
    values = []
    for raw in ("10", "20", "30"):
        monkeypatch.setenv("OPENDOT_MAX_STEPS", raw)
        values.append(AgentConfig().max_steps)
    monkeypatch.delenv("OPENDOT_MAX_STEPS")
    values.append(AgentConfig().max_steps)
    assert values == [10, 20, 30, 40]


def test_a_rejected_value_is_recorded_in_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed: "A malformed env var should not silently remove the safety rail": 40 stays, and why."""
    monkeypatch.setenv("OPENDOT_MAX_STEPS", "-5")
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve("opendot")
    assert res["agent.max_steps"] == 40
    default, env = res.trace("agent.max_steps").candidates
    assert (default.status, env.status) == ("won", "rejected")
    assert (env.locator, env.raw, env.reason) == (
        "env:OPENDOT_MAX_STEPS",
        "-5",
        "must be >= 1, got '-5'",
    )
    assert str(caught[0].message) == (
        "agent.max_steps from env:OPENDOT_MAX_STEPS: must be >= 1, got '-5'; "
        "ignored, using 40 from built-in default"
    )


def test_the_environment_is_a_default_mechanism_not_an_override() -> None:
    """Seed: "Explicit construction still wins": explicit beats env in resolve() as well."""
    res = budgetconf.resolve(
        "opendot", env={"OPENDOT_MAX_STEPS": "7"}, explicit={"agent.max_steps": 100}
    )
    assert res["agent.max_steps"] == 100
    assert [c.status for c in res.trace("agent.max_steps").candidates] == [
        "shadowed",
        "shadowed",
        "won",
    ]


def test_an_invalid_explicit_value_is_an_error() -> None:
    """Code is trusted to be right: an explicit 0 raises rather than falling back."""
    with pytest.raises(
        budgetconf.ConfigError, match=r"agent.max_steps from explicit: must be >= 1, got 0"
    ):
        budgetconf.resolve("opendot", env={}, explicit={"agent.max_steps": 0})


def test_other_opendot_variables_are_not_reported() -> None:
    """OPENDOT_MODEL and the other tunables of the module are not budget fields, and stay quiet."""
    env = {"OPENDOT_MODEL": "x", "OPENDOT_SHELL_TIMEOUT": "30", "OPENDOT_MAX_TOOL_OUTPUT": "9"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = budgetconf.resolve("opendot", env=env)
    assert res.warnings == ()


def test_the_stack_is_default_env_explicit() -> None:
    """PRESETS: "Stack: default < env < explicit" — other sources are refused, not ignored."""
    assert [s.source for s in budgetconf.resolve("opendot", env={}).sources] == [
        "default",
        "env",
        "explicit",
    ]
    with pytest.raises(budgetconf.UsageError, match="no global source"):
        budgetconf.resolve("opendot", env={}, global_file="x.json")


def test_an_unknown_field_is_refused_when_the_factory_is_made() -> None:
    """A typo in the field name fails at class definition, with a suggestion."""
    with pytest.raises(budgetconf.ConfigError, match=r"did you mean 'agent\.max_steps'"):
        budgetconf.factory("agent.max_step", preset="opendot")
