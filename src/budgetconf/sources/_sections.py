"""Turning a file's mapping of sections into offers, shared by every file source."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from budgetconf.errors import ConfigError, SourceError
from budgetconf.schema import Schema, did_you_mean, show_typed
from budgetconf.sources._base import (
    Context,
    Layer,
    Offer,
    Problem,
    Request,
    SourceSpec,
    SourceStatus,
)
from budgetconf.sources._files import read_table
from budgetconf.sources._formats import Table


@dataclass(slots=True)
class Sections:
    """What a mapping of sections offers, with the problems found on the way."""

    offers: list[Offer] = field(default_factory=list)
    defined: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def layer(self, locator: str) -> Layer:
        return Layer(
            SourceStatus.LOADED,
            locator,
            tuple(self.offers),
            self.defined,
            tuple(self.problems),
            tuple(self.warnings),
        )


def read_sections(
    table: Table,
    schema: Schema,
    locate: Callable[[int | None], str],
    *,
    only: Collection[str] | None = None,
) -> Sections:
    """Offers for every field ``table`` sets, section by section.

    ``only`` names the top-level keys to read, others being ignored without a
    word (a workflow file holds more than budgets); when it is None every
    top-level key is read and an unknown one is reported.
    """
    found = Sections()
    for section, body in table.items():
        if section not in schema.sections:
            if only is None:
                where = locate(table.lines.get(section))
                found.warnings.append(_unknown(str(section), where, schema, top_level=True))
            continue
        if only is not None and section not in only:
            continue
        where = locate(table.lines.get(section))
        if not isinstance(body, Table):
            found.problems.append(
                Problem(
                    f"section {section} must be a table of fields, got {show_typed(body)}",
                    where,
                    raw=body,
                )
            )
            continue
        found.defined[section] = where
        for key, value in body.items():
            target = schema.by_key.get((section, key))
            line_where = locate(body.lines.get(key))
            if target is None:
                found.warnings.append(_unknown(f"{section}.{key}", line_where, schema))
                continue
            alias = None if key == target.name else str(key)
            found.offers.append(Offer(target.path, value, line_where, key=alias))
    return found


def _unknown(key: str, where: str, schema: Schema, *, top_level: bool = False) -> str:
    names = list(schema.by_path)
    if top_level:
        # a field written without its section is the likeliest slip: max_steps = 5
        for f in schema:
            if key in (f.name, *f.aliases):
                return f"{key} in {where} is not a known key; did you mean {f.section}.{key}?"
        names += list(schema.sections)
    hint = did_you_mean(key, names)
    tail = f"; did you mean {hint}?" if hint else ""
    return f"{key} in {where} is not a known key{tail}"


class FileSource:
    """A source that reads one settings file of sections: global, project, profile.

    The file is the one the caller named, else the preset's ``path`` option.
    """

    KIND: ClassVar[str]
    FORMAT: ClassVar[str]
    OPTIONS: ClassVar[Mapping[str, type]] = {"path": str}

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._default: str | None = spec.options.get("path")

    def named(self, request: Request) -> str | None:
        """The path the caller gave for this source, if any."""
        raise NotImplementedError

    def path(self, ctx: Context) -> tuple[str | None, bool]:
        """The file to read, and whether the caller named it (then it must exist)."""
        named = self.named(ctx.request)
        chosen = named or self._default
        return (ctx.expand(chosen) if chosen else None), named is not None

    def load(self, ctx: Context) -> Layer:
        path, named = self.path(ctx)
        if path is None:
            return Layer.not_configured()
        kind = self.KIND
        try:
            table = read_table(path, self.FORMAT, source=kind, max_bytes=ctx.max_file_bytes)
        except ConfigError as exc:
            return Layer.failed(exc, path)
        if table is None:
            if not named:
                return Layer(SourceStatus.MISSING, path)
            missing = SourceError(f"{kind} {path}: no such file", source=kind, locator=path)
            return Layer.failed(missing, path)
        return read_sections(table, ctx.schema, file_locator(path)).layer(path)


def file_locator(path: str) -> Callable[[int | None], str]:
    return lambda line: f"{path}:{line}" if line else path
