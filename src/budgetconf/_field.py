"""A field, its type and constraints, and the checks every value goes through.

A field is one knob, named by a dotted path ``section.name``. Values reach a
field in two forms: *text* (environment variables, flags, ``--set``), which is
parsed by the strict rules below, and *typed* values (JSON, TOML, YAML, code),
which must already have the field's type. Both paths end in the same
constraint check, so a value means the same thing whichever source gave it.
"""

from __future__ import annotations

import math
import operator
from enum import StrEnum

from budgetconf._record import MASK, Record, Unusable, set_field
from budgetconf._spelling import did_you_mean
from budgetconf._text import listed
from budgetconf._text_formats import FORMATS, text_problem
from budgetconf._values import Value, plain_number, show_text, show_typed, show_value, type_name
from budgetconf.ledger._address import conceal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

MAX_INT: Final = 2**63 - 1
_MAX_DIGITS: Final = len(str(MAX_INT))
# The text of a number. `[0-9]` is ASCII only, unlike `\d`, which would admit '٤٠';
# integers are checked without a pattern, and as strictly (ASCII digits only).
NUMBER_TEXT: Final = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_ASCII_SPACE: Final = " \t\n\r\f\v"
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


class Kind(StrEnum):
    """The type of a field."""

    __module__ = "budgetconf"
    INT = "int"
    NUMBER = "number"
    BOOL = "bool"
    ENUM = "enum"
    TEXT = "text"
    TABLE = "table"


class BadKey(KeyError):
    """A table's key that the table's rule refuses; its message (``args[0]``) says why."""


class Invalid(Exception):
    """A value a field cannot take; ``reason`` quotes the raw value."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def shown_default(f: Field) -> str:
    """A field's default for help texts: ``40``, ``wrap_up``, ``unset``, the field it follows."""
    if f.default_from:
        return f"the value of {f.default_from}"
    return f.public(f.default) if isinstance(f.default, str) else f.mask(show_value(f.default))


