"""The preset's ``[loop]`` table: which field holds each budget, and what happens at it.

Read into a `LoopSpec` against the preset's fields, so a loop names only
fields of the right kind: an integer for a counted budget, an enum of a
behaviour's words for a behaviour, and a step budget that is always set.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._field import Field, Kind
from budgetconf._loop_table import BEHAVIOURS, WARNINGS, BudgetName, LoopSpec, StopReason
from budgetconf._presets._tables import Bad, check_keys, take
from budgetconf._schema import Schema
from budgetconf._values import show_typed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

_STOP_NAMES: Final = frozenset(stop.value for stop in StopReason if stop.budget is not None)
_LOOP_TEXTS: Final = ("warn_message", "wrap_up_message", "truncated_warning")
_LOOP_KEYS: Final = frozenset({*BudgetName, *BEHAVIOURS, *WARNINGS, *_LOOP_TEXTS, "stop_reasons"})


def read_loop(table: Mapping[str, Any] | None, schema: Schema) -> LoopSpec | None:
    if table is None:
        return None
    check_keys(table, _LOOP_KEYS, "loop.")
    texts = {key: take(table, key, str, "loop.") for key in _LOOP_TEXTS if key in table}
    return LoopSpec(
        _budgets(table, schema),
        _behaviours(table, schema),
        _stop_renames(table),
        **texts,
        warnings=_warnings(table, schema),
    )


def _budgets(table: Mapping[str, Any], schema: Schema) -> dict[str, str]:
    """The field of each budget the table names; the step budget must have one that is set."""
    budgets: dict[str, str] = {}
    for budget in BudgetName:
        path = take(table, budget, str, "loop.")
        if path is None:
            continue
        field = _loop_field(path, budget, schema)
        if budget is BudgetName.MAX_CALLS_BY_TOOL:
            if field.kind is not Kind.TABLE or field.item is not Kind.INT:
                raise Bad(f"loop.{budget}: {path} is {field.noun}, not a table of integers")
        elif field.kind is not Kind.INT and (budget.counted or field.kind is not Kind.NUMBER):
            wanted = "an integer" if budget.counted else "a number"
            raise Bad(f"loop.{budget}: {path} is {field.noun}, not {wanted}")
        budgets[budget] = field.path
    if BudgetName.MAX_STEPS not in budgets:
        raise Bad("loop.max_steps: a loop needs a step budget; name the field that holds it")
    steps = schema.by_path[budgets[BudgetName.MAX_STEPS]]
    stand_in = schema.by_path.get(steps.default_from or "")
    if steps.optional and (stand_in is None or stand_in.optional):
        raise Bad(f"loop.max_steps: {steps.path} may be unset, and a loop needs a step budget")
    return budgets


def _behaviours(table: Mapping[str, Any], schema: Schema) -> dict[str, str]:
    """Each behaviour as a word of its enum or the path of an enum field of those words."""
    behaviours: dict[str, str] = {}
    for behaviour, enum in BEHAVIOURS.items():
        words = [word.value for word in enum]
        setting = take(table, behaviour, str, "loop.") or words[0]
        if "." in setting:
            field = _loop_field(setting, behaviour, schema)
            if field.kind is not Kind.ENUM or not set(field.choices) <= set(words):
                raise Bad(f"loop.{behaviour}: {setting} must be an enum of {', '.join(words)}")
            if field.optional:
                raise Bad(f"loop.{behaviour}: {setting} may be unset; it needs a default")
            if field.secret:  # the run's events, and what it does, would say which word it is
                raise Bad(f"loop.{behaviour}: {setting} is secret; a behaviour cannot be")
            setting = field.path
        elif setting not in words:
            raise Bad(f"loop.{behaviour}: expected a field or one of {', '.join(words)}")
        behaviours[behaviour] = setting
    return behaviours


def _warnings(table: Mapping[str, Any], schema: Schema) -> dict[str, str]:
    """The field of each warning setting the table names, each of its type."""
    found: dict[str, str] = {}
    for name, kind in WARNINGS.items():
        path = take(table, name, str, "loop.")
        if path is None:
            continue
        field = _loop_field(path, name, schema)
        if field.kind is not Kind(kind):
            raise Bad(f"loop.{name}: {path} is {field.noun}, not a {kind}")
        found[name] = field.path
    return found


def _stop_renames(table: Mapping[str, Any]) -> dict[str, str]:
    """Budget stops renamed: a new name may be neither a standard stop nor another's."""
    renames: dict[str, Any] = take(table, "stop_reasons", dict, "loop.") or {}
    for stop, name in renames.items():
        if stop not in _STOP_NAMES:
            raise Bad(f"loop.stop_reasons: {stop!r} is not a budget stop")
        if not isinstance(name, str) or not name:
            raise Bad(f"loop.stop_reasons.{stop}: expected a name, got {show_typed(name)}")
        if name in StopReason.__members__.values() or list(renames.values()).count(name) > 1:
            raise Bad(f"loop.stop_reasons.{stop}: {name!r} already names another stop")
    return dict(renames)


def _loop_field(path: str, key: str, schema: Schema) -> Field:
    try:
        return schema.lookup(path)
    except KeyError as exc:
        raise Bad(f"loop.{key}: {exc.args[0]}") from None
