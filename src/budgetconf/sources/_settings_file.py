"""The sources that read one settings file of sections, and how a source reads a file."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from budgetconf._description import SourceKind, SourceSpec
from budgetconf._files import read_table, source_error, stamp
from budgetconf._formats import Document, Items, Table
from budgetconf._schema import Schema
from budgetconf.errors import ConfigError, SourceError
from budgetconf.sources._records import Context, Layer, SourceStatus
from budgetconf.sources._sections import chosen_sections, file_locator, read_sections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Final

#: the options of every file source: the preset's default path, and the sections it reads
FILE_OPTIONS: Final[Mapping[str, type]] = {"path": str, "sections": list}


def read_file(ctx: Context, path: str, fmt: str, kind: str, *, named: bool) -> Document | Layer:
    """The file's document, or the layer that says why there is none.

    A file at a default location that does not exist is ``missing``; one the
    caller named must exist. Either way a file that cannot be read or parsed
    fails the source.
    """
    try:
        table = read_table(path, fmt, source=kind, max_bytes=ctx.max_file_bytes)
    except ConfigError as exc:
        return Layer.failed(exc, path)
    if table is not None:
        return table
    if not named:
        return Layer(SourceStatus.MISSING, path)
    missing = SourceError(
        f"{kind} {path}: no such file", source=kind, locator=path, problem="no such file"
    )
    return Layer.failed(missing, path)


def read_mapping(ctx: Context, path: str, fmt: str, kind: str, *, named: bool) -> Table | Layer:
    """As `read_file`, for a source that reads sections: a list at the top level fails it."""
    found = read_file(ctx, path, fmt, kind, named=named)
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

    def read(self, ctx: Context, path: str, *, named: bool) -> Layer:
        """The sections of the file at ``path``, or the layer that says why there are none."""
        table = read_mapping(ctx, path, self._format, self.KIND.name, named=named)
        if isinstance(table, Layer):
            return table
        found = read_sections(
            table, ctx.schema, file_locator(path), only=self._only, shared=self.SHARED
        )
        return found.layer(path)
