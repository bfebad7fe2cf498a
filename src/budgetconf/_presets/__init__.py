"""The preset reader: a preset file, checked strictly, as a `Description`.

Built-in presets are the TOML files beside this module; an application passes
the path of its own file in the same format (see ``docs/presets-format.md``).
Files are checked strictly when read: an unknown key, a value of the wrong
type (``true`` is not a number) or a default that breaks its own field's rules
is a `PresetError`. The reader knows the source kinds only as the
`SourceKind` records it is given: it builds no source and resolves nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from budgetconf._description import Description, MergeMode, Policy, SourceKind, SourceSpec
from budgetconf._files import DEFAULT_MAX_FILE_BYTES, FileProblem, read_limited
from budgetconf._loop_table import BEHAVIOURS, BudgetName, LoopSpec, StopReason
from budgetconf._schema import Field, Invalid, Kind, Schema, show_text, show_typed
from budgetconf._spelling import did_you_mean
from budgetconf.errors import PresetError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["builtin_path", "preset_names", "read_preset"]

FORMAT_VERSION: Final = 1
_HERE: Final = os.path.dirname(__file__)
_PATH: Final = r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*"
_FLAG: Final = r"--[A-Za-z0-9][A-Za-z0-9-]*"
_TOP_KEYS: Final = frozenset(
    {
        "format",
        "name",
        "summary",
        "home",
        "home_env",
        "max_file_bytes",
        "policy",
        "sources",
        "fields",
        "loop",
    }
)
_SOURCE_KEYS: Final = frozenset({"kind", "invalid", "merge"})
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
_STOP_NAMES: Final = frozenset(stop.value for stop in StopReason if stop.budget is not None)
_LOOP_TEXTS: Final = ("warn_message", "wrap_up_message", "truncated_warning")
_LOOP_KEYS: Final = frozenset({*BudgetName, *BEHAVIOURS, *_LOOP_TEXTS, "stop_reasons"})


def preset_names() -> list[str]:
    """The names of the built-in presets."""
    return sorted(n[: -len(".toml")] for n in os.listdir(_HERE) if n.endswith(".toml"))


def builtin_path(name: str) -> str:
    """The file of the built-in preset ``name``. Raises `PresetError` for an unknown name."""
    path = os.path.join(_HERE, f"{name}.toml")
    if not os.path.isfile(path):
        hint = did_you_mean(name, preset_names())
        tail = f"; did you mean {hint!r}?" if hint else ""
        known = ", ".join(preset_names())
        raise PresetError(f"unknown preset {show_text(name)}{tail} (built-in presets: {known})")
    return path


def read_preset(path: str, *, origin: str, kinds: Mapping[str, SourceKind]) -> Description:
    """The preset in the file at ``path``, whose stack may name the source ``kinds``.

    Raises `PresetError` naming the file and the key that breaks the format.
    """
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
        return _build(data, origin=origin, path=path, stem=stem, kinds=kinds)
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
        raise _Bad(f"{where}unknown key {show_text(unknown[0])}{tail}")


def _build(
    data: Mapping[str, Any], *, origin: str, path: str, stem: str, kinds: Mapping[str, SourceKind]
) -> Description:
    _check_keys(data, _TOP_KEYS, "")
    version = _take(data, "format", int, "")
    if version != FORMAT_VERSION:
        raise _Bad(f"format: expected {FORMAT_VERSION}, got {version!r}")
    name = _take(data, "name", str, "") or stem
    schema = _schema(data)
    stack = _stack(data, schema, kinds) + _policy(data, kinds)
    max_bytes = _take(data, "max_file_bytes", int, "")
    if max_bytes is not None and max_bytes < 1:
        raise _Bad(f"max_file_bytes: expected a positive integer, got {max_bytes}")
    return Description(
        name=name,
        summary=_take(data, "summary", str, "") or "",
        schema=schema,
        stack=stack,
        home=_take(data, "home", str, "") or "~/.budgetconf",
        home_env=_take(data, "home_env", str, ""),
        max_file_bytes=max_bytes or DEFAULT_MAX_FILE_BYTES,
        origin=origin,
        path=path,
        loop=_loop(_take(data, "loop", dict, ""), schema),
    )


def _schema(data: Mapping[str, Any]) -> Schema:
    fields_table = _take(data, "fields", dict, "")
    if not fields_table:
        raise _Bad("fields: a preset needs at least one field")
    schema = Schema(tuple(_field(path, spec) for path, spec in fields_table.items()))
    _check_names(schema)
    _check_shared(schema)
    return Schema(tuple(_linked(f, schema) for f in schema))


def _stack(
    data: Mapping[str, Any], schema: Schema, kinds: Mapping[str, SourceKind]
) -> tuple[SourceSpec, ...]:
    entries = _take(data, "sources", list, "")
    if not entries:
        raise _Bad("sources: a preset needs at least one source")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _Bad(f"sources[{i}]: expected a table, got {entry!r}")
    stack = tuple(_source(i, entry, schema, kinds) for i, entry in enumerate(entries))
    names = [spec.kind for spec in stack]
    if names[0] != "default":
        raise _Bad("sources: the stack starts with the default source, the floor of every field")
    if len(set(names)) != len(names):
        raise _Bad("sources: each source kind may appear only once")
    for i, spec in enumerate(stack):
        for option, needed in kinds[spec.kind].needs.items():
            if option in spec.options and needed not in names:
                raise _Bad(f"sources[{i}] ({spec.kind}).{option}: needs a {needed} source")
    return stack


def _policy(data: Mapping[str, Any], kinds: Mapping[str, SourceKind]) -> tuple[SourceSpec, ...]:
    """The policy source, above every other, when the top level names its file.

    The path is written as it is read: absolute, with no ``~`` or ``{home}``,
    so that nothing a user sets can move it.
    """
    path = _take(data, "policy", str, "")
    if path is None:
        return ()
    if "policy" not in kinds:
        raise _Bad("policy: no policy source kind is known to read it")
    if not os.path.isabs(path) or "{" in path:
        raise _Bad(f"policy: expected an absolute path, got {show_text(path)}")
    return (SourceSpec("policy", Policy.ERROR, options={"path": os.path.normpath(path)}),)


def _source(
    index: int, entry: Mapping[str, Any], schema: Schema, kinds: Mapping[str, SourceKind]
) -> SourceSpec:
    where = f"sources[{index}]."
    name = _take(entry, "kind", str, where)
    if name == "policy":
        raise _Bad(f'{where}kind: the policy source is placed by the top level\'s policy = "PATH"')
    if name not in kinds:
        raise _Bad(f"{where}kind: expected one of {', '.join(kinds)}, got {name!r}")
    kind = kinds[name]
    where = f"sources[{index}] ({name})."
    _check_keys(entry, _SOURCE_KEYS | set(kind.options), where)
    invalid = _take(entry, "invalid", str, where) or Policy.ERROR.value
    if invalid not in Policy.__members__.values():
        raise _Bad(f"{where}invalid: expected error or fallback, got {invalid!r}")
    if "merge" in entry and not kind.defines_sections:
        raise _Bad(f"{where}merge: the {name} source reads no sections, so it has nothing to merge")
    merge = _merge_modes(_take(entry, "merge", dict, where) or {}, schema, where)
    values = {
        key: _strings(entry, key, where) if kind_of is list else _take(entry, key, kind_of, where)
        for key, kind_of in kind.options.items()
        if key in entry
    }
    return SourceSpec(name, Policy(invalid), merge, values)


def _merge_modes(table: Mapping[str, Any], schema: Schema, where: str) -> dict[str, MergeMode]:
    merge: dict[str, MergeMode] = {}
    for section, mode in table.items():
        if section not in schema.sections:
            raise _Bad(f"{where}merge: no section {section!r} in the fields")
        if mode not in MergeMode.__members__.values():
            raise _Bad(f"{where}merge.{section}: expected field or replace, got {mode!r}")
        merge[section] = MergeMode(mode)
    return merge


def _loop(table: Mapping[str, Any] | None, schema: Schema) -> LoopSpec | None:
    if table is None:
        return None
    _check_keys(table, _LOOP_KEYS, "loop.")
    texts = {key: _take(table, key, str, "loop.") for key in _LOOP_TEXTS if key in table}
    return LoopSpec(
        _budgets(table, schema), _behaviours(table, schema), _stop_renames(table), **texts
    )


def _budgets(table: Mapping[str, Any], schema: Schema) -> dict[str, str]:
    """The field of each budget the table names; the step budget must have one that is set."""
    budgets: dict[str, str] = {}
    for budget in BudgetName:
        path = _take(table, budget, str, "loop.")
        if path is None:
            continue
        field = _loop_field(path, budget, schema)
        if field.kind is not Kind.INT and (budget.counted or field.kind is not Kind.NUMBER):
            wanted = "an integer" if budget.counted else "a number"
            raise _Bad(f"loop.{budget}: {path} is {field.noun}, not {wanted}")
        budgets[budget] = field.path
    if BudgetName.MAX_STEPS not in budgets:
        raise _Bad("loop.max_steps: a loop needs a step budget; name the field that holds it")
    steps = schema.by_path[budgets[BudgetName.MAX_STEPS]]
    stand_in = schema.by_path.get(steps.default_from or "")
    if steps.optional and (stand_in is None or stand_in.optional):
        raise _Bad(f"loop.max_steps: {steps.path} may be unset, and a loop needs a step budget")
    return budgets


def _behaviours(table: Mapping[str, Any], schema: Schema) -> dict[str, str]:
    """Each behaviour as a word of its enum or the path of an enum field of those words."""
    behaviours: dict[str, str] = {}
    for behaviour, enum in BEHAVIOURS.items():
        words = [word.value for word in enum]
        setting = _take(table, behaviour, str, "loop.") or words[0]
        if "." in setting:
            field = _loop_field(setting, behaviour, schema)
            if field.kind is not Kind.ENUM or not set(field.choices) <= set(words):
                raise _Bad(f"loop.{behaviour}: {setting} must be an enum of {', '.join(words)}")
            if field.optional:
                raise _Bad(f"loop.{behaviour}: {setting} may be unset; it needs a default")
            if field.secret:  # the run's events, and what it does, would say which word it is
                raise _Bad(f"loop.{behaviour}: {setting} is secret; a behaviour cannot be")
            setting = field.path
        elif setting not in words:
            raise _Bad(f"loop.{behaviour}: expected a field or one of {', '.join(words)}")
        behaviours[behaviour] = setting
    return behaviours


def _stop_renames(table: Mapping[str, Any]) -> dict[str, str]:
    """Budget stops renamed: a new name may be neither a standard stop nor another's."""
    renames: dict[str, Any] = _take(table, "stop_reasons", dict, "loop.") or {}
    for stop, name in renames.items():
        if stop not in _STOP_NAMES:
            raise _Bad(f"loop.stop_reasons: {stop!r} is not a budget stop")
        if not isinstance(name, str) or not name:
            raise _Bad(f"loop.stop_reasons.{stop}: expected a name, got {show_typed(name)}")
        if name in StopReason.__members__.values() or list(renames.values()).count(name) > 1:
            raise _Bad(f"loop.stop_reasons.{stop}: {name!r} already names another stop")
    return dict(renames)


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
        raise _Bad(f"{where}type: expected one of int, number, bool, enum, text, got {type_name!r}")
    kind = Kind(type_name)
    bounds = _bounds(spec, kind, where)
    choices = _choices(spec, kind, where)
    flags = _flags(spec, where)
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


