"""The shared ledger's part of one run: reserve before each model call, settle after, record.

A `Draw` is made by a `Meter` whose budget names a ledger (``ledger.url``),
and only then: a run without one never imports `budgetconf.ledger`. The
executor and every bridge draw through their Meter, so each draws the same
way. The ledger is opened at the run's first call and closed when the run
ends, so a run holds one connection, and a process that forks between runs
shares none.

Before each model call the run reserves ``ledger.reserve_tokens`` and
``ledger.reserve_cost_usd``; a refusal stops it before the call with
``max_tokens`` or ``max_cost``, its limit naming the ledger's field. The
response settles the reservation with what it reported. Whatever the run
still holds when it ends (a call that raised, timed out or was cancelled; a
response that could not be read) is released then, at once. The run's
record is written as it ends.

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
import threading
import time
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from budgetconf._loop_table import StopReason
from budgetconf._usage import MOST_COST_USD
from budgetconf.errors import BudgetConfWarning, LedgerUnavailable
from budgetconf.events import (
    BUDGET_EXHAUSTED,
    LEDGER_REFUSED,
    LEDGER_RESERVE,
    LEDGER_SETTLE,
    LEDGER_UNAVAILABLE,
)
from budgetconf.ledger._address import conceal_in
from budgetconf.ledger._base import iso, unavailable
from budgetconf.ledger._checks import to_nano
from budgetconf.loop._faults import PASSING, describe

if TYPE_CHECKING:
    from typing import Protocol

    from budgetconf._prices._pricing import Pricing
    from budgetconf.ledger import Ledger, Reservation
    from budgetconf.loop._budget import Budget, LedgerSettings, Limit
    from budgetconf.loop._result import RunResult

    class Meter(Protocol):
        """What a `Draw` needs of its run: `budgetconf.loop.Meter` (named so here, since the
        Meter imports this module)."""

        budget: Budget
        run_id: str
        turns: int
        tokens: int
        cost: float
        pricing: Pricing | None

        def emit(self, event_type: str, /, **data: Any) -> None: ...

        def finish(
            self,
            reason: StopReason,
            message: str | None = None,
            output: str | None = None,
            limit: dict[str, Any] | None = None,
        ) -> RunResult: ...


class Draw:
    """One run's use of the shared ledger its budget names."""

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
        self.ledger: Ledger | None = None
        self.held: Reservation | None = None
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

    def _use(self, what: str, act: Any, *args: Any, **kwargs: Any) -> Any:
        """``act(ledger, ...)``; `LedgerUnavailable` whatever went wrong, in one line."""
        try:
            result = act(self._open(), *args, **kwargs)
        except LedgerUnavailable:
            self.down = True
            raise
        except PASSING:
            raise
        except Exception as exc:  # a backend's unforeseen fault: one line, never a traceback
            self.down = True
            cause = f"ledger {self.settings.shown}: {what} failed: {describe(exc)}"
            raise LedgerUnavailable(cause) from None
        self.down = False
        return result

    def reserve(self) -> RunResult | None:
        """Hold the next model call's share; the run's result when the ledger stops it."""
        s = self.settings
        turn = self.run.turns + 1
        if self.held is not None:  # the last call raised and is made again: its share goes back
            self.release()
        if self.fault is not None:
            return self.run.finish(
                StopReason.ERROR, f"failed: {self.fault} (turn {self.run.turns})"
            )
        try:
            held = self._use(
                "reserve",
                _reserve,
                s,
                _value(s.max_tokens),
                _value(s.max_cost_usd),
            )
        except LedgerUnavailable as exc:
            return self._unavailable(exc, turn)
        if held is None:
            return self._refused(turn)
        self.held = held
        if self.renewal is None:
            self.renewal = Renewal(self._open(), s)
        self.renewal.hold(held)
        self.run.emit(
            LEDGER_RESERVE,
            turn=turn,
            scope=s.scope,
            reservation=held.id,
            tokens=held.tokens,
            cost_usd=held.cost_usd,
            cost_from=self.cost_from,
        )
        return None

    def settle(self, tokens: int, cost_usd: float) -> None:
        """Replace what the call held by what its response reported."""
        self.used = (self.used[0] + tokens, self.used[1] + cost_usd)
        held, self.held = self.held, None
        if held is None:  # the ledger could not be reached, and the run went on without it
            return
        self._renewed(self.run.turns)
        try:
            self._use("settle", _settle, held, tokens, cost_usd)
        except LedgerUnavailable as exc:
            if self.settings.on_unavailable == "continue":
                self._warn(exc, self.run.turns, "settle")
            else:  # the run ends before its next call, saying why
                self.fault = self._line(exc)
                self._event(self.fault, self.run.turns, "settle")
            return
        self.run.emit(
            LEDGER_SETTLE,
            turn=self.run.turns,
            scope=held.scope,
            reservation=held.id,
            tokens=tokens,
            cost_usd=cost_usd,
            released=False,
        )

    def release(self) -> None:
        """Give back what the call holds, at once: it raised, timed out, was cancelled."""
        held, self.held = self.held, None
        run = self.run
        if held is None:
            return
        self._renewed(run.turns)
        try:
            self._use("release", _release, held)
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
        """The run has ended: give back what it holds, write its record, close the ledger."""
        run = self.run
        self.release()  # its call raised, timed out, was cancelled, or was unreadable
        if self.renewal is not None:
            self.renewal.close()
        if self.ledger is not None and not self.down:
            try:
                self._use("record", _record, self.record(stop_reason))
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
        """The stop before the call: the scope's maximum would be passed."""
        s = self.settings
        try:
            status = self._use("status", _status, s)
        except LedgerUnavailable:  # the ledger answered the refusal: its record is still tried
            status, self.down = None, False
        reason, limit, spent, reserved = _which(s, status)
        ends = None if status is None else status.window_ends
        name = s.scope
        word = None if s.window == "none" else s.window  # this day (resets ...)
        # "$49.97 of $50", "90 of 100 tokens"
        unit = "" if reason is StopReason.MAX_COST else " tokens"
        of = limit.amount(limit.value) + unit
        spend = f"; scope {name} has spent {limit.amount(spent)} of {of}"
        if word is not None:
            spend += f" this {word}" + (f" (resets {iso(ends)})" if ends is not None else "")
        # the executor's own form, the scope's spend before how to raise the limit (or the
        # policy's word that only its administrator can)
        message = f"stopped: hit {reason.value} ({limit.shown()}): {limit.explain(spend)}"
        document = {
            **limit.to_dict(),
            "scope": "ledger",
            "spent": spent,
            "reserved": reserved,
        }
        if ends is not None:
            document["window_ends"] = iso(ends)
        run = self.run
        run.emit(LEDGER_REFUSED, turn=turn, scope=name, **_refusal(s, reason))
        stop = run.budget.stop_name(reason)
        run.emit(BUDGET_EXHAUSTED, turn=run.turns, stop_reason=stop, **document)
        return run.finish(reason, message, None, document)


