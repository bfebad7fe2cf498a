"""The ``project`` source: the project's settings, found from the working directory upward.

The project file is ``settings.toml`` (the preset's ``path``), or the
``[tool.budgetconf]`` table of a ``pyproject.toml``, as Python's tools keep
their settings. Like ruff and pytest, budgetconf looks in the working
directory and then in each folder above it, and stops at the first that holds
``settings.toml`` or a ``pyproject.toml`` with the table; in one folder
``settings.toml`` wins. The search never goes above the repository's root
(the folder that holds ``.git``) nor above the home folder, whichever comes
first; a working directory in neither is the only folder read, since a folder
above it (``/tmp``) may hold anyone's file.
"""

from __future__ import annotations

import os
from collections.abc import Hashable

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._files import read_table, source_error, stamp
from budgetconf._formats import Table
from budgetconf._schema import Schema
from budgetconf.errors import ConfigError
from budgetconf.sources._records import Context, Layer, SourceStatus
from budgetconf.sources._sections import file_locator, read_sections
from budgetconf.sources._settings_file import FILE_OPTIONS, FileSource, read_mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["ProjectSource"]

PYPROJECT: Final = "pyproject.toml"
_MAX_HOMES: Final = 64
#: a home folder's real path, by the path HOME gives: a symlinked home is still a bound
_real_homes: dict[str, str] = {}