def _bounds(spec: Mapping[str, Any], kind: Kind, where: str) -> dict[str, float | None]:
    bounds = {b: _take(spec, b, (int, float), where) for b in ("ge", "gt", "le", "lt")}
    if kind not in (Kind.INT, Kind.NUMBER) and any(v is not None for v in bounds.values()):
        raise _Bad(f"{where}ge/gt/le/lt: bounds apply to int and number fields only")
    return bounds


def _choices(spec: Mapping[str, Any], kind: Kind, where: str) -> tuple[str, ...]:
    choices = _strings(spec, "choices", where)
    if (kind is Kind.ENUM) != bool(choices):
        raise _Bad(f"{where}choices: enum fields need choices, and only they take them")
    return choices


def _flags(spec: Mapping[str, Any], where: str) -> tuple[str, ...]:
    import re

    flags = _strings(spec, "flags", where)
    for flag in flags:
        if not re.fullmatch(_FLAG, flag):
            raise _Bad(f"{where}flags: {flag!r} is not a long flag such as --max-steps")
    return flags


def _check_names(schema: Schema) -> None:
    seen: dict[tuple[str, str], str] = {}
    for f in schema:
        for key in (f.name, *f.aliases):
            other = seen.setdefault((f.section, key), f.path)
            if other != f.path:
                raise _Bad(f'fields."{f.path}": {key!r} is already a name of {other}')


def _check_shared(schema: Schema) -> None:
    """A variable or flag that a secret field reads is read by no field that is not secret.

    The other field would judge the secret's text by its own rules, and show it
    in its trace, its warnings and its errors.
    """
    for kind, by_name in (("env", schema.by_env), ("flags", schema.by_flag)):
        for name, fields in by_name.items():
            secret = next((f for f in fields if f.secret), None)
            plain = next((f for f in fields if not f.secret), None)
            if secret is not None and plain is not None:
                raise _Bad(
                    f'fields."{plain.path}".{kind}: {name} is also read by {secret.path}, which'
                    " is secret; a field that shares a secret's variable or flag must be secret too"
                )


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
