"""``budgetconf explain --for FRAMEWORK``: what a framework bridge would get, not importing it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.integrations._frameworks import FRAMEWORKS

from conftest import Place


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("name", "keywords"),
    [
        ("openai-agents", "max_turns=7"),
        ("openai_agents", "max_turns=7"),
        ("langgraph", 'config={"recursion_limit": 14}'),
        ("smolagents", "max_steps=6"),
        ("pydantic-ai", 'usage_limits={"request_limit": 7}'),
        ("praisonai", 'execution={"max_steps": 7, "max_tool_calls_per_turn": 10}'),
        ("crewai", "max_iter=6"),
    ],
)
def test_the_table_ends_with_the_keywords_limits_passes(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    name: str, keywords: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "7")
    code, out, err = run(["explain", "--for", name], capsys)
    assert (code, err) == (0, "")
    head, _, tail = out.partition("\nfor ")
    assert head.startswith("preset budgetconf")
    lines = tail.splitlines()
    assert lines[1].split(None, 2)[2] == keywords
    assert "  run() enforces   loop.max_steps = 7, by the framework: " in out


def test_a_tools_limit_repeats_and_warnings_are_shown_enforced_by_run_and_refused_by_limits(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in (("TOOLS_MAX_CALLS", "web_search=3"), ("MAX_REPEATS", "3"),
                        ("WARN_AT", "0.5"), ("WARN_MODEL", "1")):  # fmt: skip
        monkeypatch.setenv(f"BUDGETCONF_{name}", value)
    code, out, _ = run(["explain", "--for", "smolagents"], capsys)
    assert code == 0  # run() enforces them all; limits() refuses them: no keyword carries them
    shown = out.partition("\nfor ")[2]
    for field in ("tools.max_calls.web_search = 3", "loop.max_repeats = 3",
                  "limits.warn_at = 0.5", "loop.warn_model = true"):  # fmt: skip
        assert f"  limits() refuses  {field} from env:" in shown
        assert f"  run() enforces    {field}, by the bridge: " in shown


def test_a_budget_the_framework_cannot_enforce_is_shown_refused_and_fails(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cost budget with no model named: nothing prices it, so run() refuses it, and the
    table says how to name the model."""
    monkeypatch.setenv("BUDGETCONF_MAX_COST_USD", "3")
    code, out, _ = run(["explain", "--for", "openai-agents"], capsys)
    assert code == 1
    assert out.splitlines()[-2:] == [
        "  run() refuses     limits.max_cost_usd = 3.0 from env:BUDGETCONF_MAX_COST_USD cannot be"
        " enforced by openai-agents: it reports no cost, and no price is known for a model with"
        " no name (set prices.input_per_mtok and prices.output_per_mtok)",
        "                    --model-name NAME judges it at that model's price",
    ]


#: the price fields, any model's price
FIELDS = {"BUDGETCONF_PRICE_INPUT_PER_MTOK": "0.15", "BUDGETCONF_PRICE_OUTPUT_PER_MTOK": "0.6"}
LOCATORS = "env:BUDGETCONF_PRICE_INPUT_PER_MTOK, env:BUDGETCONF_PRICE_OUTPUT_PER_MTOK"


