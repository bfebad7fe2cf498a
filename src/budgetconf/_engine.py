"""The engine: a preset's description made ready to resolve with, and its memo.

`load_preset` reads a preset (through the reader in ``_presets``), builds its
sources from the registry of kinds, and keeps the result: a built-in preset
for the life of the process, a preset file until it changes.
`resolve_request` resolves one request, reusing a recent resolution when
nothing its sources read has changed; `resolver` does the same for one request
asked again and again, for less.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from functools import partial
from types import MappingProxyType

from budgetconf._description import Description, SourceSpec
from budgetconf._files import DEFAULT_MAX_FILE_BYTES, stamp, version
from budgetconf._resolution import Resolution
from budgetconf.errors import PresetError
from budgetconf.sources import KINDS
from budgetconf.sources._records import Context, Request, snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, TypeAlias

    from budgetconf._schema import Schema
    from budgetconf.sources._protocols import Source

    _Key: TypeAlias = tuple[Hashable, ...]

_MEMO_SIZE: Final = 64  # resolutions kept per preset
#: each kind's declaration, for the reader's strict check of a stack
_DECLARED: Final = MappingProxyType({name: source.KIND for name, source in KINDS.items()})


class Preset:
    """A preset's description, its sources built, and its recent resolutions.

    ``memo`` keeps the results of recent resolutions by their sources' keys
    (see `resolve_request`).
    """

    __slots__ = ("by_kind", "context_parts", "description", "keys", "memo", "sources")

    def __init__(self, description: Description, sources: tuple[Source, ...]) -> None:
        self.description = description
        self.sources = sources
        self.by_kind = MappingProxyType(
            {spec.kind: source for spec, source in zip(description.stack, sources, strict=True)}
        )
        d = description
        # what every resolution's `Context` holds besides the request, gathered once
        self.context_parts = (d.schema, d.home, d.home_env, d.max_file_bytes, self.by_kind)
        self.memo: dict[_Key, Resolution] = {}
        # each source's key method, looked up once: a warm resolution is mostly these calls
        self.keys = tuple(source.key for source in sources)

    def __repr__(self) -> str:
        return f"Preset({self.name!r}, origin={self.origin!r})"

    @property
    def name(self) -> str:
        return self.description.name

    @property
    def schema(self) -> Schema:
        return self.description.schema

    @property
    def origin(self) -> str:
        return self.description.origin

    @property
    def summary(self) -> str:
        return self.description.summary

    def has_source(self, kind: str) -> bool:
        return kind in self.by_kind

    def context(self, request: Request) -> Context:
        """The context the sources of this preset read ``request`` in."""
        return Context(request, *self.context_parts)


def is_preset_path(preset: str | os.PathLike[str]) -> bool:
    """Whether ``preset`` names a file rather than a built-in preset."""
    text = os.fspath(preset)
    return isinstance(preset, os.PathLike) or os.sep in text or text.endswith(".toml")


_builtin: dict[str, Preset] = {}
_by_path: dict[str, tuple[Hashable, Preset]] = {}


def load_preset(preset: str | os.PathLike[str]) -> Preset:
    """The built-in preset of that name, or the preset file at that path.

    Loaded presets are kept; a preset file that changes is loaded again.
    Raises `PresetError`.
    """
    if not is_preset_path(preset):
        name = os.fspath(preset)
        cached = _builtin.get(name)
        if cached is None:
            from budgetconf._presets import builtin_path

            cached = _builtin[name] = _built(builtin_path(name), origin="built-in")
        return cached
    path = os.path.expanduser(os.fspath(preset))
    try:
        path = os.path.abspath(path)
    except FileNotFoundError:  # the working directory was removed: the stat below says so
        path = os.path.normpath(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PresetError(f"preset {path}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise PresetError(f"preset {path}: {exc}") from None
    known = version(path, st, DEFAULT_MAX_FILE_BYTES)
    entry = _by_path.get(path)
    if entry is not None and known is not None and entry[0] == known:
        return entry[1]
    loaded = _built(path, origin=path)
    if known is not None and stamp(path, DEFAULT_MAX_FILE_BYTES) == known:  # unchanged as read
        _by_path[path] = (known, loaded)
    return loaded


def _built(path: str, *, origin: str) -> Preset:
    from budgetconf._presets import read_preset  # the reader, at the first preset read

    description = read_preset(path, origin=origin, kinds=_DECLARED)
    schema = description.schema
    return Preset(
        description,
        tuple(_source(path, i, spec, schema) for i, spec in enumerate(description.stack)),
    )


def _source(path: str, index: int, spec: SourceSpec, schema: Schema) -> Source:
    """The source a stack entry describes; its class may refuse options that do not fit."""
    try:
        return KINDS[spec.kind](spec, schema)
    except ValueError as exc:
        raise PresetError(f"preset {path}: sources[{index}] ({spec.kind}).{exc}") from None


def resolve_request(preset: Preset, request: Request) -> Resolution:
    """Resolve every field of ``preset`` for ``request``. Problems are collected, not raised.

    A resolution whose sources' keys equal those of a recent one is that one:
    nothing a source reads has changed. Otherwise the sources load from one
    copy of the environment, and the result is kept only when it has no
    errors and the keys, taken again (from that copy, and the files as they
    are now), still match: a file changed while it was read is never kept,
    nor a result read from variables other than its key's.
    """
    ctx = Context(request, *preset.context_parts)  # as preset.context(), without its call
    key = _key(preset, ctx)
    if key is not None:
        known: Resolution | None = preset.memo.get(key)
        if known is not None:
            return known
    from budgetconf._merge import merge  # here: a process that reuses resolutions needs none

    ctx.env = snapshot(ctx.env)
    result = merge(preset.description, preset.sources, ctx)
    if key is not None and not result.errors and _key(preset, ctx) == key:
        if len(preset.memo) >= _MEMO_SIZE:
            preset.memo.clear()
        preset.memo[key] = result
    return result


def resolver(preset: Preset, request: Request) -> Callable[[], Resolution]:
    """`resolve_request` for ``request``, again at each call, for less than it costs.

    The keys of the sources keyed by the request alone are taken once (so the
    request's arguments must not change while it is asked: `factory` gives
    copies), the other sources' at each call, by their `watch` where they have
    one. While those stay the same, the last result with no errors is the
    answer; else `resolve_request` gives it, and keeps it in the preset's memo.
    """
    ctx = preset.context(request)
    fixed = [_DECLARED[spec.kind].request_keyed for spec in preset.description.stack]
    sources = tuple(zip(preset.sources, fixed, strict=True))
    if None in [source.key(ctx) for source, fix in sources if fix]:
        return partial(resolve_request, preset, request)  # never reused: nothing to save
    take = _taker([_watcher(preset, source, request) for source, fix in sources if not fix])
    last: tuple[Hashable, Resolution] | None = None  # one reference: threads read it whole

    def resolved() -> Resolution:
        nonlocal last
        key = take()
        known = last
        if known is not None and known[0] == key:
            return known[1]
        result = resolve_request(preset, request)
        if not result.errors and key is not None and take() == key:  # unchanged as it was read
            last = (key, result)
        return result

    return resolved


def _watcher(preset: Preset, source: Source, request: Request) -> Callable[[], Hashable]:
    """What takes ``source``'s key for ``request`` at each call: its `watch`, else `key`."""
    watch: Callable[[Context], Callable[[], Hashable]] | None = getattr(source, "watch", None)
    if watch is not None:
        return watch(preset.context(request))
    return lambda: source.key(preset.context(request))  # a new context: the home may move


def _taker(watchers: list[Callable[[], Hashable]]) -> Callable[[], Hashable]:
    """One key for these watchers' keys, None when one of them is None."""
    if len(watchers) == 1:  # the common case, a factory's environment: its key as it is
        return watchers[0]

    def take() -> Hashable:
        taken = tuple([watch() for watch in watchers])
        return None if None in taken else taken

    return take


def _key(preset: Preset, ctx: Context) -> _Key | None:
    keys = tuple([key(ctx) for key in preset.keys])
    return None if None in keys else keys
