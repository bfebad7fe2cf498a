"""A model's price: its rates per million tokens, where they were set, and what a usage costs.

A leaf of the prices' room: the table file's reader and genai-prices' make
`Price`s, and `budgetconf._prices` gives them with the run's settings.
"""

from __future__ import annotations

from collections.abc import Callable

from budgetconf._record import ReadOnly, set_field
from budgetconf._usage import picodollars
from budgetconf._values import plain_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from budgetconf._usage import Usage

#: the sources of a price, in the order they are tried
FIELDS: Final = "fields"
TABLE: Final = "table"
GENAI_PRICES: Final = "genai-prices"
#: ``prices.table`` naming no table: only the fields and reported costs count
NO_TABLE: Final = "none"


class Price(ReadOnly):
    """One model's price: US dollars per million input, cached input and output tokens.

    ``source`` is `FIELDS`, `TABLE` or `GENAI_PRICES`; ``locator`` where it was
    set (the fields' locators joined by ``, ``, a table entry's ``file:line``,
    ``genai-prices 0.2.3``). ``calc`` prices a response itself where the rates
    alone cannot (a tiered, conditional or per-request price): then the rates
    are the model's base rates, shown and used for reservations only.
    """

    __slots__ = (
        "_cached",
        "_input",
        "_output",
        "cached_input_per_mtok",
        "calc",
        "input_per_mtok",
        "locator",
        "model",
        "output_per_mtok",
        "source",
    )

    model: str
    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float
    source: str
    locator: str
    calc: Callable[[Usage], float] | None
    # the rates per token, which `cost` multiplies by
    _input: float
    _cached: float
    _output: float

    def __init__(
        self,
        model: str,
        input_per_mtok: float,
        output_per_mtok: float,
        cached_input_per_mtok: float | None = None,
        *,
        source: str,
        locator: str,
        calc: Callable[[Usage], float] | None = None,
    ) -> None:
        cached = input_per_mtok if cached_input_per_mtok is None else cached_input_per_mtok
        set_field(self, "model", model)
        set_field(self, "input_per_mtok", input_per_mtok)
        set_field(self, "output_per_mtok", output_per_mtok)
        set_field(self, "cached_input_per_mtok", cached)
        set_field(self, "source", source)
        set_field(self, "locator", locator)
        set_field(self, "calc", calc)
        # per token: a response is priced in three products and a sum
        set_field(self, "_input", input_per_mtok / 1e6)
        set_field(self, "_cached", cached / 1e6)
        set_field(self, "_output", output_per_mtok / 1e6)

    def __repr__(self) -> str:
        return f"<Price {self.model}: {self.rates()} ({self.locator})>"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Price:
            return NotImplemented
        return self.to_dict() == other.to_dict() and self.calc is other.calc

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))

    def named(self, model: str) -> Price:
        """This price for ``model``: the fields' price is any model's."""
        if model == self.model:
            return self
        return Price(
            model,
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            source=self.source,
            locator=self.locator,
            calc=self.calc,
        )

    def cost(self, usage: Usage) -> float:
        """What ``usage`` cost at this price, in US dollars, to the picodollar."""
        if self.calc is not None:
            return self.calc(usage)
        inputs = usage.input_tokens
        cached = usage.cached_input_tokens
        if cached > inputs:  # a response's slip: no token costs less than nothing
            cached = inputs
        spent = (
            (inputs - cached) * self._input
            + cached * self._cached
            + usage.output_tokens * self._output
        )
        return picodollars(spent)

    @property
    def highest(self) -> float:
        """The higher of the input and output rates, per token: what a reservation is priced
        at, so that it covers any mix of the two."""
        return max(self._input, self._output)

    def rates(self) -> str:
        """``$0.15 / $0.60 per Mtok`` (input / output), with the cached rate where it differs."""
        shown = f"${shown_rate(self.input_per_mtok)} / ${shown_rate(self.output_per_mtok)}"
        if self.cached_input_per_mtok != self.input_per_mtok:
            shown += f" (cached ${shown_rate(self.cached_input_per_mtok)})"
        return shown + " per Mtok"

    def note(self) -> str:
        """``gpt-4o-mini's price (genai-prices 0.2.3: $0.15 / $0.60 per Mtok)``; a model with
        no name has ``the price``."""
        whose = f"{self.model}'s price" if self.model else "the price"
        return f"{whose} ({self.locator}: {self.rates()})"

    def to_dict(self) -> dict[str, Any]:
        """``{"model", "input_per_mtok", "output_per_mtok", "cached_input_per_mtok",
        "source", "locator"}``, as ``run_started``'s ``prices`` and `budgetconf prices`."""
        return {
            "model": self.model,
            "input_per_mtok": self.input_per_mtok,
            "output_per_mtok": self.output_per_mtok,
            "cached_input_per_mtok": self.cached_input_per_mtok,
            "source": self.source,
            "locator": self.locator,
        }


def shown_rate(value: float) -> str:
    """A rate for a person: two decimals as prices are written (``0.60``), or all it has."""
    cents = f"{value:.2f}"
    return cents if float(cents) == value else plain_number(value)
