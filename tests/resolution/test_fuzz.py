"""Random text into the env and file parsers: a valid value or a clean error, never a crash.

CI runs each property with 500 derandomized examples. A longer run sets
``FUZZ_EXAMPLES`` (examples per property) and ``FUZZ_SEED``; docs/reliability.md
records the command and what it found.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import tomli_w
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetconf
from budgetconf import _files
from budgetconf._field import Field, Invalid, Kind
from budgetconf._formats import ParseError, parse_json, parse_toml, parse_yaml
from budgetconf._table import entries, key_problem, table_value
from budgetconf._text_formats import text_problem

_EXAMPLES: Final = int(os.environ.get("FUZZ_EXAMPLES", "500"))
_SEED: Final = os.environ.get("FUZZ_SEED")
FUZZ: Final = settings(
    max_examples=_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=_SEED is None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SCHEMA: Final = budgetconf.resolve(env={}).schema
FIELDS: Final[tuple[Field, ...]] = tuple(SCHEMA)
ENV: Final = {name: f for f in FIELDS for name in f.env}

# text close to what people type for numbers (faster to draw than from a regex), and anything
_NUMBERISH: Final = st.text(alphabet="0123456789_٤٠.eExXoO+- \t", max_size=30) | st.integers(
    -(2**70), 2**70
).map(str)
TEXT: Final = st.text(max_size=60) | _NUMBERISH | st.sampled_from(["true", "off", "wrap_up", "inf"])

# a table's text: KEY=VALUE pairs between commas, with the slips people make (a key that is
# no tool name, a pair without `=`, an empty piece, a key twice), and any text at all
_TOOLISH: Final = st.sampled_from(["web_search", "fetch", "a", "A.b-c_1", "", " ", "bad key", "é"])
_PAIR: Final = st.tuples(_TOOLISH | st.text(max_size=6), st.sampled_from(["=", "", "=="]), TEXT)
TABLE_TEXT: Final = (
    st.lists(_PAIR.map("".join), max_size=4).map(lambda pairs: ",".join(pairs)[:80])  # unclipped
    | st.sampled_from(["a=1,b=x", "=3", ",,", "a=1,a=2", "web_search=3,fetch=10", " a = 1 , "])
    | TEXT
)

_SCALARS: Final = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
_VALUES: Final = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=8), inner, max_size=2)
    ),
    max_leaves=4,
)
_KEYS: Final = st.sampled_from(
    sorted({f.section for f in FIELDS} | {f.name for f in FIELDS} | {"steps", "name", "max_turns"})
) | st.text(max_size=10)
# a table's typed value: a mapping of keys (some no tool name, some not text) to any values
TABLES: Final = st.dictionaries(
    _TOOLISH | st.text(max_size=8) | st.integers() | st.booleans(), _VALUES, max_size=4
)
# documents shaped like settings: {section: {name: value}}, with noise at every level, and
# tables under the table field's own name
DOCUMENTS: Final = st.dictionaries(
    _KEYS, st.dictionaries(_KEYS, _VALUES, max_size=3) | _VALUES, max_size=3
) | st.fixed_dictionaries({"tools": st.fixed_dictionaries({"max_calls": TABLES | _VALUES})})


def _check_value(field: Field, value: object) -> None:
    """A parsed value has the field's type and keeps its bounds; a table's, each of its keys
    by the table's rule, each of its values by its entry's."""
    if field.kind is Kind.TABLE:
        assert isinstance(value, Mapping)
        for key, item in value.items():
            assert key_problem(field, key) is None
            _check_value(field.entry(key), item)
        return
    if field.kind is Kind.INT:
        assert type(value) is int
        assert abs(value) <= 2**63 - 1
    elif field.kind is Kind.NUMBER:
        assert type(value) is float
        assert math.isfinite(value)
    elif field.kind is Kind.BOOL:
        assert type(value) is bool
    elif field.kind is Kind.TEXT:
        assert type(value) is str
        assert text_problem(field.format, value) is None
    else:
        assert value in field.choices
    for bound, holds in (("ge", float.__ge__), ("gt", float.__gt__), ("le", float.__le__)):
        limit = getattr(field, bound, None)
        if limit is not None and isinstance(value, int | float) and not isinstance(value, bool):
            assert holds(float(value), float(limit))


@FUZZ
@given(st.sampled_from(FIELDS), TEXT | TABLE_TEXT)
def test_text_parses_to_a_valid_value_or_a_quoted_reason(field: Field, text: str) -> None:
    """Any text gives a value of the field's type within its bounds, or Invalid quoting it (a
    table's: the piece, the key or the value it refuses)."""
    value, reason = _parsed(field, text)
    if reason is None:
        _check_value(field, value)
    elif field.kind is Kind.TABLE:
        assert any(repr(part) in reason for part in _parts(text)), reason
    else:
        assert repr(text) in reason or "***" in reason


