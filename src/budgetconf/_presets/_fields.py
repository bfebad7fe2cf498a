"""The preset's ``[fields]``: each field's type, constraints, names and default, as a `Schema`.

Each field is checked alone (its keys, its bounds against its type, its
default against its own rules), then against the others: no name read by two
fields, no secret's variable or flag shared with a field that is not secret,
and a ``default_from`` that names a field able to stand in for this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._field import Field, Invalid, Kind
from budgetconf._presets._tables import Bad, check_keys, strings, take
from budgetconf._schema import Schema
from budgetconf._table import table_value
from budgetconf._text_formats import FORMAT_BY_PATH, FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

_PATH: Final = r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*"
_FLAG: Final = r"--[A-Za-z0-9][A-Za-z0-9-]*"
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
        "format",
        "values",
        "keys",
    }
)


def read_fields(data: Mapping[str, Any]) -> Schema:
    fields_table = take(data, "fields", dict, "")
    if not fields_table:
        raise Bad("fields: a preset needs at least one field")
    schema = Schema(tuple(_field(path, spec) for path, spec in fields_table.items()))
    _check_names(schema)
    _check_shared(schema)
    return Schema(tuple(_linked(f, schema) for f in schema))


def _field(path: str, spec: Any) -> Field:
    """One field alone: its path and keys, its type and constraints, its names, its default."""
    where = f'fields."{path}".'
    import re  # here, not at import: re caches the patterns

    if not re.fullmatch(_PATH, path):
        raise Bad(f'fields."{path}": a field path is section.name, both identifiers')
    if not isinstance(spec, dict):
        raise Bad(f'fields."{path}": expected a table, got {spec!r}')
    check_keys(spec, _FIELD_KEYS, where)
    kind = _kind(spec, where)
    item, keys = _table(spec, kind, where)
    bounds = _bounds(spec, item or kind, where)
    field = Field(
        path=path,
        kind=kind,
        default=None,
        optional=bool(take(spec, "optional", bool, where)),
        choices=_choices(spec, item or kind, where),
        env=strings(spec, "env", where),
        flags=_flags(spec, where),
        aliases=strings(spec, "aliases", where),
        secret=bool(take(spec, "secret", bool, where)),
        help=take(spec, "help", str, where) or "",
        default_from=take(spec, "default_from", str, where),
        format=_format(path, spec, item or kind, where),
        ge=bounds["ge"],
        gt=bounds["gt"],
        le=bounds["le"],
        lt=bounds["lt"],
        item=item,
        keys=keys,
    )
    return _with_default(field, spec, where)


def _kind(spec: Mapping[str, Any], where: str) -> Kind:
    type_name = take(spec, "type", str, where)
    if type_name not in Kind.__members__.values():
        words = ", ".join(k.value for k in Kind)
        raise Bad(f"{where}type: expected one of {words}, got {type_name!r}")
    return Kind(type_name)


def _with_default(field: Field, spec: Mapping[str, Any], where: str) -> Field:
    """``field`` with its default: its own, checked by its own rules, or none when it is
    optional or takes another field's; a table's is no keys when it gives none."""
    if field.default_from is not None:
        if "default" in spec:
            raise Bad(f"{where}default_from: a field has its own default or another's, not both")
        if not field.optional:
            raise Bad(f"{where}default_from: needs optional = true, as unset is what takes it")
        if field.kind is Kind.TABLE:  # each key is settled alone: no table is ever unset
            raise Bad(f"{where}default_from: a table takes no default from another field")
    if "default" not in spec:
        if field.kind is Kind.TABLE:
            return field.replace(default={})  # a table with no keys set limits nothing
        if not field.optional:
            raise Bad(f"{where}default: required unless the field is optional")
        return field
    raw = spec["default"]
    try:
        if field.kind is Kind.TABLE:
            return field.replace(default=table_value(field, raw, False))
        return field.replace(default=field.check_value(raw))
    except Invalid as exc:
        raise Bad(f"{where}default: {exc.reason}") from None


def _table(spec: Mapping[str, Any], kind: Kind, where: str) -> tuple[Kind | None, str | None]:
    """A table's type of values and rule of keys; None for a field of any other type."""
    values = take(spec, "values", str, where)
    keys = take(spec, "keys", str, where)
    if kind is not Kind.TABLE:
        given = "values" if values is not None else "keys" if keys is not None else None
        if given is not None:
            raise Bad(f"{where}{given}: only a table field takes it, and this one is {kind.value}")
        return None, None
    scalar = [k.value for k in Kind if k is not Kind.TABLE]
    if values not in scalar:
        raise Bad(f"{where}values: expected one of {', '.join(scalar)}, got {values!r}")
    if keys not in FORMATS:
        raise Bad(f"{where}keys: expected one of {', '.join(FORMATS)}, got {keys!r}")
    return Kind(values), keys


def _bounds(spec: Mapping[str, Any], kind: Kind, where: str) -> dict[str, float | None]:
    bounds = {b: take(spec, b, (int, float), where) for b in ("ge", "gt", "le", "lt")}
    if kind not in (Kind.INT, Kind.NUMBER) and any(v is not None for v in bounds.values()):
        raise Bad(f"{where}ge/gt/le/lt: bounds apply to int and number fields only")
    return bounds


def _choices(spec: Mapping[str, Any], kind: Kind, where: str) -> tuple[str, ...]:
    choices = strings(spec, "choices", where)
    if (kind is Kind.ENUM) != bool(choices):
        raise Bad(f"{where}choices: enum fields need choices, and only they take them")
    return choices


def _format(path: str, spec: Mapping[str, Any], kind: Kind, where: str) -> str | None:
    """The rule the field's text follows: its own, or the one a run reads its path by."""
    name = take(spec, "format", str, where)
    if name is None:
        return FORMAT_BY_PATH.get(path) if kind is Kind.TEXT else None
    if kind is not Kind.TEXT:
        raise Bad(f"{where}format: only text fields take a format")
    if name not in FORMATS:
        raise Bad(f"{where}format: expected one of {', '.join(FORMATS)}, got {name!r}")
    return str(name)


def _flags(spec: Mapping[str, Any], where: str) -> tuple[str, ...]:
    import re

    flags = strings(spec, "flags", where)
    for flag in flags:
        if not re.fullmatch(_FLAG, flag):
            raise Bad(f"{where}flags: {flag!r} is not a long flag such as --max-steps")
    return flags


def _check_names(schema: Schema) -> None:
    seen: dict[tuple[str, str], str] = {}
    for f in schema:
        for key in (f.name, *f.aliases):
            other = seen.setdefault((f.section, key), f.path)
            if other != f.path:
                raise Bad(f'fields."{f.path}": {key!r} is already a name of {other}')


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
                raise Bad(
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
        raise Bad(where + exc.args[0]) from None
    if other is field:
        raise Bad(where + "a field cannot take its default from itself")
    if other.default_from is not None:
        raise Bad(where + f"{other.path} takes its own default from {other.default_from}")
    if other.kind is not field.kind:
        raise Bad(where + f"{other.path} is {other.noun}, and this field is {field.noun}")
    if not set(other.choices) <= set(field.choices) or not _within(other, field):
        raise Bad(where + f"{other.path} may take values this field refuses")
    if other.secret and not field.secret:
        raise Bad(where + f"{other.path} is secret, so this field must be secret too")
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
