"""A base for the small records the resolver makes by the hundred.

A dataclass or a named tuple would do, but each costs a fraction of a
millisecond or more to create when its module is imported, and they bring
`inspect` or `typing` along; `import budgetconf` defines every record. A
record here is a class whose ``__slots__`` name its fields, each one a
keyword of its constructor. Records cannot be changed once made: a
resolution, and every record in it, may be handed to more than one caller.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final, Self

#: what a secret, or a value that may be one, is shown as, in every rendering, error and log
MASK: Final = "***"


#: how a record's constructor sets a field, past the guard against any later change
set_field = object.__setattr__


class ReadOnly:
    """An object whose attributes cannot be set or deleted once it is made.

    Its constructor sets them with `set_field`.
    """

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only; cannot delete {name!r}")


class Record(ReadOnly):
    """Equality, hashing, a readable repr and `replace`, from the fields in ``__slots__``.

    A record that holds a value whose secrecy it cannot know (a source's raw
    offer, before any field judges it) names that field in ``unshown``: its
    repr shows `MASK` there, so no repr can spell out a secret.
    """

    __slots__: tuple[str, ...] = ()
    #: the fields a repr never shows (a field left at None is shown, as it holds nothing)
    unshown: ClassVar[tuple[str, ...]] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record) or type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self._shown(name)}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def _shown(self, name: str) -> str:
        value = getattr(self, name)
        return MASK if name in self.unshown and value is not None else repr(value)

    def replace(self, **changes: Any) -> Self:
        """A copy with the fields named in ``changes`` changed."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        return type(self)(**(fields | changes))


class Unusable:
    """A file value that no field may take, kept with the text the file had.

    Parsers put one in place of the value when the text cannot mean one thing:
    YAML's ``010`` (8 in YAML 1.1, 10 in 1.2), JSON's ``1e400`` (past any
    float). Validation rejects it as ``{what}: {text} ({hint})``. (Not a
    tuple, so that no check for a list or tuple value mistakes it for one.)
    """

    __slots__ = ("hint", "text", "what")

    def __init__(self, text: str, what: str, hint: str) -> None:
        self.text = text
        self.what = what
        self.hint = hint

    def __repr__(self) -> str:
        return f"Unusable(text={self.text!r}, what={self.what!r}, hint={self.hint!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Unusable):
            return NotImplemented
        return (self.text, self.what, self.hint) == (other.text, other.what, other.hint)

    def __hash__(self) -> int:
        return hash((self.text, self.what, self.hint))