class ProjectSource(FileSource):
    """The file named by ``project_file=``, else the preset's ``path``, searched for upward.

    A relative ``path`` (``settings.toml``) is looked for in the working
    directory and the folders above it, with ``pyproject.toml`` beside it
    (the table named by the ``pyproject`` option, ``tool.budgetconf``); an
    absolute one, or one in ``{home}``, is read as written, as is a file the
    caller names. A file named ``pyproject.toml`` is always read as one: only
    its table. In ``settings.toml`` a top-level table that is no section is
    the application's, and is reported only when it looks like a slip.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "project",
        options={**FILE_OPTIONS, "pyproject": str},
        defines_sections=True,
        argument=Argument(
            "project_file",
            option="--project",
            metavar="PATH",
            help="the project settings file (TOML, or a pyproject.toml) instead of the one"
            " found from the working directory up",
            text=True,
        ),
        label="the project file",
        names_file=True,
        format="toml",
        title="Project settings",
    )
    SHARED = True

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        super().__init__(spec, schema)
        table = spec.options.get("pyproject", "tool.budgetconf")
        if not all(table.split(".")):
            raise ValueError(f"pyproject: expected a dotted table such as tool.app, got {table!r}")
        self._table = tuple(table.split("."))
        default = self._default
        self._upward = not (
            default is None or default.startswith(("~", "{home}")) or os.path.isabs(default)
        )

    def target(self, ctx: Context) -> tuple[str | None, bool] | Layer:
        if self._upward and ctx.request.arguments.get(self._argument) is None:
            return _Search(ctx, self._default or "", self._table).run(), False
        return super().target(ctx)

    def key(self, ctx: Context) -> Hashable:
        if not self._upward or ctx.request.arguments.get(self._argument) is not None:
            return super().key(ctx)
        search = _Search(ctx, self._default or "", self._table)
        search.run()
        return None if None in search.probes else tuple(search.probes)

    def hidden(self, ctx: Context, path: str) -> tuple[str, bool] | None:
        """The project file a new file at ``path`` would hide from the working directory,
        with True, or be hidden by, with False (as a locator: ``…/pyproject.toml
        [tool.budgetconf]``); None when neither.

        Only a file the search looks for counts: named as the preset's ``path``, in
        the working directory or a folder above it that the search reaches. `init`
        asks, so that a file it writes neither turns the project's settings off nor
        goes unread.
        """
        if not self._upward:
            return None
        search = _Search(ctx, self._default or "", self._table)
        folders = search.folders()
        spots = [os.path.join(folder, search.name) for folder in folders]
        path = os.path.abspath(path)
        if path not in spots:
            return None
        first = next(
            ((at, found) for at, f in enumerate(folders) if (found := search._in(f)) is not None),
            None,
        )
        if first is None:
            return None
        at, found = first
        if found == path:  # the file itself: there already
            return None
        shown = (
            f"{found} [{'.'.join(self._table)}]" if os.path.basename(found) == PYPROJECT else found
        )
        # in one folder settings.toml wins over pyproject.toml's table
        return shown, spots.index(path) <= at

    def load(self, ctx: Context) -> Layer:
        target = self.target(ctx)
        if isinstance(target, Layer):
            return target
        path, named = target
        if path is None:  # no working directory: no project file is there to be read
            return Layer(SourceStatus.MISSING, self._default)
        if os.path.basename(path) == PYPROJECT:
            return self._pyproject(ctx, path, named=named)
        return self.read(ctx, path, named=named)

    def _pyproject(self, ctx: Context, path: str, *, named: bool) -> Layer:
        """The sections in the ``[tool.budgetconf]`` table of the ``pyproject.toml`` at ``path``."""
        document = read_mapping(ctx, path, "toml", self.KIND.name, named=named)
        if isinstance(document, Layer):
            return document
        name = ".".join(self._table)
        locator = f"{path} [{name}]"
        table, line = _dig(document, self._table)
        if table is None:
            if not named:  # it lost its table since it was found
                return Layer(SourceStatus.MISSING, locator)
            return Layer.failed(source_error(self.KIND.name, path, f"no [{name}] table"), locator)
        if not isinstance(table, Table):
            problem = f"[{name}] must be a table of sections, not a single value"
            return Layer.failed(source_error(self.KIND.name, path, problem, line), locator)
        found = read_sections(table, ctx.schema, file_locator(path), only=self._only)
        return found.layer(locator)


def _dig(document: Table, keys: tuple[str, ...]) -> tuple[object, int | None]:
    """The value at the dotted ``keys`` and the line of its last key, or None when absent."""
    node: object = document
    line = None
    for key in keys:
        if not isinstance(node, Table) or key not in node:
            return None, None
        line = node.lines.get(key)
        node = node[key]
    return node, line


class _Search:
    """One search for the project file, and every probe it made, for the source's key.

    A probe is a file's `stamp` or whether a ``.git`` is there; a resolution
    whose probes are all the same would find the same file.
    """

    __slots__ = ("ctx", "name", "probes", "table")

    def __init__(self, ctx: Context, name: str, table: tuple[str, ...]) -> None:
        self.ctx = ctx
        self.name = name
        self.table = table
        self.probes: list[Hashable] = []

    def run(self) -> str | None:
        """The file found, else where it would be in the working directory (None: there is none)."""
        try:
            start = os.getcwd()
        except OSError:  # the working directory was removed
            self.probes.append("no working directory")
            return None
        self.probes.append(start)
        homes = _homes(self.ctx)
        folder, found = start, None
        while True:
            if found is None:
                found = self._in(folder)
                if found is not None and folder == start:
                    return found  # the working directory's own file, as ever
            if folder in homes or self._is_repository(folder):
                return found or os.path.join(start, self.name)
            above = os.path.dirname(folder)
            if above == folder:  # in no repository and not under home: only the start counts
                return os.path.join(start, self.name)
            folder = above

    def folders(self) -> list[str]:
        """The folders `run` looks in, nearest first, up to its bound (none without a working
        directory; the working directory alone outside a repository and the home folder)."""
        try:
            start = os.getcwd()
        except OSError:
            return []
        homes = _homes(self.ctx)
        folder, seen = start, [start]
        while not (folder in homes or self._is_repository(folder)):
            above = os.path.dirname(folder)
            if above == folder:
                return [start]
            folder = above
            seen.append(folder)
        return seen

    def _in(self, folder: str) -> str | None:
        """The project file in ``folder``: settings.toml, else a pyproject.toml with the table."""
        settings = os.path.join(folder, self.name)
        if self._there(settings):
            return settings  # a file that cannot be read is found, and fails the source
        pyproject = os.path.join(folder, PYPROJECT)
        if self._there(pyproject) and self._has_table(pyproject):
            return pyproject
        return None

    def _there(self, path: str, *, version: bool = True) -> bool:
        """Whether there is something at ``path``; with ``version``, its stamp is a probe too.

        Most folders on the way hold none of the names: `os.access` tells so
        without the cost of an exception, and a stat is left to what is there.
        """
        if not os.access(path, os.F_OK):
            self.probes.append((path, "missing"))
            return False
        self.probes.append((path, stamp(path, self.ctx.max_file_bytes) if version else True))
        return True

    def _is_repository(self, folder: str) -> bool:
        return self._there(os.path.join(folder, ".git"), version=False)  # a worktree's is a file

    def _has_table(self, path: str) -> bool:
        """Whether the pyproject.toml at ``path`` has the table; one that cannot be read stops
        the search there, to fail the source rather than be passed over."""
        try:
            document = read_table(path, "toml", source="project", max_bytes=self.ctx.max_file_bytes)
        except ConfigError:
            return True
        return isinstance(document, Table) and _dig(document, self.table)[0] is not None


def _homes(ctx: Context) -> frozenset[str]:
    """The home folder as HOME gives it, and its real path."""
    home = ctx.user_path("~")
    real = _real_homes.get(home)
    if real is None:
        if len(_real_homes) >= _MAX_HOMES:
            _real_homes.clear()
        real = _real_homes[home] = os.path.realpath(home)
    return frozenset((home, real))
