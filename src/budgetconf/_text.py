"""Text from outside, made fit to show: escaped for a terminal or a document, bounded in length.

What budgetconf prints or writes often holds text it was given: a file's keys
and values, a file's name, a variable, a preset's name, a server's answer.

*Escaping.* A character that a terminal or an editor would act on instead of
showing is written as its escape. Those are the controls (C0 but the newline
and the tab where they are kept, DEL, C1), the surrogates a file name's
undecodable bytes become, the line and paragraph separators, and the format
characters (bidirectional overrides and isolates, zero-width spaces, the byte
order mark, tag characters) but the two joiners, which emoji and some scripts
need. Everything else, other spaces and unassigned characters included, is
shown as it is. A terminal sees ``\\x1b``, ``\\x9b``, ``\\u202e``; a JSON or
TOML document gets the escape its format reads back as the same character.

*Bounding.* A value or a list of names echoed in a message keeps its start
and says how much was cut: ``'aaaa…' (100000 characters, 99920 not shown)``,
``a, b, c … and 19990 more``. What is for tools (a document's ``raw``) is
never cut; only what is repeated to a person is.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Final

#: characters of a value a message shows before it is cut
SHOWN: Final = 80
#: names of a list a message shows before it says how many more there are
SHOWN_NAMES: Final = 10
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cs", "Zl", "Zp"})
_JOINERS: Final = frozenset("\u200c\u200d")


def _unsafe(char: str) -> bool:
    """Whether ``char`` is acted on rather than shown (called only when it is not printable)."""
    import unicodedata  # only for text that holds a character str.isprintable() refuses

    category = unicodedata.category(char)
    return category in _UNSAFE_CATEGORIES or (category == "Cf" and char not in _JOINERS)


def _terminal(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def _json(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character past the first plane as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _toml(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:  # no TOML escape names a surrogate: show it as text
        return _terminal(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _escaped(text: str, keep: str, spell: Callable[[str], str]) -> str:
    if text.isprintable():  # nearly always: a single scan, in C
        return text
    if "\n" in text and "\n" in keep:  # line by line, so that only an odd line is read slowly
        return "\n".join(_escaped(line, keep, spell) for line in text.split("\n"))
    return "".join(
        spell(c) if not (c.isprintable() or c in keep) and _unsafe(c) else c for c in text
    )


def escape(text: str, keep: str = "\n\t") -> str:
    """``text`` fit for a terminal: each unsafe character as ``\\x1b``, ``\\u202e``, ``\\n``.

    The characters of ``keep`` (by default the newline and the tab) stay as they are.
    """
    return _escaped(text, keep, _terminal)


def escape_json(document: str) -> str:
    """A JSON document's unsafe characters as ``\\u0080`` escapes: the same document, to a reader.

    ``json.dumps`` escapes C0 controls but lets DEL, C1 and the rest through as
    they are; outside its strings a document has no such character, so this
    changes only what is inside them.
    """
    return _escaped(document, "\n", _json)


def escape_toml(document: str) -> str:
    """A TOML document's unsafe characters as ``\\u0080`` escapes (in its comments, as text).

    The document must write its strings as basic strings, as tomli_w does:
    there an escape reads back as the character.
    """
    return _escaped(document, "\n", _toml)


def clipped(text: str, quote: Callable[[str], str] | None = None, limit: int = SHOWN) -> str:
    """``text`` (quoted by ``quote``, if given) with at most ``limit`` of its characters shown.

    ``'aaaa…' (100000 characters, 99920 not shown)``: the start is kept, the
    ellipsis goes inside the quotes, and the note says how much was cut.
    """
    if len(text) <= limit:
        return text if quote is None else quote(text)
    start = text[:limit] if quote is None else quote(text[:limit])
    if quote is not None:  # the ellipsis inside the closing quote
        start = start[:-1] + "…" + start[-1]
    else:
        start += "…"
    return f"{start} ({len(text)} characters, {len(text) - limit} not shown)"


def listed(names: Iterable[str], limit: int = SHOWN_NAMES, separator: str = ", ") -> str:
    """``a, b, c``: at most ``limit`` names, each clipped, then ``… and 19990 more``."""
    items = list(names)
    shown = separator.join(clipped(name) for name in items[:limit])
    more = len(items) - limit
    return f"{shown} … and {more} more" if more > 0 else shown
