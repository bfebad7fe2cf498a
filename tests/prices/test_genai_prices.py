"""genai_price: prices from genai-prices' installed snapshot, equal to its own calc_price."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import genai_prices
import pytest

import budgetconf
from budgetconf._prices import GENAI_PRICES, Price
from budgetconf._prices import _genai as genai
from budgetconf._prices._genai import genai_models, genai_price, genai_version, provider_for_url
from budgetconf._usage import Usage

#: the run's start every comparison prices at
T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LOCATOR = f"genai-prices {importlib.metadata.version('genai-prices')}"

#: flat models of seven providers: per-Mtok input, cache-read and output rates, nothing else
FLAT = [
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini"),
    ("openai", "gpt-4.1"),
    ("openai", "gpt-4.1-mini"),
    ("openai", "o4-mini"),
    ("openai", "gpt-3.5-turbo"),  # no cache-read rate: cache reads are input
    ("openai", "text-embedding-3-small"),  # no output rate
    ("anthropic", "claude-3-5-haiku-latest"),
    ("anthropic", "claude-sonnet-4-0"),  # a cache-write rate too, which this usage never has
    ("anthropic", "claude-opus-4-1"),
    ("anthropic", "claude-haiku-4-5"),
    ("google", "gemini-2.0-flash"),
    ("google", "gemini-2.5-flash"),
    ("google", "gemini-2.5-flash-lite"),
    ("mistral", "mistral-large"),
    ("mistral", "magistral-medium"),
    ("mistral", "devstral-small"),
    ("groq", "llama-3.3-70b-versatile"),
    ("groq", "openai/gpt-oss-120b"),
    ("groq", "moonshotai/kimi-k2-instruct"),
    ("deepseek", "deepseek-chat"),  # its price changes with the hour: resolved at T
    ("deepseek", "deepseek-v3.2"),
    ("x-ai", "grok-3"),
    ("x-ai", "grok-3-mini"),
    ("x-ai", "grok-code-fast-1"),
]

#: each with cached input tokens, from a long prompt to a few tokens
USAGES = [
    Usage(input_tokens=1_234_567, cached_input_tokens=345_678, output_tokens=456_789),
    Usage(input_tokens=12_000, cached_input_tokens=9_000, output_tokens=800),
    Usage(input_tokens=7, cached_input_tokens=3, output_tokens=1),
]


def calc_price(usage: Usage, model: str, provider: str | None, when: datetime = T) -> float:
    """What genai-prices itself says the usage cost."""
    counts = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cached_input_tokens,
        output_tokens=usage.output_tokens,
    )
    priced = genai_prices.calc_price(
        counts, model_ref=model, provider_id=provider, genai_request_timestamp=when
    )
    return float(priced.total_price)


def _rates_cost(price: Price, usage: Usage) -> float:
    """What the rates alone make of ``usage``, whatever ``calc`` says."""
    flat = Price(
        price.model,
        price.input_per_mtok,
        price.output_per_mtok,
        price.cached_input_per_mtok,
        source=price.source,
        locator=price.locator,
    )
    return flat.cost(usage)


def _found(model: str, provider: str | None, when: datetime = T) -> Price:
    price = genai_price(model, provider, when)
    assert price is not None, model
    return price


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """Every lookup of a model in the snapshot, from a start with nothing looked up."""
    genai.forget()
    snapshot = genai._snapshot()
    assert snapshot is not None
    real = snapshot.find_provider_model
    calls: list[tuple[Any, ...]] = []

    def counting(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(snapshot, "find_provider_model", counting)
    yield calls
    genai.forget()


@pytest.mark.parametrize(("provider", "model"), FLAT)
def test_a_flat_price_costs_what_calc_price_says(provider: str, model: str) -> None:
    """A flat model's price is its rates, no calc, and its cost equals calc_price's to 1e-9 USD
    for usages with cached tokens."""
    price = _found(model, provider)
    assert price.calc is None, f"{model} is not flat"
    assert (price.model, price.source, price.locator) == (model, GENAI_PRICES, LOCATOR)
    for usage in USAGES:
        assert abs(price.cost(usage) - calc_price(usage, model, provider)) <= 1e-9, usage


def test_the_flat_models_tested_span_providers_and_cache_rates() -> None:
    """The set above is the contract's: at least 20 models of at least 4 providers, most with
    a cache-read rate of their own, so that the cached tokens change what they cost."""
    assert len(FLAT) >= 20
    assert len({provider for provider, _ in FLAT}) >= 4
    own = [m for p, m in FLAT if _found(m, p).cached_input_per_mtok != _found(m, p).input_per_mtok]
    assert len(own) >= 15


def test_rates_are_the_snapshots() -> None:
    """gpt-4o-mini's rates as genai-prices gives them; gpt-3.5-turbo has no cache-read rate, so
    its cached rate is the input one (genai-prices counts cache reads as input then), and an
    embedding model without an output rate costs nothing for output."""
    mini = _found("gpt-4o-mini", "openai")
    assert (mini.input_per_mtok, mini.output_per_mtok, mini.cached_input_per_mtok) == (
        0.15,
        0.6,
        0.075,
    )
    assert mini.note() == f"gpt-4o-mini's price ({LOCATOR}: $0.15 / $0.60 (cached $0.075) per Mtok)"
    turbo = _found("gpt-3.5-turbo", "openai")
    assert turbo.cached_input_per_mtok == turbo.input_per_mtok == 0.5
    cached = Usage(input_tokens=1_000_000, cached_input_tokens=1_000_000)
    assert turbo.cost(cached) == calc_price(cached, "gpt-3.5-turbo", "openai") == 0.5
    embedding = _found("text-embedding-3-small", "openai")
    assert (embedding.output_per_mtok, embedding.cost(Usage(output_tokens=10**6))) == (0.0, 0.0)


def test_every_flat_price_in_the_snapshot_costs_what_calc_price_says() -> None:
    """Not only the chosen ones: every model of every provider, flat or not, priced by
    budgetconf as genai-prices prices it."""
    snapshot = genai._snapshot()
    assert snapshot is not None
    kinds = {"flat": 0, "calc": 0}
    for provider in snapshot.providers:
        for model in provider.models:
            price = genai_price(model.id, provider.id, T)
            if price is None:  # an id its own match does not take (``ft:gpt-4o``'s prefix)
                continue
            kinds["flat" if price.calc is None else "calc"] += 1
            try:
                calc_price(USAGES[0], model.id, provider.id)
                listed: str | None = provider.id
            except LookupError:  # the provider does not list it: the model's own match
                listed = None
            for usage in USAGES[:2]:
                wanted = calc_price(usage, model.id, listed)
                assert abs(price.cost(usage) - wanted) <= 1e-9, (provider.id, model.id)
    assert kinds["flat"] > 1500
    assert kinds["calc"] > 200


def test_a_tiered_price_is_priced_by_calc_price() -> None:
    """gemini-2.5-pro's rates rise past 200k input tokens: its price shows the base rates and
    prices each response with calc_price, which applies the upper tier to the whole prompt."""
    price = _found("gemini-2.5-pro", "google")
    assert price.calc is not None
    assert (price.input_per_mtok, price.output_per_mtok, price.cached_input_per_mtok) == (
        1.25,
        10.0,
        0.125,
    )
    upper = Usage(input_tokens=300_000, cached_input_tokens=50_000, output_tokens=2_000)
    lower = Usage(input_tokens=150_000, cached_input_tokens=50_000, output_tokens=2_000)
    assert abs(price.cost(upper) - calc_price(upper, "gemini-2.5-pro", "google")) <= 1e-9
    assert abs(price.cost(lower) - calc_price(lower, "gemini-2.5-pro", "google")) <= 1e-9
    assert price.cost(upper) > _rates_cost(price, upper) + 0.1  # the tier, not the base rates
    assert abs(price.cost(lower) - _rates_cost(price, lower)) <= 1e-9


def test_a_per_request_price_is_priced_by_calc_price() -> None:
    """perplexity's sonar charges each request: not flat, and a response costs its request."""
    price = _found("sonar", "perplexity")
    assert price.calc is not None
    assert (price.input_per_mtok, price.output_per_mtok) == (1.0, 1.0)
    for usage in [*USAGES, Usage()]:
        assert abs(price.cost(usage) - calc_price(usage, "sonar", "perplexity")) <= 1e-9
    assert price.cost(Usage()) == pytest.approx(0.012)


