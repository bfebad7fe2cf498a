"""toml_lines: the line of every key's value in a TOML document, never fooled by its text."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from typing import Any

import pytest
import tomli_w
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from budgetconf._toml_lines import toml_lines

# Each line that could fool a text search for keys or headers is inside a string or a comment.
CORPUS = """\
# max_steps = 1 in a leading comment
title = "has # not a comment" # a real comment
quote = "say \\"max_steps = 2\\" # still text"
basic = \"\"\"
max_steps = 99
[fake]
\"\"\"
literal = '''
[[fake]]
max_steps = 98
'''
extra = \"\"\"a\"\"\"\"\"
after = 1
arr = [ # comment with a [
  1, # one ]
  "two ]",
  # max_steps = 97
  3,
]
"odd.key" = 1
'lit' = 2
"with space" . inner = 3
dotted.a.b = 4
inline = { x = 1, y = { z = "}" } }
escaped = "tab\\tand \\\\" # backslash before the closing quote
multi_escape = \"\"\"ends with \\\"\"\" \"\"\"
multi_literal = '''it's'' '''

[[steps]]
name = "first"

[steps.loop]
max_steps = 5

[[steps]]
name = "second" # [steps.loop] in a comment

[steps.loop]
max_steps = 6

[ table . "sub key" ]
k = 'v'
"""

EXPECTED = {
    ("title",): 2,
    ("quote",): 3,
    ("basic",): 4,
    ("literal",): 8,
    ("extra",): 12,
    ("after",): 13,
    ("arr",): 14,
    ("arr", 0): 15,
    ("arr", 1): 16,
    ("arr", 2): 18,
    ("odd.key",): 20,
    ("lit",): 21,
    ("with space",): 22,
    ("with space", "inner"): 22,
    ("dotted",): 23,
    ("dotted", "a"): 23,
    ("dotted", "a", "b"): 23,
    ("inline",): 24,
    ("inline", "x"): 24,
    ("inline", "y"): 24,
    ("inline", "y", "z"): 24,
    ("escaped",): 25,
    ("multi_escape",): 26,
    ("multi_literal",): 27,
    ("steps",): 29,
    ("steps", 0): 29,
    ("steps", 0, "name"): 30,
    ("steps", 0, "loop"): 32,
    ("steps", 0, "loop", "max_steps"): 33,
    ("steps", 1): 35,
    ("steps", 1, "name"): 36,
    ("steps", 1, "loop"): 38,
    ("steps", 1, "loop", "max_steps"): 39,
    ("table", "sub key"): 41,
    ("table", "sub key", "k"): 42,
}


def test_corpus_is_valid_toml_with_the_tricky_values() -> None:
    """The corpus parses, and its strings hold the text that looks like keys and headers."""
    data = tomllib.loads(CORPUS)
    assert data["basic"] == "max_steps = 99\n[fake]\n"
    assert data["literal"] == "[[fake]]\nmax_steps = 98\n"
    assert data["extra"] == 'a""'
    assert data["quote"] == 'say "max_steps = 2" # still text'
    assert data["multi_escape"] == 'ends with """ '
    assert data["multi_literal"] == "it's'' "
    assert data["arr"] == [1, "two ]", 3]
    assert data["odd.key"] == 1
    assert data["lit"] == 2
    assert [step["loop"]["max_steps"] for step in data["steps"]] == [5, 6]
    assert "fake" not in data


