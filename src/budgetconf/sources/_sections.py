"""Turning a file's mapping of sections into offers, shared by every file source."""

from __future__ import annotations

from collections.abc import Callable, Collection

from budgetconf._description import SourceSpec
from budgetconf._field import Field, Kind
from budgetconf._formats import Table, readable
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean, edits
from budgetconf._table import key_problem
from budgetconf._text import clipped
from budgetconf._values import type_name
from budgetconf.sources._names import one_name_each
from budgetconf.sources._records import Layer, Offer, Problem, SourceStatus


class Sections:
    """What a mapping of sections offers, with the problems found on the way.

    The mapping is one place: a field it sets by two of its names offers the
    second refused (see `one_name_each`).
    """

    __slots__ = ("defined", "offers", "problems", "schema", "warnings")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.offers: list[Offer] = []
        self.defined: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def offer(
        self,
        target: Field,
        key: object,
        value: object,
        where: str,
        locate: Callable[[int | None], str],
    ) -> None:
        """The offer of ``value`` for ``target``, set by ``key`` at ``where``: a table of a
        file's, one offer per key, each at its own line."""
        alias = None if key == target.name else str(key)
        if target.kind is Kind.TABLE and isinstance(value, Table):
            for entry, item in value.items():
                at = locate(value.lines.get(entry))
                if not isinstance(entry, str) or key_problem(target, entry) is not None:
                    self.offers.append(Offer(target.path, {entry: item}, at, key=alias))
                    continue  # the merge says what is wrong with the key
                offer = Offer(target.path, readable(item), at, key=alias, entry=entry)
                self.offers.append(offer)
            return
        self.offers.append(Offer(target.path, readable(value), where, key=alias))

    def layer(self, locator: str) -> Layer:
        return Layer(
            SourceStatus.LOADED,
            locator,
            tuple(one_name_each(self.offers, self.schema)),
            self.defined,
            tuple(self.problems),
            tuple(self.warnings),
        )


def chosen_sections(spec: SourceSpec, schema: Schema) -> frozenset[str] | None:
    """The ``sections`` option: the top-level keys a source reads, None when not given.

    Raises `ValueError` for a name that is not one of the preset's sections.
    """
    if "sections" not in spec.options:
        return None
    chosen = frozenset(spec.options["sections"])
    unknown = sorted(chosen - set(schema.sections))
    if unknown:
        raise ValueError(f"sections: no section {unknown[0]!r} in the fields")
    return chosen


def read_sections(
    table: Table,
    schema: Schema,
    locate: Callable[[int | None], str],
    *,
    only: Collection[str] | None = None,
    shared: bool = False,
) -> Sections:
    """Offers for every field ``table`` sets, section by section.

    ``only`` names the top-level keys to read, others being ignored without a
    word (a workflow file holds more than budgets); when it is None every
    top-level key is read and an unknown one is reported, except keys that
    begin with ``$`` (``$schema``), which are left to editors. A ``shared``
    file holds the application's settings too: there an unknown top-level
    key is reported only when it looks like a slip (see `_stray`).
    """
    found = Sections(schema)
    for section, body in table.items():
        if section not in schema.sections:
            # `$schema` names the file's JSON Schema for editors; no section starts with `$`
            if only is None and not str(section).startswith("$"):
                where = locate(table.lines.get(section))
                stray = _stray(str(section), where, schema, shared=shared)
                if stray:
                    found.warnings.append(stray)
            continue
        if only is not None and section not in only:
            continue
        where = locate(table.lines.get(section))
        if not isinstance(body, Table):  # named by its type: it may hold a secret field's value
            message = f"section {section} must be a table of fields, got {type_name(body)}"
            found.problems.append(Problem(message, where))
            continue
        found.defined[section] = where
        for key, value in body.items():
            target = schema.by_key.get((section, key))
            line_where = locate(body.lines.get(key))
            if target is None:
                found.warnings.append(_unknown(f"{section}.{key}", line_where, schema))
                continue
            found.offer(target, key, value, line_where, locate)
    return found


def read_fields(
    table: Table, section: str, schema: Schema, locate: Callable[[int | None], str]
) -> Sections:
    """Offers for the fields of one ``section`` written directly in ``table``.

    This is a mapping that holds the application's own keys beside the fields
    (a workflow step: ``agent: reviewer`` / ``max_turns: 15``). Its other keys
    are ignored without a word, unless one is so close to a field's name that
    it is most likely a typo (``max_turn``): that one is reported. The mapping
    defines the section when it sets at least one of its fields.
    """
    found = Sections(schema)
    names = [key for (owner, key) in schema.by_key if owner == section]
    for key, value in table.items():
        target = schema.by_key.get((section, key))
        where = locate(table.lines.get(key))
        if target is None:
            hint = did_you_mean(str(key), names)
            if hint:
                found.warnings.append(
                    f"{key} in {where} is not a known key; did you mean {section}.{hint}?"
                )
            continue
        found.defined.setdefault(section, locate(table.line))
        found.offer(target, key, value, where, locate)
    return found


def _stray(key: str, where: str, schema: Schema, *, shared: bool) -> str | None:
    """What to say of a top-level key that is no section, if anything.

    In a file of budgets alone, every such key. In a ``shared`` one, whose other
    tables are the application's (``[database]``), only a key within a small
    edit of a section (``[lop]``) or a field's name written outside its section.
    """
    if not shared:
        return _unknown(key, where, schema, top_level=True)
    near = _near_section(schema, key)
    if near is not None:
        return f"{key} in {where} is not a known key; did you mean {near}?"
    if any(key == f.name or key in f.aliases for f in schema):
        return _unknown(key, where, schema, top_level=True)
    return None


def _near_section(schema: Schema, key: str) -> str | None:
    """The section ``key`` is a slip for, if it is within two edits of one.

    A short name is more easily near another word: a section of five letters
    or fewer takes one edit (``lop`` is ``loop``, but ``log`` is an
    application's own table).
    """
    for section in schema.sections:
        if edits(key, section) <= (1 if len(section) <= 5 else 2):
            return section
    return None


def _unknown(key: str, where: str, schema: Schema, *, top_level: bool = False) -> str:
    hint = schema.suggest(key, sections=top_level)
    tail = f"; did you mean {hint}?" if hint else ""
    return f"{clipped(key)} in {where} is not a known key{tail}"


def file_locator(path: str) -> Callable[[int | None], str]:
    return lambda line: f"{path}:{line}" if line else path
