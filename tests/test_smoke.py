"""The package imports and resolves its default preset."""

import budgetconf


def test_default_preset_resolves_to_its_defaults() -> None:
    """With no sources set, every field has its built-in default."""
    res = budgetconf.resolve(env={})
    assert res.values == {
        "loop.max_steps": 40,
        "loop.max_tool_calls_per_turn": 10,
        "loop.last_turn": "wrap_up",
        "loop.over_cap": "reject",
        "limits.max_tool_calls": None,
        "limits.max_tokens": None,
        "limits.max_cost_usd": None,
        "limits.timeout_seconds": None,
    }