def test_a_price_of_no_tokens_is_priced_by_calc_price() -> None:
    """whisper-1 is priced by the hour of audio: no token rate, so not flat; calc_price counts
    nothing for tokens, and neither does budgetconf."""
    price = _found("whisper-1", "openai")
    assert price.calc is not None
    assert (price.input_per_mtok, price.output_per_mtok, price.cached_input_per_mtok) == (0, 0, 0)
    assert price.cost(USAGES[0]) == calc_price(USAGES[0], "whisper-1", "openai") == 0.0


def test_more_cache_reads_than_input_count_as_input_for_calc() -> None:
    """A response that says more of its input was cached than it had is not refused by calc:
    its cache reads are counted up to its input, as calc_price would take them."""
    price = _found("gemini-2.5-pro", "google")
    odd = Usage(input_tokens=1_000, cached_input_tokens=5_000, output_tokens=10)
    capped = Usage(input_tokens=1_000, cached_input_tokens=1_000, output_tokens=10)
    with pytest.raises(ValueError, match="cannot exceed"):
        calc_price(odd, "gemini-2.5-pro", "google")
    assert price.cost(odd) == calc_price(capped, "gemini-2.5-pro", "google")


def test_a_price_that_changed_on_a_date_is_the_one_in_force_when_the_run_started(
    lookups: list[tuple[Any, ...]],
) -> None:
    """o3's input rate fell from $10 to $2 on 2025-06-10: a run before it is priced at $10, one
    after at $2, each as calc_price prices it then; the model is looked up once for both."""
    before, after = datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 7, 1, tzinfo=UTC)
    old, new = _found("o3", "openai", before), _found("o3", "openai", after)
    assert (old.calc, new.calc) == (None, None)
    assert (old.input_per_mtok, new.input_per_mtok) == (10.0, 2.0)
    for price, when in ((old, before), (new, after)):
        for usage in USAGES:
            assert abs(price.cost(usage) - calc_price(usage, "o3", "openai", when)) <= 1e-9
    assert _found("o3", "openai", datetime(2025, 5, 2, tzinfo=UTC)) is old
    assert _found("o3", "openai", T) is new
    assert len(lookups) == 1


