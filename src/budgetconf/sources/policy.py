"""The ``policy`` source: an administrator's ceilings, floors, locked values and defaults.

Ranked above every other source, it offers no value of its own: its JSON
file holds a rule per field (section -> field -> rule), which bounds what
the other sources said (see `budgetconf._policing`). It fails closed: a
policy file that exists and cannot be read, parsed or judged fails every
resolution, whatever the preset says of invalid values. The preset's own
path may be missing (then there is no policy); a file named by
``policy_file=`` must exist, and adds to the preset's: both apply.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._field import Field, Invalid, Kind
from budgetconf._files import read_table, source_error, stamp
from budgetconf._formats import Table
from budgetconf._rules import Bound, Rule
from budgetconf._schema import Schema
from budgetconf._table import key_problem
from budgetconf._text import clipped
from budgetconf._values import Value, show_value, type_name
from budgetconf.errors import SourceError
from budgetconf.sources._records import Context, Layer, SourceStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["PolicySource", "read_policy"]

_KIND: Final = "policy"
_ARGUMENT: Final = "policy_file"
_RULE_KEYS: Final = ("max", "min", "value", "default", "on_exceed")
_ON_EXCEED: Final = ("clamp", "reject")


class PolicySource:
    """The preset's policy file (``/etc/budgetconf/policy.json``), and one more named by
    ``policy_file=``; a preset file places it with ``policy = "/absolute/path"``."""

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        _KIND,
        options={"path": str},
        argument=Argument(
            _ARGUMENT,
            option="--policy",
            metavar="PATH",
            help="one more policy file (JSON), applied with the installed one; with check,"
            " judge that file alone",
            text=True,
        ),
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._path: str | None = spec.options.get("path")

    def files(self, ctx: Context) -> list[tuple[str, bool]]:
        """The policy files, the preset's first, each with whether it was named (must exist)."""
        found = [] if self._path is None else [(self._path, False)]
        named = ctx.request.arguments.get(_ARGUMENT)
        if named is not None:
            found.append((ctx.user_path(named), True))
        return found

    def key(self, ctx: Context) -> Hashable:
        if self._path is not None and _ARGUMENT not in ctx.request.arguments:  # the usual case
            version = _stamp(self._path, ctx.max_file_bytes)
            return None if version is None else ((self._path, False, version),)
        parts = []
        for path, named in self.files(ctx):
            version = _stamp(path, ctx.max_file_bytes)
            if version is None:
                return None  # it cannot be looked at: reading it fails, and says why
            parts.append((path, named, version))
        return tuple(parts)

    def load(self, ctx: Context) -> Layer:
        files = self.files(ctx)
        if not files:
            return Layer.not_configured()
        read: list[str] = []
        rules: dict[str, Rule] = {}
        try:
            for path, named in files:
                found = read_policy(path, ctx.schema, ctx.max_file_bytes, named=named)
                if found is not None:
                    read.append(path)
                    rules = combined(rules, found, ctx.schema)
        except SourceError as exc:
            return Layer.failed(exc, exc.locator)
        if not read:
            return Layer(SourceStatus.MISSING, files[0][0])
        return Layer(SourceStatus.LOADED, ", ".join(read), rules=rules)


def _stamp(path: str, max_bytes: int) -> Hashable:
    """`stamp`, but None for a link to nothing: no policy file and a broken one are not the
    same version, since the broken one fails closed."""
    version = stamp(path, max_bytes)
    return None if version == "missing" and os.path.islink(path) else version


def read_policy(
    path: str, schema: Schema, max_bytes: int, *, named: bool
) -> dict[str, Rule] | None:
    """The rules of the policy file at ``path`` by field path; None when there is no file
    and it was not ``named``. Raises `SourceError` naming the file, the line and the field."""
    table = read_table(path, "json", source=_KIND, max_bytes=max_bytes)
    if table is None:
        if os.path.islink(path):  # a link to nothing is there, and unreadable: fail closed
            raise _bad(path, None, "a link to a file that does not exist")
        if named:
            raise SourceError(
                f"{_KIND} {path}: no such file", source=_KIND, locator=path, problem="no such file"
            )
        return None
    assert isinstance(table, Table), "a JSON file's top level is an object"
    return _rules(table, path, schema)


def _bad(path: str, line: int | None, problem: str) -> SourceError:
    return source_error(_KIND, path, problem, line)


