"""The budgets of one run, each with the evidence of where its value came from.

A `Budget` is read from a `Resolution` through the preset's loop table, so
the executor can say, when a budget stops a run, which field did it, the
source and locator that set it, and which variable or flag raises it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from budgetconf._loop_table import BudgetName, LastTurn, LoopSpec, OverCap, StopReason
from budgetconf._prices import NO_PRICES, PriceSettings
from budgetconf._record import MASK
from budgetconf._resolution import Resolution
from budgetconf._resolve import resolve
from budgetconf._rules import Rule
from budgetconf._schema import Field
from budgetconf._trace import FieldTrace, shown_locator
from budgetconf._values import plain_number, show_value
from budgetconf.errors import PresetError, UsageError, UsageTypeError
from budgetconf.ledger._address import LedgerURL, parse_url, shown_url


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


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """The shared ledger a run draws on (docs/ledger.md): where, which scope, and how.

    The one record the ledger's fields are read into (`from_resolution`):
    each attribute is the field ``ledger.NAME`` (`path`), and a preset that
    does not declare one leaves its default. ``url`` is the address as given,
    password included, and ``address`` the same read once (None when the
    record was made in code: the run reads it when it opens the ledger);
    every message shows `shown`. ``max_tokens`` and ``max_cost_usd`` are the
    scope's maxima, each a `Limit` with where it was set, or None.
    """

    __module__ = "budgetconf.loop"

    url: str  # shown only through `shown` (see __repr__)
    scope: str = "default"
    window: str = "day"
    reserve_tokens: int = 4096
    reserve_cost_usd: float = 0.05  # _DEFAULT_RESERVE
    lease_seconds: float = 300.0
    on_unavailable: str = "stop"
    max_tokens: Limit | None = None
    max_cost_usd: Limit | None = None
    source: str = "explicit"  # the source and locator that set ledger.url
    locator: str = "explicit"
    address: LedgerURL | None = None
    # whether a source set reserve_cost_usd; None: whether it differs from its default. Left at
    # its default, a reservation is priced at the model's price where it is known
    reserve_cost_given: bool | None = None

    @staticmethod
    def path(name: str) -> str:
        """The field that holds the setting ``name``: ``ledger.url`` of ``url``."""
        return f"ledger.{name}"

    @classmethod
    def from_resolution(
        cls, res: Resolution, *, command_line: bool = False
    ) -> LedgerSettings | None:
        """The ledger ``res`` names in ``ledger.url``, or None when it names none; its maxima
        say how to raise them as `Budget.from_resolution`'s limits do."""
        fields = res.schema.by_path
        url = res.values.get(cls.path("url")) if cls.path("url") in fields else None
        if not isinstance(url, str):
            return None
        given = {name: res.values[cls.path(name)] for name in _SETTINGS if cls.path(name) in fields}
        maxima = {
            name: _limit(res, name, cls.path(name), command_line)
            if cls.path(name) in fields
            else None
            for name in ("max_tokens", "max_cost_usd")
        }
        trace = res.trace(cls.path("url"))
        return cls(
            url,
            **given,  # type: ignore[arg-type]  # each field checked by its kind
            **maxima,  # type: ignore[arg-type]
            source=trace.source,
            locator=trace.locator,
            address=parse_url(url),  # the resolution has judged it
            reserve_cost_given=_given(res, cls.path("reserve_cost_usd")),
        )

    @property
    def reserve_cost_default(self) -> bool:
        """Whether ``reserve_cost_usd`` is left at its default (no source set it)."""
        given = self.reserve_cost_given
        return not given if given is not None else self.reserve_cost_usd == _DEFAULT_RESERVE

    @property
    def shown(self) -> str:
        """The address as every message, event and record shows it: its password ``***``."""
        return shown_url(self.url) if self.address is None else self.address.shown

    def __repr__(self) -> str:
        # by hand: the generated repr would show the address's password
        where = f"url={self.shown!r}, scope={self.scope!r}, window={self.window!r}"
        maxima = f"max_tokens={self.max_tokens!r}, max_cost_usd={self.max_cost_usd!r}"
        return f"LedgerSettings({where}, {maxima})"


def _given(res: Resolution, path: str) -> bool:
    """Whether a source set the field at ``path`` (a preset without it: none did)."""
    return path in res.schema.by_path and res.trace(path).source != "default"


#: what a reservation holds of cost when nothing sets it and no price is known
_DEFAULT_RESERVE: Final = 0.05

#: the ledger's settings that are not maxima, each read from the field `LedgerSettings.path`
#: names; one a preset does not declare takes `LedgerSettings`' default
_SETTINGS: Final = (
    "scope",
    "window",
    "reserve_tokens",
    "reserve_cost_usd",
    "lease_seconds",
    "on_unavailable",
)


_OTEL_FIELD: Final = "telemetry.otel"


