"""Bad and boundary values from every kind of source, each with its exact outcome.

The cases live in tests/data/bad_values.toml; this module puts each value into
its source, resolves the default preset and checks what became of it.
"""

from __future__ import annotations

import ast
import collections
import json
import math
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

import budgetconf
from budgetconf._field import Invalid
from budgetconf.cli import main

from conftest import Place
from helpers import DATA
from helpers.presetfiles import preset_file

CASES: Final[list[dict[str, Any]]] = tomllib.loads(
    (DATA / "bad_values.toml").read_text(encoding="utf-8")
)["case"]

# The default preset's fields as PRESETS.md lists them, kept here rather than read
# from the package so that the table is checked against the contract.
ALIASES: Final = {
    "loop.max_turns": "loop.max_steps",
    "loop.max_tool_calls": "loop.max_tool_calls_per_turn",
}
DEFAULTS: Final[dict[str, object]] = {
    "loop.max_steps": 40,
    "loop.max_tool_calls_per_turn": 10,
    "loop.last_turn": "wrap_up",
    "loop.over_cap": "reject",
    "limits.max_tool_calls": None,
    "limits.max_tokens": None,
    "limits.max_cost_usd": None,
    "limits.timeout_seconds": None,
}
ENV: Final = {path: "BUDGETCONF_" + path.partition(".")[2].upper() for path in DEFAULTS}
FLAGS: Final = {path: "--" + path.partition(".")[2].replace("_", "-") for path in DEFAULTS}
# the source kind each table source feeds, and the outcomes its invalid policy allows
KIND: Final = {
    "env": "env",
    "flag": "cli",
    "set": "explicit",
    "json": "global",
    "toml": "project",
    "yaml": "yaml",
    "explicit": "explicit",
}
OUTCOMES: Final = {
    "env": {"rejected", "ok", "empty"},
    "flag": {"rejected", "ok"},
    "set": {"error", "ok"},
    "json": {"error", "ok"},
    "toml": {"error", "ok"},
    "yaml": {"error", "ok"},
    "explicit": {"error", "ok"},
}
TEXT_SOURCES: Final = frozenset({"env", "flag", "set"})


def _cases(outcome: str, *, cli: bool) -> list[Any]:
    """The table's cases with ``outcome``, those of ``--set`` or all the others."""
    return [
        pytest.param(case, id=case["id"])
        for case in CASES
        if case["outcome"] == outcome and (case["source"] == "set") == cli
    ]


def _path(case: dict[str, Any]) -> str:
    field: str = case["field"]
    return ALIASES.get(field, field)


def _shown(value: object) -> str:
    return "unset" if value is None else json.dumps(value)


def _expected_value(case: dict[str, Any]) -> object:
    return None if case.get("unset") else case["value"]


