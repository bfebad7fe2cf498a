"""The ``default`` source: the preset's built-in defaults, held in memory."""

from __future__ import annotations

from collections.abc import Hashable

from budgetconf._description import SourceKind, SourceSpec
from budgetconf._schema import Schema
from budgetconf.sources._records import DEFAULT_LOCATOR, Context, Layer, Offer, SourceStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["DefaultSource"]

LOCATOR: Final = DEFAULT_LOCATOR


class DefaultSource:
    """Every field's default; an optional field without one offers "unset" (None).

    No file is ever written for the defaults.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind("default", request_keyed=True)

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        offers = tuple(Offer(f.path, f.default, LOCATOR) for f in schema)
        self._layer = Layer(SourceStatus.LOADED, LOCATOR, offers)

    def key(self, ctx: Context) -> Hashable:
        return ()

    def load(self, ctx: Context) -> Layer:
        return self._layer
