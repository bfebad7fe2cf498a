"""read_table: reading, decoding, limits and the parse cache of settings files."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from budgetconf import SourceError, _files
from budgetconf._files import read_table
from budgetconf._formats import Document

from conftest import Place

LIMIT = 1_000_000


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap each real parser so that every parse is recorded by format."""
    calls: list[str] = []

    def counting(fmt: str, parser: Callable[[str], Document]) -> Callable[[str], Document]:
        def parse(text: str) -> Document:
            calls.append(fmt)
            return parser(text)

        return parse

    for fmt, parser in list(_files.PARSERS.items()):
        monkeypatch.setitem(_files.PARSERS, fmt, counting(fmt, parser))
    return calls


def _read(path: Path, fmt: str = "toml", *, max_bytes: int = LIMIT) -> Document | None:
    return read_table(str(path), fmt, source="project", max_bytes=max_bytes)


def _bump_mtime(path: Path, seconds: int = 5) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def test_missing_file_is_none(place: Place, parsed: list[str]) -> None:
    """A path with no file is None, not an error, and nothing is parsed."""
    assert _read(place.work / "absent.toml") is None
    assert parsed == []


@pytest.mark.parametrize(
    ("fmt", "text"),
    [("toml", "[loop]\nmax_steps = 5\n"), ("json", '{"loop": {"max_steps": 5}}')],
)
def test_unchanged_file_is_parsed_once(
    place: Place, parsed: list[str], fmt: str, text: str
) -> None:
    """While a file is unchanged every read returns the same parsed table without parsing."""
    path = place.write(f"settings.{fmt}", text)
    first = _read(path, fmt)
    assert first == {"loop": {"max_steps": 5}}
    for _ in range(3):
        assert _read(path, fmt) is first
    assert parsed == [fmt]


def test_cache_is_per_format_and_limit(place: Place, parsed: list[str]) -> None:
    """The same file read as another format, or with another size limit, is parsed again."""
    path = place.write("settings.json", '{"a": 1}')
    assert _read(path, "json") == {"a": 1}
    assert _read(path, "yaml") == {"a": 1}
    assert _read(path, "json", max_bytes=100) == {"a": 1}
    assert _read(path, "json") == {"a": 1}
    assert parsed == ["json", "yaml", "json"]


def test_rewritten_file_is_read_again(place: Place, parsed: list[str]) -> None:
    """New content of a different size is seen on the next read."""
    path = place.write("settings.toml", "a = 1\n")
    assert _read(path) == {"a": 1}
    path.write_text("a = 1\nb = 2\n", encoding="utf-8")
    assert _read(path) == {"a": 1, "b": 2}
    assert _read(path) == {"a": 1, "b": 2}
    assert parsed == ["toml", "toml"]


