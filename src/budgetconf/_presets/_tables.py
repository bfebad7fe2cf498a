"""What every part of the preset reader checks a table with: its keys, and each value's type.

A preset that breaks the format raises `Bad`, whose message says where; the
reader turns it into a `PresetError` naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._spelling import did_you_mean
from budgetconf._values import show_text, show_typed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Bad(Exception):
    """A preset file that breaks the format; the message says where."""


def take(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``table[key]`` if present, checked to be of ``kind`` (a bool is never a number)."""
    value = table.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise Bad(f"{where}{key}: expected {_names(kinds)}, got {show_typed(value)}")
    return value


def _names(kinds: tuple[type, ...]) -> str:
    words = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "a table",
    }
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def strings(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    items = take(table, key, list, where) or []
    for item in items:
        if not isinstance(item, str):
            raise Bad(f"{where}{key}: expected a list of strings, got {show_typed(item)}")
    return tuple(items)


def check_keys(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        hint = did_you_mean(unknown[0], sorted(allowed))
        tail = f" (did you mean {hint!r}?)" if hint else ""
        raise Bad(f"{where}unknown key {show_text(unknown[0])}{tail}")
