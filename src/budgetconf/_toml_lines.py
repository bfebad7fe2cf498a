"""The line of every key in a TOML document that `tomllib` has already accepted.

`tomllib` gives no positions, so this module walks the text once more with a
tokenizer that knows just enough TOML to never mistake text for a key:
comments, the four string forms, arrays, inline tables and table headers. It
relies on the document being valid; it is only called after `tomllib.loads`
succeeded, and on anything it does not understand it stops and returns what it
found so far rather than guess.
"""

from __future__ import annotations

import bisect
import contextlib
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END: Final = re.compile(r"[,\]}#\r\n]")
_SPACE: Final = " \t"

Path = tuple[str | int, ...]


class _Stop(Exception):
    pass


def toml_lines(text: str) -> dict[Path, int]:
    """Map each key path (array items by index) to the 1-based line of its value."""
    scanner = _Scanner(text)
    with contextlib.suppress(_Stop, IndexError):  # not TOML after all: keep what was found
        scanner.document()
    return scanner.lines


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.lines: dict[Path, int] = {}
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._arrays: dict[Path, int] = {}  # array-of-tables path -> index of its last table

    def line(self, offset: int) -> int:
        return bisect.bisect_left(self._newlines, offset) + 1

    def document(self) -> None:
        table: Path = ()
        while True:
            self.skip(newlines=True)
            if self.i >= len(self.s):
                return
            start = self.i
            if self.s.startswith("[[", self.i):
                self.i += 2
                key = self.key()
                self.expect("]]")
                parent = self.resolve(key[:-1])
                array = (*parent, key[-1])
                self._arrays[array] = self._arrays.get(array, -1) + 1
                table = (*array, self._arrays[array])
                self.lines.setdefault(array, self.line(start))
                self.lines[table] = self.line(start)
            elif self.s[self.i] == "[":
                self.i += 1
                key = self.key()
                self.expect("]")
                table = self.resolve(key)
                self.lines[table] = self.line(start)
            else:
                self.pair(table)

    def resolve(self, key: Path) -> Path:
        """A header's path, with the current index of each array of tables it passes."""
        path: Path = ()
        for part in key:
            path = (*path, part)
            if path in self._arrays:
                path = (*path, self._arrays[path])
        return path

    def pair(self, table: Path) -> None:
        start = self.i
        key = self.key()
        self.expect("=")
        self.skip()
        for n in range(1, len(key)):  # dotted keys define their parent tables here
            self.lines.setdefault((*table, *key[:n]), self.line(start))
        self.value((*table, *key))

    def value(self, path: Path) -> None:
        self.lines[path] = self.line(self.i)
        s = self.s
        c = s[self.i]
        if c == "{":
            self.i += 1
            self.skip()
            while s[self.i] != "}":
                self.pair(path)
                self.skip()
                if s[self.i] == ",":
                    self.i += 1
                    self.skip()
            self.i += 1
        elif c == "[":
            self.i += 1
            index = 0
            self.skip(newlines=True)
            while s[self.i] != "]":
                self.value((*path, index))
                index += 1
                self.skip(newlines=True)
                if s[self.i] == ",":
                    self.i += 1
                    self.skip(newlines=True)
            self.i += 1
        elif c in "\"'":
            self.string()
        else:
            end = _SCALAR_END.search(s, self.i)
            self.i = end.start() if end else len(s)

    def key(self) -> tuple[str, ...]:
        parts: list[str] = []
        while True:
            self.skip()
            c = self.s[self.i]
            if c in "\"'":
                start = self.i
                self.string()
                parts.append(_key_text(self.s[start : self.i]))
            else:
                match = _BARE_KEY.match(self.s, self.i)
                if not match:
                    raise _Stop
                parts.append(match.group())
                self.i = match.end()
            self.skip()
            if self.s[self.i] != ".":
                return tuple(parts)
            self.i += 1

    def string(self) -> None:
        s = self.s
        quote = s[self.i]
        if s.startswith(quote * 3, self.i):
            self.i += 3
            while True:
                if quote == '"' and s[self.i] == "\\":
                    self.i += 2
                elif s.startswith(quote * 3, self.i):
                    self.i += 3
                    # up to two more quotes belong to the content: """a"""""
                    for _ in range(2):
                        if self.i < len(s) and s[self.i] == quote:
                            self.i += 1
                    return
                else:
                    self.i += 1
        self.i += 1
        while s[self.i] != quote:
            self.i += 2 if quote == '"' and s[self.i] == "\\" else 1
        self.i += 1

    def skip(self, *, newlines: bool = False) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in _SPACE or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            else:
                return

    def expect(self, token: str) -> None:
        self.skip()
        if not self.s.startswith(token, self.i):
            raise _Stop
        self.i += len(token)


def _key_text(quoted: str) -> str:
    if quoted.startswith("'"):
        return quoted[1:-1]
    import tomllib

    return str(tomllib.loads(f"k = {quoted}")["k"])
