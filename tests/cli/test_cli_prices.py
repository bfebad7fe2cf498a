"""``budgetconf prices``, and ``budgetconf run`` on a model with a price or none (docs/prices.md).

Real genai-prices (its bundled snapshot), real table files, a real loopback server.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import genai_prices
import pytest

from budgetconf.cli import main

from conftest import Place
from helpers.chat_server import reply, serving

VERSION = f"genai-prices {genai_prices.__version__}"


def prices(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["prices", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_model_s_price_is_genai_prices_with_its_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = prices(capsys, "gpt-4o-mini")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "model        input  cached input  output  source        locator",
        f"gpt-4o-mini  $0.15  $0.075        $0.60   genai-prices  {VERSION}",
        "prices in US dollars per million tokens",
    ]


def test_the_json_document_names_each_model_s_rates_source_locator_and_enforceability(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = prices(capsys, "gpt-4o-mini", "claude-sonnet-4-0", "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "models": [
            {
                "model": "gpt-4o-mini",
                "input_per_mtok": 0.15,
                "output_per_mtok": 0.6,
                "cached_input_per_mtok": 0.075,
                "source": "genai-prices",
                "locator": VERSION,
                "enforceable": True,
            },
            {
                "model": "claude-sonnet-4-0",
                "input_per_mtok": 3.0,
                "output_per_mtok": 15.0,
                "cached_input_per_mtok": 0.3,
                "source": "genai-prices",
                "locator": VERSION,
                "enforceable": True,
            },
        ]
    }


def test_a_model_not_found_exits_1_with_a_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = prices(capsys, "gpt-4o-minii", "--format", "json")
    assert code == 1
    (entry,) = json.loads(out)["models"]
    assert entry == {
        "model": "gpt-4o-minii",
        "input_per_mtok": None,
        "output_per_mtok": None,
        "cached_input_per_mtok": None,
        "source": None,
        "locator": None,
        "enforceable": False,
    }
    assert err == (
        "budgetconf: error: no price for the model 'gpt-4o-minii': not in genai-prices; did you"
        " mean 'gpt-4o-mini'?; a cost budget for it is refused: set prices.input_per_mtok and"
        " prices.output_per_mtok, name a table file in prices.table, or pip install"
        " 'budgetconf[prices]'\n"
    )


def test_under_warn_an_unknown_model_is_said_to_warn(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = prices(capsys, "house-model", "--price-unknown", "warn")
    assert code == 1
    assert "a cost budget for it is warned of, only reported cost counting" in err


def test_a_table_file_s_prices_are_listed_with_their_lines(
    capsys: pytest.CaptureFixture[str], place: Place
) -> None:
    table = place.write(
        "prices.toml",
        "[models.house-model]\ninput_per_mtok = 1\noutput_per_mtok = 2\n\n"
        '[models."big-model"]\ninput_per_mtok = 10\noutput_per_mtok = 20\n'
        "cached_input_per_mtok = 1\n",
    )
    code, out, err = prices(capsys, "--price-table", str(table), "--format", "json")
    assert (code, err) == (0, "")
    rows = json.loads(out)["models"]
    assert [(r["model"], r["locator"]) for r in rows] == [
        ("big-model", f"{table}:5"),
        ("house-model", f"{table}:1"),
    ]
    assert rows[0]["cached_input_per_mtok"] == 1.0
    assert rows[1]["cached_input_per_mtok"] == 1.0  # unset: the input price


def test_the_price_fields_are_any_model_s_price(capsys: pytest.CaptureFixture[str]) -> None:
    env = ("--price-input-per-mtok", "0.2", "--price-output-per-mtok", "0.8")
    code, out, _ = prices(capsys, *env)
    assert code == 0
    assert out.splitlines()[1].split() == [
        "(any",
        "model)",
        "$0.20",
        "$0.20",
        "$0.80",
        "fields",
        "--price-input-per-mtok,",
        "--price-output-per-mtok",
    ]
    code, out, _ = prices(capsys, *env, "anything", "--format", "json")
    assert json.loads(out)["models"][0]["model"] == "anything"


def test_no_table_shows_no_models_and_a_named_one_is_not_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert prices(capsys, "--price-table", "none") == (0, "no models: prices.table = none\n", "")
    code, _, err = prices(capsys, "--price-table", "none", "gpt-4o-mini")
    assert code == 1
    assert "no price table is read (prices.table = none)" in err


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"models": {"m": {"input_per_mtok": 1}}}', "output_per_mtok"),
        ('{"models": {"m": {"input_per_mtok": 1, "output_per_mtok": 1, "x": 1}}}', "x"),
        ("{not json", "prices.json"),
    ],
)
def test_a_bad_table_file_exits_1_in_one_line(
    capsys: pytest.CaptureFixture[str], place: Place, text: str, problem: str
) -> None:
    table = place.write("prices.json", text)
    code, out, err = prices(capsys, "--price-table", str(table), "m")
    assert (code, out) == (1, "")
    assert err.startswith(f"budgetconf: error: prices.table {table}")
    assert problem in err
    assert err.count("\n") == 1


def test_a_price_set_by_half_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = prices(capsys, "--price-input-per-mtok", "1", "m")
    assert code == 1
    assert err == (
        "budgetconf: error: prices.input_per_mtok = 1.0 from --price-input-per-mtok:"
        " prices.input_per_mtok and prices.output_per_mtok are set together, or neither is\n"
    )


# --- budgetconf run on a server's model ---------------------------------------------------


def _calls() -> dict[str, Any]:
    return reply(calls=[("c1", "echo", {"text": "x"})], usage=(1000, 1000))


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str]:
    base = ["run", "--base-url", url, "--api-key-env", "NO_SUCH_KEY_VARIABLE", *args, "go"]
    code = main(base)
    return code, capsys.readouterr().err


def test_run_stops_a_priced_model_at_its_cost_budget(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpt-4o-mini at genai-prices' $0.15 / $0.60: $0.00075 a call, the second passes $0.001."""
    monkeypatch.setenv("NO_SUCH_KEY_VARIABLE", "local")
    with serving([_calls()]) as server:
        code, err = run(
            capsys, server.url, "--model-name", "gpt-4o-mini", "--max-cost-usd", "0.001"
        )
    assert code == 2
    assert len(server.received) == 2
    assert err == (
        "budgetconf: warning: stopped: hit max_cost_usd (0.001): limits.max_cost_usd = 0.001"
        " from --max-cost-usd; raise it with --max-cost-usd; spent $0.00150 at gpt-4o-mini's"
        f" price ({VERSION}: $0.15 / $0.60 (cached $0.075) per Mtok)\n"
    )


