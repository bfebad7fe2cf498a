"""Text from outside made fit to show: what is escaped, in which notation, and how it is cut."""

from __future__ import annotations

import json
import tomllib

import pytest
import tomli_w
from hypothesis import given
from hypothesis import strategies as st

from budgetconf._text import clipped, escape, escape_json, escape_toml, listed

#: what a terminal or an editor acts on, with how a terminal is shown it
UNSAFE = {
    "\x1b": "\\x1b",  # ESC: colours, titles, a cleared screen
    "\x07": "\\x07",  # BEL, which ends an OSC sequence
    "\r": "\\r",  # back to the start of the line, over what was written
    "\x7f": "\\x7f",  # DEL
    "\x9b": "\\x9b",  # C1 CSI: ESC [ in one character
    "\x9d": "\\x9d",  # C1 OSC
    "\u202e": "\\u202e",  # right-to-left override
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u200b": "\\u200b",  # zero-width space
    "\ufeff": "\\ufeff",  # byte order mark
    "\u2028": "\\u2028",  # line separator
    "\udcff": "\\udcff",  # an undecodable byte of a file name
    "\U000e0041": "\\U000e0041",  # a tag character: invisible text
}
#: what is shown as it is: it prints as itself and moves nothing
KEPT = ["é", "日本", "\u00a0", "\u202f", "👩\u200d💻", "\u200c", "\U000f0000", "\u0378"]


@pytest.mark.parametrize(("char", "shown"), UNSAFE.items())
def test_a_character_a_terminal_acts_on_is_shown_as_its_escape(char: str, shown: str) -> None:
    """Controls, C1, bidi overrides, invisible format characters and surrogates are escaped."""
    assert escape(f"a{char}b") == f"a{shown}b"


@pytest.mark.parametrize("text", KEPT)
def test_letters_spaces_and_joiners_are_shown_as_they_are(text: str) -> None:
    """Other scripts, other spaces, emoji joiners and unassigned characters are left alone."""
    assert escape(text) == text


def test_newline_and_tab_are_kept_unless_asked_otherwise() -> None:
    """By default lines and tabs pass; with ``keep=""`` they are escaped like the rest."""
    assert escape("a\nb\tc\x1b") == "a\nb\tc\\x1b"
    assert escape("a\nb\tc", keep="") == "a\\nb\\tc"


@given(st.text())
def test_escaped_text_holds_nothing_a_terminal_acts_on(text: str) -> None:
    """Whatever the text, what is left is printable but for kept newlines and tabs."""
    shown = escape(text)
    assert [c for c in shown if _unsafe(c) and c not in "\n\t"] == []
    shown.encode("utf-8")  # no lone surrogate is left to fail the encoding


def _unsafe(char: str) -> bool:
    """The rule, spelled out: controls, surrogates, separators, format characters but joiners."""
    import unicodedata

    category = unicodedata.category(char)
    return category in ("Cc", "Cs", "Zl", "Zp", "Cf") and char not in "\u200c\u200d"


@given(st.text())
def test_a_json_document_escaped_reads_back_the_same(text: str) -> None:
    """``escape_json`` changes how a document is spelled, never what it says."""
    document = json.dumps({"k": text, text: [text]}, ensure_ascii=False)
    safe = escape_json(document)
    assert json.loads(safe) == json.loads(document)
    assert [c for c in safe if _unsafe(c) and c != "\n"] == []


@pytest.mark.parametrize("char", [c for c in UNSAFE if c != "\udcff"])
def test_a_json_document_spells_c1_and_the_rest_as_u_escapes(char: str) -> None:
    """The characters json.dumps lets through raw become ``\\u`` escapes, in pairs past U+FFFF."""
    safe = escape_json(json.dumps(char, ensure_ascii=False))
    assert safe == json.dumps(char)  # as ensure_ascii=True spells it
    assert json.loads(safe) == char


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])))
def test_a_toml_document_escaped_reads_back_the_same(text: str) -> None:
    """``escape_toml`` turns each unsafe character of a tomli_w string into a TOML escape."""
    document = tomli_w.dumps({"section": {"key": text}})
    safe = escape_toml(document)
    assert tomllib.loads(safe) == {"section": {"key": text}}
    assert [c for c in safe if _unsafe(c) and c != "\n"] == []


def test_a_surrogate_in_a_toml_document_is_shown_as_text() -> None:
    """TOML has no escape for a surrogate (an undecodable byte of a file name): it reads as text,
    so a comment that quotes a file name shows it rather than failing to encode."""
    assert escape_toml("# a\udcff.toml\n") == "# a\\udcff.toml\n"


def test_a_value_past_eighty_characters_is_cut_and_says_by_how_much() -> None:
    """The start is kept inside the quotes; the note gives the length and what was cut."""
    assert (
        clipped("a" * 100_000, repr) == "'" + "a" * 80 + "…' (100000 characters, 99920 not shown)"
    )
    assert clipped("b" * 81) == "b" * 80 + "… (81 characters, 1 not shown)"
    assert clipped("c" * 80, repr) == repr("c" * 80)


def test_a_long_list_of_names_keeps_its_first_ten() -> None:
    """``… and 19990 more``; each name is cut as a value is."""
    names = [f"step{i}" for i in range(20_000)]
    shown = listed(names)
    assert shown == ", ".join(names[:10]) + " … and 19990 more"
    assert listed(["x" * 200]) == "x" * 80 + "… (200 characters, 120 not shown)"
    assert listed(["a", "b"]) == "a, b"
