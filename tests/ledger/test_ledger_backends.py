"""Every ledger backend keeps the same contract: the same tests, over SQLite and a real Redis."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from budgetconf import BudgetConfError, UsageError
from budgetconf.ledger import (
    KEPT_RUNS,
    Ledger,
    LedgerConflict,
    LedgerStatus,
    LedgerUnavailable,
    Reservation,
    open_ledger,
    window_bounds,
)
from budgetconf.ledger._base import RUN_KEYS

DAY = dt.datetime(2026, 3, 14, 15, 9, 26, tzinfo=dt.UTC)


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    with open_ledger(url) as opened:
        yield opened


def hold(
    led: Ledger,
    *,
    tokens: Any = 0,
    cost_usd: Any = 0.0,
    lease_seconds: Any = 60.0,
    scope: str = "team-a",
    **limits: Any,
) -> Reservation | None:
    """A reservation on ``led`` (any argument may be wrong, to see it refused)."""
    return led.reserve(
        scope, tokens=tokens, cost_usd=cost_usd, lease_seconds=lease_seconds, **limits
    )


def held(led: Ledger, **limits: Any) -> Reservation:
    reservation = hold(led, **limits)
    assert reservation is not None
    return reservation


def spent(status: LedgerStatus) -> tuple[int, float]:
    return status.spent_tokens, status.spent_cost_usd


def reserved(status: LedgerStatus) -> tuple[int, float]:
    return status.reserved_tokens, status.reserved_cost_usd


# ---------------------------------------------------------------------- reserve and settle


def test_a_reservation_that_reaches_the_maximum_exactly_is_granted_and_one_past_refused(
    ledger: Ledger,
) -> None:
    """spent + reserved + this == max is granted; one token or one cent more is refused."""
    assert hold(ledger, tokens=600, max_tokens=1000) is not None
    assert hold(ledger, tokens=401, max_tokens=1000) is None
    assert hold(ledger, tokens=400, max_tokens=1000) is not None
    assert hold(ledger, tokens=1, max_tokens=1000) is None
    # costs are counted exactly: three reservations of 0.1 fit a maximum of 0.3
    for _ in range(3):
        assert hold(ledger, cost_usd=0.1, max_cost_usd=0.3, scope="team-b") is not None
    assert hold(ledger, cost_usd=0.000000001, max_cost_usd=0.3, scope="team-b") is None
    assert reserved(ledger.status("team-b")) == (0, 0.3)


def test_a_reservation_counts_what_is_spent_and_what_others_hold(ledger: Ledger) -> None:
    """The check is against spent + every live reservation + this one, on either maximum."""
    first = held(ledger, tokens=300, cost_usd=1.0)
    ledger.settle(first, tokens=500, cost_usd=2.0)
    held(ledger, tokens=200, cost_usd=1.0)
    assert hold(ledger, tokens=301, max_tokens=1000) is None
    assert hold(ledger, tokens=300, max_tokens=1000) is not None
    assert hold(ledger, cost_usd=2.01, max_cost_usd=5.0) is None
    assert hold(ledger, cost_usd=2.0, max_cost_usd=5.0) is not None


def test_a_settle_replaces_the_reservation_by_what_was_used(ledger: Ledger) -> None:
    """After a settle the window has spent what the call used and holds nothing for it."""
    reservation = held(ledger, tokens=4096, cost_usd=0.05)
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((0, 0.0), (4096, 0.05))
    ledger.settle(reservation, tokens=812, cost_usd=0.0123)
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((812, 0.0123), (0, 0.0))


def test_settling_or_releasing_twice_counts_once(ledger: Ledger) -> None:
    """A second settle or release of a reservation changes nothing, whichever came first."""
    settled, released, mixed = (held(ledger, tokens=10, cost_usd=0.5) for _ in range(3))
    ledger.settle(settled, tokens=7, cost_usd=0.25)
    ledger.settle(settled, tokens=7, cost_usd=0.25)
    ledger.release(settled)
    ledger.release(released)
    ledger.release(released)
    ledger.release(mixed)
    ledger.settle(mixed, tokens=9, cost_usd=0.5)
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((7, 0.25), (0, 0.0))


def test_a_reservation_the_ledger_has_forgotten_still_counts_once(ledger: Ledger) -> None:
    """A settle a day past its lease, when the ledger no longer remembers the reservation,
    still counts (what was used is never lost), and is remembered from then on."""
    start, ends = window_bounds("day", DAY)
    forgotten = Reservation(
        id="made-long-ago", scope="team-a", window="day", window_start=start, window_ends=ends,
        tokens=100, cost_usd=1.0,
    )  # fmt: skip
    ledger.settle(forgotten, tokens=60, cost_usd=0.6)
    ledger.settle(forgotten, tokens=60, cost_usd=0.6)
    ledger.release(forgotten)
    status = ledger.status("team-a", at=DAY)
    assert (spent(status), reserved(status)) == ((60, 0.6), (0, 0.0))


def test_a_lease_expires_by_the_backends_clock_and_its_late_settle_still_counts(
    ledger: Ledger,
) -> None:
    """An unsettled reservation stops counting when its lease ends; settled later, it counts."""
    late = held(ledger, tokens=900, cost_usd=0.9, lease_seconds=0.3)
    assert hold(ledger, tokens=200, max_tokens=1000) is None
    time.sleep(0.5)
    assert reserved(ledger.status("team-a")) == (0, 0.0)
    assert hold(ledger, tokens=200, max_tokens=1000) is not None
    ledger.settle(late, tokens=100, cost_usd=0.1)
    ledger.settle(late, tokens=100, cost_usd=0.1)
    assert spent(ledger.status("team-a")) == (100, 0.1)


def test_a_renewed_lease_holds_past_its_first_end_and_an_ended_one_is_renewed_no_more(
    ledger: Ledger,
) -> None:
    """renew() holds a reservation for its lease again from now; one settled, released or
    expired is not held again (False)."""
    renewed = held(ledger, tokens=100, lease_seconds=0.4)
    time.sleep(0.25)
    assert ledger.renew(renewed, lease_seconds=0.4)
    time.sleep(0.25)  # past its first end, within the renewed one
    assert reserved(ledger.status("team-a"))[0] == 100
    ledger.settle(renewed, tokens=50, cost_usd=0.0)
    assert not ledger.renew(renewed, lease_seconds=60)
    released = held(ledger, tokens=10)
    ledger.release(released)
    assert not ledger.renew(released, lease_seconds=60)
    lapsed = held(ledger, tokens=10, lease_seconds=0.2)
    time.sleep(0.4)
    assert not ledger.renew(lapsed, lease_seconds=60)
    assert (spent(ledger.status("team-a")), reserved(ledger.status("team-a"))) == (
        (50, 0.0),
        (0, 0.0),
    )


def test_a_settle_counts_in_the_reservations_window_after_it_ended(ledger: Ledger) -> None:
    """at= chooses the window; a settle lands in its reservation's window, not the current one."""
    before = dt.datetime(2026, 3, 14, 23, 59, 59, tzinfo=dt.UTC)
    after = before + dt.timedelta(seconds=2)
    reservation = held(ledger, tokens=50, cost_usd=0.5, window="day", at=before)
    assert reservation.window_start == dt.datetime(2026, 3, 14, tzinfo=dt.UTC)
    assert reservation.window_ends == dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    assert reserved(ledger.status("team-a", at=after)) == (0, 0.0)
    ledger.settle(reservation, tokens=40, cost_usd=0.4)
    assert spent(ledger.status("team-a", window="day", at=before)) == (40, 0.4)
    assert spent(ledger.status("team-a", window="day", at=after)) == (0, 0.0)
    assert hold(ledger, tokens=1000, max_tokens=1000, at=after) is not None


