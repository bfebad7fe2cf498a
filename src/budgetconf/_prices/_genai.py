"""The maintained price table of ``genai-prices``: its installed snapshot, never an update.

budgetconf reads the data the package ships (``genai_prices.data``) through a snapshot of
its own, so neither an update the application started nor the network can change a price
under a run. A model is looked up once per model and provider; a price is made once per
lookup, and once per price in force for a model whose price changes with the date or the
hour (resolved at the run's start, the timestamp genai-prices is given).

A price is *flat* when, for the usage budgetconf gives genai-prices (input tokens, the
cache reads among them, and output tokens), its cost is per-Mtok rates alone: plain input,
cache-read and output rates, no tiers, no per-request price, and no other price that
counts anything for that usage. genai-prices counts a usage key that was not given as 0
unless it is an ancestor of one that was (its dimensions a subset of theirs), so a
cache-write, audio, image or web-search price changes nothing; a request is always 1.
A flat price is the rates; any other is its base rates and ``calc``, which asks the model
in the snapshot itself. A model without a cache-read rate bills its cache reads as input
(genai-prices then counts them in the input tokens), so its cached rate is the input rate.

Nothing here imports ``genai_prices`` at the top: `import budgetconf` never loads it.
"""

from __future__ import annotations

from functools import lru_cache

from budgetconf._prices._price import GENAI_PRICES, Price

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Final

    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ConditionalPrice, ModelInfo, ModelPrice, Provider

    from budgetconf._usage import Usage

#: the rates a flat price is made of, as genai-prices names them
_RATES: Final = ("input_mtok", "cache_read_mtok", "output_mtok")
#: the usage keys budgetconf reports to genai-prices
_REPORTED: Final = ("input_tokens", "cache_read_tokens", "output_tokens")
_MAX_KEPT: Final = 1024

#: by model, provider and which of the model's prices is in force (None: it has one)
_made: dict[tuple[str, str | None, int | None], Price] = {}


@lru_cache(maxsize=1)
def _snapshot() -> DataSnapshot | None:
    """The data genai-prices ships, or None when it is not installed."""
    try:  # the package first, so that one that cannot be imported is not installed
        from genai_prices import data, data_snapshot
    except ImportError:
        return None
    return data_snapshot.DataSnapshot(providers=data.providers, from_auto_update=False)


@lru_cache(maxsize=1)
def genai_version() -> str | None:
    """The installed genai-prices' version (``0.2.3``), or None; without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return None


def genai_price(model: str, provider: str | None, when: datetime) -> Price | None:
    """``model``'s price in genai-prices at ``when``, or None when it is not installed or does
    not know the model. ``provider`` is a genai-prices provider id; when it does not list the
    model (or is None or unknown), genai-prices' own match of the model is tried."""
    found = _find(model, provider)
    if found is None:
        return None
    where, info = found
    prices = info.prices
    in_force = _in_force(info, prices, when) if isinstance(prices, list) else None
    key = (model, provider, in_force)
    price = _made.get(key)
    if price is None:
        if len(_made) >= _MAX_KEPT:
            _made.clear()
        price = _made[key] = _price(model, where, info, when)
    return price


@lru_cache(maxsize=_MAX_KEPT)
def _find(model: str, provider: str | None) -> tuple[Provider, ModelInfo] | None:
    """The provider and the model genai-prices prices ``model`` by, or None."""
    snapshot = _snapshot()
    if snapshot is None:
        return None
    if provider is not None:
        try:
            return snapshot.find_provider_model(model, None, provider, None)
        except LookupError:
            pass  # not this provider's model, or no such provider: match the model alone
    try:
        return snapshot.find_provider_model(model, None, None, None)
    except LookupError:
        return None


def _in_force(info: ModelInfo, prices: list[ConditionalPrice], when: datetime) -> int:
    """Which of a model's ``prices`` that change over time is in force at ``when``."""
    resolved = info.get_prices(when)
    return next(i for i, price in enumerate(prices) if price.prices is resolved)