def _rules(table: Table, path: str, schema: Schema) -> dict[str, Rule]:
    reject = _on_exceed(table, path, "", default=False)
    rules: dict[str, Rule] = {}
    for section, body in table.items():
        if section == "on_exceed" or str(section).startswith("$"):  # `$schema`: for editors
            continue
        line = table.lines.get(section)
        if section not in schema.sections:
            hint = schema.suggest(str(section), sections=True)
            tail = f"; did you mean {hint}?" if hint else ""
            raise _bad(path, line, f"unknown section {clipped(str(section), repr)}{tail}")
        if not isinstance(body, Table):
            raise _bad(
                path, line, f"section {section} must be an object of fields, got {type_name(body)}"
            )
        for key, spec in body.items():
            at = body.lines.get(key)
            field = schema.by_key.get((section, key))
            if field is None:
                hint = schema.suggest(f"{section}.{key}")
                tail = f"; did you mean {hint}?" if hint else ""
                raise _bad(path, at, f"unknown field {clipped(f'{section}.{key}', repr)}{tail}")
            if field.path in rules or any(p.startswith(f"{field.path}.") for p in rules):
                raise _bad(path, at, f"{field.path}: a second rule, by another of its names")
            if field.kind is Kind.TABLE:
                rules.update(_table_rules(spec, field, path, at, reject))
            else:
                rules[field.path] = _rule(spec, field, path, at, reject)
    return rules


def _table_rules(
    spec: object, table: Field, path: str, line: int | None, reject: bool
) -> dict[str, Rule]:
    """A table's rules: one that bounds every key, under the table's path, and under
    ``keys`` one for each key named, under its entry's path (it stands for the other)."""
    rules: dict[str, Rule] = {}
    if not isinstance(spec, Table) or "keys" not in spec:
        rules[table.path] = _rule(spec, table.entry(), path, line, reject)
        return rules
    keys = spec["keys"]
    at = spec.lines.get("keys")
    if not isinstance(keys, Table):
        raise _bad(
            path, at, f"{table.path}: keys: expected an object of rules, got {type_name(keys)}"
        )
    reject = _on_exceed(spec, path, f"{table.path}: ", default=reject)
    for key, rule in keys.items():
        problem = key_problem(table, key)
        if problem is not None:
            raise _bad(path, keys.lines.get(key), f"{table.path}: keys: {problem}")
        entry = table.entry(str(key))
        rules[entry.path] = _rule(rule, entry, path, keys.lines.get(key), reject)
    rest = Table({k: v for k, v in spec.items() if k != "keys"}, spec.lines, spec.line)
    if any(k != "on_exceed" for k in rest):
        rules[table.path] = _rule(rest, table.entry(), path, line, reject)
    if not rules:
        raise _bad(path, line, f"{table.path}: a rule needs max, min, value, default or keys")
    return rules


def _on_exceed(table: Table, path: str, where: str, *, default: bool) -> bool:
    """Whether a value past a bound is rejected (``"reject"``) rather than clamped."""
    if "on_exceed" not in table:
        return default
    word = table["on_exceed"]
    if word not in _ON_EXCEED:
        shown = clipped(word, repr) if isinstance(word, str) else type_name(word)
        raise _bad(
            path,
            table.lines.get("on_exceed"),
            f"{where}on_exceed: expected clamp or reject, got {shown}",
        )
    return bool(word == "reject")


def _rule(spec: object, field: Field, path: str, line: int | None, reject: bool) -> Rule:
    where = f"{field.path}: "
    if not isinstance(spec, Table):
        raise _bad(
            path,
            line,
            f"{where}a rule is an object of max, min, value, default and"
            f" on_exceed, got {type_name(spec)}",
        )
    unknown = [key for key in spec if key not in _RULE_KEYS]
    if unknown:
        from budgetconf._spelling import did_you_mean

        hint = did_you_mean(str(unknown[0]), list(_RULE_KEYS))
        tail = f" (did you mean {hint!r}?)" if hint else ""
        raise _bad(
            path,
            spec.lines.get(unknown[0]),
            f"{where}unknown key {clipped(str(unknown[0]), repr)}{tail}",
        )
    reject = _on_exceed(spec, path, where, default=reject)
    locator = f"{path}:{line}" if line else path
    bounds: dict[str, Bound] = {}
    for name in ("value", "max", "min", "default"):
        if name in spec:
            value = _bound_value(spec[name], name, field, path, spec.lines.get(name))
            bounds[name] = Bound(value, locator, reject)
    if not bounds:
        raise _bad(path, line, f"{where}a rule needs max, min, value or default")
    rule = Rule(**bounds)
    problem = conflict(field, rule)
    if problem is not None:
        raise _bad(path, line, where + problem)
    return rule