KINDS = (("none", 1), ("hour", 10), ("day", 100), ("week", 1000), ("month", 10_000))


def test_a_scope_counts_in_the_window_its_first_reservation_recorded(ledger: Ledger) -> None:
    """Each window kind counts in the scope that chose it; status() without a window reads
    the recorded one, and a later hour is a new counter."""
    for window, tokens in KINDS:
        assert ledger.window_of(f"team-{window}") is None
        reservation = held(ledger, window=window, at=DAY, scope=f"team-{window}")
        ledger.settle(reservation, tokens=tokens, cost_usd=0)
    for window, tokens in KINDS:
        assert ledger.window_of(f"team-{window}") == window
        status = ledger.status(f"team-{window}", at=DAY)
        assert (status.window, status.spent_tokens) == (window, tokens)
        assert ledger.status(f"team-{window}", window=window, at=DAY).spent_tokens == tokens
    later = DAY + dt.timedelta(hours=1)
    assert ledger.status("team-hour", at=later).spent_tokens == 0
    assert ledger.status("team-day", at=later).spent_tokens == 100


def test_another_window_for_a_scope_is_a_conflict_naming_both(ledger: Ledger) -> None:
    """Once a scope counts in day, a reservation or status under hour is refused by name, and
    nothing is held; a scope nothing drew on reads as day, and records nothing."""
    assert ledger.status("team-a").window == "day"
    assert ledger.status("team-a", window="month").window == "month"
    assert ledger.window_of("team-a") is None  # status records nothing
    held(ledger, tokens=5, window="day")
    for call in (
        lambda: hold(ledger, tokens=7, window="hour"),
        lambda: ledger.status("team-a", window="hour"),
    ):
        with pytest.raises(LedgerConflict) as caught:
            call()
        assert str(caught.value) == (
            "ledger scope team-a counts in the window 'day', recorded by the first run that"
            " drew on it, not 'hour': a scope has one window"
        )
        assert isinstance(caught.value, BudgetConfError)
    assert reserved(ledger.status("team-a")) == (5, 0.0)
    assert ledger.window_of("team-a") == "day"


