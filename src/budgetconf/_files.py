"""Reading settings files: size limit, decoding, parsing and the parse cache.

A file is parsed once and kept, keyed by its path and format, together with
the signature of the version that was read: (mtime_ns, ctime_ns, size,
inode, device); the change time catches a rewrite that kept the old mtime.
Each resolution stats the path again; a different signature means the file
changed, and it is read anew. The signature stored is taken from the open file
itself (`fstat`), so a file replaced between the stat and the read is never
cached under the old version's signature.

A signature alone cannot tell apart two versions written within one tick of
the file system's clock (as coarse as 2 s on some), when the second has the
same size and a recycled inode (a rename over the file frees the old inode,
and the next new file may get it). So a version read while its mtime was that
recent is not trusted by its signature alone: until it has aged, each
resolution reads its bytes again, and parses them only if they differ; and
`stamp` keys it by its signature and its bytes, so a resolution is reused on
its account only while its bytes are the same.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Hashable

from budgetconf._formats import Document, ParseError, parse_json, parse_toml, parse_yaml
from budgetconf.errors import SourceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

#: the size above which a settings or preset file is refused, unless a preset sets its own
DEFAULT_MAX_FILE_BYTES: Final = 1 << 20

PARSERS: Final[dict[str, Callable[[str], Document]]] = {
    "json": parse_json,
    "toml": parse_toml,
    "yaml": parse_yaml,
}
_MAX_CACHED: Final = 256

_Signature = tuple[int, int, int, int, int]
#: older than this when read, a file's signature is trusted: coarser than any file clock
_SETTLED_NS: Final = 3_000_000_000


class _Entry:
    """One version of a file, parsed: its table, or why it has none.

    ``data`` keeps the bytes while the version is too recent to trust its signature.
    """

    __slots__ = ("data", "error", "signature", "table")

    def __init__(
        self,
        signature: _Signature,
        table: Document | None,
        error: ParseError | None,
        data: bytes | None,
    ) -> None:
        self.signature = signature
        self.table = table
        self.error = error
        self.data = data


_cache: dict[tuple[str, str, int], _Entry] = {}


def _signature(st: os.stat_result) -> _Signature:
    """A version of a file: the change time too, since a writer can set the modification time."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def is_recent(st: os.stat_result, now: int) -> bool:
    """Whether the file changed too recently for its signature to tell its versions apart."""
    return now - st.st_mtime_ns < _SETTLED_NS


def read_table(path: str, fmt: str, *, source: str, max_bytes: int) -> Document | None:
    """The parsed file at the absolute ``path``, or None when there is no such file.

    The result is a `Table`, or for YAML possibly a list (`Items`).

    Raises `SourceError` when the file exists but cannot be read or parsed.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise source_error(source, path, f"cannot read: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise source_error(source, path, f"cannot read: {exc}") from None
    key = (path, fmt, max_bytes)
    entry = _cache.get(key)
    if entry is None or entry.signature != _signature(st) or entry.data is not None:
        entry = _load(path, fmt, source, max_bytes, entry)
        if len(_cache) >= _MAX_CACHED:
            _cache.clear()
        _cache[key] = entry
    if entry.error is not None:
        raise source_error(source, path, entry.error.message, entry.error.line)
    return entry.table


def stamp(path: str, max_bytes: int) -> Hashable:
    """The version of the file at ``path`` for a source's key.

    As `version`; ``"missing"`` when there is no file, None when it cannot
    even be looked at (reading it will fail, and say why).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return None
    return version(path, st, max_bytes)


def version(path: str, st: os.stat_result, max_bytes: int) -> Hashable:
    """The version of the file at ``path``, whose status is ``st``, as a key.

    A settled file is known by its signature, without reading it. One that
    changed too recently for its signature to tell its versions apart is
    known by its signature and its bytes, read again: the same bytes are the
    same version, so a resolution over it may be reused, while two versions
    written within one tick of the clock never share a key. None when the
    recent file cannot be read whole (reading it will fail, and say why).
    """
    if not is_recent(st, time.time_ns()):
        return _signature(st)
    try:
        data, st = read_limited(path, max_bytes)
    except FileProblem:
        return None
    return (_signature(st), data)


def _load(path: str, fmt: str, source: str, max_bytes: int, known: _Entry | None) -> _Entry:
    """The entry for the file as it is now; ``known``'s parse when it is the same version."""
    now = time.time_ns()
    try:
        data, st = read_limited(path, max_bytes)
    except FileProblem as exc:
        raise source_error(source, path, exc.problem) from None
    signature = _signature(st)
    recent = data if is_recent(st, now) else None
    if known is not None and known.signature == signature and known.data == data:
        return _Entry(signature, known.table, known.error, recent)
    try:
        return _Entry(signature, PARSERS[fmt](_decode(data)), None, recent)
    except ParseError as exc:
        return _Entry(signature, None, exc, recent)


class FileProblem(Exception):
    """A file that cannot be read whole: ``problem`` says why, in a few words."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def read_limited(path: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path``, and its status as read.

    Raises `FileProblem` for a directory, a device, a FIFO or a socket (which
    could block or never end), a file larger than ``max_bytes``, or one that
    cannot be opened or read.
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise FileProblem(f"cannot read: {exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileProblem("is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem("not a regular file")
        if st.st_size > max_bytes:
            raise FileProblem(f"larger than the limit of {max_bytes} bytes")
        data = _read(fd, max_bytes + 1)
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew after the stat
        raise FileProblem(f"larger than the limit of {max_bytes} bytes")
    return data, st


def _read(fd: int, limit: int) -> bytes:
    chunks = []
    while limit > 0:
        chunk = os.read(fd, min(limit, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _decode(data: bytes) -> str:
    bom = b"\xef\xbb\xbf"  # a byte-order mark some editors write
    start = len(bom) if data.startswith(bom) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise ParseError(
            f"not UTF-8 text: byte 0x{data[offset]:02x} at offset {offset}", line
        ) from None


def source_error(source: str, path: str, problem: str, line: int | None = None) -> SourceError:
    locator = f"{path}:{line}" if line else path
    return SourceError(
        f"{source} {locator}: {problem}", source=source, locator=locator, line=line, problem=problem
    )
