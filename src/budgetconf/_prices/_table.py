"""The table file ``prices.table`` names: each model's price, read strictly like a settings file.

``{"models": {"MODEL": {"input_per_mtok": N, "output_per_mtok": N, "cached_input_per_mtok":
N}}}``, in JSON or TOML by the file's suffix. The settings files' reader does the reading:
the size limit, the decoding, duplicate keys and the parse cache are its own, and every
problem is a `SourceError` naming the file and the line. Here the shape is checked: no key
but these, each rate a finite number ≥ 0 (not a boolean), input and output set together.

A table is checked once for each version of the file the reader parses: the prices are
kept beside the parse they came from, and given again while the reader gives that parse.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from types import MappingProxyType

from budgetconf._files import DEFAULT_MAX_FILE_BYTES, read_table, source_error
from budgetconf._formats import Table, readable
from budgetconf._prices._price import TABLE, Price
from budgetconf._record import Unusable
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped
from budgetconf._values import show_text, show_typed, type_name, typed_text
from budgetconf.errors import SourceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

#: the source every problem of a table file is reported by
SOURCE: Final = "prices.table"
_FORMATS: Final = {".json": "json", ".toml": "toml"}
_RATES: Final = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")
_MAX_KEPT: Final = 64

#: by absolute path: the parse the prices were read from, and the prices
_kept: dict[str, tuple[Table, Mapping[str, Price]]] = {}


def table_prices(path: str, locator: str) -> Mapping[str, Price]:
    """The prices of the table file at ``path``, by model name; ``locator`` is where
    ``prices.table`` named it. Raises `SourceError` for a file that is missing, of another
    format, unreadable, or not a table of prices."""
    full = os.path.abspath(os.path.expanduser(path))
    fmt = _FORMATS.get(os.path.splitext(full)[1].lower())
    if fmt is None:
        problem = f"a price table is a .json or a .toml file (prices.table at {locator})"
        raise source_error(SOURCE, full, problem)
    table = read_table(full, fmt, source=SOURCE, max_bytes=DEFAULT_MAX_FILE_BYTES)
    if table is None:
        raise source_error(SOURCE, full, f"no such file (prices.table at {locator})")
    assert isinstance(table, Table)  # JSON and TOML give a table; only YAML gives a list
    kept = _kept.get(full)
    if kept is not None and kept[0] is table:
        return kept[1]
    prices = MappingProxyType(_read_models(table, full))
    if len(_kept) >= _MAX_KEPT:
        _kept.clear()
    _kept[full] = (table, prices)
    return prices


def _read_models(table: Table, path: str) -> dict[str, Price]:
    """Each model's price in the file's top-level table."""
    for key in table:
        if key != "models":
            raise _unknown(path, key, ("models",), "the top level", table.lines.get(key))
    if "models" not in table:
        raise source_error(SOURCE, path, "no models table", table.line)
    models = table["models"]
    if not isinstance(models, Table):
        problem = f"models must be a table of models, got {type_name(models)}"
        raise source_error(SOURCE, path, problem, table.lines.get("models"))
    return {
        name: _read_model(path, name, entry, models.lines.get(name))
        for name, entry in models.items()
    }


def _read_model(path: str, name: str, entry: object, line: int | None) -> Price:
    """One model's entry, at ``line``: its rates."""
    model = f"model {show_text(name)}"
    if not name:
        raise source_error(SOURCE, path, "a model's name is empty", line)
    if not isinstance(entry, Table):
        problem = f"{model} must be a table of prices, got {type_name(entry)}"
        raise source_error(SOURCE, path, problem, line)
    rates: dict[str, float] = {}
    for key, value in entry.items():
        where = entry.lines.get(key, line)
        if key not in _RATES:
            raise _unknown(path, key, _RATES, model, where)
        rates[key] = _rate(path, f"{model}: {key}", value, where)
    if _RATES[0] not in rates or _RATES[1] not in rates:
        raise source_error(SOURCE, path, _unpaired(model, rates), line)
    return Price(
        name,
        rates["input_per_mtok"],
        rates["output_per_mtok"],
        rates.get("cached_input_per_mtok"),
        source=TABLE,
        locator=f"{path}:{line}" if line else path,
    )


def _rate(path: str, what: str, value: object, line: int | None) -> float:
    """A rate in US dollars per million tokens: a finite number ≥ 0, not a boolean."""
    value = readable(value)  # an integer too long to show is shown by its first digits
    if isinstance(value, Unusable):
        problem = f"{what}: {value.what}: {value.text} ({value.hint})"
        raise source_error(SOURCE, path, problem, line)
    if not isinstance(value, int | float) or isinstance(value, bool):
        shown = show_typed(value) if isinstance(value, bool | str) else type_name(value)
        raise source_error(SOURCE, path, f"{what}: expected a number ≥ 0, got {shown}", line)
    try:
        rate = float(value)
    except OverflowError:  # an integer past the largest float: TOML sets no limit
        rate = math.inf
    if not math.isfinite(rate) or rate < 0:
        problem = f"{what}: expected a finite number ≥ 0, got {clipped(typed_text(value))}"
        raise source_error(SOURCE, path, problem, line)
    return rate


def _unpaired(model: str, rates: Mapping[str, float]) -> str:
    """What an entry without both the input and the output rate lacks."""
    given = [key for key in _RATES[:2] if key in rates]
    if not given:
        return f"{model} needs input_per_mtok and output_per_mtok"
    other = _RATES[1] if given[0] == _RATES[0] else _RATES[0]
    return f"{model} sets {given[0]} without {other}: a price needs both"


def _unknown(
    path: str, key: str, known: tuple[str, ...], where: str, line: int | None
) -> SourceError:
    hint = did_you_mean(key, known)
    tail = f"; did you mean {hint}?" if hint else f" (known: {', '.join(known)})"
    return source_error(SOURCE, path, f"{show_text(key)} in {where} is not a known key{tail}", line)
