"""A table field's value taken apart: each key checked by the table's rule, each value by
its entry (see `Field.entry`).

A typed value (a file's, code's) is a mapping; text (a variable's, a flag's, ``--set``'s)
is ``KEY=VALUE`` pairs between commas: ``web_search=3,fetch=10``. The merge takes a table's
offer apart key by key, so each key is resolved and explained as a field of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._field import Field, Invalid, Kind
from budgetconf._formats import readable
from budgetconf._text_formats import text_problem
from budgetconf._values import Value, show_text, type_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

_ASCII_SPACE: Final = " \t\n\r\f\v"


def key_problem(table: Field, key: object) -> str | None:
    """What is wrong with ``key`` as a key of ``table``, or None."""
    if not isinstance(key, str):
        return f"a key must be text, got {type_name(key)}"
    problem = text_problem(table.keys, key)
    return None if problem is None else f"{problem}: {show_text(key)}"


def entries(table: Field, value: object, text: bool) -> tuple[list[tuple[str, object]], list[str]]:
    """``value`` of ``table`` as its keys and raw values, and what is wrong on the way (each a
    reason, which quotes what it refuses, said once).

    Text is one place, as a file's table is: a key it gives twice (``a=1,a=2``) is refused
    the second time, and the first stands.
    """
    assert table.kind is Kind.TABLE, "only a table has entries"
    pairs: list[tuple[object, object]] = []
    problems: dict[str, None] = {}
    if text and isinstance(value, str):
        for piece in value.split(","):
            name, eq, item = piece.partition("=")
            if eq:
                pairs.append((name.strip(_ASCII_SPACE), item))
            else:
                problems[f"not KEY=VALUE: {table.show_raw(piece, True)}"] = None
    elif isinstance(value, Mapping):
        pairs = [(key, readable(item)) for key, item in value.items()]  # 10**5000 is unusable
    elif value is None:
        problems[f"null is not allowed: {table.path} must be {table.noun}"] = None
    else:
        problems[f"not {table.noun}: {table.show_raw(value, False)} ({type_name(value)})"] = None
    found: dict[str, object] = {}
    for key, raw in pairs:
        problem = key_problem(table, key)
        if problem is None and key in found:
            problem = f"{show_text(str(key))} is given twice; the first stands"
        if problem is None:
            found[str(key)] = raw
        else:
            problems[problem] = None
    return list(found.items()), list(problems)


def table_value(table: Field, value: object, text: bool) -> dict[str, Value]:
    """A whole table's value, each key and value checked (a preset's default, a flag's text).

    Raises `Invalid` with the first thing wrong.
    """
    found, problems = entries(table, value, text)
    if problems:
        raise Invalid(problems[0])
    entry = table.entry()
    return {
        key: entry.parse_text(raw) if text and isinstance(raw, str) else entry.check_value(raw)
        for key, raw in found
    }