class Field(Record):
    """One knob: its type, constraints, default and the names users set it by.

    ``default_from`` names another field whose resolved value this one takes
    when it is left unset; ``format`` names the rule of `FORMATS` a ``text``
    field's values follow (``ledger-url``), or None for any text.

    A ``table`` field's keys are free and its values share one type: ``item``
    is that type (the bounds, choices and format are its values'), ``keys``
    the rule of `FORMATS` every key follows (``tool-name``). Each key is
    resolved as a field of its own, its `entry` (``tools.max_calls.web_search``),
    whose ``table`` names the table it belongs to.
    """

    __module__ = "budgetconf"
    __slots__ = (
        "aliases",
        "choices",
        "default",
        "default_from",
        "env",
        "flags",
        "format",
        "ge",
        "gt",
        "help",
        "item",
        "keys",
        "kind",
        "le",
        "lt",
        "optional",
        "path",
        "secret",
        "table",
    )

    path: str
    kind: Kind
    default: Value
    optional: bool
    ge: float | None
    gt: float | None
    le: float | None
    lt: float | None
    choices: tuple[str, ...]
    env: tuple[str, ...]
    flags: tuple[str, ...]
    aliases: tuple[str, ...]
    secret: bool
    help: str
    default_from: str | None
    format: str | None
    item: Kind | None
    keys: str | None
    table: str | None

    def __init__(
        self,
        path: str,
        kind: Kind,
        default: Value = None,
        optional: bool = False,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        choices: tuple[str, ...] = (),
        env: tuple[str, ...] = (),
        flags: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        secret: bool = False,
        help: str = "",
        default_from: str | None = None,
        format: str | None = None,
        item: Kind | None = None,
        keys: str | None = None,
        table: str | None = None,
    ) -> None:
        set_field(self, "path", path)
        set_field(self, "kind", kind)
        set_field(self, "default", default)
        set_field(self, "optional", optional)
        set_field(self, "ge", ge)
        set_field(self, "gt", gt)
        set_field(self, "le", le)
        set_field(self, "lt", lt)
        set_field(self, "choices", choices)
        set_field(self, "env", env)
        set_field(self, "flags", flags)
        set_field(self, "aliases", aliases)
        set_field(self, "secret", secret)
        set_field(self, "help", help)
        set_field(self, "default_from", default_from)
        set_field(self, "format", format)
        set_field(self, "item", item)
        set_field(self, "keys", keys)
        set_field(self, "table", table)

    def __repr__(self) -> str:
        default = MASK if self.secret else repr(self.default)
        return f"Field({self.path!r}, {self.kind.value}, default={default})"

    @property
    def section(self) -> str:
        """``loop`` of ``loop.max_steps``."""
        return self.path.partition(".")[0]

    @property
    def name(self) -> str:
        """``max_steps`` of ``loop.max_steps``."""
        return self.path.partition(".")[2]

    @property
    def key(self) -> str | None:
        """``web_search`` of the entry ``tools.max_calls.web_search``; None for any other field."""
        return None if self.table is None else self.path[len(self.table) + 1 :] or None

    def entry(self, key: str | None = None) -> Field:
        """The field of a table's value at ``key``; with no key, the field every value of the
        table is judged by (its rules, under the table's own path)."""
        assert self.item is not None, "only a table has entries"
        return Field(
            self.path if key is None else f"{self.path}.{key}",
            self.item,
            ge=self.ge,
            gt=self.gt,
            le=self.le,
            lt=self.lt,
            choices=self.choices,
            secret=self.secret,
            help=self.help,
            format=self.format,
            table=self.path,
        )

    @property
    def noun(self) -> str:
        """What a value of this field is, for messages: 'an integer'."""
        return {
            Kind.INT: "an integer",
            Kind.NUMBER: "a number",
            Kind.BOOL: "a boolean",
            Kind.ENUM: "one of " + ", ".join(self.choices),
            Kind.TEXT: "text",
            Kind.TABLE: f"a table of {self.keys or 'text'} keys",
        }[self.kind]

    def mask(self, shown: str) -> str:
        """``shown``, or `MASK` when the field is secret."""
        return MASK if self.secret else shown

    def public(self, value: Any) -> Any:
        """``value`` as any rendering may hold it: `MASK` when the field is secret, else with
        the password of any URL in it masked (`conceal`)."""
        return MASK if self.secret else conceal(value)

    def show_raw(self, raw: object, text: bool) -> str:
        """A raw value quoted for a person: ``'abc'`` as text, ``"7"`` as typed, secrets masked."""
        if self.secret:
            return MASK
        return show_text(raw) if text and isinstance(raw, str) else show_typed(raw)

    def _not_a(self, raw: object, text: bool, note: str = "") -> Invalid:
        if self.kind is Kind.ENUM:
            what = "not one of " + listed(self.choices)
        else:
            what = "not " + self.noun
        return Invalid(f"{what}: {self.show_raw(raw, text)}{note}")

    def _out_of_range(self, raw: object, text: bool, hint: str = "") -> Invalid:
        """``out of range: '99…9' (must be between 1 and 9223372036854775807)``: the range said."""
        note = f"{hint}; " if hint else ""
        return Invalid(f"out of range: {self.show_raw(raw, text)} ({note}must be {self.allowed()})")

    def allowed(self) -> str:
        """The values the field may take, for a message: ``>= 1``, ``between 1 and 10000``.

        An integer is also bounded by what a field can hold (2**63 - 1 either
        way), and a number must be finite, so each says so when its own
        bounds leave a side open.
        """
        lows = _shown_bounds((">=", self.ge), (">", self.gt))
        highs = _shown_bounds(("<=", self.le), ("<", self.lt))
        if self.kind is Kind.INT:
            lows = lows or [f">= {-MAX_INT}"]
            highs = highs or [f"<= {MAX_INT}"]
        if len(lows) == len(highs) == 1 and lows[0][:2] == ">=" and highs[0][:2] == "<=":
            return f"between {lows[0][3:]} and {highs[0][3:]}"
        bounds = " and ".join(lows + highs)
        if self.kind is Kind.NUMBER and not (lows and highs):
            return f"a finite number {bounds}".rstrip()
        return bounds

    def parse_text(self, raw: str) -> Value:
        """The value of text from an environment variable, a flag or ``--set``."""
        text = raw.strip(_ASCII_SPACE)
        if self.kind is Kind.INT:
            return self._int_text(text, raw)
        if self.kind is Kind.NUMBER:
            return self._number_text(text, raw)
        if self.kind is Kind.BOOL:
            return self._bool_text(text, raw)
        if self.kind is Kind.TEXT:
            return self._text(text, raw, True)
        if text in self.choices:
            return text
        raise self._not_a(raw, True, self._suggest(text))

    def _int_text(self, text: str, raw: str) -> int | float:
        """ASCII digits with an optional sign, read without int()'s 4300-digit limit."""
        digits = text[1:] if text[:1] in ("+", "-") else text
        if not (digits.isascii() and digits.isdigit()):
            raise self._not_a(raw, True)
        digits = digits.lstrip("0") or "0"  # int() counts leading zeros too
        if len(digits) > _MAX_DIGITS:  # before int(): 4300-digit limit
            raise self._out_of_range(raw, True)
        number = int(digits)
        return self._check(-number if text[0] == "-" else number, raw, True)

    def _number_text(self, text: str, raw: str) -> int | float:
        import re  # re caches the pattern; `import budgetconf` does not load re

        if not re.fullmatch(NUMBER_TEXT, text):
            raise self._not_a(raw, True)
        return self._check(float(text), raw, True)

    def _bool_text(self, text: str, raw: str) -> bool:
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise self._not_a(raw, True)

    def check_value(self, value: object) -> Value:
        """The value of a typed value from a file or from code."""
        if isinstance(value, Unusable):
            raise self._unusable(value)
        if value is None:
            if self.optional:
                return None
            raise Invalid(f"null is not allowed: {self.path} must be {self.noun}")
        if self.kind is Kind.TEXT:
            return self._typed_text(value)
        if self.kind is Kind.INT:
            return self._typed_int(value)
        if self.kind is Kind.NUMBER:
            return self._typed_number(value)
        if self.kind is Kind.BOOL:
            if type(value) is not bool:
                raise self._not_a(value, False, f" ({type_name(value)})")
            return value
        if isinstance(value, str) and value in self.choices:
            return value
        note = self._suggest(value) if isinstance(value, str) else f" ({type_name(value)})"
        raise self._not_a(value, False, note)

    def _typed_int(self, value: object) -> int | float:
        if type(value) is not int:
            raise self._not_a(value, False, f" ({type_name(value)})")
        return self._check(value, value, False)

    def _typed_number(self, value: object) -> int | float:
        """An int or a float, as a float: an int too large for one is out of range."""
        if type(value) not in (int, float):
            raise self._not_a(value, False, f" ({type_name(value)})")
        try:
            number = float(value)  # type: ignore[arg-type]  # int or float, checked above
        except OverflowError:
            raise self._out_of_range(value, False) from None
        return self._check(number, value, False)

    @property
    def strict(self) -> bool:
        """Whether an invalid value is an error under every invalid policy: its format says."""
        return self.format is not None and FORMATS[self.format].strict

    def _typed_text(self, value: object) -> str:
        if not isinstance(value, str):
            raise self._not_a(value, False, f" ({type_name(value)})")
        return self._text(value, value, False)

    def _text(self, value: str, raw: object, text: bool) -> str:
        reason = text_problem(self.format, value)
        if reason is not None:
            raise Invalid(f"{reason}: {self.show_raw(raw, text)}")
        return value

    def _unusable(self, value: Unusable) -> Invalid:
        hint = "" if self.secret else value.hint  # the hint may spell the value out
        if value.what == "out of range":  # what a parser says of a number past any field's
            return self._out_of_range(value, False, hint)
        return Invalid(
            f"{value.what}: {self.show_raw(value, False)}" + (f" ({hint})" if hint else "")
        )

    def _check(self, number: int | float, raw: object, text: bool) -> int | float:
        if isinstance(number, float) and not math.isfinite(number):
            raise self._out_of_range(raw, text)
        if isinstance(number, int) and abs(number) > MAX_INT:
            raise self._out_of_range(raw, text)
        for bound, holds, op in _BOUNDS:
            limit = getattr(self, bound)
            if limit is not None and not holds(number, limit):
                # with bounds on both sides, both: `between 1 and 10000` rather than one of them
                both = (self.ge, self.gt) != (None, None) and (self.le, self.lt) != (None, None)
                wanted = self.allowed() if both else f"{op} {plain_number(limit)}"
                raise Invalid(f"must be {wanted}, got {self.show_raw(raw, text)}")
        return number

    def _suggest(self, text: str) -> str:
        if self.secret:  # a suggestion would tell how close the value is to a choice
            return ""
        hint = did_you_mean(text, self.choices)
        return f" (did you mean {hint!r}?)" if hint else ""


def _shown_bounds(*bounds: tuple[str, float | None]) -> list[str]:
    """``[">= 1"]`` of ``(">=", 1), (">", None)``: the bounds that are set, for a message."""
    return [f"{op} {plain_number(v)}" for op, v in bounds if v is not None]


_BOUNDS: Final = (
    ("ge", operator.ge, ">="),
    ("gt", operator.gt, ">"),
    ("le", operator.le, "<="),
    ("lt", operator.lt, "<"),
)
