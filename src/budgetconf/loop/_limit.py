"""One enforced budget with the evidence of where its value came from: a `Limit`, and how one
is read from a resolution (`limit_of`), so that every stop can say which field did it, the
source and locator that set it, and which variable or flag raises it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from budgetconf._field import Field
from budgetconf._loop_table import BudgetName
from budgetconf._record import MASK
from budgetconf._resolution import Resolution
from budgetconf._rules import Rule
from budgetconf._trace import FieldTrace, shown_locator
from budgetconf._values import plain_number, show_value
from budgetconf.errors import UsageError


@dataclass(frozen=True, slots=True)
class Limit:
    """One enforced budget: its value, the field that holds it, and where that was set."""

    __module__ = "budgetconf.loop"

    budget: str  # the loop table's key: "max_steps", "max_tokens", ...
    field: str
    value: int | float
    source: str
    locator: str
    # the field's env vars and flags whose sources rank at or above the one that set it (on
    # the command line, when there are none, `--set FIELD=N` when the explicit source does)
    raise_with: tuple[str, ...]
    secret: bool = False
    # with no such variable or flag: the other sources that outrank the one that set it
    raise_in: tuple[str, ...] = ()
    via: str | None = None  # the field the value was taken from, when the budget's was unset
    # which rule of the policy set it, when the policy did: "ceiling; env:X asked for 500"
    policed: str | None = None
    # the policy's rule for the field, if it has one: what a value code asks for is held to
    rule: Rule | None = None
    asked_value: object = None  # what the source the policy overruled asked for, if any

    def __repr__(self) -> str:
        # by hand: the generated repr would show a secret field's value
        shown = ", ".join(
            f"{name}={self.public_value if name == 'value' else getattr(self, name)!r}"
            for name in self.__dataclass_fields__
        )
        return f"Limit({shown})"

    @property
    def public_value(self) -> int | float | str:
        """The value, or ``***`` when the field is secret."""
        return MASK if self.secret else self.value

    def shown(self) -> str:
        return MASK if self.secret else show_value(self.value)

    def to_dict(self) -> dict[str, Any]:
        """``{"field", "value", "source", "locator", "raise_with"}``, as `RunResult.limit`."""
        return {
            "field": self.field,
            "value": self.public_value,
            "source": self.source,
            "locator": self.locator,
            "raise_with": list(self.raise_with),
        }

    def asked(
        self, value: int | float, source: str, locator: str, raise_with: tuple[str, ...] = ()
    ) -> Limit:
        """This budget as code sets it (``resume``, ``carve``): ``value``, held to the policy.

        A locked field keeps its value, and a value above the ceiling is lowered to it (both
        then name the source ``policy`` and the rule's locator); where the ceiling rejects,
        such a value is a `UsageError` naming the rule.
        """
        rule = self.rule
        ruling = None
        if rule is not None and rule.value is not None:
            ruling = ("locked", rule.value)
        elif rule is not None and rule.max is not None and value > _number(rule.max.value):
            ruling = ("ceiling", rule.max)
            if rule.max.reject:
                raise UsageError(
                    f"{locator}: {self.field} may not be above the policy ceiling"
                    f" {self._shown(_number(rule.max.value))} ({rule.max.locator})"
                )
        if ruling is None:
            return replace(
                self,
                value=value,
                source=source,
                locator=locator,
                raise_with=raise_with,
                raise_in=(),
                via=None,
                policed=None,
            )
        word, bound = ruling
        return replace(
            self,
            value=_number(bound.value),
            source="policy",
            locator=bound.locator,
            raise_with=(),
            raise_in=(),
            via=None,
            policed=f"{word}; {locator} asked for {self._shown(value)}",
        )

    def _shown(self, value: int | float) -> str:
        return MASK if self.secret else show_value(value)

    def amount(self, value: int | float) -> str:
        """An amount of this budget for a person: ``$49.97`` in US dollars, else ``812``."""
        if self.secret:
            return MASK
        shown = plain_number(value)
        return "$" + shown if self.budget == BudgetName.MAX_COST_USD else shown

    def explain(self, detail: str = "") -> str:
        """Where the value came from and how to raise it, for a person.

        ``loop.max_steps = 3 from explicit; raise it with BUDGETCONF_MAX_STEPS or --max-steps``;
        a limit the policy set offers no way to raise it. ``detail`` (``; scope team-a has
        spent …``) goes before that last clause, so every stop ends with how to raise it.
        """
        if self.policed is not None:
            return (
                f"{self.field} = {self.shown()} from the policy {self.locator} ({self.policed})"
                f"{detail}; only the policy's administrator can raise it"
            )
        if self.raise_with:
            how = "with " + " or ".join(self.raise_with)
        elif self.raise_in:
            there = "" if self.source == "default" else "there, or "  # a default is not edited
            how = there + "in " + _either(self.raise_in)
        else:
            how = "where it is set"
        where = shown_locator(self.locator, self.via)
        return f"{self.field} = {self.shown()} from {where}{detail}; raise it {how}"


def _either(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def limits_by_key(res: Resolution, budget: str, path: str, command_line: bool) -> dict[str, Limit]:
    """The limit on ``budget`` of each key the table at ``path`` sets, by the key (none of a
    table the preset lacks), each with how to raise it: the table's variables and flags."""
    limits = (
        (t.field.key, limit_of(res, budget, t.field.path, command_line))
        for t in res.traces()
        if t.field.table == path
    )
    return {str(key): limit for key, limit in limits if limit is not None}


def _number(value: object) -> int | float:
    """A bound's value on a budget: a number, as the policy checks a rule on a number field."""
    assert isinstance(value, int | float)
    return value


def _policed(trace: FieldTrace) -> str | None:
    """Which rule of the policy set the field, for a stop's message; None when no rule did.

    ``ceiling; env:BUDGETCONF_MAX_STEPS asked for 500``, ``floor; ...``,
    ``locked``, ``default``, or ``ceiling`` alone for a field that was unset.
    """
    if trace.source != "policy" or trace.ruling is None:
        return None
    asked = trace.asked
    if asked is None:
        return trace.ruling
    return f"{trace.ruling}; {asked.where} asked for {trace.field.mask(show_value(asked.value))}"


def limit_of(
    res: Resolution, budget: str, path: str, command_line: bool, *, switch: bool = False
) -> Limit | None:
    """The limit the field at ``path`` sets on ``budget``, with how to raise it; None unset.
    A ``switch`` may be a boolean field (``loop.warn_model``)."""
    trace = res.trace(path)
    value = trace.value
    if not isinstance(value, int | float) or (isinstance(value, bool) and not switch):
        return None  # unset: not enforced
    field = trace.field
    ranks = {report.source: rank for rank, report in enumerate(res.sources)}
    # only a source at or above the one that decided the value can raise it; for a
    # value taken from another field, that is the source that left this one unset
    decided = trace.winner
    if decided.derived_from is not None:
        at = next(i for i, c in enumerate(trace.candidates) if c is decided)
        decided = trace.candidates[at - 1]
    floor = ranks.get(decided.source, 0)
    policed = _policed(trace)
    raise_with = () if policed else _raise_with(res, field, ranks, floor, command_line)
    return Limit(
        budget,
        path,
        value,
        trace.source,
        trace.locator,
        raise_with,
        field.secret,
        raise_in=() if raise_with else _outranking(res, floor),
        via=trace.winner.derived_from,
        policed=policed,
        rule=trace.policy,
        asked_value=None if trace.asked is None else trace.asked.value,
    )


def _raise_with(
    res: Resolution, field: Field, ranks: Mapping[str, int], floor: int, command_line: bool
) -> tuple[str, ...]:
    """What a person types to raise ``field``: its variables and flags that rank at or above
    ``floor``; on the command line, when there are none, ``--set FIELD=N`` if that does.
    A table's key is raised by the table's variables and flags."""
    names = field if field.table is None else res.schema.by_path[field.table]
    found = (
        *(names.env if ranks.get("env", -1) >= floor else ()),
        *(names.flags if ranks.get("cli", -1) >= floor else ()),
    )
    explicit = ranks.get("explicit", -1)
    if found or not command_line or explicit < floor:
        return found
    option = res.sources[explicit].option
    return () if option is None else (f"{option} {field.path}=N",)


def _outranking(res: Resolution, floor: int) -> tuple[str, ...]:
    """The sources above rank ``floor`` that read files or code, as a person names them."""
    return tuple(r.place for r in res.sources[floor + 1 :] if r.place is not None)