def _arrange(place: Place, case: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Put the case's input into its source: the resolve() keywords, and the locator."""
    source, field, text = case["source"], case["field"], case["input"]
    path = _path(case)
    section, _, name = field.partition(".")
    if source == "env":
        return {"env": {ENV[path]: text}}, f"env:{ENV[path]}"
    if source == "flag":
        flag = FLAGS[path]
        argv = [f"{flag}={text}"] if case.get("form") == "equals" else [flag, text]
        return {"env": {}, "argv": argv}, flag
    if source == "json":
        file = place.write(
            ".budgetconf/settings.json", f'{{"{section}": {{"{name}": {text}}}}}', base=place.home
        )
        return {"env": {}}, f"{file}:1"
    if source == "toml":
        file = place.write("settings.toml", f"[{section}]\n{name} = {text}\n")
        return {"env": {}}, f"{file}:2"
    if source == "yaml":
        file = place.write("workflow.yaml", f"{section}:\n  {name}: {text}\n")
        return {"env": {}, "workflow": str(file)}, f"{file}:2"
    assert source == "explicit", source
    return {"env": {}, "explicit": {field: ast.literal_eval(text)}}, "explicit"


def _typed(case: dict[str, Any]) -> object:
    """The value the case's file or code gives, read the way its format reads it."""
    text = case["input"]
    if case["source"] == "json":
        return json.loads(text)
    if case["source"] == "toml":
        return tomllib.loads(f"v = {text}")["v"]
    if case["source"] == "yaml":
        return yaml.safe_load(text)
    return ast.literal_eval(text)


def _same(got: object, want: object) -> bool:
    """Equal and of the same type (so 1 is not 1.0 or True); NaN matches NaN."""
    if isinstance(want, dict | list):
        return got == want
    if isinstance(got, float) and isinstance(want, float) and math.isnan(want):
        return math.isnan(got)
    return got == want and type(got) is type(want)


def _set(capsys: pytest.CaptureFixture[str], case: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Run ``budgetconf explain --format json --set FIELD=VALUE``: exit code and document."""
    code = main(["explain", "--format", "json", "--set", f"{case['field']}={case['input']}"])
    return code, json.loads(capsys.readouterr().out)


def test_table_is_well_formed() -> None:
    """Every case has a unique id, a known source and field, and the keys its outcome needs."""
    ids = collections.Counter(case["id"] for case in CASES)
    assert [i for i, n in ids.items() if n > 1] == []
    for case in CASES:
        assert case["outcome"] in OUTCOMES[case["source"]], case["id"]
        assert _path(case) in DEFAULTS, case["id"]
        assert isinstance(case["input"], str), case["id"]
        needs = {
            "rejected": {"reason"},
            "error": {"message", "reason"},
            "ok": {"unset"} if "unset" in case else {"value"},
            "empty": set(),
        }[case["outcome"]]
        optional = {"form"} if case["source"] == "flag" else set()
        common = {"id", "source", "field", "input", "outcome"}
        assert set(case) - optional == common | needs, case["id"]
    assert len(CASES) >= 60
    assert {case["source"] for case in CASES} == set(KIND)


@pytest.mark.parametrize("case", _cases("rejected", cli=False))
def test_rejected_text_falls_back_to_the_default(place: Place, case: dict[str, Any]) -> None:
    """A bad env or flag value is rejected with its reason and a warning; the default wins."""
    kwargs, locator = _arrange(place, case)
    path, kind = _path(case), KIND[case["source"]]

    with pytest.warns(budgetconf.BudgetConfWarning) as record:
        res = budgetconf.resolve(**kwargs)

    where = f"{path} from {locator}" + (" (cli)" if kind == "cli" else "")
    using = f"using {_shown(DEFAULTS[path])} from built-in default"
    assert [str(w.message) for w in record] == [f"{where}: {case['reason']}; ignored, {using}"]
    trace = res.trace(path)
    rejected = [c for c in trace.candidates if c.status == "rejected"]
    assert [(c.source, c.locator, c.raw, c.text, c.value, c.reason) for c in rejected] == [
        (kind, locator, case["input"], True, None, case["reason"])
    ]
    assert (trace.winner.source, trace.winner.status) == ("default", "won")
    assert _same(res[path], DEFAULTS[path])


@pytest.mark.parametrize("case", _cases("empty", cli=False))
def test_an_empty_variable_is_as_if_unset(place: Place, case: dict[str, Any]) -> None:
    """An empty or blank variable offers no value and says nothing; its candidate is `empty`."""
    kwargs, locator = _arrange(place, case)

    res = budgetconf.resolve(**kwargs)  # warnings are errors here: there must be none

    path = _path(case)
    assert res.warnings == ()
    trace = res.trace(path)
    assert [(c.source, c.locator, c.status, c.raw, c.value) for c in trace.candidates] == [
        ("default", "built-in default", "won", DEFAULTS[path], DEFAULTS[path]),
        ("env", locator, "empty", case["input"], None),
    ]
    entry = res.to_dict()["fields"][path]["candidates"][1]
    assert entry == {"source": "env", "locator": locator, "raw": case["input"], "status": "empty"}


@pytest.mark.parametrize("case", _cases("error", cli=False))
def test_bad_typed_value_raises_config_error(place: Place, case: dict[str, Any]) -> None:
    """A bad file or code value raises one ConfigError naming its field, source, locator, reason."""
    kwargs, locator = _arrange(place, case)

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(**kwargs)

    err = caught.value
    assert type(err) is budgetconf.ConfigError
    assert str(err) == case["message"].replace("{locator}", locator)
    assert (err.field, err.source, err.locator, err.reason) == (
        _path(case),
        KIND[case["source"]],
        locator,
        case["reason"],
    )
    assert err.errors == (err,)
    if case["reason"].startswith(("ambiguous in YAML", "out of range: 1e400", "not a JSON")):
        assert err.raw == case["input"]  # what the file says, not what a parser made of it
    else:
        assert _same(err.raw, _typed(case))


@pytest.mark.parametrize("case", _cases("ok", cli=False))
def test_boundary_value_is_accepted_and_wins(place: Place, case: dict[str, Any]) -> None:
    """A good or boundary value is accepted with its exact typed value and wins over the default."""
    kwargs, locator = _arrange(place, case)

    res = budgetconf.resolve(**kwargs)

    path = _path(case)
    assert _same(res[path], _expected_value(case))
    trace = res.trace(path)
    assert (trace.winner.source, trace.winner.locator) == (KIND[case["source"]], locator)
    assert [c.status for c in trace.candidates] == ["shadowed", "won"]
    raw = case["input"] if case["source"] in TEXT_SOURCES else _typed(case)
    assert _same(trace.winner.raw, raw)


def _flag_cases(outcome: str) -> list[Any]:
    """The table's flag cases with ``outcome``."""
    return [
        pytest.param(case, id=case["id"])
        for case in CASES
        if case["source"] == "flag" and case["outcome"] == outcome
    ]


def _explain_flag(capsys: pytest.CaptureFixture[str], case: dict[str, Any]) -> tuple[int, str, str]:
    """Run ``budgetconf explain --format json FLAG VALUE``, the flag as explain's own option."""
    flag = FLAGS[_path(case)]
    given = [f"{flag}={case['input']}"] if case.get("form") == "equals" else [flag, case["input"]]
    code = main(["explain", "--format", "json", *given])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", _flag_cases("rejected"))
def test_a_bad_flag_given_to_explain_itself_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], case: dict[str, Any]
) -> None:
    """What the cli source rejects from ``argv`` is, as explain's own option, a usage error
    with the same reason: one line, exit 64, nothing resolved."""
    flag = FLAGS[_path(case)]
    assert _explain_flag(capsys, case) == (
        64,
        "",
        f"budgetconf: usage error: argument {flag}: {case['reason']}\n",
    )


