"""``budgetconf prices``: each model's price as a run would find it (docs/prices.md).

The price fields, ``prices.table`` and ``prices.unknown`` are resolved as
``explain`` resolves them, from the same options, so the command and a run
agree on every price. Exit 0; 1 when a model has no price, or the
configuration or the table file cannot be read; 64 on a usage error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from budgetconf._prices import GENAI_PRICES, NO_TABLE, WAYS, PriceSettings, shown_rate
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped, escape
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, problems, say, write_json
from budgetconf.cli._resolution import resolve
from budgetconf.errors import ConfigError

if TYPE_CHECKING:
    from budgetconf._prices import Price
    from budgetconf.cli._parser import CommandLine


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``prices``."""
    line.no_app_args()
    res = resolve(line).res
    if res.errors:
        problems(res, err, warnings=False)
        return EXIT_ERROR
    try:
        settings = PriceSettings.from_resolution(res)
        models = list(line.ns.models) or _known(settings)
        when = datetime.now(UTC)
        found = {model: settings.find(model, None, when) for model in models}
    except ConfigError as exc:  # a price set by half, a table file that cannot be read
        say(err, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    rows = [_row(model, price) for model, price in found.items()]
    if line.ns.format == "json":
        write_json({"models": rows}, out)
    else:
        _table(rows, settings, out)
    missing = [model for model, price in found.items() if price is None]
    for model in missing:
        say(err, f"budgetconf: error: {_unknown(model, settings)}")
    return EXIT_ERROR if missing else EXIT_OK


def _known(settings: PriceSettings) -> list[str]:
    """The models a table knows, to show them all: none for the fields' price (any model's)."""
    if settings.fields is not None:
        return [""]
    return _names(settings)


def _names(settings: PriceSettings) -> list[str]:
    if settings.table == NO_TABLE:
        return []
    if settings.table == GENAI_PRICES:
        from budgetconf._prices._genai import genai_models

        return genai_models()
    from budgetconf._prices._table import table_prices

    return sorted(table_prices(settings.table, settings.table_locator))


def _row(model: str, price: Price | None) -> dict[str, Any]:
    """The JSON document's entry for ``model``: its price, or nulls and not enforceable."""
    if price is None:
        rates = dict.fromkeys(("input_per_mtok", "output_per_mtok", "cached_input_per_mtok"))
        return {"model": model, **rates, "source": None, "locator": None, "enforceable": False}
    return {**price.to_dict(), "model": model or None, "enforceable": True}


def _unknown(model: str, settings: PriceSettings) -> str:
    """Why ``model`` has no price: where it was looked for, a near name, and how to give one."""
    table = settings.table
    if table == NO_TABLE:
        where = "no price table is read (prices.table = none)"
    elif table == GENAI_PRICES and _installed() is None:
        where = "genai-prices is not installed"
    else:
        where = f"not in {table}"
    near = did_you_mean(model, _names(settings)) if table != NO_TABLE else None
    hint = f"; did you mean {near!r}?" if near else ""
    cost = "refused" if settings.unknown == "refuse" else "warned of, only reported cost counting"
    return (
        f"no price for the model {clipped(model, repr)}: {where}{hint}; a cost budget for it"
        f" is {cost}: {WAYS}"
    )


def _installed() -> str | None:
    from budgetconf._prices._genai import genai_version

    return genai_version()


_RATES = ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok")
_HEAD = ("model", "input", "cached input", "output", "source", "locator")


def _table(rows: list[dict[str, Any]], settings: PriceSettings, out: TextIO) -> None:
    """Aligned lines: US dollars per million tokens, the source and its locator."""
    if not rows:
        out.write(f"no models: prices.table = {escape(settings.table)}\n")
        return
    cells = [_HEAD, *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_HEAD) - 1)]
    for line in cells:
        shown = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.write("  ".join([*shown, line[-1]]).rstrip() + "\n")
    out.write("prices in US dollars per million tokens\n")


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    model = escape(row["model"] or "(any model)")
    if row["source"] is None:
        return (model, "-", "-", "-", "no price", "-")
    rates = (f"${shown_rate(row[key])}" for key in _RATES)
    return (model, *rates, row["source"], escape(row["locator"]))