def test_a_price_that_changes_with_the_hour_is_the_one_in_force_at_the_runs_start() -> None:
    """deepseek-chat is cheaper from 16:30 to 00:30 UTC: the hour of the run's start decides."""
    day, night = (
        _found("deepseek-chat", "deepseek"),
        _found("deepseek-chat", "deepseek", datetime(2026, 6, 1, 20, 0, tzinfo=UTC)),
    )
    assert (day.input_per_mtok, night.input_per_mtok) == (0.27, 0.135)
    for usage in USAGES:
        wanted = calc_price(
            usage, "deepseek-chat", "deepseek", datetime(2026, 6, 1, 20, 0, tzinfo=UTC)
        )
        assert abs(night.cost(usage) - wanted) <= 1e-9


def test_a_tiered_price_that_changed_on_a_date_is_calc_priced_as_of_then() -> None:
    """gpt-5.6-sol's tiered rates fell on 2026-08-21: each calc prices as of its run's start."""
    before, after = datetime(2026, 8, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC)
    old, new = _found("gpt-5.6-sol", "openai", before), _found("gpt-5.6-sol", "openai", after)
    assert (old.input_per_mtok, new.input_per_mtok) == (5.0, 4.0)
    upper = Usage(input_tokens=400_000, cached_input_tokens=100_000, output_tokens=5_000)
    assert old.cost(upper) != new.cost(upper)
    assert abs(old.cost(upper) - calc_price(upper, "gpt-5.6-sol", "openai", before)) <= 1e-9
    assert abs(new.cost(upper) - calc_price(upper, "gpt-5.6-sol", "openai", after)) <= 1e-9
    assert _found("gpt-5.6-sol", "openai", datetime(2026, 8, 2, tzinfo=UTC)) is old


