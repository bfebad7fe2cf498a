"""JSON, TOML and YAML parsers that remember the line of every value.

Each parser returns a `Table`: a dict that also knows, for each key, the line
its value starts on. Lines come from the parser's own positions, never from
searching the text for a key:

- JSON: the standard library's pure-Python scanner, with the object parser
  wrapped so that each value's start offset is recorded as it is scanned.
- TOML: `tomllib` parses and validates; then `_toml_lines` walks the
  (now known valid) text with a small tokenizer that understands strings,
  comments, arrays, inline tables and table headers.
- YAML: PyYAML's safe composer gives nodes with marks; values are built from
  the nodes with the safe constructor.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from budgetconf.schema import Ambiguous

MAX_DEPTH: Final = 64
MAX_YAML_NODES: Final = 20_000


class Table(dict[Any, Any]):
    """A mapping read from a file that knows the line of each key's value."""

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


class ParseError(Exception):
    """A file that is not valid in its format; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _Lines:
    """Offsets to 1-based line numbers."""

    def __init__(self, text: str) -> None:
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
        starts: list[int] = []

        def scan_value(string: str, index: int) -> Any:
            starts.append(index)
            return scan_once(string, index)

        pairs, end = json_object(s_and_end, strict, scan_value, None, list, memo)
        depth -= 1
        table = Table(line=line_of(s_and_end[1] - 1))
        for (key, value), start in zip(pairs, starts, strict=True):
            if key in table:
                raise ParseError(f"duplicate key {key!r}", line_of(start))
            table[key] = value
            table.lines[key] = line_of(start)
        return table, end

    def reject_constant(name: str) -> None:
        raise ParseError(f"{name} is not a JSON number")

    decoder: Any = json.JSONDecoder(parse_constant=reject_constant)
    decoder.parse_object = parse_object
    decoder.scan_once = make_scanner(decoder)  # the C scanner would not call parse_object
    try:
        data = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # an integer past the digit limit
        raise ParseError(f"invalid JSON: {exc}") from None
    if not isinstance(data, Table):
        raise ParseError("the top level must be a JSON object", 1)
    return data


# --- TOML ----------------------------------------------------------------------------


_TOML_LINE: Final = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_toml(text: str) -> Table:
    import tomllib

    from budgetconf.sources._toml_lines import toml_lines

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = _TOML_LINE.search(message)
        line = int(where.group(1)) if where else None
        message = _TOML_LINE.sub(lambda m: f"(column {m.group(2)})", message)
        raise ParseError(f"invalid TOML: {message}", line) from None
    except RecursionError:
        raise ParseError("invalid TOML: nested too deeply") from None
    lines = toml_lines(text)
    located = _locate(data, lines, ())
    assert isinstance(located, Table)
    return located


def _locate(value: Any, lines: Mapping[tuple[Any, ...], int], path: tuple[Any, ...]) -> Any:
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


# --- YAML ----------------------------------------------------------------------------

_INT_TAG: Final = "tag:yaml.org,2002:int"
_FLOAT_TAG: Final = "tag:yaml.org,2002:float"
_BOOL_TAG: Final = "tag:yaml.org,2002:bool"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
# Forms YAML 1.1 (PyYAML) and YAML 1.2 read alike. A plain scalar outside them whose
# 1.1 and 1.2 readings differ is `Ambiguous`: 010, 0b11, 1_000, 1:30, on, 1e3, 0o17.
_SAFE_INT: Final = re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+")
_SAFE_FLOAT: Final = re.compile(
    r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_SAFE_BOOL: Final = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_CORE_NUMBER: Final = re.compile(
    r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+"
)
_NUMBER: Final = "ambiguous YAML number"
_DIFFER: Final = "YAML 1.1 and 1.2 read it differently; write plain digits or quote it"
_TEXT_IN_11: Final = "YAML 1.1 reads it as text, 1.2 as a number; write 1000.0 or quote it"
_BOOLEAN: Final = "ambiguous YAML boolean"
_BOOL_HINT: Final = "YAML 1.1 reads it as a boolean, 1.2 as text; write true or false"


def parse_yaml(text: str) -> Table:
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Table(line=1)
        if not isinstance(root, yaml.MappingNode):
            raise ParseError("the top level must be a YAML mapping", root.start_mark.line + 1)
        data = _YamlBuilder(loader).build(root, 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        if "constructor for the tag" in problem:
            problem += " (only the safe subset of YAML is read)"
        raise ParseError(f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    assert isinstance(data, Table)
    return data


class _YamlBuilder:
    """Values from composed nodes, with lines, a node budget and ambiguity checks.

    Aliases share nodes, so a small document can name a huge tree (the
    "billion laughs"); counting nodes as they are visited bounds that work.
    """

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._visited = 0

    def build(self, node: Any, depth: int) -> Any:
        import yaml

        self._visited += 1
        if self._visited > MAX_YAML_NODES:
            raise ParseError(
                f"more than {MAX_YAML_NODES} values after alias expansion", _line(node)
            )
        if depth > MAX_DEPTH:
            raise ParseError(f"nested deeper than {MAX_DEPTH} levels", _line(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, depth + 1) for item in node.value]
        return self._scalar(node)

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
            if key in table:
                raise ParseError(f"duplicate key {key!r}", _line(key_node))
            table[key] = self.build(value_node, depth + 1)
            table.lines[key] = _line(value_node)
        for source in merged:  # explicit keys win over merged ones, as in YAML's merge key
            for key, value in source.items():
                if key not in table:
                    table[key] = value
                    if key in source.lines:
                        table.lines[key] = source.lines[key]
        return table

    def _scalar(self, node: Any) -> Any:
        if not node.style:  # plain: its type came from the 1.1 resolver
            text = node.value
            if node.tag == _INT_TAG and not _SAFE_INT.fullmatch(text):
                return Ambiguous(text, _NUMBER, _DIFFER)
            if node.tag == _FLOAT_TAG and not _SAFE_FLOAT.fullmatch(text):
                return Ambiguous(text, _NUMBER, _DIFFER)
            if node.tag == _BOOL_TAG and text not in _SAFE_BOOL:
                return Ambiguous(text, _BOOLEAN, _BOOL_HINT)
            if node.tag == _STR_TAG and _CORE_NUMBER.fullmatch(text):
                return Ambiguous(text, _NUMBER, _TEXT_IN_11)
        return self._loader.construct_object(node)


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1