def test_the_status_document_names_the_window(ledger: Ledger) -> None:
    """to_dict() is the contract's document: bounds in ISO 8601 UTC with Z, null for none."""
    held(ledger, tokens=5, cost_usd=0.5, window="month", at=DAY)
    assert ledger.status("team-a", at=DAY).to_dict() == {
        "scope": "team-a",
        "window": "month",
        "window_start": "2026-03-01T00:00:00Z",
        "window_ends": "2026-04-01T00:00:00Z",
        "spent": {"tokens": 0, "cost_usd": 0.0},
        "reserved": {"tokens": 5, "cost_usd": 0.5},
        "runs": 0,
        "reset": None,
    }
    held(ledger, window="none", scope="team-b")
    document = ledger.status("team-b").to_dict()
    assert (document["window_start"], document["window_ends"]) == (None, None)


def test_scopes_do_not_share_a_budget(ledger: Ledger) -> None:
    """A scope's spend and reservations are its own."""
    ledger.settle(held(ledger, tokens=10, scope="team-a"), tokens=10, cost_usd=1)
    assert spent(ledger.status("team-a/sub")) == (0, 0.0)
    assert hold(ledger, tokens=1000, max_tokens=1000, scope="team-a/sub") is not None


def test_a_combined_settle_and_reserve_does_both(ledger: Ledger) -> None:
    """settle_and_reserve settles one call and reserves the next; refused, the settle stands."""
    first = held(ledger, tokens=100, cost_usd=1.0)
    second, warnings = ledger.settle_and_reserve(
        first, tokens=80, cost_usd=0.8, reserve_tokens=100, reserve_cost_usd=1.0,
        lease_seconds=60, max_tokens=200,
    )  # fmt: skip
    assert second is not None
    assert warnings == ()
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((80, 0.8), (100, 1.0))
    third, warnings = ledger.settle_and_reserve(
        second, tokens=100, cost_usd=1.0, reserve_tokens=100, reserve_cost_usd=1.0,
        lease_seconds=60, max_tokens=200,
    )  # fmt: skip
    assert (third, warnings) == (None, ())
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((180, 1.8), (0, 0.0))


def test_threads_sharing_one_ledger_lose_nothing(ledger: Ledger) -> None:
    """Eight threads each settling 40 reservations on one ledger object: every one counted."""

    def work() -> None:
        for _ in range(40):
            ledger.settle(held(ledger, tokens=3, cost_usd=0.01), tokens=2, cost_usd=0.001)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    status = ledger.status("team-a")
    assert (spent(status), reserved(status)) == ((640, 0.32), (0, 0.0))


def test_what_is_settled_is_there_when_the_ledger_is_opened_again(url: str) -> None:
    """Closing lets go of the connection, not of the data."""
    with open_ledger(url) as first:
        first.settle(held(first, tokens=10), tokens=9, cost_usd=0.09)
    with open_ledger(url) as second:
        assert spent(second.status("team-a")) == (9, 0.09)


def test_a_closed_ledger_opens_its_connection_again_when_used(url: str) -> None:
    """close() may be called twice; a call after it connects again."""
    led = open_ledger(url)
    led.close()
    led.close()
    led.settle(held(led, tokens=4), tokens=3, cost_usd=0)
    assert spent(led.status("team-a")) == (3, 0.0)
    led.close()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (b"sqlite:///x.db", "open_ledger() takes a URL string, not bytes"),
        ("postgres://db/ledger", "ledger URL 'postgres://db/ledger' is not a ledger URL"),
        ("redis://u:pw@:6379/0", "ledger URL 'redis://u:***@:6379/0' names no host"),
        ("sqlite://", "names no database file"),
        ("sqlite:///ledgers/", "names no database file"),
        ("redis://h:6379/0?tls=1", "takes no query or fragment"),
        ("redis://h:0/0", "has a bad port (a number from 1 to 65535)"),
        ("redis://h:port/0", "has a bad port"),
        ("redis://[::1]6379/0", "has a malformed host"),
        ("redis://h:6379/zero", "has a bad database number"),
    ],
)
def test_an_address_that_is_not_a_ledgers_is_a_usage_error(given: Any, message: str) -> None:
    """open_ledger refuses what is not a ledger's address, its password masked."""
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        open_ledger(given)
    assert "pw" not in str(caught.value)


