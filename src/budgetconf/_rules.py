"""An administrator's rules for fields: ceilings, floors, locked values and defaults.

The ``policy`` source reads them from its files (``sources/policy.py``) and
the merge applies them to each field's settled trace (``_policing``). Each
bound keeps the place it was written, and whether a value past it is
clamped to it or rejected, since two policy files may each give a field
some of its bounds.
"""

from __future__ import annotations

from budgetconf._record import MASK, Record, set_field
from budgetconf.ledger._address import conceal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from budgetconf._values import Value

#: a rule's bounds, in the order the explain document and the messages name them
BOUNDS: Final = ("value", "max", "min", "default")


class Bound(Record):
    """One bound of a rule: its value, where it is written, and what happens past it."""

    __slots__ = ("locator", "reject", "value")

    value: Value
    locator: str
    reject: bool

    def __init__(self, value: Value, locator: str, reject: bool = False) -> None:
        set_field(self, "value", value)
        set_field(self, "locator", locator)
        set_field(self, "reject", reject)


class Rule(Record):
    """What the policy says of one field: any of ``max``, ``min``, a locked ``value``, a
    ``default``."""

    __slots__ = ("default", "max", "min", "value")

    value: Bound | None
    max: Bound | None
    min: Bound | None
    default: Bound | None

    def __init__(
        self,
        value: Bound | None = None,
        max: Bound | None = None,
        min: Bound | None = None,
        default: Bound | None = None,
    ) -> None:
        set_field(self, "value", value)
        set_field(self, "max", max)
        set_field(self, "min", min)
        set_field(self, "default", default)

    def bounds(self) -> dict[str, Bound]:
        """The bounds that are set, by name, in `BOUNDS` order."""
        found = {name: getattr(self, name) for name in BOUNDS}
        return {name: bound for name, bound in found.items() if bound is not None}

    def to_dict(self, secret: bool = False) -> dict[str, Any]:
        """``{"max": 200, "locator": "/etc/budgetconf/policy.json:4"}``, with what else is set.

        ``on_exceed`` is there when a bound rejects rather than clamps; ``locators`` when
        the bounds come from more than one place (an added policy file).
        """
        bounds = self.bounds()
        out: dict[str, Any] = {n: MASK if secret else conceal(b.value) for n, b in bounds.items()}
        places = {n: b.locator for n, b in bounds.items()}
        out["locator"] = next(iter(places.values()))
        if len(set(places.values())) > 1:
            out["locators"] = places
        if any(b.reject for b in bounds.values()):
            out["on_exceed"] = "reject"
        return out
