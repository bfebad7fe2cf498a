"""Text from an events file, made safe to put in the page: escaped, bounded, numbers shown.

Every string the page holds that came from an events file passes through
`text` (element content) or `attr` (an attribute's value): unsafe characters
(controls, surrogates, bidirectional overrides) become visible escapes as on a
terminal, the markup characters ``& < > " '`` become entities, and a long
value is cut with a note of how much was left out.
"""

from __future__ import annotations

import html
import json
from typing import Final

from budgetconf._text import clipped, escape

#: characters of one text a page cell shows
SHOWN: Final = 200


def text(value: object, limit: int = SHOWN) -> str:
    """``value`` as element content: escaped for the page, at most ``limit`` characters shown."""
    return html.escape(escape(clipped(_as_text(value), limit=limit), keep=""), quote=True)


def breakable(value: object, limit: int = SHOWN) -> str:
    """`text`, with a chance to break the line after each ``_``, ``.`` and ``/``: a name
    (``max_tool_calls_per_turn``, ``limits.max_tokens``, a path) breaks between its parts,
    never inside one."""
    shown = text(value, limit)
    for mark in "_./":  # none of them is in an entity html.escape writes
        shown = shown.replace(mark, mark + "<wbr>")
    return shown


def attr(value: object) -> str:
    """``value`` as an attribute's value, within double quotes."""
    return text(value, limit=80)


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return number(value)
    # a list or an object, where text was expected: as JSON, bounded
    return json.dumps(value, ensure_ascii=False, default=str)[: SHOWN * 4]


def number(value: float) -> str:
    """``1,234``, ``0.0123``, ``1.5e+20``: a count grouped, a fraction to six digits."""
    if isinstance(value, int):
        shown = f"{value:,}"
        return shown if len(shown) <= 26 else f"a number of {len(str(abs(value)))} digits"
    return f"{value:,.6g}"


def percent(fraction: float) -> str:
    """A fraction as a share for a person: ``0.8`` is ``80%``, to two decimals at most."""
    return number(round(fraction * 100, 2)) + "%"