def _parsed(field: Field, text: str) -> tuple[object, str | None]:
    try:
        if field.kind is Kind.TABLE:
            return table_value(field, text, True), None
        return field.parse_text(text), None
    except Invalid as exc:
        return None, exc.reason


def _parts(text: str) -> list[str]:
    """What a table's reason may quote of its text: a piece, a key or a value."""
    parts = []
    for piece in text.split(","):
        name, _, item = piece.partition("=")
        parts += [piece, name.strip(" \t\n\r\f\v"), item]
    return parts


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(sorted(ENV)) | st.text(max_size=12), TEXT | TABLE_TEXT, max_size=4
    )
)
def test_any_environment_resolves_with_every_bad_value_rejected(env: dict[str, str]) -> None:
    """Any environment resolves (env falls back); each variable is the winner, shadowed, rejected,
    or, when it holds only white space, empty. A strict field (ledger.url) falls back under no
    policy: a bad value there is the error, naming it. A table's variable is taken apart: each
    key it gives is a candidate of that key, and each piece it cannot take a warning."""
    env = {k: v for k, v in env.items() if "\x00" not in k}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
        try:
            res = budgetconf.resolve(env=env)
        except budgetconf.ConfigError as exc:
            refused = exc.field
        else:
            refused = None
    if refused is not None:
        assert next(f for f in FIELDS if f.path == refused).strict
        return
    for name, text in env.items():
        if name not in ENV:
            continue
        field = ENV[name]
        if field.kind is Kind.TABLE:
            _check_table_variable(res, field, name, text)
            continue
        trace = res.trace(field.path)
        mine = [c for c in trace.candidates if c.locator == f"env:{name}"]
        assert [c.raw for c in mine] == [text]
        if mine[0].status == "rejected":
            assert mine[0].reason
        elif mine[0].status == "empty":
            assert not text.strip(" \t\n\r\f\v")
            assert (mine[0].value, mine[0].reason) == (None, None)
        else:
            _check_value(field, mine[0].value)
    json.dumps(res.to_dict())


def _check_table_variable(res: budgetconf.Resolution, table: Field, name: str, text: str) -> None:
    """The table's variable in the resolution: a candidate of each key it gives, the first
    time it gives it; a warning of each thing it cannot take; nothing at all when blank."""
    locator = f"env:{name}"
    mine = {
        trace.field.key: candidate
        for trace in res.traces()
        if trace.field.table == table.path
        for candidate in trace.candidates
        if candidate.locator == locator
    }
    if not text.strip(" \t\n\r\f\v"):  # as if unset: no key to be empty for
        assert mine == {}
        return
    found, problems = entries(table, text, True)
    assert {key: c.raw for key, c in mine.items()} == dict(found)
    for key, candidate in mine.items():
        if candidate.status == "rejected":
            assert candidate.reason
        else:
            _check_value(table, {key: candidate.value})
    for problem in problems:
        assert f"{table.path} from {locator}: {problem}; ignored" in res.warnings


def _parse_error(fmt: str, text: str) -> ParseError | None:
    parser = {"json": parse_json, "toml": parse_toml, "yaml": parse_yaml}[fmt]
    try:
        parser(text)
    except ParseError as exc:
        return exc
    return None


@FUZZ
@given(st.sampled_from(["json", "toml", "yaml"]), st.text(max_size=200))
def test_random_text_parses_or_raises_parse_error(fmt: str, text: str) -> None:
    """Random text is a document or a ParseError with a message, never another exception."""
    error = _parse_error(fmt, text)
    if error is not None:
        assert error.message
        assert error.line is None or error.line >= 1


