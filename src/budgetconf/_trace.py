"""The records that explain a resolution: candidates, field traces, source reports.

Explain is data first: the resolver keeps every candidate, and these records
turn themselves into the version-1 explain document. Nothing here prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum

from budgetconf._description import MergeMode
from budgetconf._field import Field
from budgetconf._record import MASK, Record, Unusable, set_field
from budgetconf._values import Value
from budgetconf.ledger._address import conceal
from budgetconf.sources._records import DEFAULT_LOCATOR, SourceStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from budgetconf._rules import Rule


class Status(StrEnum):
    """What became of one source's value for a field.

    ``empty`` is a name that was there with nothing in it (an empty
    environment variable): it offers no value, as if it were unset.
    ``clamped`` is a value past a bound of the policy, which took its place:
    the field's value is the bound.
    """

    __module__ = "budgetconf"
    WON = "won"
    SHADOWED = "shadowed"
    REJECTED = "rejected"
    REPLACED = "replaced"
    EMPTY = "empty"
    CLAMPED = "clamped"


class Candidate(Record):
    """One source's value for one field, and what became of it.

    ``value`` is the typed value (None when rejected or empty, or when the
    candidate leaves an optional field unset); ``raw`` is what the source gave, text for
    environment variables and flags; ``alias`` is the name it was set by when
    that was an alias. ``derived_from`` names the field whose value this
    candidate carries, when its field was unset and takes that field's value.
    """

    __module__ = "budgetconf"
    __slots__ = (
        "alias",
        "derived_from",
        "locator",
        "raw",
        "reason",
        "secret",
        "source",
        "status",
        "text",
        "value",
    )

    source: str
    locator: str
    status: Status
    value: Value
    raw: object
    text: bool
    reason: str | None
    alias: str | None
    secret: bool
    derived_from: str | None

    def __init__(
        self,
        source: str,
        locator: str,
        status: Status,
        value: Value,
        raw: object,
        text: bool = False,
        reason: str | None = None,
        alias: str | None = None,
        secret: bool = False,  # the field's: then value and raw are masked wherever shown
        derived_from: str | None = None,
    ) -> None:
        set_field(self, "source", source)
        set_field(self, "locator", locator)
        set_field(self, "status", status)
        set_field(self, "value", value)
        set_field(self, "raw", raw)
        set_field(self, "text", text)
        set_field(self, "reason", reason)
        set_field(self, "alias", alias)
        set_field(self, "secret", secret)
        set_field(self, "derived_from", derived_from)

    @property
    def where(self) -> str:
        """The locator for a person: ``execution.max_iter (path:4)`` for a value taken over."""
        return shown_locator(self.locator, self.derived_from)

    def __repr__(self) -> str:
        value, raw = (
            (MASK, MASK) if self.secret else (repr(conceal(self.value)), repr(conceal(self.raw)))
        )
        return (
            f"Candidate(source={self.source!r}, locator={self.locator!r}, "
            f"status={self.status.value!r}, value={value}, raw={raw})"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "locator": self.locator}
        if self.status is not Status.REJECTED and self.status is not Status.EMPTY:
            out["value"] = MASK if self.secret else conceal(self.value)
        if self.text or self.status is Status.REJECTED:
            out["raw"] = MASK if self.secret else conceal(jsonable(self.raw))
        if self.alias is not None:
            out["alias"] = self.alias
        if self.derived_from is not None:
            out["from"] = self.derived_from
        out["status"] = self.status.value
        if self.reason is not None:
            out["reason"] = self.reason
        return out


class FieldTrace(Record):
    """All candidates of one field in rank order, lowest first, and the winner.

    ``policy`` is the policy's rule for the field, when it has one; ``ruling``
    says which of its bounds decided the value (``ceiling``, ``floor``,
    ``locked``, ``default``), None when the policy left the value be; and
    ``asked`` is the candidate that the ceiling or the floor took the place of.
    """

    __module__ = "budgetconf"
    __slots__ = ("asked", "candidates", "field", "merge", "policy", "ruling", "winner")

    field: Field
    winner: Candidate
    candidates: tuple[Candidate, ...]
    merge: MergeMode
    policy: Rule | None
    ruling: str | None
    asked: Candidate | None

    def __init__(
        self,
        field: Field,
        winner: Candidate,
        candidates: tuple[Candidate, ...],
        merge: MergeMode,
        policy: Rule | None = None,
        ruling: str | None = None,
        asked: Candidate | None = None,
    ) -> None:
        set_field(self, "field", field)
        set_field(self, "winner", winner)
        set_field(self, "candidates", candidates)
        set_field(self, "merge", merge)
        set_field(self, "policy", policy)
        set_field(self, "ruling", ruling)
        set_field(self, "asked", asked)

    @property
    def value(self) -> Value:
        return self.winner.value

    @property
    def source(self) -> str:
        return self.winner.source

    @property
    def locator(self) -> str:
        return self.winner.locator

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.field.public(self.winner.value),
            "source": self.winner.source,
            "locator": self.winner.locator,
            "merge": self.merge.value,
            "candidates": [c.to_dict() for c in self.candidates],
        }
        if self.policy is not None:
            out["policy"] = self.policy.to_dict(self.field.secret)
        return out


class SourceReport(Record):
    """How one source of the stack fared: its status, where it read, what it offered.

    ``place`` is how a message names the place a person edits to raise a value
    there (``the project file ./settings.toml``), None for a source no person
    edits; ``option`` is the command line's option that feeds the source
    (``--set`` for code's), if it has one.
    """

    __module__ = "budgetconf"
    __slots__ = ("error", "locator", "offered", "option", "place", "source", "status")

    source: str
    status: SourceStatus
    locator: str | None
    offered: int
    error: str | None
    place: str | None
    option: str | None

    def __init__(
        self,
        source: str,
        status: SourceStatus,
        locator: str | None = None,
        offered: int = 0,
        error: str | None = None,
        place: str | None = None,
        option: str | None = None,
    ) -> None:
        set_field(self, "source", source)
        set_field(self, "status", status)
        set_field(self, "locator", locator)
        set_field(self, "offered", offered)
        set_field(self, "error", error)
        set_field(self, "place", place)
        set_field(self, "option", option)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "locator": self.locator}
        out["status"] = self.status.value
        out["offered"] = self.offered
        if self.error is not None:
            out["error"] = self.error
        return out


def unset_trace(field: Field) -> FieldTrace:
    """The trace of a table's key no source set: unset, as a key's default is."""
    unset = Candidate("default", DEFAULT_LOCATOR, Status.WON, None, None, secret=field.secret)
    return FieldTrace(field, unset, (unset,), MergeMode.FIELD)


def shown_locator(locator: str, derived_from: str | None) -> str:
    """A locator for a person; a value taken from another field names that field first."""
    return locator if derived_from is None else f"{derived_from} ({locator})"


def jsonable(value: object) -> Any:
    """``value`` in a form JSON can hold: dates and other file types become text."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Unusable):
        return value.text
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)
