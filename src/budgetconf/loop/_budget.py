"""The budgets of one run, each with the evidence of where its value came from.

A `Budget` is read from a `Resolution` through the preset's loop table, each
budget a `Limit` (`budgetconf.loop._limit`), so the executor can say, when a budget stops a
run, which field did it, the source and locator that set it, and which
variable or flag raises it. `LedgerSettings` holds the shared ledger's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from budgetconf._loop_table import BudgetName, LastTurn, LoopSpec, OverCap, StopReason
from budgetconf._prices import NO_PRICES, PriceSettings
from budgetconf._resolution import Resolution
from budgetconf._resolve import resolve
from budgetconf._text_formats import split_scopes
from budgetconf.errors import PresetError, UsageTypeError
from budgetconf.ledger._address import LedgerURL, parse_url, shown_url
from budgetconf.loop._limit import Limit, limit_of, limits_by_key


@dataclass(frozen=True, slots=True)
class ScopeBudget:
    """One scope a run draws on (`LedgerSettings.scopes`): the window its counter counts in,
    and its maxima, each a `Limit` with where it was set, or None."""

    __module__ = "budgetconf.loop"

    scope: str
    window: str
    max_tokens: Limit | None
    max_cost_usd: Limit | None


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """The shared ledger a run draws on (docs/ledger.md): where, which scopes, and how.

    The one record the ledger's fields are read into (`from_resolution`):
    each attribute is the field ``ledger.NAME`` (`path`), and a preset that
    does not declare one leaves its default. ``url`` is the address as given,
    password included, and ``address`` the same read once (None when the
    record was made in code: the run reads it when it opens the ledger);
    every message shows `shown`. ``max_tokens`` and ``max_cost_usd`` are the
    own scope's maxima, each a `Limit` with where it was set, or None;
    ``parents`` the scopes the run also draws on, in order; the tables
    ``max_tokens_by_scope`` and ``max_cost_usd_by_scope`` a `Limit` for each
    scope they name, and ``window_by_scope`` a parent's window: `scopes`.
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
    parents: tuple[str, ...] = ()
    # each table's limits and windows, by the scope: ledger.max_tokens_by_scope.SCOPE, ...
    max_tokens_by_scope: Mapping[str, Limit] = field(default_factory=dict)
    max_cost_usd_by_scope: Mapping[str, Limit] = field(default_factory=dict)
    window_by_scope: Mapping[str, str] = field(default_factory=dict)

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
            name: limit_of(res, name, cls.path(name), command_line)
            if cls.path(name) in fields
            else None
            for name in ("max_tokens", "max_cost_usd")
        }
        parents = res.values.get(cls.path("parents"))
        windows = res.values.get(cls.path("window_by_scope"))  # a table's value: a dict
        by_scope = {k: str(v) for k, v in windows.items()} if isinstance(windows, Mapping) else {}
        trace = res.trace(cls.path("url"))
        return cls(
            url,
            **given,  # type: ignore[arg-type]  # each field checked by its kind
            **maxima,  # type: ignore[arg-type]
            source=trace.source,
            locator=trace.locator,
            address=parse_url(url),  # the resolution has judged it
            reserve_cost_given=_given(res, cls.path("reserve_cost_usd")),
            parents=split_scopes(parents) if isinstance(parents, str) else (),
            max_tokens_by_scope=_by_scope(res, "max_tokens", command_line),
            max_cost_usd_by_scope=_by_scope(res, "max_cost_usd", command_line),
            window_by_scope=by_scope,
        )

    def scopes(self) -> tuple[ScopeBudget, ...]:
        """Every scope the run draws on: its own first, in ``window``, each maximum the lower
        of the field's and its table's entry for the scope (the field's on a tie); then each
        parent once, in order, in its ``window_by_scope``, else ``window``, with its tables'
        entries. A parent that is the own scope is that counter; other scopes bind nothing."""
        tokens, cost = self.max_tokens_by_scope, self.max_cost_usd_by_scope
        own = ScopeBudget(
            self.scope,
            self.window,
            _tighter(self.max_tokens, tokens.get(self.scope)),
            _tighter(self.max_cost_usd, cost.get(self.scope)),
        )
        parents = dict.fromkeys(p for p in self.parents if p != self.scope)  # each once, in order
        return own, *(
            ScopeBudget(p, self.window_by_scope.get(p, self.window), tokens.get(p), cost.get(p))
            for p in parents
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
        where = (
            f"url={self.shown!r}, scope={self.scope!r}, parents={self.parents!r},"
            f" window={self.window!r}"
        )
        maxima = f"max_tokens={self.max_tokens!r}, max_cost_usd={self.max_cost_usd!r}"
        return f"LedgerSettings({where}, {maxima})"


def _by_scope(res: Resolution, budget: str, command_line: bool) -> dict[str, Limit]:
    """The limit on ``budget`` of each scope ``ledger.{budget}_by_scope`` names."""
    return limits_by_key(res, budget, LedgerSettings.path(f"{budget}_by_scope"), command_line)


def _tighter(plain: Limit | None, by_scope: Limit | None) -> Limit | None:
    """The lower of two limits on one budget (``plain``, the field's, on a tie), or the one set."""
    if plain is None or (by_scope is not None and by_scope.value < plain.value):
        return by_scope
    return plain


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
                tools = limits_by_key(res, budget, path, command_line)
                continue
            limit = limit_of(res, budget, path, command_line)
            if limit is not None:
                limits[budget] = limit
        warnings: dict[str, Limit] = {}
        for name, path in spec.warnings.items():  # warn_model is a switch, set only when on
            limit = limit_of(res, name, path, command_line, switch=True)
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
            res.preset, limits, last_turn, over_cap, spec, ledger, prices, otel, tools, warnings
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
