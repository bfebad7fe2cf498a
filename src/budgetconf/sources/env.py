"""The ``env`` source: environment variables named by the schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from budgetconf.schema import Schema, did_you_mean
from budgetconf.sources._base import Context, Layer, Offer, SourceSpec, SourceStatus


class EnvSource:
    """One text offer per variable that is set, read afresh at every resolution.

    A field may have several variables; the first one listed wins. With a
    ``prefix``, variables that start with it and map to nothing are reported
    (with a suggestion), except the control variables listed in ``ignore``.
    """

    OPTIONS: ClassVar[Mapping[str, type]] = {"prefix": str, "ignore": list}
    DEFINES_SECTIONS: ClassVar[bool] = False

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._prefix: str | None = spec.options.get("prefix")
        self._ignore = frozenset(spec.options.get("ignore", ()))
        # lowest precedence first, so a field's first-listed variable is offered last
        self._names = tuple((name, f.path) for f in schema for name in reversed(f.env))
        self._known = frozenset(schema.by_env)

    def load(self, ctx: Context) -> Layer:
        env = ctx.request.env
        offers = tuple(
            Offer(path, env[name], f"env:{name}", text=True)
            for name, path in self._names
            if name in env
        )
        warnings: tuple[str, ...] = ()
        if self._prefix:
            warnings = tuple(self._unknown(env))
        return Layer(SourceStatus.LOADED, "environment", offers, warnings=warnings)

    def _unknown(self, env: Mapping[str, str]) -> list[str]:
        prefix = self._prefix or ""
        found = []
        for name in env:
            if name.startswith(prefix) and name not in self._known and name not in self._ignore:
                hint = did_you_mean(name, sorted(self._known))
                tail = f"; did you mean {hint}?" if hint else ""
                found.append(f"{name} is not a known variable{tail}")
        return sorted(found)