@pytest.mark.parametrize("case", _flag_cases("ok"))
def test_a_good_flag_given_to_explain_itself_wins(
    capsys: pytest.CaptureFixture[str], case: dict[str, Any]
) -> None:
    """A good or boundary value is taken by explain's own option as by the cli source."""
    code, out, _ = _explain_flag(capsys, case)
    doc = json.loads(out)
    assert (code, doc["warnings"], doc["errors"]) == (0, [], [])
    trace = doc["fields"][_path(case)]
    assert (trace["source"], trace["locator"]) == ("cli", FLAGS[_path(case)])
    assert _same(trace["value"], _expected_value(case))


@pytest.mark.parametrize("case", _cases("error", cli=True))
def test_set_bad_text_exits_1_with_the_error(
    capsys: pytest.CaptureFixture[str], case: dict[str, Any]
) -> None:
    """A bad ``--set`` value exits 1, lists the exact error and keeps the default."""
    code, doc = _set(capsys, case)

    path = _path(case)
    assert code == 1
    assert doc["errors"] == [case["message"]]
    trace = doc["fields"][path]
    assert (trace["source"], trace["value"]) == ("default", DEFAULTS[path])
    explicit = [c for c in trace["candidates"] if c["source"] == "explicit"]
    assert [(c["locator"], c["status"], c["raw"], c["reason"]) for c in explicit] == [
        ("explicit", "rejected", case["input"], case["reason"])
    ]


@pytest.mark.parametrize("case", _cases("ok", cli=True))
def test_set_good_text_wins(capsys: pytest.CaptureFixture[str], case: dict[str, Any]) -> None:
    """A good ``--set`` value is parsed as text, exits 0 and wins over the default."""
    code, doc = _set(capsys, case)

    path = _path(case)
    assert (code, doc["errors"], doc["warnings"]) == (0, [], [])
    trace = doc["fields"][path]
    assert (trace["source"], trace["locator"]) == ("explicit", "explicit")
    assert _same(trace["value"], _expected_value(case))
    assert [(c["status"], c.get("raw")) for c in trace["candidates"]] == [
        ("shadowed", None),
        ("won", case["input"]),
    ]


def test_an_integer_past_the_digit_limit_in_code_is_rejected_not_a_crash() -> None:
    """An explicit int too long for str() is an error that shows its first digits."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    huge = int("7" * 5000)
    sys.set_int_max_str_digits(limit)

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, explicit={"limits.max_cost_usd": -huge})

    reason = (
        "out of range: -" + "7" * 24 + "… (too many digits to read; must be a finite number > 0)"
    )
    assert str(caught.value) == f"limits.max_cost_usd from explicit: {reason}"
    assert caught.value.raw == "-" + "7" * 24 + "…"


@pytest.mark.parametrize(("text", "value"), [("0" * 5000 + "7", 7), ("-" + "0" * 5000, 0)])
def test_leading_zeros_past_the_digit_limit_are_read_as_the_number(text: str, value: int) -> None:
    """Thousands of leading zeros do not reach int()'s digit limit: the number is judged."""
    field = budgetconf.resolve(env={}).schema.lookup("loop.max_steps")
    if value >= 1:
        assert field.parse_text(text) == value
    else:
        with pytest.raises(Invalid, match="must be >= 1"):
            field.parse_text(text)


