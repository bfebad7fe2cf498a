"""Presets: a schema, a ranked stack of sources and their policies, as data.

Built-in presets are the TOML files beside this module; an application passes
the path of its own file in the same format (see ``docs/presets-format.md``).
Files are checked strictly when loaded: an unknown key, a value of the wrong
type (``true`` is not a number) or a default that breaks its own field's rules
is a `PresetError`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable, Mapping
from types import MappingProxyType

from budgetconf._record import Record, set_field
from budgetconf.errors import PresetError
from budgetconf.schema import Field, Invalid, Kind, Schema, did_you_mean, show_typed
from budgetconf.sources import KINDS, MergeMode, Policy, SourceSpec
from budgetconf.sources._base import DEFAULT_MAX_FILE_BYTES
from budgetconf.sources._files import FileProblem, is_recent, read_limited
from budgetconf.sources._steps import StepFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from budgetconf.sources import Source

__all__ = ["LoopSpec", "Preset", "load_preset", "preset_names"]

FORMAT_VERSION: Final = 1
_HERE: Final = os.path.dirname(__file__)
_PATH: Final = r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*"
_FLAG: Final = r"--[A-Za-z0-9][A-Za-z0-9-]*"
_TOP_KEYS: Final = frozenset(
    {"format", "name", "summary", "home", "home_env", "max_file_bytes", "sources", "fields", "loop"}
)
_SOURCE_KEYS: Final = frozenset({"kind", "invalid", "merge"})
# source kind -> option -> the source kind that option relies on
_NEEDS: Final = {"profile": {"from_step": "step"}}
_FIELD_KEYS: Final = frozenset(
    {
        "type",
        "default",
        "optional",
        "ge",
        "gt",
        "le",
        "lt",
        "choices",
        "env",
        "flags",
        "aliases",
        "secret",
        "help",
        "default_from",
    }
)


#: the loop's budgets, each held by a field of the preset
BUDGETS: Final = (
    "max_steps",
    "max_tool_calls_per_turn",
    "max_tool_calls",
    "max_tokens",
    "max_cost_usd",
    "timeout_seconds",
)
#: the loop's behaviours, each a field of the preset or one of its words (the first is the default)
BEHAVIOURS: Final = {"last_turn": ("none", "warn", "wrap_up"), "over_cap": ("reject", "truncate")}
_STOP_NAMES: Final = frozenset({"max_steps", "max_tool_calls", "max_tokens", "max_cost", "timeout"})
# every standard stop reason: a renamed stop may not take one of them
_STANDARD_STOPS: Final = _STOP_NAMES | {
    "completed",
    "error",
    "cancelled",
    "content_filtered",
    "refused",
    "length_truncated",
}
_AMOUNTS: Final = frozenset({"max_cost_usd", "timeout_seconds"})  # budgets that may be fractional
_LOOP_TEXTS: Final = ("warn_message", "wrap_up_message", "truncated_warning")
_LOOP_KEYS: Final = frozenset({*BUDGETS, *BEHAVIOURS, *_LOOP_TEXTS, "stop_reasons"})

WARN_MESSAGE: Final = (
    "This is your last turn: tools you call now will not run. "
    "Give your final answer without calling tools."
)
WRAP_UP_MESSAGE: Final = (
    "You have reached the step budget for this task. Stop calling tools now and give "
    "your best final answer: summarise the work done so far and say clearly what is "
    "left incomplete."
)


class LoopSpec(Record):
    """How a preset's loop is bounded: which field holds each budget, and what happens at it.

    ``budgets`` maps a budget (``max_steps``, ``max_tokens``, …) to the path
    of the field that holds it; a budget with no field is not enforced.
    ``behaviours`` maps ``last_turn`` and ``over_cap`` to a field path or a
    fixed word. ``stop_reasons`` renames budget stops (``max_steps`` ->
    ``max_turns_exhausted``).
    """

    __slots__ = (
        "behaviours",
        "budgets",
        "stop_reasons",
        "truncated_warning",
        "warn_message",
        "wrap_up_message",
    )

    budgets: Mapping[str, str]
    behaviours: Mapping[str, str]
    stop_reasons: Mapping[str, str]
    warn_message: str
    wrap_up_message: str
    truncated_warning: str | None

    def __init__(
        self,
        budgets: Mapping[str, str],
        behaviours: Mapping[str, str],
        stop_reasons: Mapping[str, str],
        warn_message: str = WARN_MESSAGE,
        wrap_up_message: str = WRAP_UP_MESSAGE,
        truncated_warning: str | None = None,
    ) -> None:
        set_field(self, "budgets", MappingProxyType(dict(budgets)))
        set_field(self, "behaviours", MappingProxyType(dict(behaviours)))
        set_field(self, "stop_reasons", MappingProxyType(dict(stop_reasons)))
        set_field(self, "warn_message", warn_message)
        set_field(self, "wrap_up_message", wrap_up_message)
        set_field(self, "truncated_warning", truncated_warning)


class Preset:
    """A loaded preset, ready to resolve with.

    ``origin`` is "built-in" or the file's path; ``loop`` None means the
    preset bounds no loop; ``steps`` is how its step source finds a step (None
    when it has none). ``memo`` keeps the results of recent resolutions by
    their sources' keys (see `budgetconf.resolve.resolve_request`).
    """

    __slots__ = (
        "home",
        "home_env",
        "keys",
        "loop",
        "max_file_bytes",
        "memo",
        "name",
        "origin",
        "schema",
        "sources",
        "stack",
        "steps",
        "summary",
    )

    def __init__(
        self,
        *,
        name: str,
        summary: str,
        schema: Schema,
        stack: tuple[SourceSpec, ...],
        sources: tuple[Source, ...],
        home: str,
        home_env: str | None,
        max_file_bytes: int,
        origin: str,
        loop: LoopSpec | None = None,
        steps: StepFinder | None = None,
    ) -> None:
        self.name = name
        self.summary = summary
        self.schema = schema
        self.stack = stack
        self.sources = sources
        self.home = home
        self.home_env = home_env
        self.max_file_bytes = max_file_bytes
        self.origin = origin
        self.loop = loop
        self.steps = steps
        self.memo: dict[tuple[Hashable, ...], Any] = {}
        # each source's key method, looked up once: a warm resolution is mostly these calls
        self.keys = tuple(source.key for source in sources)

    def __repr__(self) -> str:
        return f"Preset({self.name!r}, origin={self.origin!r})"

    def has_source(self, kind: str) -> bool:
        return any(spec.kind == kind for spec in self.stack)

    @property
    def source_kinds(self) -> tuple[str, ...]:
        return tuple(spec.kind for spec in self.stack)


_builtin: dict[str, Preset] = {}
_by_path: dict[str, tuple[tuple[int, int, int, int, int], Preset]] = {}


def preset_names() -> list[str]:
    """The names of the built-in presets."""
    return sorted(n[: -len(".toml")] for n in os.listdir(_HERE) if n.endswith(".toml"))


def is_preset_path(preset: str | os.PathLike[str]) -> bool:
    """Whether ``preset`` names a file rather than a built-in preset."""
    text = os.fspath(preset)
    return isinstance(preset, os.PathLike) or os.sep in text or text.endswith(".toml")


def load_preset(preset: str | os.PathLike[str]) -> Preset:
    """The built-in preset of that name, or the preset file at that path.

    Loaded presets are kept; a preset file that changes is loaded again.
    """
    if not is_preset_path(preset):
        name = os.fspath(preset)
        cached = _builtin.get(name)
        if cached is not None:
            return cached
        path = os.path.join(_HERE, f"{name}.toml")
        if not os.path.isfile(path):
            hint = did_you_mean(name, preset_names())
            tail = f"; did you mean {hint!r}?" if hint else ""
            known = ", ".join(preset_names())
            raise PresetError(f"unknown preset {name!r}{tail} (built-in presets: {known})")
        loaded = _load_file(path, origin="built-in")
        _builtin[name] = loaded
        return loaded
    path = os.path.abspath(os.path.expanduser(os.fspath(preset)))
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PresetError(f"preset {path}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise PresetError(f"preset {path}: {exc}") from None
    signature = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
    cached_entry = _by_path.get(path)
    if cached_entry is not None and cached_entry[0] == signature:
        return cached_entry[1]
    loaded = _load_file(path, origin=path)
    if not is_recent(st, time.time_ns()):  # else its signature may not tell its versions apart
        _by_path[path] = (signature, loaded)
    return loaded


def _load_file(path: str, *, origin: str) -> Preset:
    import tomllib

    try:
        # bounded: a preset path may name a FIFO or /dev/zero
        data = tomllib.loads(read_limited(path, DEFAULT_MAX_FILE_BYTES)[0].decode("utf-8"))
    except FileProblem as exc:
        raise PresetError(f"preset {path}: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise PresetError(f"preset {path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"preset {path}: invalid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a huge integer, deep nesting
        raise PresetError(f"preset {path}: invalid TOML: {exc or 'nested too deeply'}") from None
    try:
        stem = os.path.splitext(os.path.basename(path))[0]
        return _build(data, origin=origin, stem=stem)
    except _Bad as exc:
        raise PresetError(f"preset {path}: {exc}") from None


class _Bad(Exception):
    """A preset file that breaks the format; the message says where."""


def _take(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``table[key]`` if present, checked to be of ``kind`` (a bool is never a number)."""
    value = table.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise _Bad(f"{where}{key}: expected {_names(kinds)}, got {show_typed(value)}")
    return value