def test_a_model_is_looked_up_once_per_model_and_provider(lookups: list[tuple[Any, ...]]) -> None:
    """The second lookup of a model, at any time, is the first's price: no lookup again."""
    first = _found("gpt-4o-mini", "openai")
    assert _found("gpt-4o-mini", "openai", datetime(2027, 1, 1, tzinfo=UTC)) is first
    assert len(lookups) == 1
    assert _found("gpt-4o-mini", None) == first  # another provider: another lookup
    assert len(lookups) == 2
    assert genai_price("no-such-model", "openai", T) is None
    assert genai_price("no-such-model", "openai", T) is None
    assert len(lookups) == 4  # the provider's, then the model's own match: once


def test_the_prices_made_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the number of prices kept, the old ones are forgotten and made again."""
    genai.forget()
    monkeypatch.setattr(genai, "_MAX_KEPT", 1)
    first = _found("gpt-4o", "openai")
    _found("gpt-4o-mini", "openai")
    assert len(genai._made) == 1
    again = _found("gpt-4o", "openai")
    assert again == first
    assert again is not first
    genai.forget()


@pytest.mark.parametrize("provider", ["openai", "my-gateway", None])
def test_a_model_the_provider_does_not_list_is_found_by_its_own_match(
    provider: str | None,
) -> None:
    """claude-3-5-haiku-latest through the OpenAI client, an unknown provider or none: genai-prices'
    match of the model finds Anthropic's price."""
    if provider is not None:
        with pytest.raises(LookupError):
            calc_price(USAGES[0], "claude-3-5-haiku-latest", provider)
    price = _found("claude-3-5-haiku-latest", provider)
    anthropic = _found("claude-3-5-haiku-latest", "anthropic")
    assert price.to_dict() == anthropic.to_dict()
    assert price.cost(USAGES[1]) == calc_price(USAGES[1], "claude-3-5-haiku-latest", None)


def test_a_provider_that_lists_the_model_is_used_before_the_match() -> None:
    """Groq serves deepseek-r1-distill-llama-70b at prices of its own: asked for groq, its
    listing prices the model; with no provider, the match by name finds DeepSeek's."""
    model = "deepseek-r1-distill-llama-70b"
    groq, matched = _found(model, "groq"), _found(model, None)
    assert (groq.input_per_mtok, groq.output_per_mtok) == (0.75, 0.99)
    assert (matched.input_per_mtok, matched.output_per_mtok) == (0.55, 2.19)
    for usage in USAGES:
        assert abs(groq.cost(usage) - calc_price(usage, model, "groq")) <= 1e-9
        assert abs(matched.cost(usage) - calc_price(usage, model, None)) <= 1e-9