class Renewal:
    """The renewals of a run's reservations: each is held for ``lease_seconds`` more every half
    lease while its call runs, on a daemon thread of its own (one a run, idle between calls).

    `hold` starts them for a call's reservation, `release` ends them when the call ends and
    gives what the last renewal met if it failed; `close` ends the thread, after a renewal in
    flight, so that nothing uses the ledger once the run has closed it.
    """

    def __init__(self, ledger: Ledger, settings: LedgerSettings) -> None:
        self.ledger = ledger
        self.shown = settings.shown
        self.lease = settings.lease_seconds
        self.cond = threading.Condition()
        self.held: Reservation | None = None
        self.due = 0.0  # when, by the monotonic clock, the held reservation is renewed next
        self.busy = False  # a renewal is in flight
        self.closed = False
        self.failed: LedgerUnavailable | None = None
        threading.Thread(target=self._renewals, name="budgetconf-lease", daemon=True).start()

    def hold(self, held: Reservation) -> None:
        with self.cond:
            self.held, self.due = held, time.monotonic() + self.lease / 2
            self.cond.notify()

    def release(self) -> LedgerUnavailable | None:
        with self.cond:
            self.held = None
            failed, self.failed = self.failed, None
        return failed

    def close(self) -> None:
        with self.cond:
            self.held, self.closed = None, True
            self.cond.notify()
            while self.busy:
                self.cond.wait()

    def _renewals(self) -> None:
        cond = self.cond
        while True:
            with cond:
                while not self.closed and (self.held is None or time.monotonic() < self.due):
                    cond.wait(None if self.held is None else self.due - time.monotonic())
                if self.closed:
                    return
                held, self.busy = self.held, True
                self.due = time.monotonic() + self.lease / 2
            assert held is not None, "the wait ends at a held reservation's renewal, or closed"
            failed = self._renew(held)
            with cond:
                self.busy = False
                if failed is not None and self.held is held:  # not a call that ended meanwhile
                    self.failed = self.failed or failed
                cond.notify_all()

    def _renew(self, held: Reservation) -> LedgerUnavailable | None:
        """What a renewal of ``held`` met, if it failed: the ledger's fault, or a lease ended."""
        try:
            if self.ledger.renew(held, lease_seconds=self.lease):
                return None
            return unavailable(self.shown, "the reservation's lease ended before it was renewed")
        except LedgerUnavailable as exc:
            return exc
        except Exception as exc:  # a backend's unforeseen fault: one line, never a traceback
            return LedgerUnavailable(f"ledger {self.shown}: renew failed: {describe(exc)}")


