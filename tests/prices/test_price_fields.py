"""The default preset's price fields are PRICES.md's table: type, default, variable, flag."""

from __future__ import annotations

from budgetconf._engine import load_preset


def test_the_price_fields_are_the_contract_s_table() -> None:
    schema = load_preset("budgetconf").schema
    fields = {
        f.path: (f.kind.value, f.default, f.optional, f.env, f.flags, f.choices)
        for f in schema
        if f.section == "prices"
    }
    rate = ("number", None, True)
    assert fields == {
        "prices.input_per_mtok": (
            *rate,
            ("BUDGETCONF_PRICE_INPUT_PER_MTOK",),
            ("--price-input-per-mtok",),
            (),
        ),
        "prices.output_per_mtok": (
            *rate,
            ("BUDGETCONF_PRICE_OUTPUT_PER_MTOK",),
            ("--price-output-per-mtok",),
            (),
        ),
        "prices.cached_input_per_mtok": (
            *rate,
            ("BUDGETCONF_PRICE_CACHED_INPUT_PER_MTOK",),
            ("--price-cached-input-per-mtok",),
            (),
        ),
        "prices.table": (
            "text",
            "genai-prices",
            False,
            ("BUDGETCONF_PRICE_TABLE",),
            ("--price-table",),
            (),
        ),
        "prices.unknown": (
            "enum",
            "refuse",
            False,
            ("BUDGETCONF_PRICE_UNKNOWN",),
            ("--price-unknown",),
            ("refuse", "warn"),
        ),
    }
    for path in ("prices.input_per_mtok", "prices.output_per_mtok", "prices.cached_input_per_mtok"):
        assert schema.by_path[path].ge == 0  # a price is never below nothing