@pytest.mark.parametrize("provider", ["openai", None, "no-such-provider"])
def test_an_unknown_model_has_no_price(provider: str | None) -> None:
    """A model genai-prices does not know is None, whatever the provider."""
    assert genai_price("no-such-model-9000", provider, T) is None


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://api.anthropic.com/v1/", "anthropic"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "google"),
        ("https://api.groq.com/openai/v1", "groq"),
        ("https://api.mistral.ai/v1", "mistral"),
        ("https://api.deepseek.com", "deepseek"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("http://127.0.0.1:8000/v1", None),
        ("http://localhost:11434/v1", None),
        ("http://[::1]:8080/v1", None),
        ("https://llm.internal.example/v1", None),
        ("", None),
        (None, None),
    ],
)
def test_a_base_url_names_its_provider(url: str | None, provider: str | None) -> None:
    """genai-prices' API patterns name the provider of a base URL; a loopback or unknown
    server, or no URL, has none."""
    assert provider_for_url(url) == provider


def test_the_models_known_are_the_ids_a_lookup_by_name_finds() -> None:
    """What `budgetconf prices` lists and suggests: each id a run with no provider prices, once
    each, sorted; an id only an aggregator lists is left out, as a lookup by name misses it."""
    models = genai_models()
    assert models == sorted(set(models))
    assert {"gpt-4o-mini", "claude-sonnet-4-0", "gemini-2.5-pro", "mistral-large"} <= set(models)
    assert all(genai_price(m, None, T) is not None for m in models)
    snapshot = genai._snapshot()
    assert snapshot is not None
    every = {m.id for p in snapshot.providers for m in p.models}
    missed = every - set(models)
    assert missed
    assert all(genai_price(m, None, T) is None for m in sorted(missed)[:50])


def test_the_version_is_the_installed_distributions(monkeypatch: pytest.MonkeyPatch) -> None:
    """genai-prices' version from its metadata, or None when it is not installed."""
    genai.forget()
    assert genai_version() == importlib.metadata.version("genai-prices")

    def absent(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    genai.forget()
    monkeypatch.setattr(importlib.metadata, "version", absent)
    assert genai_version() is None
    genai.forget()


@pytest.fixture
def uninstalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """genai-prices as if it were not installed: it cannot be imported, and nothing is known
    of it from before."""
    genai.forget()
    assert genai_price("gpt-4o-mini", "openai", T) is not None  # it is, until now
    genai.forget()
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    yield
    genai.forget()


@pytest.mark.usefixtures("uninstalled")
def test_without_genai_prices_nothing_is_known() -> None:
    """Not installed: no price, no model, no provider; and no error."""
    assert genai_price("gpt-4o-mini", "openai", T) is None
    assert genai_price("gpt-4o-mini", None, T) is None
    assert genai_models() == []
    assert provider_for_url("https://api.openai.com/v1") is None


def test_import_budgetconf_does_not_import_genai_prices() -> None:
    """Neither the package nor its prices' modules load genai-prices; the first lookup does."""
    probe = (
        "import sys, datetime, budgetconf, budgetconf._prices, budgetconf._prices._genai as g\n"
        "print('genai_prices' in sys.modules)\n"
        "g.genai_price('gpt-4o', 'openai', datetime.datetime.now(datetime.UTC))\n"
        "print('genai_prices' in sys.modules)"
    )
    here = str(Path(budgetconf.__file__).parents[1])  # this checkout's, not an installed one
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.usefixtures("uninstalled")
def test_without_genai_prices_a_cost_budget_is_refused_and_no_budget_warns_nothing() -> None:
    """PRICES.md: the fields unset and genai-prices absent, a cost budget on a named model is
    refused with the install hint; with no cost budget the run goes as before, without a word."""
    import warnings

    from budgetconf import UsageError
    from budgetconf.loop import LoopExecutor, ScriptedModel

    class Named(ScriptedModel):
        model = "gpt-4o-mini"

    reply = {"content": "hi", "usage": {"prompt_tokens": 9, "completion_tokens": 1}}
    with pytest.raises(UsageError, match=r"pip install 'budgetconf\[prices\]'$"):
        LoopExecutor(Named([reply]), {}, {"limits.max_cost_usd": 1}).run("go")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = LoopExecutor(Named([reply]), {}, {"loop.max_steps": 2}).run("go")
    assert (result.status, result.usage.cost_source) == ("ok", "none")
