"""API keys: refused before any request when they could not be sent, and masked in any text.

An API key read from a file with CRLF line ends ends in a carriage return; one
pasted with a line break holds a line feed. An HTTP library refuses such a
header and quotes it, escaped, in its error: masking the exact key would miss
it there. So a key that is not one word of printable ASCII is refused before it
reaches the library, by a message that names where it came from and not what
it is, and any text made from a library's or a server's error is masked
against every form of the key it could hold.
"""

from __future__ import annotations

import json

from budgetconf._record import MASK

#: pieces of a key shorter than this are not masked on their own: they would garble the text
_PIECE: int = 4


def key_flaw(key: str) -> str | None:
    """What makes ``key`` unfit for an HTTP header, in words that do not spell it; None if fit.

    No key at all is left to the client, which may have its own way to get one.
    """
    for char in key:
        if "!" <= char <= "~":
            continue
        if char == "\r":
            what = "a carriage return (a file with CRLF line ends?)"
        elif char == "\n":
            what = "a line feed"
        elif char.isspace():
            what = "white space"
        elif char < " " or char == "\x7f":
            what = "a control character"
        else:
            what = "a character outside printable ASCII"
        return f"holds {what}"
    return None


def forms(key: str) -> list[str]:
    """Every form of ``key`` a message may hold, longest first.

    The key; stripped; escaped as Python and JSON quote it; and each of its
    pieces between white space and control characters, which is what an
    escaped header shows of it (``b'Bearer sk-abc\\r'``).
    """
    found = {key, key.strip(), repr(key)[1:-1], json.dumps(key)[1:-1]}
    piece = []
    for char in key + " ":
        if "!" <= char <= "~":
            piece.append(char)
            continue
        if len(piece) >= _PIECE:
            found.add("".join(piece))
        piece = []
    return sorted((f for f in found if f), key=len, reverse=True)


def masked(text: str, *keys: object) -> str:
    """``text`` with every form of each key replaced by `MASK`; a key that is no text is skipped."""
    for key in keys:
        if isinstance(key, str) and key:
            for form in forms(key):
                text = text.replace(form, MASK)
    return text