# ---------------------------------------------------------------------- run records

RECORD = {
    "run_id": "r-1",
    "scope": "team-a",
    "host": "worker-7",
    "pid": 4242,
    "started": "2026-03-14T15:00:00Z",
    "ended": "2026-03-14T15:09:26Z",
    "turns": 3,
    "tokens": 1200,
    "cost_usd": 0.042,
    "stop_reason": "completed",
    "parents": [],
}


def test_run_records_come_back_newest_first_with_their_keys(ledger: Ledger) -> None:
    """runs() gives the records as written, the latest first, up to the limit; a record
    given without parents comes back with an empty list of them."""
    for n in range(5):
        ledger.record_run(RECORD | {"run_id": f"r-{n}"})
    ledger.record_run(RECORD | {"run_id": "elsewhere", "scope": "team-b"})
    runs = ledger.runs("team-a", limit=3)
    assert [r["run_id"] for r in runs] == ["r-4", "r-3", "r-2"]
    assert runs[0] == RECORD | {"run_id": "r-4"}
    assert list(runs[0]) == list(RECORD) == list(RUN_KEYS)
    assert len(ledger.runs("team-a")) == 5
    assert ledger.runs("team-a", limit=0) == []
    ledger.record_run({key: value for key, value in RECORD.items() if key != "parents"})
    assert ledger.runs("team-a", limit=1) == [RECORD]


def test_a_run_record_counts_in_the_windows_it_ended_in(ledger: Ledger) -> None:
    """status().runs counts the runs that ended in the window; times may be datetimes."""
    ledger.record_run(RECORD)
    ledger.record_run(RECORD | {"ended": DAY + dt.timedelta(days=1), "started": DAY})
    assert ledger.status("team-a", window="day", at=DAY).runs == 1
    assert ledger.status("team-a", window="month", at=DAY).runs == 2
    assert ledger.status("team-a", window="none").runs == 2
    assert ledger.runs("team-a")[0]["ended"] == "2026-03-15T15:09:26Z"
    assert ledger.runs("team-a")[0]["started"] == "2026-03-14T15:09:26Z"


def test_the_last_ten_thousand_run_records_of_a_scope_are_kept(ledger: Ledger) -> None:
    """Past KEPT_RUNS the oldest records go; another scope's stay."""
    ledger.record_run(RECORD | {"run_id": "other", "scope": "team-b"})
    for n in range(KEPT_RUNS + 3):
        ledger.record_run({"run_id": str(n), "scope": "team-a"})
    runs = ledger.runs("team-a", limit=KEPT_RUNS + 10)
    assert len(runs) == KEPT_RUNS
    assert (runs[0]["run_id"], runs[-1]["run_id"]) == (str(KEPT_RUNS + 2), "3")
    assert [r["run_id"] for r in ledger.runs("team-b")] == ["other"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"scope": "team-a", "turn": 3}, "has no key 'turn'"),
        ({"run_id": "x"}, "ledger scope None is not"),
        ({"scope": "team-a", "ended": "yesterday"}, "is not an ISO 8601 time"),
        ({"scope": "team-a", "ended": "2026-03-14T15:09:26"}, "has no time zone"),
        ({"scope": "team-a", "ended": 12}, "ended must be an ISO 8601 time"),
        ({"scope": "team-a", "started": dt.datetime(2026, 1, 1)}, "started must be an aware"),
        ({"scope": "team-a", "tokens": object()}, "must be plain JSON values"),
        (["team-a"], "a run record is a dict, not list"),
    ],
)
def test_a_malformed_run_record_is_refused(
    ledger: Ledger, record: dict[str, object], message: str
) -> None:
    """A record the ledger could not give back as written is a UsageError, and nothing is kept."""
    with pytest.raises(UsageError, match=message):
        ledger.record_run(record)
    assert ledger.runs("team-a") == []


