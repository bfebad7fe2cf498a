"""A resolution: the values of one, the evidence for each, and the explain document.

Explain is data first: a `Resolution` keeps every candidate of every field,
and the explain document is built from it here, in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from budgetconf._description import Description
from budgetconf._field import Field, Kind
from budgetconf._record import ReadOnly, set_field
from budgetconf._schema import Schema
from budgetconf._trace import FieldTrace, SourceReport, unset_trace
from budgetconf._values import Scalar, Value
from budgetconf.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeVar

    from budgetconf._loop_table import LoopSpec

    T = TypeVar("T")

#: the version of the explain document's shape
VERSION: Final = 1


def explain_document(
    preset: str,
    fields: dict[str, dict[str, Any]],
    sources: list[dict[str, Any]],
    warnings: list[str],
    errors: list[str],
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The version-1 explain document, from its parts: each field's entry, each source's report.

    A preset that could not be loaded has a document too: no fields, no
    sources, and the error. ``notes`` are information, not problems: `check`
    does not fail on them.
    """
    return {
        "version": VERSION,
        "preset": preset,
        "values": {path: entry["value"] for path, entry in fields.items()},
        "fields": fields,
        "sources": sources,
        "warnings": warnings,
        "errors": errors,
        "notes": notes or [],
    }


class Resolution(ReadOnly):
    """The values of one resolution, and the evidence for each.

    ``res["loop.max_steps"]`` is the typed value, ``res.values`` all of them,
    ``res.trace(path)`` the candidates behind one, and ``res.to_dict()`` the
    version-1 explain document (secrets masked). ``notes`` are lines of
    information that are no problem: an alias used that is another field's
    name in another section. It is read-only: a later
    resolution from the same inputs may return this very object.
    """

    __module__ = "budgetconf"
    __slots__ = (
        "_traces",
        "errors",
        "loop",
        "notes",
        "preset",
        "schema",
        "sources",
        "values",
        "warnings",
    )

    def __init__(
        self,
        preset: Description,
        traces: dict[str, FieldTrace],
        sources: tuple[SourceReport, ...],
        warnings: tuple[str, ...],
        errors: tuple[ConfigError, ...],
        notes: tuple[str, ...] = (),
    ) -> None:
        values = MappingProxyType(_values(preset.schema, traces))
        set_field(self, "preset", preset.name)
        set_field(self, "schema", preset.schema)
        set_field(self, "loop", preset.loop)  # how the preset bounds a loop, for the executor
        set_field(self, "_traces", traces)
        set_field(self, "values", values)
        set_field(self, "sources", sources)
        set_field(self, "warnings", warnings)
        set_field(self, "errors", errors)
        set_field(self, "notes", notes)

    if TYPE_CHECKING:
        preset: str
        schema: Schema
        loop: LoopSpec | None
        _traces: dict[str, FieldTrace]
        values: Mapping[str, Value]
        sources: tuple[SourceReport, ...]
        warnings: tuple[str, ...]
        errors: tuple[ConfigError, ...]
        notes: tuple[str, ...]

    def __getitem__(self, path: str) -> Value:
        try:
            return self.values[path]
        except KeyError:
            pass
        found = self._path(path)
        trace = self._traces.get(found)
        if trace is not None:
            return trace.value
        return self.values.get(found)  # a table's, or None: a key of one that no source set

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        try:
            self._path(path)
        except KeyError:
            return False
        return True

    def __repr__(self) -> str:
        shown = {f.path: _public(f, self.values[f.path]) for f in self.schema}
        return f"Resolution(preset={self.preset!r}, values={shown!r})"

    def _path(self, path: str) -> str:
        if path in self._traces:
            return path
        return self.schema.lookup(path).path  # an alias, or a KeyError with a suggestion

    def trace(self, path: str) -> FieldTrace:
        """Every candidate for the field at ``path``, and the one that won; a table's key is
        a field of its own (``tools.max_calls.web_search``), unset when no source set it."""
        found = self._path(path)
        trace = self._traces.get(found)
        if trace is not None:
            return trace
        field = self.schema.at(found)
        if field.kind is Kind.TABLE:
            raise KeyError(f"{field.path} is a table: trace one of its keys, {field.path}.KEY")
        return unset_trace(field)  # a key no source set

    def _chosen(self, path: str) -> list[str]:
        """The traces a document of the field at ``path`` shows: a table's, each of its keys."""
        found = self._path(path)
        if found in self._traces or self.schema.at(found).table is not None:
            return [found]  # a field's, or a key's: unset when no source set it
        return [p for p, t in self._traces.items() if t.field.table == found]

    def traces(self) -> tuple[FieldTrace, ...]:
        """The traces of all fields, in schema order."""
        return tuple(self._traces.values())

    def sections(self) -> dict[str, dict[str, Value]]:
        """The values nested by section: ``{"loop": {"max_steps": 40, ...}, ...}``."""
        nested: dict[str, dict[str, Value]] = {}
        for path, value in self.values.items():
            section, _, name = path.partition(".")
            nested.setdefault(section, {})[name] = (
                dict(value) if isinstance(value, Mapping) else value
            )
        return nested

    def to_dict(self, fields: Sequence[str] | None = None) -> dict[str, Any]:
        """The version-1 explain document, for all fields or the ones named."""
        chosen = [p for f in fields for p in self._chosen(f)] if fields else list(self._traces)
        return explain_document(
            self.preset,
            {path: self.trace(path).to_dict() for path in chosen},
            [s.to_dict() for s in self.sources],
            list(self.warnings),
            [str(e) for e in self.errors],
            list(self.notes),
        )

    def structure(self, cls: type[T]) -> T:
        """An instance of ``cls`` built from the values nested by section, with cattrs.

        The conversion is strict: a bool is not an int, and a float is never
        truncated to one. Sections and fields ``cls`` does not declare are
        ignored. Raises `ConfigError` when the values do not fit ``cls``.
        """
        from budgetconf._structure import structure

        return structure(self.sections(), cls)


def _public(field: Field, value: object) -> object:
    """``value`` as a repr may show it: a table's keys as they are, each value as its field
    allows (`MASK` for a secret's)."""
    if isinstance(value, Mapping):
        return {key: field.public(item) for key, item in value.items()}
    return field.public(value)


def _values(schema: Schema, traces: Mapping[str, FieldTrace]) -> dict[str, Value]:
    """Each field's value by its path; a table's is a mapping of its keys that are set."""
    values: dict[str, Value] = {}
    tables: dict[str, dict[str, Scalar]] = {f.path: {} for f in schema if f.kind is Kind.TABLE}
    for path, trace in traces.items():
        field, value = trace.field, trace.winner.value
        if field.table is None:
            values[path] = value
        elif value is not None and not isinstance(value, Mapping):  # a key's value: a scalar
            tables[field.table][path[len(field.table) + 1 :]] = value
    for path, table in tables.items():
        values[path] = MappingProxyType(table)
    return {f.path: values[f.path] for f in schema}