def _dump(fmt: str, document: dict[str, Any]) -> str | None:
    try:
        if fmt == "json":
            return json.dumps(document)
        if fmt == "toml":
            return tomli_w.dumps(document)
        return yaml.safe_dump(document)
    except (TypeError, ValueError):  # None in TOML, and the like
        return None


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the files of every example: each writes its file anew."""
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(st.sampled_from(["json", "toml", "yaml"]), DOCUMENTS, st.data())
def test_settings_documents_and_their_prefixes_resolve_or_raise_config_error(
    folder: Path, fmt: str, document: dict[str, Any], data: st.DataObject
) -> None:
    """A settings-shaped file, whole or cut short, resolves or raises ConfigError."""
    text = _dump(fmt, document)
    if text is None:
        return
    cut = data.draw(st.integers(0, len(text)))
    text = data.draw(st.sampled_from([text, text[:cut]]))
    path = folder / f"settings.{fmt}"
    path.write_text(text, encoding="utf-8")
    res, failed = _resolve_file(fmt, path)
    if failed is not None:
        for error in failed.errors:
            assert error.source in {"global", "project", "yaml", "step"}
            assert error.locator is not None
            assert error.locator.startswith(str(path))
            assert error.locator in str(error)
        return
    assert res is not None
    for field in FIELDS:
        value = res[field.path]
        if value is not None:
            _check_value(field, value)
    json.dumps(res.to_dict())


def _resolve_file(
    fmt: str, path: Path
) -> tuple[budgetconf.Resolution | None, budgetconf.ConfigError | None]:
    """Resolve with the file as its format's source: the result, or the error it raised."""
    argument = {"json": "global_file", "toml": "project_file", "yaml": "workflow"}[fmt]
    named: dict[str, Any] = {argument: path}  # the keyword is chosen at run time
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
            return budgetconf.resolve(env={}, **named), None
    except budgetconf.ConfigError as exc:
        return None, exc
    finally:
        _files._cache.clear()


@pytest.fixture(scope="module")
def table_preset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preset whose code source falls back, beside the default preset's, which errs."""
    path = tmp_path_factory.mktemp("table") / "tables.toml"
    path.write_text(
        'format = 1\n[[sources]]\nkind = "default"\n[[sources]]\nkind = "explicit"\n'
        'invalid = "fallback"\n[fields."tools.max_calls"]\ntype = "table"\nvalues = "int"\n'
        'keys = "tool-name"\nge = 0\n',
        encoding="utf-8",
    )
    return path


@FUZZ
@given(TABLES | _VALUES, st.booleans())
def test_any_table_in_code_resolves_to_valid_keys_or_raises_config_error(
    table_preset: Path, value: object, fallback: bool
) -> None:
    """A mapping given for a table in code, with keys of any type and values of any shape,
    resolves to the keys and values the table can take; under ``error`` anything else is the
    ConfigError, naming the table or the key and the locator, and under ``fallback`` a
    warning, the other keys kept."""
    preset = str(table_preset) if fallback else "budgetconf"
    table = next(f for f in FIELDS if f.path == "tools.max_calls")
    found, problems = entries(table, value, False)
    valid = {}
    for key, raw in found:
        try:
            valid[key] = table.entry(key).check_value(raw)
        except Invalid as exc:
            problems.append(exc.reason)
    res, failed = _resolve_code(preset, {"tools.max_calls": value})
    if failed is not None:
        assert not fallback
        assert len(failed.errors) == len(problems)
        for error in failed.errors:
            assert error.locator == "explicit"
            assert str(error.field).startswith("tools.max_calls")
        return
    assert res is not None
    assert res["tools.max_calls"] == valid
    _check_value(table, res["tools.max_calls"])
    assert len(res.warnings) == len(problems)
    json.dumps(res.to_dict())


def _resolve_code(
    preset: str, explicit: dict[str, object]
) -> tuple[budgetconf.Resolution | None, budgetconf.ConfigError | None]:
    """Resolve with ``explicit`` in code: the result, or the error it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
            return budgetconf.resolve(preset, env={}, explicit=explicit), None
    except budgetconf.ConfigError as exc:
        return None, exc


@FUZZ
@given(st.sampled_from(["json", "toml", "yaml"]), st.binary(max_size=200))
def test_random_bytes_in_a_file_resolve_or_raise_config_error(
    folder: Path, fmt: str, data: bytes
) -> None:
    """Any bytes in a settings file resolve or raise ConfigError, whatever their encoding."""
    path = folder / f"bytes.{fmt}"
    path.write_bytes(data)
    _, failed = _resolve_file(fmt, path)
    if failed is not None:
        assert str(failed)