@pytest.mark.parametrize(
    ("bounds", "kind", "text", "reason"),
    [
        ({"ge": 1}, "int", "0", "must be >= 1, got '0'"),
        ({"ge": 1, "le": 10000}, "int", "0", "must be between 1 and 10000, got '0'"),
        ({"ge": 1, "le": 10000}, "int", "10001", "must be between 1 and 10000, got '10001'"),
        ({"gt": 0, "lt": 5}, "number", "7", "must be > 0 and < 5, got '7'"),
        (
            {"ge": 1, "le": 10000},
            "int",
            "9" * 30,
            f"out of range: '{'9' * 30}' (must be between 1 and 10000)",
        ),
        (
            {},
            "int",
            "-" + "9" * 30,
            f"out of range: '-{'9' * 30}' (must be between -{2**63 - 1} and {2**63 - 1})",
        ),
        ({"gt": 0}, "number", "1e999", "out of range: '1e999' (must be a finite number > 0)"),
        ({}, "number", "-1e999", "out of range: '-1e999' (must be a finite number)"),
    ],
)
def test_a_value_out_of_range_says_the_range(
    place: Place, bounds: dict[str, float], kind: str, text: str, reason: str
) -> None:
    """Past a bound, or past what the field can hold, the message says what the range is."""
    path = preset_file(
        place.work,
        sources=["default", {"kind": "env", "invalid": "error"}],
        fields={"app.knob": {"type": kind, "default": 1, "env": ["APP_KNOB"], **bounds}},
    )
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(str(path), env={"APP_KNOB": text})
    assert str(caught.value) == f"app.knob from env:APP_KNOB: {reason}"


def _typed_fields(folder: Path) -> Path:
    """A preset with a boolean field read from the environment, and a number field."""
    return preset_file(
        folder,
        sources=["default", "env", "explicit"],
        fields={
            "agent.quiet": {"type": "bool", "default": False, "env": ["APP_QUIET"]},
            "agent.cost": {"type": "number", "default": 1.5},
        },
    )


@pytest.mark.parametrize(
    ("text", "value"), [("Yes", True), ("TRUE", True), (" off ", False), ("0", False)]
)
def test_a_boolean_from_the_environment_takes_its_words_in_any_case(
    place: Place, text: str, value: bool
) -> None:
    """yes/true and off/0 are read as booleans whatever their case and surrounding spaces."""
    res = budgetconf.resolve(_typed_fields(place.work), env={"APP_QUIET": text})
    assert res["agent.quiet"] is value
    assert res.trace("agent.quiet").locator == "env:APP_QUIET"


def test_a_word_that_is_no_boolean_is_an_error_that_quotes_it(place: Place) -> None:
    """A word such as maybe for a boolean field is rejected, naming the variable it came from."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_typed_fields(place.work), env={"APP_QUIET": "maybe"})
    assert str(caught.value) == "agent.quiet from env:APP_QUIET: not a boolean: 'maybe'"


def test_an_integer_from_code_is_not_a_boolean(place: Place) -> None:
    """1 given in code for a boolean field is refused, with its type named."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_typed_fields(place.work), env={}, explicit={"agent.quiet": 1})
    assert str(caught.value) == "agent.quiet from explicit: not a boolean: 1 (an integer)"


def test_an_integer_too_large_for_a_float_is_out_of_range_not_a_crash(place: Place) -> None:
    """10**400 for a number field cannot become a float: it is out of range, shown shortened."""
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(_typed_fields(place.work), env={}, explicit={"agent.cost": 10**400})
    assert str(caught.value) == (
        "agent.cost from explicit: out of range: 1" + "0" * 79 + "… (401 characters, 321 not "
        "shown) (must be a finite number)"
    )


def test_a_schema_shows_its_field_paths(place: Place) -> None:
    """A schema's repr lists its fields' paths in the preset's order."""
    schema = budgetconf.resolve(_typed_fields(place.work), env={}).schema
    assert repr(schema) == "Schema(['agent.quiet', 'agent.cost'])"