def test_corpus_lines_are_exact() -> None:
    """Every key of the corpus, array items and array-of-tables entries included, has its line."""
    assert toml_lines(CORPUS) == EXPECTED


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ('a = """\nx\n"""\nb = 1\n', ("b",), 4),
        ('a = """x""""\nb = 1\n', ("b",), 2),
        ('a = """"x"""\nb = 1\n', ("b",), 2),
        ("a = '''x'''''\nb = 1\n", ("b",), 2),
        ('a = """\\\n  x"""\nb = 1\n', ("b",), 3),
        ('a = "\\\\"\nb = 1\n', ("b",), 2),
        ("a = 'C:\\'\nb = 1\n", ("b",), 2),
        ("a = [\n  [1, 2],\n  [\n    3,\n  ],\n]\n", ("a", 1, 0), 4),
        ("a = 1\r\nb = 2\r\n", ("b",), 2),
        ('"a\\"b" = 1\nc = 2\n', ('a"b',), 1),
        ('"\\u00e9" = 1\n', ("é",), 1),
        ("[a]\n[[a.b]]\nx = 1\n[[a.b]]\nx = 2\n", ("a", "b", 1, "x"), 5),
        ("[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\nx = 1\n", ("a", 1, "b", 0, "x"), 5),
        ("d = 1979-05-27 07:32:00Z\ne = 1\n", ("e",), 2),
        ("x = { a = [\n1] }\n", ("x", "a"), 1),
    ],
)
def test_small_documents(text: str, path: tuple[str | int, ...], line: int) -> None:
    """Quote runs, escapes, nested arrays, CRLF, quoted keys and nested arrays of tables."""
    tomllib.loads(text)  # each case is valid TOML
    assert toml_lines(text)[path] == line


# --- property: every leaf of any document tomli_w writes ------------------------------------

_TOML_INT = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TRICKY = "\"'\\#=[]{}.,\n\r\t a"
_KEYS = st.one_of(st.text(max_size=8), st.text(alphabet=_TRICKY + "é☃", max_size=6))
# tomli_w writes a carriage return inside a multi-line string as it is, and TOML reads a raw
# CRLF there as LF; values have none, so the round trip tests toml_lines and not tomli_w.
_TEXTS = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=_TRICKY, max_size=12),
    st.lists(st.sampled_from(['"', '"""', "'''", "\n", "x = 1", "[t]", "\\"]), max_size=6).map(
        "".join
    ),
).map(lambda text: text.replace("\r", ""))
_LEAVES = st.one_of(_TOML_INT, st.booleans(), _TEXTS, st.lists(_TOML_INT, max_size=4))


def _values(depth: int) -> st.SearchStrategy[Any]:
    """Leaves, tables and arrays of tables nested up to ``depth`` deep.

    Bounded by hand: st.recursive makes the same documents several times slower to draw.
    """
    if depth == 0:
        return _LEAVES
    tables = st.dictionaries(_KEYS, _values(depth - 1), max_size=3)
    return st.one_of(_LEAVES, tables, st.lists(tables, min_size=1, max_size=2))


_DOCUMENTS = st.dictionaries(_KEYS, _values(3), max_size=4)


def _leaves(table: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*path, key))
        elif not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            yield (*path, key)


def _written_key(key: str) -> str:
    return tomli_w.dumps({key: 0}).split(" = ")[0]


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS)
def test_every_leaf_line_names_its_key(data: dict[str, Any]) -> None:
    """For any document tomli_w writes, each leaf's line holds its key followed by ' = '."""
    try:
        text = tomli_w.dumps(data, multiline_strings=True)
    except (TypeError, ValueError):
        reject()
    assert tomllib.loads(text) == data
    lines = toml_lines(text)
    rows = text.split("\n")
    for path in _leaves(data):
        assert path in lines, f"no line for {path!r}"
        row = rows[lines[path] - 1]
        assert f"{_written_key(path[-1])} = " in row, f"{path!r} -> line {lines[path]}: {row!r}"


def _paths(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        yield (*path, key), item
        if isinstance(item, dict | list):
            yield from _paths(item, (*path, key))


def _literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return None


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS)
def test_every_value_inside_arrays_has_a_line(data: dict[str, Any]) -> None:
    """Through arrays of tables and arrays too, each key's line names it and each item has one."""
    try:
        text = tomli_w.dumps(data, multiline_strings=True)
    except (TypeError, ValueError):
        reject()
    lines = toml_lines(text)
    rows = text.split("\n")
    for path, value in _paths(data):
        if isinstance(value, dict) and isinstance(path[-1], str) and path not in lines:
            continue  # a table only implied by a header such as [a.b] has no line of its own
        assert path in lines, f"no line for {path!r}"
        row = rows[lines[path] - 1]
        if isinstance(path[-1], str) and not isinstance(value, dict | list):
            assert f"{_written_key(path[-1])} = " in row, f"{path!r}: {row!r}"
        literal = _literal(value)
        if isinstance(path[-1], int) and literal is not None:
            assert literal in row, f"{path!r} = {literal}: {row!r}"
