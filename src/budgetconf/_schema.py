"""The fields of a preset, indexed by every name a user may set them by: a path, a section's
key or alias, a variable, a flag, a table's key; and the field a slip was meant to be."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from budgetconf._field import BadKey, Field, Kind
from budgetconf._record import ReadOnly, set_field
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped
from budgetconf._text_formats import text_problem
from budgetconf._values import show_text


def _frozen(groups: dict[str, list[Field]]) -> Mapping[str, tuple[Field, ...]]:
    return MappingProxyType({key: tuple(fields) for key, fields in groups.items()})


class Schema(ReadOnly):
    """The fields of a preset, indexed by every name a user may set them by."""

    __module__ = "budgetconf"
    __slots__ = ("by_env", "by_flag", "by_key", "by_path", "fields", "sections")

    fields: tuple[Field, ...]
    by_path: Mapping[str, Field]
    sections: Mapping[str, tuple[Field, ...]]
    by_key: Mapping[tuple[str, str], Field]  # (section, key as in a file: a name or an alias)
    by_env: Mapping[str, tuple[Field, ...]]
    by_flag: Mapping[str, tuple[Field, ...]]

    def __init__(self, fields: tuple[Field, ...]) -> None:
        sections: dict[str, list[Field]] = {}
        by_key: dict[tuple[str, str], Field] = {}
        by_env: dict[str, list[Field]] = {}
        by_flag: dict[str, list[Field]] = {}
        for f in fields:
            sections.setdefault(f.section, []).append(f)
            for key in (f.name, *f.aliases):
                by_key[(f.section, key)] = f
            for name in f.env:
                by_env.setdefault(name, []).append(f)
            for flag in f.flags:
                by_flag.setdefault(flag, []).append(f)
        set_field(self, "fields", fields)
        set_field(self, "by_path", MappingProxyType({f.path: f for f in fields}))
        set_field(self, "sections", _frozen(sections))
        set_field(self, "by_key", MappingProxyType(by_key))
        set_field(self, "by_env", _frozen(by_env))
        set_field(self, "by_flag", _frozen(by_flag))

    def __repr__(self) -> str:
        return f"Schema({list(self.by_path)!r})"

    def at(self, path: str) -> Field:
        """The field at a resolved path: a field, or a table's entry (made afresh: no cache)."""
        found = self.by_path.get(path)
        if found is not None:
            return found
        section, _, rest = path.partition(".")
        name, _, key = rest.partition(".")
        table = self.by_key.get((section, name))
        if table is None or table.kind is not Kind.TABLE or not key:
            raise KeyError(path)
        problem = text_problem(table.keys, key)
        if problem is not None:
            raise BadKey(f"{table.path}: {problem}: {show_text(key)}")
        return table.entry(key)

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def lookup(self, path: str) -> Field:
        """The field at ``path`` (an alias such as ``loop.max_turns`` works too, and a table's
        key, ``tools.max_calls.web_search``). Raises `KeyError` suggesting the nearest field,
        `BadKey` for a table's key its rule refuses."""
        section, _, key = path.partition(".")
        found = self.by_path.get(path) or self.by_key.get((section, key))
        if found is None and path.count(".") > 1:
            try:
                found = self.at(path)
            except BadKey:  # a table's key its rule refuses: why is said
                raise
            except KeyError:  # not a table's key either
                pass
        if found is None:
            hint = self.suggest(path)
            suggestion = f"; did you mean {hint!r}?" if hint else ""
            raise KeyError(f"unknown field {clipped(path, repr)}{suggestion}")
        return found

    def suggest(self, key: str, *, sections: bool = False) -> str | None:
        """The field (or, with ``sections``, the section) ``key`` was most likely meant to be.

        A field's name or alias written without its section is the likeliest
        slip (``max_steps`` for ``loop.max_steps``), a name before an alias
        (``max_tool_calls`` is ``limits.max_tool_calls``, though it is an alias
        under ``loop``); otherwise the closest name, or a near miss of a name without
        its section (``max_step``).
        """
        leaves: dict[str, str] = {}
        for f in self.fields:
            leaves.setdefault(f.name, f.path)
        for f in self.fields:
            for alias in f.aliases:
                leaves.setdefault(alias, f"{f.section}.{alias}")
        if key in leaves:
            return leaves[key]
        names = list(self.by_path)
        hint = did_you_mean(key, [*names, *self.sections] if sections else names)
        if hint is not None or "." in key:
            return hint
        leaf = did_you_mean(key, list(leaves))
        return None if leaf is None else leaves[leaf]
