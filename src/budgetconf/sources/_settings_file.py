"""The sources that read one settings file of sections, and how a source reads a file."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping
from functools import partial

from budgetconf._description import SourceKind, SourceSpec
from budgetconf._files import read_table, source_error, stamp
from budgetconf._formats import Document, Items, Table
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean
from budgetconf.errors import ConfigError, SourceError
from budgetconf.sources._records import Context, Layer, SourceStatus
from budgetconf.sources._sections import chosen_sections, file_locator, read_sections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Final

#: the options of every file source: the preset's default path, and the sections it reads
FILE_OPTIONS: Final[Mapping[str, type]] = {"path": str, "sections": list}
#: the most files of a folder a near miss is looked for among
_NEIGHBOURS: Final = 1000


def neighbours(folder: str, suffix: str) -> list[str]:
    """The names of the files in ``folder`` that end with ``suffix``, at most `_NEIGHBOURS`;
    none when the folder cannot be read."""
    names: list[str] = []
    try:
        with os.scandir(folder or os.curdir) as entries:
            for entry in entries:
                if entry.name.endswith(suffix):
                    names.append(entry.name)
                    if len(names) >= _NEIGHBOURS:
                        break
    except OSError:
        return []  # no folder to look in: the message says the file is missing, as it is
    return names


def near_miss(path: str) -> str | None:
    """The file beside ``path``, of its suffix, that was most likely meant: its path."""
    folder, wanted = os.path.split(path)
    hit = did_you_mean(wanted, neighbours(folder, os.path.splitext(wanted)[1]))
    return None if hit is None else os.path.join(folder, hit)


def read_file(
    ctx: Context,
    path: str,
    fmt: str,
    kind: str,
    *,
    named: bool,
    nearest: Callable[[str], str | None] = near_miss,
) -> Document | Layer:
    """The file's document, or the layer that says why there is none.

    A file at a default location that does not exist is ``missing``; one the
    caller named must exist, and its error suggests the ``nearest`` file that
    does. Either way a file that cannot be read or parsed fails the source.
    """
    try:
        table = read_table(path, fmt, source=kind, max_bytes=ctx.max_file_bytes)
    except ConfigError as exc:
        return Layer.failed(exc, path)
    if table is not None:
        return table
    if not named:
        return Layer(SourceStatus.MISSING, path)
    hint = nearest(path)
    problem = "no such file" if hint is None else f"no such file; did you mean {hint!r}?"
    missing = SourceError(f"{kind} {path}: {problem}", source=kind, locator=path, problem=problem)
    return Layer.failed(missing, path)


def read_mapping(
    ctx: Context,
    path: str,
    fmt: str,
    kind: str,
    *,
    named: bool,
    nearest: Callable[[str], str | None] = near_miss,
) -> Table | Layer:
    """As `read_file`, for a source that reads sections: a list at the top level fails it."""
    found = read_file(ctx, path, fmt, kind, named=named, nearest=nearest)
    if isinstance(found, Items):
        problem = "the top level must be a mapping of sections, not a list"
        return Layer.failed(source_error(kind, path, problem, found.line), path)
    return found


class FileSource:
    """A source that reads one settings file of sections: global, project, profile.

    The file is the one the caller named, else the preset's ``path`` option.
    Every top-level key is read, and one that is not a section is reported;
    with the ``sections`` option only those are read, and the rest of the file
    belongs to the application.
    """

    KIND: ClassVar[SourceKind]  # with its argument and its format
    #: whether the file holds the application's settings too (see `read_sections`)
    SHARED: ClassVar[bool] = False

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        argument, fmt = self.KIND.argument, self.KIND.format
        assert argument is not None, "a file source is named by its argument"
        assert fmt is not None, "a file source knows its file's format"
        self._argument = argument.name
        self._format = fmt
        self._default: str | None = spec.options.get("path")
        self._only = chosen_sections(spec, schema)

    def target(self, ctx: Context) -> tuple[str | None, bool] | Layer:
        """The file to read and whether the caller named it (then it must exist), or why none."""
        named = ctx.request.arguments.get(self._argument)
        if named is not None:
            return ctx.user_path(named), True
        return (ctx.preset_path(self._default) if self._default else None), False

    def key(self, ctx: Context) -> Hashable:
        target = self.target(ctx)
        if isinstance(target, Layer):
            return None  # it failed; a failed resolution is never reused
        path, named = target
        if path is None:
            return ()
        version = stamp(path, ctx.max_file_bytes)
        return None if version is None else (path, named, version)

    def load(self, ctx: Context) -> Layer:
        target = self.target(ctx)
        if isinstance(target, Layer):
            return target
        path, named = target
        if path is None:
            return Layer.not_configured()
        return self.read(ctx, path, named=named)

    def nearest(self, ctx: Context, path: str) -> str | None:
        """The file a missing ``path`` was most likely meant to be: its neighbour of the nearest
        name (a source that takes names as well as paths answers a name with a name)."""
        return near_miss(path)

    def read(self, ctx: Context, path: str, *, named: bool) -> Layer:
        """The sections of the file at ``path``, or the layer that says why there are none."""
        kind = self.KIND.name
        hint = partial(self.nearest, ctx)
        table = read_mapping(ctx, path, self._format, kind, named=named, nearest=hint)
        if isinstance(table, Layer):
            return table
        found = read_sections(
            table, ctx.schema, file_locator(path), only=self._only, shared=self.SHARED
        )
        return found.layer(path)
