"""table_prices: the table file prices.table names, read strictly like a settings file."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from budgetconf import SourceError, _files
from budgetconf._files import DEFAULT_MAX_FILE_BYTES
from budgetconf._formats import Document
from budgetconf._prices import TABLE, Price
from budgetconf._prices import _table as table_module
from budgetconf._prices._table import table_prices
from budgetconf._usage import Usage

SET_AT = "budgetconf.toml:7"  # where prices.table was set, as the messages name it

JSON = """{
  "models": {
    "gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6,
                    "cached_input_per_mtok": 0.075},
    "local-llm": {"input_per_mtok": 1, "output_per_mtok": 2}
  }
}
"""

TOML = """# the team's negotiated prices
[models."gpt-4o-mini"]
input_per_mtok = 0.15
output_per_mtok = 0.6
cached_input_per_mtok = 0.075

[models.local-llm]
input_per_mtok = 1
output_per_mtok = 2
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _settle(path: Path) -> None:
    """Age the file past the reader's window in which a signature is not trusted alone."""
    old = path.stat().st_mtime_ns - 60 * 1_000_000_000
    os.utime(path, ns=(old, old))


def _error(path: Path) -> SourceError:
    with pytest.raises(SourceError) as caught:
        table_prices(str(path), SET_AT)
    return caught.value


@pytest.mark.parametrize(("name", "text"), [("prices.json", JSON), ("prices.toml", TOML)])
def test_a_table_gives_each_model_its_price_at_its_line(
    tmp_path: Path, name: str, text: str
) -> None:
    """Each entry is a Price of the table's source, explained by the file and its entry's line;
    a model without a cached rate has its input rate as the cached one."""
    path = _write(tmp_path / name, text)
    prices = table_prices(str(path), SET_AT)
    first, second = (3, 5) if name.endswith(".json") else (2, 7)
    assert dict(prices) == {
        "gpt-4o-mini": Price(
            "gpt-4o-mini", 0.15, 0.6, 0.075, source=TABLE, locator=f"{path}:{first}"
        ),
        "local-llm": Price("local-llm", 1, 2, 1, source=TABLE, locator=f"{path}:{second}"),
    }
    assert prices["local-llm"].cached_input_per_mtok == 1.0
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=100_000)
    assert prices["gpt-4o-mini"].cost(usage) == pytest.approx(0.6 * 0.15 + 0.4 * 0.075 + 0.06)
    assert prices["local-llm"].cost(usage) == pytest.approx(1.0 + 0.2)


def test_an_inline_toml_entry_is_located_by_its_key(tmp_path: Path) -> None:
    """`[models]` with one inline table per model: each price is at its key's line."""
    path = _write(
        tmp_path / "prices.toml",
        '[models]\n"a" = { input_per_mtok = 1, output_per_mtok = 2 }\n\n'
        "b = { input_per_mtok = 3, output_per_mtok = 4, cached_input_per_mtok = 0 }\n",
    )
    prices = table_prices(str(path), SET_AT)
    assert [prices["a"].locator, prices["b"].locator] == [f"{path}:2", f"{path}:4"]
    assert prices["b"].cached_input_per_mtok == 0.0


def test_an_empty_table_of_models_prices_nothing(tmp_path: Path) -> None:
    """`{"models": {}}` is a table with no model: every model is unknown to it."""
    path = _write(tmp_path / "prices.json", '{"models": {}}')
    assert dict(table_prices(str(path), SET_AT)) == {}