def _bound_value(raw: object, name: str, field: Field, path: str, line: int | None) -> Value:
    where = f"{field.path}: {name}: "
    if name in ("max", "min") and field.kind not in (Kind.INT, Kind.NUMBER):
        raise _bad(path, line, f"{where}{field.path} is {field.noun}; max and min bound numbers")
    if raw is None:
        raise _bad(path, line, f"{where}expected {field.noun}, got null")
    try:
        return field.check_value(raw)
    except Invalid as exc:
        raise _bad(path, line, where + exc.reason) from None


def conflict(field: Field, rule: Rule) -> str | None:
    """What makes ``rule`` impossible to keep, if anything: a floor above the ceiling, a locked
    value or a default outside them, a locked value beside a default."""
    places = len({b.locator for b in rule.bounds().values()}) > 1

    def shown(name: str, bound: Bound) -> str:
        value = field.mask(show_value(bound.value))
        return f"{name} {value}" + (f" ({bound.locator})" if places else "")

    low, high = rule.min, rule.max
    if low is not None and high is not None and _number(low) > _number(high):
        return f"{shown('min', low)} is above {shown('max', high)}"
    if rule.value is not None and rule.default is not None:
        return (
            f"{shown('value', rule.value)} locks the field; {shown('default', rule.default)}"
            " would never be used"
        )
    for name in ("value", "default"):
        bound = getattr(rule, name)
        if bound is None or not isinstance(bound.value, int | float):
            continue
        if high is not None and _number(bound) > _number(high):
            return f"{shown(name, bound)} is above {shown('max', high)}"
        if low is not None and _number(bound) < _number(low):
            return f"{shown(name, bound)} is below {shown('min', low)}"
    return None


def _number(bound: Bound) -> float:
    assert isinstance(bound.value, int | float), "max and min bound numbers"
    return bound.value


def combined(
    known: Mapping[str, Rule], added: Mapping[str, Rule], schema: Schema
) -> dict[str, Rule]:
    """Two policies' rules as one: the stricter bound wins, and the first file's default.

    Raises `SourceError` for two different locked values of one field, or a
    bound of one file that the other's make impossible.
    """
    known, added = _keyed(known, added, schema), _keyed(added, known, schema)
    rules = dict(known)
    for path, rule in added.items():
        first = rules.get(path)
        if first is None:
            rules[path] = rule
            continue
        field = schema.at(path)
        value = first.value or rule.value
        if (
            first.value is not None
            and rule.value is not None
            and first.value.value != rule.value.value
        ):
            raise _locked_twice(field, first.value, rule.value)
        both = Rule(
            value=value,
            max=_stricter(first.max, rule.max, lower=True),
            min=_stricter(first.min, rule.min, lower=False),
            default=first.default or rule.default,
        )
        problem = conflict(field, both)
        if problem is not None:
            at = rule.bounds()
            locator = next(iter(at.values())).locator
            raise SourceError(
                f"{_KIND} {locator}: {path}: {problem}",
                source=_KIND,
                locator=locator,
                problem=f"{path}: {problem}",
            )
        rules[path] = both
    return rules


def _keyed(rules: Mapping[str, Rule], other: Mapping[str, Rule], schema: Schema) -> dict[str, Rule]:
    """``rules``, with their table's rule under each key ``other`` has a rule of its own for.

    A key's own rule stands for its table's in the file that writes both; another file's rule
    for the key is combined with this file's for the table, so that no file loosens a bound
    another one sets.
    """
    keyed = dict(rules)
    for path in other.keys() - rules.keys():
        table = schema.at(path).table
        if table is not None and table in rules:
            keyed[path] = rules[table]
    return keyed


def _locked_twice(field: Field, first: Bound, second: Bound) -> SourceError:
    problem = (
        f"{field.path}: locked to {field.mask(show_value(second.value))} here and to"
        f" {field.mask(show_value(first.value))} by {first.locator}"
    )
    return SourceError(
        f"{_KIND} {second.locator}: {problem}",
        source=_KIND,
        locator=second.locator,
        problem=problem,
    )


def _stricter(a: Bound | None, b: Bound | None, *, lower: bool) -> Bound | None:
    if a is None or b is None:
        return a or b
    if _number(b) == _number(a):
        return a
    return b if (_number(b) < _number(a)) == lower else a
