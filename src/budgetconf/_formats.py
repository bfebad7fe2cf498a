"""JSON, TOML and YAML parsers that remember the line of every value.

Each parser returns a `Table`: a dict that also knows, for each key, the line
where it is written. A YAML document may also be a list at the top level (a
workflow that is a list of steps): every YAML list is an `Items`, which knows
the line where it starts, and the reader decides whether a list fits. Lines
come from the parser's own positions, never from searching the text for a key:

- JSON: the standard library's pure-Python scanner, with the object parser
  wrapped so that where each value ends is recorded as it is scanned; the
  next key starts after it.
- TOML: `tomllib` parses and validates; then `_toml_lines` walks the
  (now known valid) text with a small tokenizer that understands strings,
  comments, arrays, inline tables and table headers.
- YAML: PyYAML's safe composer gives nodes with marks; values are built from
  the nodes with the safe constructor.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

from budgetconf._record import Unusable
from budgetconf._values import show_text, show_typed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeAlias

    _Mapping = dict[Any, Any]
    _List = list[Any]
else:  # the same classes, without importing `typing` at run time
    _Mapping, _List = dict, list

MAX_DEPTH: Final = 64
MAX_ALIAS_EXPANSION: Final = 10_000


class Table(_Mapping):
    """A mapping read from a file that knows the line where each key is written."""

    __slots__ = ("line", "lines")

    def __init__(
        self,
        items: Iterable[tuple[Any, Any]] | Mapping[Any, Any] = (),
        lines: Mapping[Any, int] | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(items)
        self.lines: dict[Any, int] = dict(lines or {})
        self.line = line  # where the mapping itself starts, when known


class Items(_List):
    """A list read from a file that knows the line where it starts."""

    __slots__ = ("line",)

    def __init__(self, items: Iterable[Any] = (), line: int | None = None) -> None:
        super().__init__(items)
        self.line = line


#: what a file holds at its top level: a mapping, or (YAML only) a list
Document: TypeAlias = Table | Items


class ParseError(Exception):
    """A file that is not valid in its format; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _Lines:
    """Offsets to 1-based line numbers."""

    def __init__(self, text: str) -> None:
        import re

        self._starts = [m.end() for m in re.finditer("\n", text)]

    def __call__(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) + 1


# --- JSON ----------------------------------------------------------------------------


def parse_json(text: str) -> Table:
    import json
    import json.decoder
    import json.scanner

    # documented in the modules' sources, not in typeshed
    json_object: Any = json.decoder.JSONObject  # type: ignore[attr-defined]
    json_array: Any = json.decoder.JSONArray  # type: ignore[attr-defined]
    make_scanner: Any = json.scanner.py_make_scanner  # type: ignore[attr-defined]
    line_of = _Lines(text)
    depth = 0

    def parse_object(
        s_and_end: tuple[str, int],
        strict: bool,
        scan_once: Any,
        object_hook: Any,
        object_pairs_hook: Any,
        memo: Any = None,
    ) -> tuple[Table, int]:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise ParseError(f"nested deeper than {MAX_DEPTH} levels", line_of(s_and_end[1]))
        ends: list[int] = []

        def scan_value(string: str, index: int) -> Any:
            value, end = scan_once(string, index)
            ends.append(end)
            return value, end

        pairs, end = json_object(s_and_end, strict, scan_value, None, list, memo)
        depth -= 1
        table = Table(line=line_of(s_and_end[1] - 1))
        key_at = s_and_end[1]
        for (key, value), value_end in zip(pairs, ends, strict=True):
            while text[key_at] in _JSON_BETWEEN:  # the key starts after the previous value
                key_at += 1
            if key in table:
                raise ParseError(f"duplicate key {show_text(key)}", line_of(key_at))
            table[key] = value
            table.lines[key] = line_of(key_at)
            key_at = value_end
        return table, end

    def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> tuple[list[Any], int]:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise ParseError(f"nested deeper than {MAX_DEPTH} levels", line_of(s_and_end[1]))
        items, end = json_array(s_and_end, scan_once)
        depth -= 1
        return items, end

    def parse_int(number: str) -> int | Unusable:
        if len(number.lstrip("-")) > _MAX_LITERAL_DIGITS:  # int() would refuse it
            return Unusable(number[:24] + "…", "out of range", _TOO_LONG)
        return int(number)

    def parse_float(number: str) -> float | Unusable:
        value = float(number)
        return value if math.isfinite(value) else Unusable(number, "out of range", _NO_FLOAT)

    def parse_constant(name: str) -> Unusable:
        return Unusable(name, "not a JSON number", "JSON has no NaN or Infinity")

    decoder: Any = json.JSONDecoder(
        parse_float=parse_float, parse_int=parse_int, parse_constant=parse_constant
    )
    decoder.parse_object = parse_object
    decoder.parse_array = parse_array
    decoder.scan_once = make_scanner(decoder)  # the C scanner would not call parse_object
    try:
        data = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise ParseError("invalid JSON: nested too deeply") from None
    if not isinstance(data, Table):
        raise ParseError("the top level must be a JSON object", 1)
    return data


