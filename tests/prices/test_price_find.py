"""PriceSettings.find reaches the table file and genai-prices as prices.table says."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from budgetconf import SourceError
from budgetconf._prices import FIELDS, GENAI_PRICES, NO_TABLE, TABLE, Price, PriceSettings

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_the_default_table_is_genai_prices() -> None:
    """With no field and no file, a model is priced by genai-prices' snapshot."""
    price = PriceSettings().find("gpt-4o-mini", "openai", T)
    assert price is not None
    assert (price.model, price.source, price.input_per_mtok) == ("gpt-4o-mini", GENAI_PRICES, 0.15)
    assert PriceSettings().find("no-such-model", "openai", T) is None


def test_a_table_file_prices_its_models_and_no_other(tmp_path: Path) -> None:
    """prices.table naming a file: its entries, and nothing from genai-prices beside them."""
    path = tmp_path / "prices.json"
    path.write_text('{"models": {"mine": {"input_per_mtok": 1, "output_per_mtok": 2}}}')
    settings = PriceSettings(table=str(path), table_locator="env BUDGETCONF_PRICE_TABLE")
    price = settings.find("mine", None, T)
    assert price == Price("mine", 1, 2, source=TABLE, locator=f"{path}:1")
    assert settings.find("gpt-4o-mini", "openai", T) is None


def test_a_bad_table_file_is_an_error_naming_where_it_was_set(tmp_path: Path) -> None:
    """A missing file is a SourceError that says which setting named it."""
    settings = PriceSettings(table=str(tmp_path / "gone.toml"), table_locator="--price-table")
    with pytest.raises(SourceError, match=r"no such file \(prices\.table at --price-table\)"):
        settings.find("mine", None, T)


def test_no_table_and_the_fields_come_before_any_table() -> None:
    """`none` finds nothing; the fields price every model, before any table."""
    assert PriceSettings(table=NO_TABLE).find("gpt-4o-mini", "openai", T) is None
    fields = Price("*", 3, 4, source=FIELDS, locator="env A, env B")
    price = PriceSettings(fields=fields, table=NO_TABLE).find("gpt-4o-mini", "openai", T)
    assert price == fields.named("gpt-4o-mini")


def test_a_price_shows_its_rates_and_locator_and_is_equal_by_them() -> None:
    """A repr a person reads; equal prices are the same rates from the same place."""
    from budgetconf._prices import PriceSettings
    from budgetconf._prices._pricing import Pricing

    price = Price("house", 0.15, 0.6, 0.075, source=TABLE, locator="t.json:3")
    assert repr(price) == "<Price house: $0.15 / $0.60 (cached $0.075) per Mtok (t.json:3)>"
    same = Price("house", 0.15, 0.6, 0.075, source=TABLE, locator="t.json:3")
    assert price == same
    assert hash(price) == hash(same)
    assert price != Price("house", 0.15, 0.6, source=TABLE, locator="t.json:3")
    assert price != "house"
    pricing = Pricing(PriceSettings(fields=price), "house", None)
    assert repr(pricing) == f"<Pricing house: {price!r}>"