def test_same_size_rewrite_with_a_new_mtime_is_read_again(place: Place, parsed: list[str]) -> None:
    """A rewrite that keeps the size is seen once its modification time moves."""
    path = place.write("settings.toml", "a = 1\n")
    assert _read(path) == {"a": 1}
    before = path.stat()
    path.write_text("a = 2\n", encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == before.st_size
    assert _read(path) == {"a": 2}
    assert parsed == ["toml", "toml"]


def test_only_a_touch_is_read_again(place: Place, parsed: list[str]) -> None:
    """A new modification time alone makes the file be read again."""
    path = place.write("settings.toml", "a = 1\n")
    first = _read(path)
    _bump_mtime(path)
    second = _read(path)
    assert second == first
    assert second is not first
    assert parsed == ["toml", "toml"]


def test_file_replaced_by_rename_is_read_again(place: Place, parsed: list[str]) -> None:
    """A file swapped for another of the same size and mtime is seen through its inode."""
    path = place.write("settings.toml", "a = 1\n")
    assert _read(path) == {"a": 1}
    before = path.stat()
    replacement = place.write("replacement.toml", "a = 2\n")
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, path)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ino != before.st_ino
    assert _read(path) == {"a": 2}
    assert parsed == ["toml", "toml"]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every time a file's bytes are read."""
    calls: list[str] = []
    real = _files.read_limited

    def counting(path: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
        calls.append(path)
        return real(path, max_bytes)

    monkeypatch.setattr(_files, "read_limited", counting)
    return calls


def test_a_rewrite_within_one_clock_tick_is_seen_though_the_signature_holds(
    place: Place, parsed: list[str]
) -> None:
    """Same size, same inode and, on a coarse clock, the same mtime: the new bytes still count."""
    path = place.write("settings.toml", "a = 1\n")
    assert _read(path) == {"a": 1}
    before = path.stat()
    path.write_text("a = 2\n", encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as a 2-second clock would
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )
    assert _read(path) == {"a": 2}
    assert parsed == ["toml", "toml"]


def test_a_recent_file_is_read_again_but_parsed_once(
    place: Place, parsed: list[str], reads: list[str]
) -> None:
    """Until its mtime has aged, an unchanged file's bytes are compared, not parsed again."""
    path = place.write("settings.toml", "a = 1\n")
    first = _read(path)
    assert _read(path) is first
    assert parsed == ["toml"]
    assert reads == [str(path), str(path)]


def test_an_aged_file_is_trusted_by_its_signature(
    place: Place, parsed: list[str], reads: list[str]
) -> None:
    """A file older than any clock's tick when read is not read again while its stat holds."""
    path = place.write("settings.toml", "a = 1\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10_000_000_000))
    first = _read(path)
    assert _read(path) is first
    assert _read(path) is first
    assert parsed == ["toml"]
    assert reads == [str(path)]


def test_deleted_file_is_none_again(place: Place) -> None:
    """A cached file that is deleted is reported missing, not served from the cache."""
    path = place.write("settings.toml", "a = 1\n")
    assert _read(path) == {"a": 1}
    path.unlink()
    assert _read(path) is None


def test_parse_error_is_cached_and_raised_fresh_each_time(place: Place, parsed: list[str]) -> None:
    """A broken file is parsed once; each read raises a new SourceError with its line."""
    path = place.write("settings.toml", "a = 1\nb = = 2\n")
    errors: list[SourceError] = []
    for _ in range(2):
        with pytest.raises(SourceError) as caught:
            _read(path)
        errors.append(caught.value)
    assert parsed == ["toml"]
    first, second = errors
    assert first is not second
    for error in errors:
        assert error.locator == f"{path}:2"
        assert error.source == "project"
        assert error.line == 2
        assert str(error).startswith(f"project {path}:2: invalid TOML: ")


def test_parse_error_fixed_in_the_file_is_read_again(place: Place, parsed: list[str]) -> None:
    """Once the broken file changes, the cached error is dropped and the new text parsed."""
    path = place.write("settings.toml", "a = = 1\n")
    with pytest.raises(SourceError):
        _read(path)
    path.write_text("a = 1\n", encoding="utf-8")
    _bump_mtime(path)
    assert _read(path) == {"a": 1}
    assert parsed == ["toml", "toml"]


def test_directory_is_refused(place: Place) -> None:
    """A directory where the file should be is a SourceError saying so."""
    path = place.work / "settings.toml"
    path.mkdir()
    with pytest.raises(SourceError, match="is a directory") as caught:
        _read(path)
    assert caught.value.locator == str(path)
    assert caught.value.source == "project"


def test_file_over_the_size_limit_is_refused(place: Place, parsed: list[str]) -> None:
    """A file one byte over max_bytes is refused naming the limit; one at the limit is read."""
    text = "a = 1\n" + "#" * 93 + "\n"
    assert len(text.encode()) == 100
    path = place.write("settings.toml", text)
    assert _read(path, max_bytes=100) == {"a": 1}
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match="larger than the limit of 100 bytes") as caught:
        _read(path, max_bytes=100)
    assert caught.value.locator == str(path)
    assert parsed == ["toml"]


def test_invalid_utf8_names_the_byte_and_line(place: Place, parsed: list[str]) -> None:
    """Bytes that are not UTF-8 are a SourceError naming the byte, its offset and its line."""
    path = place.work / "settings.toml"
    path.write_bytes(b'a = 1\nb = "caf\xe9"\n')
    with pytest.raises(SourceError, match=r"not UTF-8 text: byte 0xe9 at offset 14") as caught:
        _read(path)
    assert caught.value.line == 2
    assert caught.value.locator == f"{path}:2"
    assert parsed == []


@pytest.mark.parametrize(
    ("fmt", "text"),
    [("toml", "a = 1\n"), ("json", '{"a": 1}'), ("yaml", "a: 1\n")],
)
def test_utf8_byte_order_mark_is_accepted(place: Place, fmt: str, text: str) -> None:
    """A leading UTF-8 BOM is skipped in every format, and lines are unchanged."""
    path = place.work / f"settings.{fmt}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    table = _read(path, fmt)
    assert table == {"a": 1}
    assert table is not None
    assert table.lines == {"a": 1}


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read any file"
)
def test_unreadable_file_is_refused(place: Place) -> None:
    """A file without read permission is a SourceError, not a missing file."""
    path = place.write("settings.toml", "a = 1\n")
    path.chmod(0)
    try:
        with pytest.raises(SourceError, match="cannot read") as caught:
            _read(path)
    finally:
        path.chmod(0o644)
    assert caught.value.locator == str(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_is_refused_without_blocking(place: Place) -> None:
    """A FIFO is refused as not a regular file, without waiting for a writer."""
    fifo = place.work / "settings.toml"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(_read(fifo))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=2)
    blocked = worker.is_alive()
    if blocked:  # open() waits for a writer: be one, so that the thread can end
        for _ in range(50):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                time.sleep(0.05)
        worker.join(timeout=5)
    assert not blocked, "read_table blocked on a FIFO until a writer opened it"
    assert len(outcome) == 1
    assert isinstance(outcome[0], SourceError)
    assert "not a regular file" in str(outcome[0])