_JSON_BETWEEN: Final = frozenset(" \t\n\r,")
_MAX_LITERAL_DIGITS: Final = 1000  # far past any field's range, far below Python's conversion limit
_TOO_LONG: Final = "too many digits to read"
_LONG_BITS: Final = int(_MAX_LITERAL_DIGITS / math.log10(2))
_NO_FLOAT: Final = "beyond the largest float"


# --- TOML ----------------------------------------------------------------------------


_TOML_LINE: Final = r"\(at line (\d+), column (\d+)\)"


def parse_toml(text: str) -> Table:
    import tomllib

    from budgetconf._toml_lines import toml_lines

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        import re

        message = str(exc)
        where = re.search(_TOML_LINE, message)
        line = int(where.group(1)) if where else text.count("\n") + 1  # "at end of document"
        message = re.sub(_TOML_LINE, lambda m: f"(column {m.group(2)})", message)
        raise ParseError(f"invalid TOML: {message}", line) from None
    except RecursionError:
        raise ParseError("invalid TOML: nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit
        raise ParseError(f"invalid TOML: an integer with {_TOO_LONG}") from None
    lines = toml_lines(text)
    located = _locate(data, lines, ())
    assert isinstance(located, Table)
    return located


def _locate(value: Any, lines: Mapping[tuple[Any, ...], int], path: tuple[Any, ...]) -> Any:
    if len(path) > MAX_DEPTH:
        raise ParseError(f"nested deeper than {MAX_DEPTH} levels", lines.get(path[:-1]))
    if isinstance(value, dict):
        table = Table(line=lines.get(path))
        for key, item in value.items():
            table[key] = _locate(item, lines, (*path, key))
            line = lines.get((*path, key))
            if line is not None:
                table.lines[key] = line
        return table
    if isinstance(value, list):
        return [_locate(item, lines, (*path, i)) for i, item in enumerate(value)]
    return value


def readable(value: object) -> object:
    """``value``, or an unusable value for an integer too long for any field.

    An integer reaches a source without a digit limit from TOML's ``0x…``, from
    code or from a dynaconf object; past Python's 4,300 digits ``str()``
    refuses it, so it is shown by its first digits, found by dividing it down.
    """
    if type(value) is not int or abs(value).bit_length() <= _LONG_BITS:
        return value
    digits = int(abs(value).bit_length() * math.log10(2))  # one short at most
    head = str(abs(value) // 10 ** max(digits - 24, 0))[:24]
    return Unusable(("-" if value < 0 else "") + head + "…", "out of range", _TOO_LONG)


# --- YAML ----------------------------------------------------------------------------

_MAP_TAG: Final = "tag:yaml.org,2002:map"
_SEQ_TAG: Final = "tag:yaml.org,2002:seq"
_NULL_TAG: Final = "tag:yaml.org,2002:null"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_TYPED_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "str")
)
_SAFE_ONLY: Final = "(only the safe subset of YAML is read)"

# YAML 1.2's core schema, to compare with the YAML 1.1 reading PyYAML gives
_CORE_NULL: Final = frozenset({"", "~", "null", "Null", "NULL"})
_CORE_BOOL: Final = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
_CORE_INT: Final = r"[-+]?[0-9]+"
_CORE_OCT: Final = r"0o[0-7]+"
_CORE_HEX: Final = r"0x[0-9a-fA-F]+"
_CORE_FLOAT: Final = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
_CORE_INF: Final = r"[-+]?\.(?:inf|Inf|INF)"
_CORE_NAN: Final = r"\.(?:nan|NaN|NAN)"


