"""The rules a ``text`` field may declare as its ``format``, one table of them.

A preset's field says ``format = "ledger-url"``; the schema checks each value
by the rule of that name, so the schema names no field of another room. A rule says
what is wrong with a value, or nothing, and whether a value it refuses is an
error under every invalid policy (a broken ledger address must not silently
turn the fleet's budget off).
"""

from __future__ import annotations

from types import MappingProxyType

from budgetconf._record import Record, set_field
from budgetconf._values import show_text
from budgetconf.ledger._address import is_scope, parse_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Final

#: the longest value a ``text`` field takes, whatever its format
MAX_TEXT: Final = 4096


class TextFormat(Record):
    """A row of `FORMATS`: ``problem(value)`` is what is wrong with a value, or None;
    ``example``, a value the rule takes (what ``budgetconf init`` shows of an unset field);
    ``pattern``, the regular expression a whole value matches when the rule is one (what
    ``budgetconf schema`` gives editors), else None."""

    __slots__ = ("example", "pattern", "problem", "strict")

    problem: Callable[[str], str | None]
    example: str
    strict: bool
    pattern: str | None

    def __init__(
        self,
        problem: Callable[[str], str | None],
        example: str,
        *,
        strict: bool = False,
        pattern: str | None = None,
    ) -> None:
        set_field(self, "problem", problem)
        set_field(self, "example", example)
        set_field(self, "strict", strict)
        set_field(self, "pattern", pattern)


def _ledger_url(value: str) -> str | None:
    try:
        parse_url(value)
    except ValueError as exc:
        return f"the ledger URL {exc}"
    return None


#: what a ledger scope is, in words (`is_scope` is the rule)
_SCOPE_RULE: Final = "1 to 128 ASCII letters, digits and -_.:/"
#: a ledger scope, as an expression: what `is_scope` takes
_SCOPE: Final = "[A-Za-z0-9_.:/-]{1,128}"


def _ledger_scope(value: str) -> str | None:
    return None if is_scope(value) else f"not a ledger scope ({_SCOPE_RULE})"


def split_scopes(value: str) -> tuple[str, ...]:
    """The scopes of a ``ledger-scopes`` text, in order: split on commas, each item stripped
    of the ASCII spaces around it (``team:research, org:acme``)."""
    return tuple(item.strip(" ") for item in value.split(","))


def _ledger_scopes(value: str) -> str | None:
    seen: set[str] = set()
    for at, scope in enumerate(split_scopes(value), 1):
        if not scope:
            why = f"item {at} is empty"
        elif not is_scope(scope):
            why = f"{show_text(scope)} is not a ledger scope ({_SCOPE_RULE})"
        elif scope in seen:
            why = f"{show_text(scope)} is given twice"
        else:
            seen.add(scope)
            continue
        return f"not comma-separated ledger scopes: {why}"
    return None


#: comma-separated ledger scopes, each once, as an expression: the lookahead refuses a scope
#: given twice (a whole item, between commas and spaces, met again as a whole item)
_SCOPES: Final = (
    rf"(?!(?:.*,)? *([A-Za-z0-9_.:/-]+) *,(?:.*,)? *\1 *(?:,|$)) *{_SCOPE} *(?:, *{_SCOPE} *)*"
)


#: a tool's name, as a table of tools' limits keys it (`tools.max_calls`)
_TOOL_NAME: Final = "[A-Za-z0-9_.-]{1,64}"


def _tool_name(value: str) -> str | None:
    import re  # here, not at import: re caches the pattern

    if re.fullmatch(_TOOL_NAME, value):
        return None
    return "not a tool name (1 to 64 ASCII letters, digits and _.-)"


#: format name -> its rule
FORMATS: Final[Mapping[str, TextFormat]] = MappingProxyType(
    {
        "ledger-url": TextFormat(_ledger_url, "sqlite:///ledger.db", strict=True),
        "ledger-scope": TextFormat(_ledger_scope, "team:research", pattern=_SCOPE),
        "ledger-scopes": TextFormat(_ledger_scopes, "team:research,org:acme", pattern=_SCOPES),
        "tool-name": TextFormat(_tool_name, "web_search", pattern=_TOOL_NAME),
    }
)

#: the text fields a run reads by their paths (docs/ledger.md), and the format each one follows
#: when its preset names none: an application's own preset that declares ``ledger.url`` has
#: its addresses checked as the built-in one does
FORMAT_BY_PATH: Final[Mapping[str, str]] = MappingProxyType(
    {"ledger.url": "ledger-url", "ledger.scope": "ledger-scope", "ledger.parents": "ledger-scopes"}
)


def text_problem(format: str | None, value: str) -> str | None:
    """What is wrong with ``value`` for a ``text`` field of ``format`` (None: any text), or
    None: at most `MAX_TEXT` characters, and what the format's rule asks."""
    if len(value) > MAX_TEXT:
        return f"longer than {MAX_TEXT} characters"
    return None if format is None else FORMATS[format].problem(value)
