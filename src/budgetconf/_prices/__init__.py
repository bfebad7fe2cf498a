"""What a model's tokens cost, and where that price came from (PRICES.md).

A `Price` is one model's rates with its source and locator; `PriceSettings`
are the run's ``prices.*`` fields; `find_price` looks a model up in their
rank order: the fields, the table file ``prices.table`` names, then the
maintained table of ``genai-prices`` (its installed snapshot only). A response
that reports its own cost is never priced: that is the Meter's rule.

Nothing here imports ``genai-prices`` until a model is looked up in it.
"""

from __future__ import annotations

from budgetconf._prices._price import FIELDS as FIELDS
from budgetconf._prices._price import GENAI_PRICES as GENAI_PRICES
from budgetconf._prices._price import NO_TABLE as NO_TABLE
from budgetconf._prices._price import TABLE as TABLE
from budgetconf._prices._price import Price as Price
from budgetconf._record import ReadOnly, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime


class PriceSettings(ReadOnly):
    """The run's ``prices.*`` fields: a price set for its model, the table, and what an
    unknown model gets.

    ``fields`` is the `Price` the fields set (their locators joined), or None
    when they set none; ``table`` is ``genai-prices``, ``none`` or a path, set
    at ``table_locator``; ``unknown`` is ``refuse`` or ``warn``.
    """

    __slots__ = ("fields", "table", "table_locator", "unknown")

    fields: Price | None
    table: str
    table_locator: str
    unknown: str

    def __init__(
        self,
        fields: Price | None = None,
        table: str = GENAI_PRICES,
        table_locator: str = "default",
        unknown: str = "refuse",
    ) -> None:
        set_field(self, "fields", fields)
        set_field(self, "table", table)
        set_field(self, "table_locator", table_locator)
        set_field(self, "unknown", unknown)

    def __repr__(self) -> str:
        return f"PriceSettings(fields={self.fields!r}, table={self.table!r}, {self.unknown})"

    def find(self, model: str, provider: str | None, when: datetime) -> Price | None:
        """``model``'s price in the rank order (the fields, the table file, genai-prices), or
        None. The fields price whatever model the run has; a bad table file is a
        `SourceError`; genai-prices not installed finds nothing."""
        if self.fields is not None:
            return self.fields.named(model)
        if self.table == NO_TABLE:
            return None
        if self.table == GENAI_PRICES:
            from budgetconf._prices._genai import genai_price

            return genai_price(model, provider, when)
        from budgetconf._prices._table import table_prices

        return table_prices(self.table, self.table_locator).get(model)

    def ways(self) -> str:
        """How a person gives a price, for a refusal's message."""
        return (
            "set prices.input_per_mtok and prices.output_per_mtok, name a table file in"
            " prices.table, or pip install 'budgetconf[prices]'"
        )