def _price(model: str, provider: Provider, info: ModelInfo, when: datetime) -> Price:
    """The price of ``info`` in force at ``when``, for ``model`` as it was asked for."""
    rates = info.get_prices(when)
    locator = f"genai-prices {genai_version()}"
    flat = _flat_rates(rates)
    if flat is not None:
        return Price(model, *flat, source=GENAI_PRICES, locator=locator)
    return Price(
        model,
        *_base_rates(rates),
        source=GENAI_PRICES,
        locator=locator,
        calc=_calculator(provider, info, when),
    )


def _flat_rates(rates: ModelPrice) -> tuple[float, float, float | None] | None:
    """Input, output and cache-read rates (None: as input) of a flat price; None if not flat."""
    from decimal import Decimal

    for key, value in vars(rates).items():
        if value is None or key.startswith("_") or key in _uncounted():
            continue  # genai-prices skips the first two, and counts nothing for the third
        if key not in _RATES or not isinstance(value, Decimal):
            return None  # tiered, per request, or a unit genai-prices does not know
    if not isinstance(rates.input_mtok, Decimal):
        return None  # priced by something else than tokens
    output, cached = rates.output_mtok, rates.cache_read_mtok
    return (
        float(rates.input_mtok),
        float(output) if isinstance(output, Decimal) else 0.0,
        float(cached) if isinstance(cached, Decimal) else None,
    )


def _base_rates(rates: ModelPrice) -> tuple[float, float, float | None]:
    """A price's rates before any tier; 0 where it has none (a per-request price alone)."""
    from genai_prices.types import TieredPrices

    def base(key: str) -> float | None:
        value = getattr(rates, key)
        if value is None:
            return None
        return float(value.base if isinstance(value, TieredPrices) else value)

    return (base("input_mtok") or 0.0, base("output_mtok") or 0.0, base("cache_read_mtok"))


@lru_cache(maxsize=1)
def _uncounted() -> frozenset[str]:
    """The price keys genai-prices counts nothing for in a usage of `_REPORTED` keys.

    It counts a key that was not given by what was given below it: as 0 unless the key's
    unit is an ancestor of a given one (its dimensions a subset of theirs). A request is
    counted as one, always.
    """
    from genai_prices.data_units import unit_data

    given = [unit_data[key]["dimensions"].items() for key in _REPORTED]
    return frozenset(
        unit.get("price_key", key)
        for key, unit in unit_data.items()
        if unit["dimensions"].get("family") != "requests"
        and not any(unit["dimensions"].items() <= items for items in given)
    )


def _calculator(provider: Provider, info: ModelInfo, when: datetime) -> Callable[[Usage], float]:
    """What genai-prices' ``calc_price`` makes of a response's usage, in US dollars."""
    from genai_prices import Usage as Counts

    def calc(usage: Usage) -> float:
        counts = Counts(
            input_tokens=usage.input_tokens,
            # genai-prices refuses more cache reads than input: count them as input, at most
            cache_read_tokens=min(usage.cached_input_tokens, usage.input_tokens),
            output_tokens=usage.output_tokens,
        )
        priced = info.calc_price(counts, provider, genai_request_timestamp=when)
        return float(priced.total_price)

    return calc


def genai_models() -> list[str]:
    """The ids of the models genai-prices finds by their name alone, sorted (what `budgetconf
    prices` lists, and its did-you-mean offers); none when it is not installed. A model only an
    aggregator lists is found when a run's client names that provider, not here."""
    snapshot = _snapshot()
    if snapshot is None:
        return []
    ids = {model.id for provider in snapshot.providers for model in provider.models}
    return sorted(model for model in ids if _find(model, None) is not None)


def provider_for_url(base_url: str | None) -> str | None:
    """The id of the provider genai-prices knows by an API's base URL (``openai`` for
    ``https://api.openai.com/v1``), or None: no URL, no such provider, or not installed."""
    if not base_url:
        return None
    snapshot = _snapshot()
    if snapshot is None:
        return None
    try:
        return snapshot.find_provider(None, None, base_url).id
    except LookupError:
        return None


def forget() -> None:
    """Forget every lookup: the snapshot, the version, the models found and the prices made."""
    _made.clear()
    for cached in (_snapshot, genai_version, _find, _uncounted):
        cached.cache_clear()
