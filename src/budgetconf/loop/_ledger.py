"""The shared ledger's part of one run: reserve before each model call, settle after, record.

A `Draw` is made by a `Meter` whose budget names a ledger (``ledger.url``),
and only then: a run without one never imports `budgetconf.ledger`. The
executor and every bridge draw through their Meter, so each draws the same
way. The ledger is opened at the run's first call and closed when the run
ends, so a run holds one connection, and a process that forks between runs
shares none.

Before each model call the run reserves ``ledger.reserve_tokens`` and
``ledger.reserve_cost_usd`` in every scope it draws on (its own and its
``ledger.parents``, `LedgerSettings.scopes`) at once; a refusal stops it
before the call with ``max_tokens`` or ``max_cost``, its limit naming the
maximum of the scope that refused. The response's usage settles the
reservation together with the next call's reservation, in one call to the
ledger (one server call in Redis), or when the run ends; until then its
lease is renewed as the call's was. A settle that brings a scope's spend to
``limits.warn_at`` of a maximum first in the fleet emits ``ledger_warning``.
Whatever the run still holds when it ends (a call that raised, timed out or
was cancelled; a response that could not be read) is released then, at
once. The run's record is written as it ends, in each scope it drew on.

While a call runs, its reservation is renewed at half its lease, on a thread
of the draw's own (`Renewal`), so a call that outlives ``ledger.lease_seconds``
keeps what it holds and another run cannot be granted it meanwhile. A renewal
that fails is reported when the call ends, as the ledger being unavailable
(``during`` ``renew``), and ``on_unavailable`` applies.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from budgetconf._loop_table import StopReason
from budgetconf._usage import MOST_COST_USD
from budgetconf.errors import BudgetConfWarning, LedgerConflict, LedgerUnavailable
from budgetconf.events import (
    LEDGER_RESERVE,
    LEDGER_SETTLE,
    LEDGER_UNAVAILABLE,
)
from budgetconf.ledger._address import conceal_in
from budgetconf.ledger._records import ScopeLimit, iso
from budgetconf.loop._faults import PASSING, describe
from budgetconf.loop._ledger_stops import fleet_warning, refusal, which
from budgetconf.loop._renewal import Renewal

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable

    from budgetconf.ledger import Ledger, LedgerStatus, Reservation, ScopeWarning
    from budgetconf.loop._budget import LedgerSettings, ScopeBudget
    from budgetconf.loop._ledger_stops import Meter
    from budgetconf.loop._limit import Limit
    from budgetconf.loop._result import RunResult


class Draw:
    """One run's use of the shared ledger its budget names, in every scope it draws on."""

    def __init__(self, run: Meter, settings: LedgerSettings) -> None:
        self.run = run
        # a reservation left at its default is priced at the model's price, where it is known
        pricing = run.pricing
        price = None if pricing is None else pricing.price
        if price is None or not settings.reserve_cost_default:
            self.cost_from = settings.path("reserve_cost_usd")
        else:
            self.cost_from = price.locator
            # at most what one response may cost: the ledger refuses more as unreadable
            held = min(round(settings.reserve_tokens * price.highest, 12), MOST_COST_USD)
            settings = replace(settings, reserve_cost_usd=held)
        self.settings = settings
        # the run's own scope first, then its parents: each with its window and maxima
        self.scopes: tuple[ScopeBudget, ...] = settings.scopes()
        self.limits = [
            ScopeLimit(b.scope, b.window, _value(b.max_tokens), _value(b.max_cost_usd))
            for b in self.scopes
        ]
        self.warn_at = run.budget.warn_at
        self.ledger: Ledger | None = None
        self.held: Reservation | None = None
        # a call's reservation and what its response used, settled with the next reservation
        # (one call to the ledger a turn) or when the run ends: reservation, tokens, cost, turn
        self.pending: tuple[Reservation, int, float, int] | None = None
        self.down = False  # the last use of the ledger failed: the record is not tried
        self.fault: str | None = (
            None  # a settle lost under ``stop``: the run ends before its next call
        )
        self.started = now()
        # the record holds the run's own turns and usage: not those of the runs it resumes,
        # nor its sub-agents' (charged to its totals, but each writes a record of its own)
        self.first_turn = run.turns
        self.used: tuple[int, float] = (0, 0.0)
        self.renewal: Renewal | None = None  # started at the first reservation granted

    def _open(self) -> Ledger:
        if self.ledger is None:
            from budgetconf.ledger import open_ledger

            self.ledger = open_ledger(self.settings.address or self.settings.url)
        return self.ledger

    def _use(self, what: str, act: Callable[[Ledger], T]) -> T:
        """``act(ledger)``; `LedgerUnavailable` whatever went wrong, in one line (a
        `LedgerConflict` passes: the ledger answered)."""
        try:
            result = act(self._open())
        except LedgerUnavailable:
            self.down = True
            raise
        except (LedgerConflict, *PASSING):
            raise
        except Exception as exc:  # a backend's unforeseen fault: one line, never a traceback
            self.down = True
            cause = f"ledger {self.settings.shown}: {what} failed: {describe(exc)}"
            raise LedgerUnavailable(cause) from None
        self.down = False
        return result

    def _reserve(self, ledger: Ledger) -> Reservation | None:
        s = self.settings
        return ledger.reserve(
            scopes=self.limits,
            tokens=s.reserve_tokens,
            cost_usd=s.reserve_cost_usd,
            lease_seconds=s.lease_seconds,
            at=now(),
        )

    def _settle_and_reserve(
        self, ledger: Ledger, pending: tuple[Reservation, int, float, int]
    ) -> tuple[Reservation | None, tuple[ScopeWarning, ...]]:
        s = self.settings
        held, tokens, cost_usd, _ = pending
        return ledger.settle_and_reserve(
            held,
            tokens=tokens,
            cost_usd=cost_usd,
            warn_at=self.warn_at,
            scopes=self.limits,
            reserve_tokens=s.reserve_tokens,
            reserve_cost_usd=s.reserve_cost_usd,
            lease_seconds=s.lease_seconds,
            at=now(),
        )

    def reserve(self) -> RunResult | None:
        """Hold the next model call's share, settling the last call's in the same step; the
        run's result when the ledger stops it."""
        turn = self.run.turns + 1
        if self.held is not None:  # the last call raised and is made again: its share goes back
            self.release()
        if self.pending is not None:  # its call is over: renewed no more
            self._renewed(self.pending[3])
        if self.fault is not None:  # what is pending is settled as the run ends
            return self.run.finish(
                StopReason.ERROR, f"failed: {self.fault} (turn {self.run.turns})"
            )
        pending, self.pending = self.pending, None
        try:
            if pending is None:
                held = self._use("reserve", self._reserve)
            else:
                held, warned = self._use(
                    "settle", lambda led: self._settle_and_reserve(led, pending)
                )
                self._settled(pending, warned)
        except LedgerConflict as exc:
            if pending is not None:  # its settle stands: only the reservation was refused
                self._settled(pending, exc.warnings)
            return self._conflict(exc)
        except LedgerUnavailable as exc:
            if pending is not None and self._settle_lost(exc, pending[3]):
                return self.run.finish(
                    StopReason.ERROR, f"failed: {self.fault} (turn {self.run.turns})"
                )
            return self._unavailable(exc, turn)
        if held is None:
            return self._refused(turn)
        self.held = held
        if self.renewal is None:
            self.renewal = Renewal(self._open(), self.settings)
        self.renewal.hold(held)
        self.run.emit(
            LEDGER_RESERVE,
            turn=turn,
            scope=self.settings.scope,
            reservation=held.id,
            tokens=held.tokens,
            cost_usd=held.cost_usd,
            cost_from=self.cost_from,
        )
        return None

    def settle(self, tokens: int, cost_usd: float) -> None:
        """What the call's response reported: its reservation is replaced by it at the next
        reservation, or when the run ends, and renewed until then."""
        self.used = (self.used[0] + tokens, self.used[1] + cost_usd)
        held, self.held = self.held, None
        if held is None:  # the ledger could not be reached, and the run went on without it
            return
        self.pending = (held, tokens, cost_usd, self.run.turns)

    def settle_pending(self) -> None:
        """Settle alone what is pending: the run ends, and there is no next call."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        self._renewed(pending[3])
        try:
            held, tokens, cost_usd, _ = pending
            warned = self._use(
                "settle",
                lambda led: led.settle(
                    held, tokens=tokens, cost_usd=cost_usd, warn_at=self.warn_at
                ),
            )
        except LedgerUnavailable as exc:
            self._settle_lost(exc, pending[3])
            return
        self._settled(pending, warned)

    def _settled(
        self, pending: tuple[Reservation, int, float, int], warned: tuple[ScopeWarning, ...]
    ) -> None:
        held, tokens, cost_usd, turn = pending
        self.run.emit(
            LEDGER_SETTLE,
            turn=turn,
            scope=held.scope,
            reservation=held.id,
            tokens=tokens,
            cost_usd=cost_usd,
            released=False,
        )
        for warning in warned:
            fleet_warning(self.run, self.scopes, self.warn_at, warning, turn)

    def _settle_lost(self, exc: LedgerUnavailable, turn: int) -> bool:
        """A settle the ledger did not take: said; under ``stop`` the run ends (True)."""
        if self.settings.on_unavailable == "continue":
            self._warn(exc, turn, "settle")
            return False
        self.fault = self._line(exc)
        self._event(self.fault, turn, "settle")
        return True

    def release(self) -> None:
        """Give back what the call holds, at once: it raised, timed out, was cancelled."""
        held, self.held = self.held, None
        run = self.run
        if held is None:
            return
        self._renewed(run.turns)
        try:
            self._use("release", lambda led: led.release(held))
        except LedgerUnavailable as exc:
            self._warn(exc, run.turns, "release")
        else:
            run.emit(
                LEDGER_SETTLE,
                turn=run.turns,
                scope=held.scope,
                reservation=held.id,
                tokens=0,
                cost_usd=0.0,
                released=True,
            )

    def end(self, stop_reason: str) -> None:
        """The run has ended: settle what is pending, give back what it holds, write its record
        (in each scope it drew on), close the ledger."""
        run = self.run
        self.settle_pending()  # already, unless the run ended past the Meter's `finish`
        self.release()  # its call raised, timed out, was cancelled, or was unreadable
        if self.renewal is not None:
            self.renewal.close()
        if self.ledger is not None and not self.down:
            try:
                record = self.record(stop_reason)
                self._use("record", lambda led: led.record_run(record))
            except LedgerUnavailable as exc:
                self._warn(exc, run.turns, "record")
        if self.ledger is not None:
            ledger, self.ledger = self.ledger, None
            with contextlib.suppress(Exception):  # a broken connection: nothing is lost
                ledger.close()

    def record(self, stop_reason: str) -> dict[str, Any]:
        """The run's record: its own totals, not those of the runs it resumes."""
        import socket

        run = self.run
        tokens, cost = self.used
        return {
            "run_id": self.run.run_id,
            "scope": self.settings.scope,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": iso(self.started),
            "ended": iso(now()),
            "turns": run.turns - self.first_turn,
            "tokens": tokens,
            "cost_usd": round(cost, 12),
            "stop_reason": stop_reason,
            "parents": [b.scope for b in self.scopes[1:]],
        }

    def _renewed(self, turn: int) -> None:
        """The call has ended: its reservation is renewed no more, and a renewal that failed
        while it ran is reported, as the ledger being unavailable."""
        assert self.renewal is not None, "a reservation granted starts the renewals"
        failed = self.renewal.release()
        if failed is None:
            return
        if self.settings.on_unavailable == "continue":
            self._warn(failed, turn, "renew")
        else:  # the run ends before its next call, saying why
            self.fault = self._line(failed)
            self._event(self.fault, turn, "renew")

    def _line(self, exc: BaseException) -> str:
        """The error's text on one line, the ledger's password hidden wherever it appears."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        address = self.settings.address
        return conceal_in(self.settings.url, text) if address is None else address.conceal(text)

    def _unavailable(self, exc: LedgerUnavailable, turn: int) -> RunResult | None:
        """``on_unavailable``: the run fails before the call (``stop``), or it goes on."""
        if self.settings.on_unavailable == "continue":
            self._warn(exc, turn, "reserve")
            return None
        cause = self._line(exc)
        self._event(cause, turn, "reserve")
        return self.run.finish(StopReason.ERROR, f"failed: {cause} (turn {self.run.turns})")

    def _conflict(self, exc: LedgerConflict) -> RunResult:
        """A scope the ledger counts in another window: the run fails before the call, saying
        which setting would agree with the ledger."""
        s = self.settings
        field = "ledger.window" if exc.scope == s.scope else f"ledger.window_by_scope.{exc.scope}"
        cause = f"{self._line(exc)}; set {field} = {exc.window!r} to draw on it"
        return self.run.finish(StopReason.ERROR, f"failed: {cause} (turn {self.run.turns})")

    def _warn(self, exc: LedgerUnavailable, turn: int, what: str) -> None:
        cause = self._line(exc)
        goes_on = {
            "reserve": "the run goes on without it",
            "renew": "the call's reservation may have expired before it settled",
        }.get(what, f"its {what} is lost")
        warnings.warn(f"{cause}; {goes_on}", BudgetConfWarning, stacklevel=2)
        self._event(cause, turn, what)

    def _event(self, cause: str, turn: int, what: str) -> None:
        self.run.emit(
            LEDGER_UNAVAILABLE,
            turn=turn,
            scope=self.settings.scope,
            url=self.settings.shown,
            error=cause,
            on_unavailable=self.settings.on_unavailable,
            during=what,
        )

    def _refused(self, turn: int) -> RunResult:
        """The stop before the call: a scope's maximum would be passed. The scope named is the
        first, in the order drawn on, that has no room as the ledger stands now; when none has
        (another run gave back what it held meanwhile), the one nearest its maximum."""
        s = self.settings
        found, nearest = None, -1.0
        for budget in self.scopes:
            if budget.max_tokens is None and budget.max_cost_usd is None:
                continue
            status = self._status(budget)
            reason, limit, spent, reserved, over = which(s, budget, status)
            asked = s.reserve_cost_usd if reason is StopReason.MAX_COST else s.reserve_tokens
            share = (spent + reserved + asked) / limit.value if limit.value else float("inf")
            if over or share > nearest:
                found, nearest = (budget, status, reason, limit, spent, reserved), share
            if over:
                break
        assert found is not None, "a ledger without a maximum refuses nothing"
        return refusal(self.run, s, turn, *found)

    def _status(self, budget: ScopeBudget) -> LedgerStatus | None:
        """``budget``'s scope as the ledger stands now; None when it cannot say."""

        def read(ledger: Ledger) -> LedgerStatus:
            return ledger.status(budget.scope, window=budget.window, at=now())

        try:
            return self._use("status", read)
        except LedgerUnavailable:  # the ledger answered the refusal: its record is tried
            self.down = False
        except LedgerConflict:  # the ledger refused by its room: a conflict comes later
            pass
        return None


def now() -> _dt.datetime:
    """The moment that chooses the window of a reservation: the run's clock, in UTC."""
    return _dt.datetime.now(_dt.UTC)


def _value(limit: Limit | None) -> Any:
    return None if limit is None else limit.value