def _core_reading(text: str) -> object:
    """How YAML 1.2's core schema reads a plain scalar."""
    if text in _CORE_NULL:
        return None
    if text in _CORE_BOOL:
        return _CORE_BOOL[text]
    if len(text) > 1000:  # past any field's range; int() would refuse it anyway
        return text
    import re  # only here, with YAML: re caches the patterns

    if re.fullmatch(_CORE_INT, text):
        return int(text)
    if re.fullmatch(_CORE_OCT, text):
        return int(text[2:], 8)
    if re.fullmatch(_CORE_HEX, text):
        return int(text[2:], 16)
    if re.fullmatch(_CORE_FLOAT, text) or re.fullmatch(_CORE_INF, text):
        return float(text.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf"))
    if re.fullmatch(_CORE_NAN, text):
        return math.nan
    return text


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):  # True == 1 and 1 == 1.0, but they are not the same reading
        return False
    return a == b or (a != a and b != b)  # nan is nan


def parse_yaml(text: str) -> Document:
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None or (isinstance(root, yaml.ScalarNode) and root.tag == _NULL_TAG):
            return Table(line=1)  # empty, or only `---` and comments
        if not isinstance(root, yaml.MappingNode | yaml.SequenceNode):
            raise ParseError("the top level must be a YAML mapping or list", _line(root))
        data = _YamlBuilder(loader).build(root, 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        if "constructor for the tag" in problem:
            problem += f" {_SAFE_ONLY}"
        raise ParseError(f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"invalid YAML: {exc}") from None
    except RecursionError:  # the pure-Python composer, on deep nesting
        raise ParseError("invalid YAML: nested too deeply") from None
    except ValueError as exc:  # a mapping key past Python's digit limit
        raise ParseError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    assert isinstance(data, Table | Items)
    return data


class _YamlBuilder:
    """Values from composed nodes, with lines, an alias budget and ambiguity checks.

    An alias shares its anchor's node, so a small document can name a huge
    tree (the "billion laughs"). Every visit to a node already built is alias
    expansion; counting those visits bounds the work, whatever the file's size.
    """

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._seen: set[int] = set()
        self._expanded = 0

    def build(self, node: Any, depth: int) -> Any:
        import yaml

        if id(node) in self._seen:
            self._expanded += 1
            if self._expanded > MAX_ALIAS_EXPANSION:
                raise ParseError(
                    f"aliases expand to more than {MAX_ALIAS_EXPANSION} values", _line(node)
                )
        else:
            self._seen.add(id(node))
        if depth > MAX_DEPTH:
            raise ParseError(f"nested deeper than {MAX_DEPTH} levels", _line(node))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if node.tag not in (_MAP_TAG, _SEQ_TAG):  # !!python/object on a mapping, !!set, ...
            raise ParseError(f"unsupported YAML tag {node.tag!r} {_SAFE_ONLY}", _line(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, depth)
        return Items((self.build(item, depth + 1) for item in node.value), _line(node))

    def _mapping(self, node: Any, depth: int) -> Table:
        import yaml

        table = Table(line=_line(node))
        merged: list[Table] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for source in sources:
                    built = self.build(source, depth + 1)
                    if not isinstance(built, Table):
                        raise ParseError("a merge key (<<) needs a mapping", _line(source))
                    merged.append(built)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise ParseError("a mapping key must be a plain value", _line(key_node))
            key = self._loader.construct_object(key_node)
            if not isinstance(key, str):  # 1: and true: are keys nobody reads; keep their text
                key = key_node.value
            if key in table:
                raise ParseError(f"duplicate key {show_text(key)}", _line(key_node))
            table[key] = self.build(value_node, depth + 1)
            table.lines[key] = _line(key_node)
        for source in merged:  # explicit keys win over merged ones, as in YAML's merge key
            for key, value in source.items():
                if key not in table:
                    table[key] = value
                    if key in source.lines:
                        table.lines[key] = source.lines[key]
        return table

    def _scalar(self, node: Any) -> Any:
        import yaml

        text = node.value
        try:
            value = self._loader.construct_object(node)
        except ValueError:  # an integer past Python's digit limit
            return Unusable(text[:24] + "…", "out of range", _TOO_LONG)
        if type(value) is int and value.bit_length() > _LONG_BITS:  # past any field, as in JSON
            return Unusable(text[:24] + "…", "out of range", _TOO_LONG)
        if node.style or node.tag not in _TYPED_TAGS:
            return value  # quoted, or null, a date, ...: YAML 1.1 and 1.2 agree
        if node.tag != self._loader.resolve(yaml.ScalarNode, text, (True, False)):
            return value  # an explicit tag (!!str 010) says what it is
        reading = _core_reading(text)
        if _same(value, reading):
            return value
        return Unusable(
            text,
            "ambiguous in YAML",
            f"YAML 1.1 reads {show_typed(value)}, YAML 1.2 reads {show_typed(reading)}; "
            "write the one you mean",
        )


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1