def test_run_refuses_a_model_with_no_price_before_its_first_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_SUCH_KEY_VARIABLE", "local")
    with serving([_calls()]) as server:
        code, err = run(capsys, server.url, "--model-name", "house-model", "--max-cost-usd", "1")
    assert (code, server.received) == (64, [])
    assert err.startswith(
        "budgetconf: usage error: no price for the model 'house-model', and limits.max_cost_usd"
        " = $1 from --max-cost-usd is a cost budget"
    )


def test_run_with_a_bad_table_file_exits_1_before_its_first_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, place: Place
) -> None:
    monkeypatch.setenv("NO_SUCH_KEY_VARIABLE", "local")
    table = place.write("prices.json", '{"models": {"m": {"input_per_mtok": -1}}}')
    with serving([_calls()]) as server:
        code, err = run(
            capsys,
            server.url,
            "--model-name",
            "m",
            "--max-cost-usd",
            "1",
            "--price-table",
            str(table),
        )
    assert (code, server.received) == (1, [])
    assert err.startswith(f"budgetconf: error: prices.table {table}:1")


def test_check_fails_on_a_price_set_by_half(capsys: pytest.CaptureFixture[str]) -> None:
    """check judges the price fields together, as a run does: in the table and the document."""
    problem = (
        "prices.output_per_mtok = 2.0 from --price-output-per-mtok: prices.input_per_mtok and"
        " prices.output_per_mtok are set together, or neither is"
    )
    assert main(["check", "--price-output-per-mtok", "2"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (
        "check failed: 1 error, 0 warnings (preset budgetconf)\n",
        f"budgetconf: error: {problem}\n",
    )
    assert main(["check", "--price-output-per-mtok", "2", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == [problem]
    assert main(["check", "--price-output-per-mtok", "2", "--price-input-per-mtok", "1"]) == 0


def test_a_configuration_that_does_not_resolve_exits_1_before_any_price(
    capsys: pytest.CaptureFixture[str], place: Place
) -> None:
    place.write("settings.toml", "[prices]\ntable = 3\n")
    code, out, err = prices(capsys, "gpt-4o-mini")
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: ")
    assert "prices.table" in err


def test_without_genai_prices_installed_a_model_is_said_to_be_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetconf._prices import _genai
    from budgetconf.cli import _prices

    _genai.forget()
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    monkeypatch.setattr(_prices, "_installed", lambda: None)  # no distribution either
    try:
        code, _, err = prices(capsys, "gpt-4o-mini")
    finally:
        _genai.forget()
    assert code == 1
    assert "no price for the model 'gpt-4o-mini': genai-prices is not installed;" in err