def _names(kinds: tuple[type, ...]) -> str:
    words = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "a table",
    }
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _strings(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    items = _take(table, key, list, where) or []
    for item in items:
        if not isinstance(item, str):
            raise _Bad(f"{where}{key}: expected a list of strings, got {show_typed(item)}")
    return tuple(items)


def _check_keys(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        hint = did_you_mean(unknown[0], sorted(allowed))
        tail = f" (did you mean {hint!r}?)" if hint else ""
        raise _Bad(f"{where}unknown key {unknown[0]!r}{tail}")


def _build(data: Mapping[str, Any], *, origin: str, stem: str) -> Preset:
    _check_keys(data, _TOP_KEYS, "")
    version = _take(data, "format", int, "")
    if version != FORMAT_VERSION:
        raise _Bad(f"format: expected {FORMAT_VERSION}, got {version!r}")
    name = _take(data, "name", str, "") or stem
    fields_table = _take(data, "fields", dict, "")
    if not fields_table:
        raise _Bad("fields: a preset needs at least one field")
    schema = Schema(tuple(_field(path, spec) for path, spec in fields_table.items()))
    _check_names(schema)
    schema = Schema(tuple(_linked(f, schema) for f in schema))
    stack = tuple(_source(i, spec, schema) for i, spec in enumerate(_sources(data)))
    kinds = [spec.kind for spec in stack]
    if kinds[0] != "default":
        raise _Bad("sources: the stack starts with the default source, the floor of every field")
    if len(set(kinds)) != len(kinds):
        raise _Bad("sources: each source kind may appear only once")
    for i, spec in enumerate(stack):
        for option, needed in _NEEDS.get(spec.kind, {}).items():
            if option in spec.options and needed not in kinds:
                raise _Bad(f"sources[{i}] ({spec.kind}).{option}: needs a {needed} source")
    steps = next((s for s in stack if s.kind == "step"), None)
    max_bytes = _take(data, "max_file_bytes", int, "")
    if max_bytes is not None and max_bytes < 1:
        raise _Bad(f"max_file_bytes: expected a positive integer, got {max_bytes}")
    return Preset(
        name=name,
        summary=_take(data, "summary", str, "") or "",
        schema=schema,
        stack=stack,
        sources=tuple(_make(i, spec, schema) for i, spec in enumerate(stack)),
        home=_take(data, "home", str, "") or "~/.budgetconf",
        home_env=_take(data, "home_env", str, ""),
        max_file_bytes=max_bytes or DEFAULT_MAX_FILE_BYTES,
        origin=origin,
        loop=_loop(_take(data, "loop", dict, ""), schema),
        steps=StepFinder.from_options(steps.options) if steps else None,
    )


def _sources(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    entries = _take(data, "sources", list, "")
    if not entries:
        raise _Bad("sources: a preset needs at least one source")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _Bad(f"sources[{i}]: expected a table, got {entry!r}")
    return list(entries)


def _source(index: int, entry: Mapping[str, Any], schema: Schema) -> SourceSpec:
    where = f"sources[{index}]."
    kind = _take(entry, "kind", str, where)
    if kind not in KINDS:
        raise _Bad(f"{where}kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    where = f"sources[{index}] ({kind})."
    options: Mapping[str, type] = KINDS[kind].OPTIONS
    _check_keys(entry, _SOURCE_KEYS | set(options), where)
    invalid = _take(entry, "invalid", str, where) or Policy.ERROR.value
    if invalid not in Policy.__members__.values():
        raise _Bad(f"{where}invalid: expected error or fallback, got {invalid!r}")
    merge: dict[str, MergeMode] = {}
    if "merge" in entry and not KINDS[kind].DEFINES_SECTIONS:
        raise _Bad(f"{where}merge: the {kind} source reads no sections, so it has nothing to merge")
    for section, mode in (_take(entry, "merge", dict, where) or {}).items():
        if section not in schema.sections:
            raise _Bad(f"{where}merge: no section {section!r} in the fields")
        if mode not in MergeMode.__members__.values():
            raise _Bad(f"{where}merge.{section}: expected field or replace, got {mode!r}")
        merge[section] = MergeMode(mode)
    values = {
        key: _strings(entry, key, where) if kind_of is list else _take(entry, key, kind_of, where)
        for key, kind_of in options.items()
        if key in entry
    }
    return SourceSpec(kind, Policy(invalid), merge, values)


def _make(index: int, spec: SourceSpec, schema: Schema) -> Source:
    """The source a stack entry describes; its class may refuse options that do not fit."""
    try:
        return KINDS[spec.kind](spec, schema)
    except ValueError as exc:
        raise _Bad(f"sources[{index}] ({spec.kind}).{exc}") from None


def _loop(table: Mapping[str, Any] | None, schema: Schema) -> LoopSpec | None:
    if table is None:
        return None
    where = "loop."
    _check_keys(table, _LOOP_KEYS, where)
    budgets: dict[str, str] = {}
    for budget in BUDGETS:
        path = _take(table, budget, str, where)
        if path is None:
            continue
        field = _loop_field(path, budget, schema)
        counted = budget not in _AMOUNTS  # steps and calls are counted: only an int will do
        if field.kind is not Kind.INT and (counted or field.kind is not Kind.NUMBER):
            wanted = "an integer" if counted else "a number"
            raise _Bad(f"{where}{budget}: {path} is {field.noun}, not {wanted}")
        budgets[budget] = field.path
    if "max_steps" not in budgets:
        raise _Bad(f"{where}max_steps: a loop needs a step budget; name the field that holds it")
    steps = schema.by_path[budgets["max_steps"]]
    stand_in = schema.by_path.get(steps.default_from or "")
    if steps.optional and (stand_in is None or stand_in.optional):
        raise _Bad(f"{where}max_steps: {steps.path} may be unset, and a loop needs a step budget")
    behaviours: dict[str, str] = {}
    for behaviour, words in BEHAVIOURS.items():
        setting = _take(table, behaviour, str, where) or words[0]
        if "." in setting:
            field = _loop_field(setting, behaviour, schema)
            if field.kind is not Kind.ENUM or not set(field.choices) <= set(words):
                raise _Bad(f"{where}{behaviour}: {setting} must be an enum of {', '.join(words)}")
            if field.optional:
                raise _Bad(f"{where}{behaviour}: {setting} may be unset; it needs a default")
            setting = field.path
        elif setting not in words:
            raise _Bad(f"{where}{behaviour}: expected a field or one of {', '.join(words)}")
        behaviours[behaviour] = setting
    renames = _take(table, "stop_reasons", dict, where) or {}
    for stop, name in renames.items():
        if stop not in _STOP_NAMES:
            raise _Bad(f"{where}stop_reasons: {stop!r} is not a budget stop")
        if not isinstance(name, str) or not name:
            raise _Bad(f"{where}stop_reasons.{stop}: expected a name, got {show_typed(name)}")
        if name in _STANDARD_STOPS or list(renames.values()).count(name) > 1:
            raise _Bad(f"{where}stop_reasons.{stop}: {name!r} already names another stop")
    texts = {key: _take(table, key, str, where) for key in _LOOP_TEXTS if key in table}
    return LoopSpec(budgets, behaviours, dict(renames), **texts)


def _loop_field(path: str, key: str, schema: Schema) -> Field:
    try:
        return schema.lookup(path)
    except KeyError as exc:
        raise _Bad(f"loop.{key}: {exc.args[0]}") from None


def _field(path: str, spec: Any) -> Field:
    where = f'fields."{path}".'
    import re  # here, not at import: re caches the patterns

    if not re.fullmatch(_PATH, path):
        raise _Bad(f'fields."{path}": a field path is section.name, both identifiers')
    if not isinstance(spec, dict):
        raise _Bad(f'fields."{path}": expected a table, got {spec!r}')
    _check_keys(spec, _FIELD_KEYS, where)
    type_name = _take(spec, "type", str, where)
    if type_name not in Kind.__members__.values():
        raise _Bad(f"{where}type: expected one of int, number, bool, enum, got {type_name!r}")
    kind = Kind(type_name)
    bounds = {b: _take(spec, b, (int, float), where) for b in ("ge", "gt", "le", "lt")}
    if kind not in (Kind.INT, Kind.NUMBER) and any(v is not None for v in bounds.values()):
        raise _Bad(f"{where}ge/gt/le/lt: bounds apply to int and number fields only")
    choices = _strings(spec, "choices", where)
    if (kind is Kind.ENUM) != bool(choices):
        raise _Bad(f"{where}choices: enum fields need choices, and only they take them")
    flags = _strings(spec, "flags", where)
    for flag in flags:
        if not re.fullmatch(_FLAG, flag):
            raise _Bad(f"{where}flags: {flag!r} is not a long flag such as --max-steps")
    optional = bool(_take(spec, "optional", bool, where))
    default_from = _take(spec, "default_from", str, where)
    if default_from is not None and "default" in spec:
        raise _Bad(f"{where}default_from: a field has its own default or another's, not both")
    if default_from is not None and not optional:
        raise _Bad(f"{where}default_from: needs optional = true, as unset is what takes it")
    field = Field(
        path=path,
        kind=kind,
        default=None,
        optional=optional,
        choices=choices,
        env=_strings(spec, "env", where),
        flags=flags,
        aliases=_strings(spec, "aliases", where),
        secret=bool(_take(spec, "secret", bool, where)),
        help=_take(spec, "help", str, where) or "",
        default_from=default_from,
        **bounds,
    )
    if "default" not in spec:
        if not optional:
            raise _Bad(f"{where}default: required unless the field is optional")
        return field
    try:
        default = field.check_value(spec["default"])
    except Invalid as exc:
        raise _Bad(f"{where}default: {exc.reason}") from None
    return field.replace(default=default)


def _check_names(schema: Schema) -> None:
    seen: dict[tuple[str, str], str] = {}
    for f in schema:
        for key in (f.name, *f.aliases):
            other = seen.setdefault((f.section, key), f.path)
            if other != f.path:
                raise _Bad(f'fields."{f.path}": {key!r} is already a name of {other}')


def _linked(field: Field, schema: Schema) -> Field:
    """``field`` with its ``default_from`` checked and spelt as a path.

    The other field must be able to stand in for this one: the same type, no
    value this field refuses, not secret unless this one is. It may not take
    its own default from a third field, which rules out chains and cycles.
    """
    if field.default_from is None:
        return field
    where = f'fields."{field.path}".default_from: '
    try:
        other = schema.lookup(field.default_from)
    except KeyError as exc:
        raise _Bad(where + exc.args[0]) from None
    if other is field:
        raise _Bad(where + "a field cannot take its default from itself")
    if other.default_from is not None:
        raise _Bad(where + f"{other.path} takes its own default from {other.default_from}")
    if other.kind is not field.kind:
        raise _Bad(where + f"{other.path} is {other.noun}, and this field is {field.noun}")
    if not set(other.choices) <= set(field.choices) or not _within(other, field):
        raise _Bad(where + f"{other.path} may take values this field refuses")
    if other.secret and not field.secret:
        raise _Bad(where + f"{other.path} is secret, so this field must be secret too")
    return field.replace(default_from=other.path)


def _within(inner: Field, outer: Field) -> bool:
    """Whether the bounds of ``inner`` are at least as tight as those of ``outer``."""
    (inner_low, inner_high), (outer_low, outer_high) = _limits(inner), _limits(outer)
    low = outer_low is None or (inner_low is not None and inner_low >= outer_low)
    high = outer_high is None or (inner_high is not None and inner_high <= outer_high)
    return low and high


_Limit = tuple[float, bool]


def _limits(field: Field) -> tuple[_Limit | None, _Limit | None]:
    """The tightest lower and upper bound, as keys where a higher low and a lower high are tighter.

    A low is (limit, strict), so gt 1 is above ge 1; a high is (limit, not
    strict), so lt 5 is below le 5.
    """
    lows = [
        (limit, strict)
        for limit, strict in ((field.ge, False), (field.gt, True))
        if limit is not None
    ]
    highs = [
        (limit, not strict)
        for limit, strict in ((field.le, False), (field.lt, True))
        if limit is not None
    ]
    return (max(lows) if lows else None), (min(highs) if highs else None)
