"""The renewals of a run's reservations in the shared ledger, while each call runs.

A reservation is held for ``ledger.lease_seconds``; a call that outlives it would
lose what it holds to another run. `Renewal` renews it every half lease on a
thread of the run's own, until the call's response has settled it.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from budgetconf.errors import LedgerUnavailable
from budgetconf.ledger._base import unavailable
from budgetconf.loop._faults import describe

if TYPE_CHECKING:
    from budgetconf.ledger import Ledger, Reservation
    from budgetconf.loop._budget import LedgerSettings


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
