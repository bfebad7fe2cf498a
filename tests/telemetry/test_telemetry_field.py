"""The default preset's telemetry field is TELEMETRY.md's: type, default, variable, flag."""

from __future__ import annotations

import budgetconf
from budgetconf._engine import load_preset


def test_the_telemetry_field_is_the_contract_s() -> None:
    fields = {
        f.path: (f.kind.value, f.default, f.env, f.flags, f.aliases)
        for f in load_preset("budgetconf").schema
        if f.section == "telemetry"
    }
    assert fields == {"telemetry.otel": ("bool", False, ("BUDGETCONF_OTEL",), ("--otel",), ())}


def test_the_variable_and_the_flag_turn_it_on_and_explain_names_them() -> None:
    """--otel takes a value like every flag (--otel true); the flag outranks the variable."""
    by_env = budgetconf.resolve(env={"BUDGETCONF_OTEL": "true"})
    by_flag = budgetconf.resolve(env={"BUDGETCONF_OTEL": "false"}, argv=["--otel", "true"])
    assert (by_env["telemetry.otel"], by_env.trace("telemetry.otel").winner.source) == (True, "env")
    assert (by_flag["telemetry.otel"], by_flag.trace("telemetry.otel").winner.source) == (
        True,
        "cli",
    )
    assert budgetconf.resolve(env={})["telemetry.otel"] is False
