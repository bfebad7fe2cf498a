"""Values as messages show them: quoted in their own notation, cut to size, or only named.

Every message that quotes a value a person gave goes through here, so a URL's
password is hidden (`conceal`) and a long value is cut the same way wherever
it is shown; a value of unknown secrecy is named by its type and never shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from budgetconf._record import Unusable
from budgetconf._text import clipped
from budgetconf.ledger._address import conceal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeAlias

#: a field's value; a table's is a mapping of its keys to values of one scalar type
Scalar: TypeAlias = int | float | bool | str | None
Value: TypeAlias = "Scalar | Mapping[str, Scalar]"


def show_text(raw: str) -> str:
    """Quote text as it was given: ``'abc'``; past `SHOWN <budgetconf._text.SHOWN>` characters,
    its start, and how long it is."""
    return clipped(str(conceal(raw)), repr)


def show_typed(value: object) -> str:
    """Quote a typed value as a message shows it: `typed_text`, cut as `show_text` cuts."""
    if isinstance(value, str):
        return clipped(str(conceal(value)), typed_text)
    return clipped(typed_text(value))


def typed_text(value: object) -> str:
    """A typed value in the notation of the files it comes from: ``"7"``, ``true``; whole."""
    if isinstance(value, Unusable):
        return value.text
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # inf, -inf, nan: how TOML writes them and YAML nearly does
    if isinstance(value, tuple):
        return repr(value)
    import json  # only to show a value

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def show_value(value: Value) -> str:
    """A resolved value for people: ``40``, ``"wrap_up"``, ``unset``."""
    return "unset" if value is None else show_typed(value)


def type_name(value: object) -> str:
    """What ``value`` is, for a message that must not quote it: ``a list``, ``a string``.

    A value of unknown secrecy (a section's body, a step, what a settings
    object holds) is named this way and never shown.
    """
    if isinstance(value, Unusable):
        return f"a value that is {value.what}"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, tuple):
        return "a tuple"
    return type(value).__name__


def plain_number(number: float) -> str:
    """A bound for people: ``2500000``, not ``2.5e+06``; ``0.5`` as it is."""
    return str(int(number)) if float(number).is_integer() else str(number)