@dataclass(frozen=True, slots=True)
class Budget:
    """What bounds a run: the enforced limits and the loop's behaviours, from one resolution."""

    __module__ = "budgetconf.loop"

    preset: str
    limits: Mapping[str, Limit]  # budget -> limit; a budget left unset is absent
    last_turn: LastTurn
    over_cap: OverCap
    spec: LoopSpec
    ledger: LedgerSettings | None = None  # the shared ledger the run draws on, if any
    prices: PriceSettings = NO_PRICES  # what its model's tokens cost (docs/prices.md)
    otel: bool = False  # whether the run goes on the OpenTelemetry trace (docs/telemetry.md)
    # tools.max_calls: each named tool's own limit, by the tool's name
    tools: Mapping[str, Limit] = field(default_factory=dict)
    # limits.warn_at and loop.warn_model, when set (warn_model: only when true), by the loop
    # table's key: what `warn_at` and `warn_model` read, with where each was set
    warnings: Mapping[str, Limit] = field(default_factory=dict)

    @property
    def warn_at(self) -> float | None:
        """The fraction of a limit whose first reach is warned of; None: no warnings."""
        found = self.warnings.get("warn_at")
        return None if found is None else float(found.value)

    @property
    def warn_model(self) -> bool:
        """Whether the model is told of a warning too, in the last-turn notice's place."""
        return "warn_model" in self.warnings

    @classmethod
    def from_resolution(cls, res: Resolution, *, command_line: bool = False) -> Budget:
        """The budgets ``res`` resolved, each with how to raise it.

        With ``command_line``, a limit that only the ``explicit`` source can
        raise names the way the command line reaches it, ``--set FIELD=N``
        (as ``budgetconf run`` does), rather than code.
        """
        spec = res.loop
        if spec is None:
            raise PresetError(
                f"preset {res.preset!r} bounds no loop: its file has no [loop] table"
                " naming the field that holds the step budget"
            )
        limits = {}
        tools: dict[str, Limit] = {}
        for budget, path in spec.budgets.items():
            if budget == BudgetName.MAX_CALLS_BY_TOOL:  # a table: a limit for each key set
                for trace in res.traces():
                    limit = None
                    if trace.field.table == path:
                        limit = _limit(res, budget, trace.field.path, command_line)
                    if limit is not None:
                        tools[str(trace.field.key)] = limit
                continue
            limit = _limit(res, budget, path, command_line)
            if limit is not None:
                limits[budget] = limit
        warnings: dict[str, Limit] = {}
        for name, path in spec.warnings.items():  # warn_model is a switch, set only when on
            limit = _limit(res, name, path, command_line, switch=True)
            if limit is not None and limit.value is not False:
                warnings[name] = limit
        behaviours = {
            name: str(res[setting]) if "." in setting else setting
            for name, setting in spec.behaviours.items()
        }
        last_turn, over_cap = LastTurn(behaviours["last_turn"]), OverCap(behaviours["over_cap"])
        ledger = LedgerSettings.from_resolution(res, command_line=command_line)
        prices = PriceSettings.from_resolution(res)
        otel = res.values.get(_OTEL_FIELD) is True  # a preset that does not declare it: off
        return cls(
            res.preset,
            limits,
            last_turn,
            over_cap,
            spec,
            ledger,
            prices,
            otel,
            tools,
            warnings,
        )

    @classmethod
    def of(cls, budget: object) -> Budget:
        """A `Budget` from what `LoopExecutor` accepts as its ``budget``: a `Budget`, a
        `Resolution`, a preset's name or path, a mapping of field values, or None (the
        default preset)."""
        return budget_of(budget)

    def value(self, budget: str) -> int | float | None:
        limit = self.limits.get(budget)
        return None if limit is None else limit.value

    def stop(self, reason: StopReason) -> tuple[str, str, dict[str, Any]]:
        """How a stop at the budget ``reason`` names is reported: its name, message and limit.

        The name is the preset's for it (``max_turns_exhausted``), else the
        reason's; the message ``stopped: hit max_steps (3): loop.max_steps = 3
        from env:BUDGETCONF_MAX_STEPS; raise it with ...``.
        """
        budget = reason.budget
        assert budget is not None, "only a budget's stop names a limit"
        limit = self.limits[budget]
        name = limit.field.rpartition(".")[2]
        message = f"stopped: hit {name} ({limit.shown()}): {limit.explain()}"
        return self.stop_name(reason), message, limit.to_dict()

    def stop_name(self, reason: StopReason) -> str:
        """What the preset calls a stop for ``reason`` (``max_turns_exhausted``), else its value."""
        return self.spec.stop_reasons.get(reason.value, reason.value)

    def with_steps(self, steps: int) -> Budget:
        """This budget with the step budget set by `LoopExecutor.resume`: ``steps``, held to
        the policy's rule for it (`Limit.asked`)."""
        limit = self.limits["max_steps"].asked(
            steps, "resume", f"resume(extra_steps={steps})", ("extra_steps",)
        )
        return replace(self, limits={**self.limits, "max_steps": limit})


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


def _limit(
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


def budget_of(budget: object) -> Budget:
    """A `Budget` from what `LoopExecutor` accepts as its ``budget``."""
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, Resolution):
        return Budget.from_resolution(budget)
    if budget is None:
        return Budget.from_resolution(resolve())
    if isinstance(budget, str | os.PathLike):
        return Budget.from_resolution(resolve(budget))
    if isinstance(budget, Mapping):
        return Budget.from_resolution(resolve(explicit=budget))
    raise UsageTypeError(
        "budget: expected a Resolution, a preset name or path, or a mapping of field"
        f" values, got {type(budget).__name__}"
    )