def now() -> _dt.datetime:
    """The moment that chooses the window of a reservation: the run's clock, in UTC."""
    return _dt.datetime.now(_dt.UTC)


def _reserve(
    ledger: Ledger, s: LedgerSettings, max_tokens: int | None, max_cost: float | None
) -> Reservation | None:
    return ledger.reserve(
        s.scope,
        tokens=s.reserve_tokens,
        cost_usd=s.reserve_cost_usd,
        lease_seconds=s.lease_seconds,
        max_tokens=max_tokens,
        max_cost_usd=max_cost,
        window=s.window,
        at=now(),
    )


def _settle(ledger: Ledger, held: Reservation, tokens: int, cost_usd: float) -> None:
    ledger.settle(held, tokens=tokens, cost_usd=cost_usd)


def _release(ledger: Ledger, held: Reservation) -> None:
    ledger.release(held)


def _record(ledger: Ledger, record: dict[str, Any]) -> None:
    ledger.record_run(record)


def _status(ledger: Ledger, s: LedgerSettings) -> Any:
    return ledger.status(s.scope, window=s.window, at=now())


def _value(limit: Limit | None) -> Any:
    return None if limit is None else limit.value


def _which(s: LedgerSettings, status: Any) -> tuple[StopReason, Limit, float, float]:
    """The maximum the reservation would pass (cost first), and what is spent and reserved."""
    cost, tokens = s.max_cost_usd, s.max_tokens
    if cost is not None:
        spent_cost = 0.0 if status is None else status.spent_cost_usd
        held_cost = 0.0 if status is None else status.reserved_cost_usd
        # as the backends count: in whole billionths of a dollar, where sums are exact
        asked = (spent_cost, held_cost, s.reserve_cost_usd)
        over = sum(to_nano(v, "cost_usd") for v in asked) > to_nano(cost.value, "max_cost_usd")
        if over or tokens is None:
            return StopReason.MAX_COST, cost, round(spent_cost, 12), round(held_cost, 12)
    assert tokens is not None, "a ledger without a maximum refuses nothing"
    spent = 0 if status is None else status.spent_tokens
    held = 0 if status is None else status.reserved_tokens
    return StopReason.MAX_TOKENS, tokens, spent, held


def _refusal(s: LedgerSettings, reason: StopReason) -> dict[str, Any]:
    if reason is StopReason.MAX_COST:
        return {"field": s.path("max_cost_usd"), "cost_usd": s.reserve_cost_usd}
    return {"field": s.path("max_tokens"), "tokens": s.reserve_tokens}