@pytest.mark.parametrize(
    "name", ["openai-agents", "langgraph", "smolagents", "praisonai", "crewai", "agno"]
)
def test_a_cost_budget_is_shown_enforced_at_the_models_price(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """--model-name names the agent's model: its cost budget is the bridge's, at its price
    (the rates, where they were set), and run() refuses nothing."""
    for variable, value in {"BUDGETCONF_MAX_COST_USD": "3", **FIELDS}.items():
        monkeypatch.setenv(variable, value)
    code, out, _ = run(["explain", "--for", name, "--model-name", "house-model"], capsys)
    assert code == 0
    tail = out.partition("\nfor ")[2]
    assert tail.splitlines()[0].endswith(", an agent on house-model")
    (row,) = [line for line in tail.splitlines() if "limits.max_cost_usd = 3.0, by the" in line]
    assert row.startswith("  run() enforces ")
    assert f"priced at house-model's price ({LOCATORS}: $0.15 / $0.60 per Mtok)" in row


def test_the_json_document_gives_the_price_and_the_model(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable, value in {"BUDGETCONF_MAX_COST_USD": "3", **FIELDS}.items():
        monkeypatch.setenv(variable, value)
    args = ["explain", "--for", "smolagents", "--model-name", "house-model", "--format", "json"]
    code, out, _ = run(args, capsys)
    described = json.loads(out)["framework"]
    assert (code, described["model"]) == (0, "house-model")
    (cost,) = [b for b in described["budgets"] if b["field"] == "limits.max_cost_usd"]
    assert (cost["enforced_by"], cost["price"]) == (
        "bridge",
        {
            "model": "house-model",
            "input_per_mtok": 0.15,
            "output_per_mtok": 0.6,
            "cached_input_per_mtok": 0.15,
            "source": "fields",
            "locator": LOCATORS,
        },
    )
    others = [b for b in described["budgets"] if b["field"] != "limits.max_cost_usd"]
    assert all("price" not in b for b in others)


def test_a_named_model_with_no_price_is_shown_refused_or_warned_as_prices_unknown_says(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No table to look the model up in: refused (exit 1) under prices.unknown = refuse, with
    the ways to give a price; warned (exit 0) under warn."""
    monkeypatch.setenv("BUDGETCONF_MAX_COST_USD", "3")
    monkeypatch.setenv("BUDGETCONF_PRICE_TABLE", "none")
    code, out, _ = run(["explain", "--for", "langgraph", "--model-name", "house-model"], capsys)
    assert code == 1
    assert out.splitlines()[-1] == (
        "  run() refuses     no price for the model 'house-model', and limits.max_cost_usd = $3"
        " from env:BUDGETCONF_MAX_COST_USD is a cost budget: set prices.input_per_mtok and"
        " prices.output_per_mtok, name a table file in prices.table, or pip install"
        " 'budgetconf[prices]'"
    )
    monkeypatch.setenv("BUDGETCONF_PRICE_UNKNOWN", "warn")
    code, out, _ = run(["explain", "--for", "langgraph", "--model-name", "house-model"], capsys)
    assert code == 0
    assert out.splitlines()[-1].startswith("  run() warns       no price for the model")
    assert out.splitlines()[-1].endswith("; only the cost its responses report counts")


def test_a_model_of_genai_prices_is_shown_at_its_price(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpt-4o-mini at genai-prices' installed snapshot: $0.15 / $0.60 per Mtok, $0.075 cached."""
    genai = pytest.importorskip("genai_prices")
    monkeypatch.setenv("BUDGETCONF_MAX_COST_USD", "3")
    args = ["explain", "--for", "praisonai", "--model-name", "gpt-4o-mini", "--format", "json"]
    code, out, _ = run(args, capsys)
    (cost,) = [
        b for b in json.loads(out)["framework"]["budgets"] if b["field"] == "limits.max_cost_usd"
    ]
    assert (code, cost["enforced_by"]) == (0, "bridge")
    price = cost["price"]
    assert (price["input_per_mtok"], price["output_per_mtok"]) == (0.15, 0.6)
    assert (price["cached_input_per_mtok"], price["source"]) == (0.075, "genai-prices")
    assert price["locator"] == f"genai-prices {genai.__version__}"


def test_model_name_goes_with_for_and_names_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["explain", "--model-name", "gpt-4o-mini"], capsys)
    assert (code, out) == (64, "")
    assert err == (
        "budgetconf: usage error: --model-name names the model of the bridge --for judges: give"
        " --for\n"
    )
    code, _, err = run(["explain", "--for", "langgraph", "--model-name", " "], capsys)
    assert (code, err) == (
        64,
        "budgetconf: usage error: --model-name: expected a model's name, got an empty one\n",
    )


def test_the_json_document_gains_a_framework_key(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BUDGETCONF_MAX_TOKENS", "900")
    code, out, _ = run(["explain", "--for", "pydantic-ai", "--format", "json"], capsys)
    assert code == 0
    described = json.loads(out)["framework"]
    assert described["limits"] == {"usage_limits": {"request_limit": 40, "total_tokens_limit": 900}}
    by = {b["field"]: (b["enforced_by"], b["locator"]) for b in described["budgets"]}
    assert by["limits.max_tokens"] == ("framework", "env:BUDGETCONF_MAX_TOKENS")
    # run() enforces the per-response cap through the Meter: its default too
    assert by["loop.max_tool_calls_per_turn"] == ("bridge", "built-in default")


def test_an_unknown_framework_or_toml_is_a_usage_error(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["explain", "--for", "crew"], capsys)
    assert code == 64
    assert err.endswith(
        "argument --for: unknown framework 'crew': one of openai-agents, langgraph,"
        " smolagents, pydantic-ai, praisonai, crewai, agno\n"
    )
    code, _, err = run(["explain", "--for", "langgraph", "--format", "toml"], capsys)
    assert (code, err) == (
        64,
        "budgetconf: usage error: --for shows in the table and in the JSON document, not in TOML\n",
    )


def test_a_preset_without_a_loop_table_says_so(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = place.write("app.toml", 'format = 1\n[[sources]]\nkind = "default"\n'
                         '[fields."a.b"]\ntype = "int"\ndefault = 1\n')  # fmt: skip
    code, _, err = run(["explain", "--preset", str(preset), "--for", "smolagents"], capsys)
    assert code == 1
    assert err.startswith("budgetconf: error: --for: preset 'app' bounds no loop")


def test_no_framework_is_imported() -> None:
    code = (
        "import sys; from budgetconf.cli import main; main(['explain', '--for', 'langgraph']);"
        "print([m for m in ('agents', 'langgraph', 'langchain', 'smolagents', 'pydantic_ai',"
        " 'praisonaiagents') if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr == "[]\n"


#: budgets some bridges' limits() cannot pass, each set by its variable
SETTINGS = [
    {"BUDGETCONF_MAX_TOKENS": "1000"},
    {"BUDGETCONF_MAX_STEPS": "1"},
    {"BUDGETCONF_MAX_TOOL_CALLS": "5"},
    {"BUDGETCONF_TIMEOUT_SECONDS": "30"},
    {"BUDGETCONF_LEDGER_URL": "sqlite:///ledger.db"},
    {"BUDGETCONF_MAX_STEPS": "7"},
]
#: each bridge module, and the package its framework imports as
BRIDGES = {name: framework.imports for name, framework in FRAMEWORKS.items()}


@pytest.mark.parametrize("module", sorted(BRIDGES))
@pytest.mark.parametrize("env", SETTINGS, ids=lambda env: ",".join(env))
def test_what_explain_says_limits_does_is_what_limits_does(
    module: str,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """explain --for and the bridge's own limits() make one judgement: what explain says
    limits() refuses, limits() refuses in those words, and what it passes, limits() returns."""
    import importlib

    pytest.importorskip(BRIDGES[module])
    bridge = importlib.import_module(f"budgetconf.integrations.{module}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, _ = run(["explain", "--for", module, "--format", "json", "--via", "limits"], capsys)
    described = json.loads(out)["framework"]
    refused = described["limits_refused"]
    assert code == (1 if refused else 0)
    if refused:
        with pytest.raises(budgetconf.UsageError) as caught:
            bridge.limits()
        assert str(caught.value).startswith("; ".join(row["why"] for row in refused) + "; ")
        assert described["limits"] is None
    else:
        passed = bridge.limits()
        assert passed.keys() == described["limits"].keys()


def test_a_budget_only_run_enforces_is_refused_by_limits_and_enforced_by_run(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tokens through openai-agents: limits() refuses them, run() enforces them; explain exits
    0 for run() and 1 with --via limits, and shows no keywords limits() would not pass."""
    monkeypatch.setenv("BUDGETCONF_MAX_TOKENS", "1000")
    code, out, _ = run(["explain", "loop.max_steps", "--for", "openai-agents"], capsys)
    assert code == 0
    tail = out.partition("\nfor openai-agents")[2]
    assert "limits() passes" not in tail
    assert (
        "  limits() refuses  limits.max_tokens = 1000 from env:BUDGETCONF_MAX_TOKENS cannot be"
        " enforced by openai-agents through limits()\n"
    ) in tail
    assert "  run() enforces    limits.max_tokens = 1000, by the bridge: RunHooks" in tail
    code, _, _ = run(
        ["explain", "loop.max_steps", "--for", "openai-agents", "--via", "limits"], capsys
    )
    assert code == 1


def test_via_without_for_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["explain", "--via", "limits"], capsys)
    assert (code, out) == (64, "")
    assert err == (
        "budgetconf: usage error: --via says which way into a bridge --for judges: give"
        " --for FRAMEWORK\n"
    )