def test_a_relative_path_or_one_under_home_is_read_from_where_it_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is taken from the working directory, `~` from $HOME; the locator is absolute."""
    work, home = tmp_path / "here", tmp_path / "me"
    _write(work / "prices" / "team.json", JSON)
    _write(home / "mine.toml", TOML)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    relative = table_prices("prices/team.json", SET_AT)
    assert relative["local-llm"].locator == f"{work}/prices/team.json:5"
    assert table_prices("~/mine.toml", SET_AT)["local-llm"].locator == f"{home}/mine.toml:7"


def test_the_prices_cannot_be_changed(tmp_path: Path) -> None:
    """The mapping given is read-only: a caller cannot change what the next caller is given."""
    prices = table_prices(str(_write(tmp_path / "prices.json", JSON)), SET_AT)
    with pytest.raises(TypeError):
        prices["x"] = prices["local-llm"]  # type: ignore[index]  # on purpose


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every parse of a file, by format."""
    calls: list[str] = []

    def counting(fmt: str, parser: Callable[[str], Document]) -> Callable[[str], Document]:
        def parse(text: str) -> Document:
            calls.append(fmt)
            return parser(text)

        return parse

    for fmt, parser in list(_files.PARSERS.items()):
        monkeypatch.setitem(_files.PARSERS, fmt, counting(fmt, parser))
    return calls


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every read of a file's bytes."""
    calls: list[str] = []
    real = _files.read_limited

    def counting(path: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
        calls.append(path)
        return real(path, max_bytes)

    monkeypatch.setattr(_files, "read_limited", counting)
    return calls


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every check of a parsed table's models, by file."""
    calls: list[str] = []
    real = table_module._read_models

    def counting(table: object, path: str) -> dict[str, Price]:
        calls.append(path)
        return real(table, path)  # type: ignore[arg-type]

    monkeypatch.setattr(table_module, "_read_models", counting)
    return calls


def test_an_unchanged_file_is_neither_read_nor_checked_again(
    tmp_path: Path, parsed: list[str], reads: list[str], checked: list[str]
) -> None:
    """A second call on a settled file only looks at its signature: the same prices come back,
    the bytes unread and the table unchecked; a rewrite is read, parsed and checked anew."""
    path = _write(tmp_path / "prices.toml", TOML)
    _settle(path)
    first = table_prices(str(path), SET_AT)
    again = table_prices(str(path), SET_AT)
    assert again is first
    assert (parsed, reads, checked) == (["toml"], [str(path)], [str(path)])
    path.write_text(TOML.replace("0.6", "0.8"), encoding="utf-8")
    _settle(path)
    assert table_prices(str(path), SET_AT)["gpt-4o-mini"].output_per_mtok == 0.8
    assert (len(parsed), len(reads), len(checked)) == (2, 2, 2)


def test_a_recent_file_is_read_again_but_parsed_and_checked_once(
    tmp_path: Path, parsed: list[str], reads: list[str], checked: list[str]
) -> None:
    """Just written, a file's signature is not trusted alone: its bytes are read again (the
    reader's rule), and while they are the same it is neither parsed nor checked again."""
    path = _write(tmp_path / "prices.json", JSON)
    first = table_prices(str(path), SET_AT)
    assert table_prices(str(path), SET_AT) is first
    assert (len(parsed), len(reads), len(checked)) == (1, 2, 1)


def test_the_prices_kept_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the number of tables kept, the old ones are forgotten: read again, they are checked
    again, into new prices."""
    monkeypatch.setattr(table_module, "_MAX_KEPT", 1)
    one, two = _write(tmp_path / "one.json", JSON), _write(tmp_path / "two.json", JSON)
    first = table_prices(str(one), SET_AT)
    table_prices(str(two), SET_AT)
    assert table_module._kept.keys() == {str(two)}
    again = table_prices(str(one), SET_AT)
    assert again == first
    assert again is not first


def test_a_missing_file_is_an_error_naming_it_and_where_it_was_named(tmp_path: Path) -> None:
    """The user named the file: its absence is a SourceError, not an empty table."""
    error = _error(tmp_path / "nope.json")
    assert (
        str(error) == f"prices.table {tmp_path}/nope.json: no such file (prices.table at {SET_AT})"
    )
    assert (error.source, error.locator) == ("prices.table", f"{tmp_path}/nope.json")


@pytest.mark.parametrize("name", ["prices.yaml", "prices", "prices.json.bak"])
def test_a_file_of_another_format_is_an_error_naming_the_two(tmp_path: Path, name: str) -> None:
    """Only JSON and TOML tables are read, told apart by the suffix (of any case)."""
    path = _write(tmp_path / name, JSON)
    assert str(_error(path)) == (
        f"prices.table {path}: a price table is a .json or a .toml file (prices.table at {SET_AT})"
    )
    assert table_prices(str(_write(tmp_path / "PRICES.JSON", JSON)), SET_AT).keys() == {
        "gpt-4o-mini",
        "local-llm",
    }


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    """The settings files' limit holds: one byte over it is refused, at it the file is read."""
    head = '{"models": {}}'
    path = _write(tmp_path / "prices.json", head + " " * (DEFAULT_MAX_FILE_BYTES - len(head)))
    assert dict(table_prices(str(path), SET_AT)) == {}
    path.write_text(head + " " * (DEFAULT_MAX_FILE_BYTES + 1 - len(head)), encoding="utf-8")
    assert str(_error(path)) == (
        f"prices.table {path}: larger than the limit of {DEFAULT_MAX_FILE_BYTES} bytes"
    )


@pytest.mark.parametrize(
    ("name", "text", "line", "problem"),
    [
        (
            "prices.json",
            '{"models": {\n"a": {"input_per_mtok": 1, "output_per_mtok": 2},\n"a": {}}}',
            3,
            "duplicate key 'a'",
        ),
        (
            "prices.json",
            '{"models": {"a": {\n"input_per_mtok": 1,\n"input_per_mtok": 2}}}',
            3,
            "duplicate key 'input_per_mtok'",
        ),
        (
            "prices.toml",
            "[models.a]\ninput_per_mtok = 1\noutput_per_mtok = 2\ninput_per_mtok = 3\n",
            4,
            "invalid TOML: Cannot overwrite a value (column 19)",
        ),
        (
            "prices.toml",
            "[models.a]\ninput_per_mtok = 1\n[models.a]\noutput_per_mtok = 2\n",
            3,
            "invalid TOML: Cannot declare ('models', 'a') twice (column 10)",
        ),
        ("prices.json", '{"models": {"a": {"input_per_mtok": 1,}}}', 1, None),
        ("prices.toml", "[models\n", 1, None),
    ],
)
def test_duplicate_keys_and_broken_files_are_errors_at_their_line(
    tmp_path: Path, name: str, text: str, line: int, problem: str | None
) -> None:
    """The parsers' own refusals, as every settings file gets them: the file and the line."""
    path = _write(tmp_path / name, text)
    error = _error(path)
    assert error.locator == f"{path}:{line}"
    assert error.line == line
    assert str(error).startswith(f"prices.table {path}:{line}: ")
    if problem is not None:
        assert str(error) == f"prices.table {path}:{line}: {problem}"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (
            '{"models": {},\n"model": {}}',
            2,
            "'model' in the top level is not a known key; did you mean models?",
        ),
        ('{"$schema": "x", "models": {}}', 1, "'$schema' in the top level is not a known key"),
        ('{"prices": {}}', 1, "'prices' in the top level is not a known key (known: models)"),
        (
            '{"models": {"a": {"input_per_mtok": 1, "output_per_mtok": 2,\n"cache_per_mtok": 1}}}',
            2,
            "'cache_per_mtok' in model 'a' is not a known key; did you mean cached_input_per_mtok?",
        ),
        (
            '{"models": {"a": {"input": 1, "output_per_mtok": 2}}}',
            1,
            "'input' in model 'a' is not a known key (known: input_per_mtok, output_per_mtok,"
            " cached_input_per_mtok)",
        ),
        (
            '{"models": {"a": {"input_per_mtok": 1, "output_per_mtok": 2,\n"currency": "EUR"}}}',
            2,
            "'currency' in model 'a' is not a known key",
        ),
    ],
)
def test_an_unknown_key_at_any_level_is_an_error_at_its_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    """No key but `models` at the top, none but the three rates in an entry; a near miss gets
    its did-you-mean, any other key the list of known ones."""
    path = _write(tmp_path / "prices.json", text)
    error = _error(path)
    assert str(error).startswith(f"prices.table {path}:{line}: {problem}")


