"""What a model's tokens cost, and where that price came from (PRICES.md).

A `Price` is one model's rates with its source and locator; `PriceSettings`
are the run's ``prices.*`` fields; `PriceSettings.find` looks a model up in their
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
from budgetconf._prices._price import shown_rate as shown_rate
from budgetconf._record import ReadOnly, set_field
from budgetconf._values import show_value
from budgetconf.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime
    from typing import Any, Final, Protocol

    from budgetconf._resolution import Resolution

    class CostLimit(Protocol):
        """What pricing reads of a cost budget: a `budgetconf.loop.Limit`."""

        @property
        def field(self) -> str: ...
        @property
        def value(self) -> int | float: ...
        @property
        def locator(self) -> str: ...
        def amount(self, value: int | float) -> str: ...

    class LedgerMaxima(Protocol):
        """What pricing reads of a ledger's settings: a `budgetconf.loop.LedgerSettings`."""

        @property
        def max_cost_usd(self) -> CostLimit | None: ...

    class Priced(Protocol):
        """What pricing reads of a run's budget: a `budgetconf.loop.Budget` (named so here, as
        the loop imports this package)."""

        @property
        def limits(self) -> Mapping[str, CostLimit]: ...
        @property
        def ledger(self) -> LedgerMaxima | None: ...
        @property
        def prices(self) -> PriceSettings: ...


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

    @classmethod
    def from_resolution(cls, res: Resolution) -> PriceSettings:
        """The ``prices.*`` fields ``res`` resolved; a field its preset does not declare keeps
        its default. Input and output are set together, or it is a `ConfigError`."""
        declared = res.schema.by_path
        rates = {
            name: res.values.get(path) if path in declared else None
            for name, path in _RATE_FIELDS.items()
        }
        table = res.values.get(_TABLE_FIELD, GENAI_PRICES) if _TABLE_FIELD in declared else None
        unknown = res.values.get(_UNKNOWN_FIELD) if _UNKNOWN_FIELD in declared else None
        settings = cls(
            _fields_price(res, rates),
            GENAI_PRICES if table is None else str(table),
            unknown="refuse" if unknown is None else str(unknown),
        )
        if settings.table in (GENAI_PRICES, NO_TABLE):
            return settings
        located = res.trace(_TABLE_FIELD).locator  # a table file's problems name where it was set
        return cls(settings.fields, settings.table, located, settings.unknown)

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


#: the settings of a budget made in code: the maintained table, an unknown model refused
NO_PRICES: Final = PriceSettings()


def needs_prices(budget: Priced) -> bool:
    """Whether a run on ``budget`` prices its responses: it has a cost budget, or a ledger
    whose scope counts what its runs spent."""
    return budget.ledger is not None or "max_cost_usd" in budget.limits


#: the price fields: the rate each one sets -> its path
_RATE_FIELDS: Final = {
    "input_per_mtok": "prices.input_per_mtok",
    "output_per_mtok": "prices.output_per_mtok",
    "cached_input_per_mtok": "prices.cached_input_per_mtok",
}
_TABLE_FIELD: Final = "prices.table"
_UNKNOWN_FIELD: Final = "prices.unknown"
#: how a person gives a model its price, for a refusal's message
WAYS: Final = (
    "set prices.input_per_mtok and prices.output_per_mtok, name a table file in prices.table,"
    " or pip install 'budgetconf[prices]'"
)


def _fields_price(res: Resolution, rates: dict[str, Any]) -> Price | None:
    """The price the fields set, any model's, located by the fields that set it; None when
    they set none. Input and output go together, and a cached rate needs both."""
    given = [name for name, value in rates.items() if value is not None]
    if not given:
        return None
    inputs, outputs = rates["input_per_mtok"], rates["output_per_mtok"]
    if inputs is None or outputs is None:
        first = _RATE_FIELDS[given[0]]
        trace = res.trace(first)
        raise ConfigError(
            f"{first} = {show_value(rates[given[0]])} from {trace.locator}: prices.input_per_mtok"
            " and prices.output_per_mtok are set together, or neither is",
            field=first,
            source=trace.source,
            locator=trace.locator,
        )
    located = dict.fromkeys(res.trace(_RATE_FIELDS[name]).locator for name in given)
    locators = ", ".join(located)
    return Price(
        "", inputs, outputs, rates["cached_input_per_mtok"], source=FIELDS, locator=locators
    )