# ---------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda led: hold(led, scope=""), "ledger scope '' is not 1 to 128"),
        (lambda led: hold(led, scope="a" * 129), "is not 1 to 128"),
        (lambda led: hold(led, scope="team a"), "is not 1 to 128"),
        (lambda led: hold(led, scope="é"), "is not 1 to 128"),
        (lambda led: hold(led, tokens=-1), "tokens must be a whole number ≥ 0, not -1"),
        (lambda led: hold(led, tokens=True), "tokens must be a whole number"),
        (lambda led: hold(led, tokens=1.5), "tokens must be a whole number"),
        (lambda led: hold(led, cost_usd=-0.1), "cost_usd must be a finite number ≥ 0"),
        (lambda led: hold(led, cost_usd=float("nan")), "cost_usd must be a finite number"),
        (lambda led: hold(led, cost_usd=1e10), "under 9 million"),
        (lambda led: hold(led, cost_usd="1"), "cost_usd must be a number ≥ 0, not '1'"),
        (lambda led: hold(led, lease_seconds=0), "lease_seconds must be a finite number > 0"),
        (lambda led: hold(led, lease_seconds=None), "lease_seconds must be a number > 0"),
        (lambda led: hold(led, max_tokens=-5), "max_tokens must be a whole number"),
        (lambda led: hold(led, max_cost_usd=float("inf")), "max_cost_usd must be a finite"),
        (lambda led: hold(led, window="fortnight"), "unknown ledger window 'fortnight'"),
        (lambda led: hold(led, at=dt.datetime(2026, 1, 1)), "at= must be an aware datetime"),
        (lambda led: led.status("team-a", window="year"), "unknown ledger window 'year'"),
        (lambda led: led.runs("team-a", limit=-1), "limit must be a whole number"),
        (lambda led: led.runs("bad scope"), "is not 1 to 128"),
        (lambda led: led.settle("r-1", tokens=1, cost_usd=0), "not a Reservation: str"),
        (lambda led: led.release(None), "not a Reservation: NoneType"),
        (lambda led: led.renew("r-1", lease_seconds=1), "not a Reservation: str"),
        (lambda led: led.renew(held(led), lease_seconds=0), "lease_seconds must be a finite"),
        (lambda led: led.settle(held(led), tokens=-1, cost_usd=0), "tokens must be a whole"),
        (lambda led: hold(led, tokens=2**40 + 1), "tokens must be at most 1099511627776"),
        (lambda led: hold(led, cost_usd=1e6 + 1), "cost_usd must be at most 1000000"),
        (
            lambda led: led.settle(held(led), tokens=2**63 - 1, cost_usd=0),
            "tokens must be at most 1099511627776",
        ),
        (lambda led: led.settle(held(led), tokens=1, cost_usd=2e6), "cost_usd must be at most"),
    ],
)
def test_a_call_that_cannot_be_carried_out_is_a_usage_error(
    ledger: Ledger, call: Callable[[Ledger], object], message: str
) -> None:
    """Each argument is checked before anything is written, with a message naming it."""
    with pytest.raises(UsageError, match=message):
        call(ledger)


def test_the_largest_amounts_a_call_may_hold_and_use_count_exactly(ledger: Ledger) -> None:
    """2**40 tokens and 10**6 USD a call, held, expired, settled: every total an exact integer
    (tokens) or billionths (cost), as the backend adds them, never a wrapped count."""
    most = 2**40
    lapsed = [held(ledger, tokens=most, cost_usd=1e6, lease_seconds=0.2) for _ in range(3)]
    assert reserved(ledger.status("team-a")) == (3 * most, 3e6)
    time.sleep(0.4)  # their leases end: what each held goes back, exactly
    assert reserved(ledger.status("team-a")) == (0, 0.0)
    for reservation in [*lapsed, held(ledger, tokens=most, cost_usd=1e6)]:
        ledger.settle(reservation, tokens=most, cost_usd=1e6)
    assert spent(ledger.status("team-a")) == (4 * most, 4e6)
    assert hold(ledger, tokens=1, max_tokens=4 * most) is None
    assert hold(ledger, tokens=1, max_tokens=4 * most + 1) is not None


def test_an_unavailable_ledger_error_is_one_line_naming_the_ledger() -> None:
    """LedgerUnavailable is a BudgetConfError with the address shown and the cause."""
    from budgetconf import BudgetConfError

    with pytest.raises(LedgerUnavailable) as caught:
        open_ledger("sqlite:///no/such/folder/ledger.db")
    assert isinstance(caught.value, BudgetConfError)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(
        "ledger sqlite:///no/such/folder/ledger.db is unavailable: "
    )