def test_an_unknown_toml_key_is_an_error_at_its_line(tmp_path: Path) -> None:
    """The same in TOML, where the line is the key's own."""
    path = _write(
        tmp_path / "prices.toml",
        "[models.a]\ninput_per_mtok = 1\noutput_per_mtok = 2\noutput = 3\n",
    )
    assert str(_error(path)) == (
        f"prices.table {path}:4: 'output' in model 'a' is not a known key (known: input_per_mtok,"
        " output_per_mtok, cached_input_per_mtok)"
    )


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("{}", 1, "no models table"),
        ('{"models": [1, 2]}', 1, "models must be a table of models, got a list"),
        ('{"models": {\n"a": 0.5}}', 2, "model 'a' must be a table of prices, got a float"),
        (
            '{"models": {\n"": {"input_per_mtok": 1, "output_per_mtok": 2}}}',
            2,
            "a model's name is empty",
        ),
    ],
)
def test_a_table_of_the_wrong_shape_is_an_error(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    """`models` is a table of tables, one per named model."""
    path = _write(tmp_path / "prices.json", text)
    assert str(_error(path)) == f"prices.table {path}:{line}: {problem}"


def test_a_toml_file_without_models_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """An empty TOML table has no line to name: the error names the file."""
    path = _write(tmp_path / "prices.toml", "# nothing yet\n")
    error = _error(path)
    assert str(error) == f"prices.table {path}: no models table"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('"input_per_mtok": true', "input_per_mtok: expected a number ≥ 0, got true"),
        ('"input_per_mtok": false', "input_per_mtok: expected a number ≥ 0, got false"),
        ('"input_per_mtok": "0.15"', 'input_per_mtok: expected a number ≥ 0, got "0.15"'),
        ('"input_per_mtok": null', "input_per_mtok: expected a number ≥ 0, got null"),
        ('"input_per_mtok": [1]', "input_per_mtok: expected a number ≥ 0, got a list"),
        ('"input_per_mtok": {"usd": 1}', "input_per_mtok: expected a number ≥ 0, got a table"),
        ('"input_per_mtok": -1', "input_per_mtok: expected a finite number ≥ 0, got -1"),
        ('"input_per_mtok": -0.5', "input_per_mtok: expected a finite number ≥ 0, got -0.5"),
        (
            '"input_per_mtok": NaN',
            "input_per_mtok: not a JSON number: NaN (JSON has no NaN or Infinity)",
        ),
        (
            '"input_per_mtok": -Infinity',
            "input_per_mtok: not a JSON number: -Infinity (JSON has no NaN or Infinity)",
        ),
        (
            '"input_per_mtok": 1e400',
            "input_per_mtok: out of range: 1e400 (beyond the largest float)",
        ),
        (
            '"input_per_mtok": ' + "9" * 1001,
            "input_per_mtok: out of range: 999999999999999999999999… (too many digits to read)",
        ),
    ],
)
def test_a_rate_that_is_no_finite_number_from_zero_is_an_error_at_its_line(
    tmp_path: Path, entry: str, problem: str
) -> None:
    """A rate is a number ≥ 0: not a boolean, text, null, a list or a table, nor negative,
    NaN, infinite or past the largest float."""
    text = '{"models": {"m": {"output_per_mtok": 1,\n' + entry + "}}}"
    path = _write(tmp_path / "prices.json", text)
    assert str(_error(path)) == f"prices.table {path}:2: model 'm': {problem}"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("nan", "expected a finite number ≥ 0, got nan"),
        ("inf", "expected a finite number ≥ 0, got inf"),
        ("-inf", "expected a finite number ≥ 0, got -inf"),
        ("-3", "expected a finite number ≥ 0, got -3"),
        ("true", "expected a number ≥ 0, got true"),
        ("2026-01-01", "expected a number ≥ 0, got date"),
        ("0x" + "f" * 300, "expected a finite number ≥ 0, got " + str(16**300 - 1)[:80] + "…"),
    ],
)
def test_a_toml_rate_that_is_no_finite_number_from_zero_is_an_error(
    tmp_path: Path, value: str, problem: str
) -> None:
    """TOML writes nan and inf, dates, and integers of any size: none is a rate."""
    path = _write(
        tmp_path / "prices.toml", f"[models.m]\noutput_per_mtok = 1\ninput_per_mtok = {value}\n"
    )
    message = str(_error(path))
    assert message.startswith(f"prices.table {path}:3: model 'm': input_per_mtok: {problem}")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('"input_per_mtok": 1', "model 'm' sets input_per_mtok without output_per_mtok"),
        ('"output_per_mtok": 1', "model 'm' sets output_per_mtok without input_per_mtok"),
        (
            '"output_per_mtok": 1, "cached_input_per_mtok": 0.5',
            "model 'm' sets output_per_mtok without input_per_mtok",
        ),
        ('"cached_input_per_mtok": 0.5', "model 'm' needs input_per_mtok and output_per_mtok"),
        ("", "model 'm' needs input_per_mtok and output_per_mtok"),
    ],
)
def test_an_entry_needs_both_the_input_and_the_output_rate(
    tmp_path: Path, entry: str, problem: str
) -> None:
    """One rate without the other is an error naming the file and the entry's line."""
    path = _write(
        tmp_path / "prices.json",
        '{"models": {\n"ok": {"input_per_mtok": 1, "output_per_mtok": 1},\n"m": {' + entry + "}}}",
    )
    message = str(_error(path))
    assert message.startswith(f"prices.table {path}:3: {problem}")


def test_a_toml_entry_without_its_output_rate_is_an_error_at_its_header(tmp_path: Path) -> None:
    """In TOML the entry's line is its table's header."""
    path = _write(tmp_path / "prices.toml", '\n[models."gpt-4o"]\ninput_per_mtok = 2.5\n')
    assert str(_error(path)) == (
        f"prices.table {path}:2: model 'gpt-4o' sets input_per_mtok without output_per_mtok:"
        " a price needs both"
    )


def test_a_file_that_is_not_utf8_is_an_error_at_its_line(tmp_path: Path) -> None:
    """Decoding is the reader's: the byte and its line."""
    path = tmp_path / "prices.toml"
    path.write_bytes(b"[models.a]\ninput_per_mtok = 1 # \xff\n")
    assert re.fullmatch(
        rf"prices\.table {re.escape(str(path))}:2: not UTF-8 text: byte 0xff at offset \d+",
        str(_error(path)),
    )
