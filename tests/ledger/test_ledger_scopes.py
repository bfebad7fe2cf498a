"""Budgets in many scopes at once (a user's, its team's, its organisation's), over SQLite and
a real Redis: one window per scope, reservations held everywhere or nowhere, warnings fired
once across the fleet, resets, pruning, and run records kept in their parents."""

from __future__ import annotations

import datetime as dt
import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from budgetconf import BudgetConfError, UsageError
from budgetconf.ledger import (
    Ledger,
    LedgerConflict,
    Reservation,
    ScopeLimit,
    ScopeWarning,
    open_ledger,
    window_bounds,
)

#: a Saturday afternoon; its ISO week runs from Monday 2026-03-09 to Monday 2026-03-16
DAY = dt.datetime(2026, 3, 14, 15, 9, 26, tzinfo=dt.UTC)
USER = ScopeLimit("user:u-1", "hour", max_tokens=100)
TEAM = ScopeLimit("team:t", "day", max_cost_usd=1.0)
ORG = ScopeLimit("org:o", "week", max_tokens=1000, max_cost_usd=5.0)
ALL = [USER, TEAM, ORG]
NAMES = [limit.scope for limit in ALL]


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    with open_ledger(url) as opened:
        yield opened


def take(
    led: Ledger,
    limits: Sequence[ScopeLimit],
    tokens: int = 0,
    cost_usd: float = 0.0,
    *,
    lease_seconds: float = 60.0,
    at: dt.datetime | None = DAY,
) -> Reservation | None:
    return led.reserve(
        scopes=list(limits), tokens=tokens, cost_usd=cost_usd, lease_seconds=lease_seconds, at=at
    )


def took(led: Ledger, limits: Sequence[ScopeLimit], *args: Any, **kwargs: Any) -> Reservation:
    reservation = take(led, limits, *args, **kwargs)
    assert reservation is not None
    return reservation


def reserved(led: Ledger, scope: str, at: dt.datetime = DAY) -> tuple[int, float]:
    status = led.status(scope, at=at)
    return status.reserved_tokens, status.reserved_cost_usd


def spent(led: Ledger, scope: str, at: dt.datetime = DAY) -> tuple[int, float]:
    status = led.status(scope, at=at)
    return status.spent_tokens, status.spent_cost_usd


def each(led: Ledger, what: Any, scopes: Sequence[str] = NAMES) -> list[tuple[int, float]]:
    return [what(led, scope) for scope in scopes]


# ---------------------------------------------------------------------- everywhere or nowhere


def test_a_reservation_in_three_scopes_holds_in_each_with_its_own_window_and_maxima(
    ledger: Ledger,
) -> None:
    """The reservation's scopes come in the order asked, the run's own first, each with its
    window's bounds and the maxima it was granted under; its own fields are the first's."""
    r = took(ledger, ALL, 60, 0.5)
    assert [(p.scope, p.window) for p in r.scopes] == [
        ("user:u-1", "hour"),
        ("team:t", "day"),
        ("org:o", "week"),
    ]
    assert (r.scope, r.window, r.window_start, r.window_ends) == (
        "user:u-1",
        "hour",
        dt.datetime(2026, 3, 14, 15, tzinfo=dt.UTC),
        dt.datetime(2026, 3, 14, 16, tzinfo=dt.UTC),
    )
    assert [(p.window_start, p.window_ends) for p in r.scopes[1:]] == [
        (dt.datetime(2026, 3, 14, tzinfo=dt.UTC), dt.datetime(2026, 3, 15, tzinfo=dt.UTC)),
        (dt.datetime(2026, 3, 9, tzinfo=dt.UTC), dt.datetime(2026, 3, 16, tzinfo=dt.UTC)),
    ]
    assert [(p.max_tokens, p.max_cost_usd) for p in r.scopes] == [
        (100, None),
        (None, 1.0),
        (1000, 5.0),
    ]
    assert each(ledger, reserved) == [(60, 0.5)] * 3
    assert [ledger.window_of(scope) for scope in NAMES] == ["hour", "day", "week"]


def test_a_reservation_is_granted_only_when_every_scope_has_room_and_a_refusal_holds_nothing(
    ledger: Ledger,
) -> None:
    """Whichever scope has no room (the first, the second, the last checked), nothing is held
    in any, and a scope first drawn on by a refused reservation records no window."""
    took(ledger, ALL, 60, 0.5)
    assert take(ledger, ALL, 41, 0.1) is None  # the user's 100 tokens
    assert take(ledger, ALL, 10, 0.51) is None  # the team's $1
    assert each(ledger, reserved) == [(60, 0.5)] * 3
    took(ledger, [ORG], 900, 0.0)  # the organisation holds 960 of its 1000 tokens
    other = ScopeLimit("user:u-2", "day")  # no maximum of its own
    assert take(ledger, [other, TEAM, ORG], 41, 0.1) is None  # the organisation's tokens
    found = each(ledger, reserved, ["user:u-2", *NAMES])
    assert found == [(0, 0.0), (60, 0.5), (60, 0.5), (960, 0.5)]
    assert ledger.window_of("user:u-2") is None
    assert take(ledger, [other, TEAM, ORG], 40, 0.1) is not None
    assert ledger.window_of("user:u-2") == "day"


def test_a_reservation_that_brings_every_scope_exactly_to_its_maximum_is_granted(
    ledger: Ledger,
) -> None:
    """spent + reserved + this == the maximum in each of three scopes at once is granted; one
    token, or one billionth of a dollar, more in any one is refused."""
    took(ledger, [ORG], 900, 4.0)
    r = took(ledger, ALL, 100, 1.0)  # user 100/100 tokens, team $1/$1, org 1000 and $5
    assert each(ledger, reserved) == [(100, 1.0), (100, 1.0), (1000, 5.0)]
    assert take(ledger, ALL, 1, 0.0) is None
    assert take(ledger, ALL, 0, 0.000000001) is None
    assert take(ledger, [ORG], 1, 0.0) is None
    assert take(ledger, [ORG], 0, 0.000000001) is None
    ledger.release(r)
    assert each(ledger, reserved) == [(0, 0.0), (0, 0.0), (900, 4.0)]


def test_settling_and_releasing_count_once_in_every_scope(ledger: Ledger) -> None:
    """A settle adds what was used to each scope's window once, however often it is repeated;
    a release gives back each scope's share."""
    first, second = took(ledger, ALL, 60, 0.5), took(ledger, ALL, 20, 0.2)
    assert ledger.settle(first, tokens=50, cost_usd=0.4) == ()
    ledger.settle(first, tokens=50, cost_usd=0.4)
    ledger.release(first)
    assert each(ledger, spent) == [(50, 0.4)] * 3
    assert each(ledger, reserved) == [(20, 0.2)] * 3
    ledger.release(second)
    ledger.release(second)
    ledger.settle(second, tokens=20, cost_usd=0.2)
    assert each(ledger, spent) == [(50, 0.4)] * 3
    assert each(ledger, reserved) == [(0, 0.0)] * 3


def test_a_combined_settle_and_reserve_spans_every_scope(ledger: Ledger) -> None:
    """settle_and_reserve(scopes=) settles one call in its scopes and reserves the next in
    those asked; refused by one scope, the settle stands and nothing more is held."""
    first = took(ledger, ALL, 30, 0.3)
    second, warnings = ledger.settle_and_reserve(
        first, tokens=25, cost_usd=0.25, reserve_tokens=30, reserve_cost_usd=0.3,
        lease_seconds=60, scopes=ALL, at=DAY,
    )  # fmt: skip
    assert second is not None
    assert warnings == ()
    assert [p.scope for p in second.scopes] == NAMES
    assert each(ledger, spent) == [(25, 0.25)] * 3
    assert each(ledger, reserved) == [(30, 0.3)] * 3
    third, warnings = ledger.settle_and_reserve(
        second, tokens=30, cost_usd=0.3, reserve_tokens=46, reserve_cost_usd=0.0,
        lease_seconds=60, scopes=ALL, at=DAY,
    )  # fmt: skip
    assert (third, warnings) == (None, ())  # 55 + 46 tokens: past the user's 100
    assert each(ledger, spent) == [(55, 0.55)] * 3
    assert each(ledger, reserved) == [(0, 0.0)] * 3


def test_a_renewal_extends_the_lease_in_every_scope(ledger: Ledger) -> None:
    """renew() holds a three-scope reservation past its first lease in each of them; once the
    renewed lease ends, each gives its share back."""
    renewed = took(ledger, ALL, 10, 0.1, lease_seconds=0.4)
    time.sleep(0.25)
    assert ledger.renew(renewed, lease_seconds=0.6)
    time.sleep(0.3)  # past the first lease, within the renewed one
    assert each(ledger, reserved) == [(10, 0.1)] * 3
    time.sleep(0.5)
    assert each(ledger, reserved) == [(0, 0.0)] * 3
    assert not ledger.renew(renewed, lease_seconds=60)
    ledger.settle(renewed, tokens=10, cost_usd=0.1)  # a late settle still counts, everywhere
    assert each(ledger, spent) == [(10, 0.1)] * 3


# ---------------------------------------------------------------------- one window per scope


def test_a_scope_asked_under_another_window_is_refused_by_name_and_nothing_is_held(
    ledger: Ledger,
) -> None:
    """The team counts in day: a reservation naming it under week raises LedgerConflict (even
    when another of its scopes has no room), and neither scope holds anything or records a
    window; status under week is refused the same way."""
    took(ledger, [ScopeLimit("team:t", "day")], 1, 0.0)
    full = ScopeLimit("user:new", "hour", max_tokens=0)
    for limits in ([full, ScopeLimit("team:t", "week")], [ScopeLimit("team:t", "week")]):
        with pytest.raises(LedgerConflict) as caught:
            take(ledger, limits, 1, 0.0)
        assert (caught.value.scope, caught.value.window, caught.value.asked) == (
            "team:t",
            "day",
            "week",
        )
        assert str(caught.value) == (
            "ledger scope team:t counts in the window 'day', recorded by the first run that"
            " drew on it, not 'week': a scope has one window"
        )
        assert isinstance(caught.value, BudgetConfError)
    with pytest.raises(LedgerConflict, match=r"counts in the window 'day'.* not 'hour'"):
        ledger.reserve("team:t", tokens=1, cost_usd=0, lease_seconds=60, window="hour")
    with pytest.raises(LedgerConflict, match=r"counts in the window 'day'.* not 'week'"):
        ledger.status("team:t", window="week")
    assert ledger.window_of("user:new") is None
    assert reserved(ledger, "user:new") == (0, 0.0)
    assert reserved(ledger, "team:t") == (1, 0.0)
    assert ledger.window_of("team:t") == "day"


def test_a_conflict_in_settle_and_reserve_keeps_the_settle(ledger: Ledger) -> None:
    """The next reservation refused for a conflicting window: what the call used still counts,
    and nothing more is held."""
    took(ledger, [ScopeLimit("org:o", "month")], 0, 0.0)
    first = took(ledger, [USER], 10, 0.1)
    with pytest.raises(LedgerConflict, match="ledger scope org:o counts in the window 'month'"):
        ledger.settle_and_reserve(
            first, tokens=7, cost_usd=0.07, reserve_tokens=10, reserve_cost_usd=0.1,
            lease_seconds=60, scopes=[USER, ORG], at=DAY,
        )  # fmt: skip
    assert (spent(ledger, "user:u-1"), reserved(ledger, "user:u-1")) == ((7, 0.07), (0, 0.0))


def test_a_conflict_in_settle_and_reserve_carries_the_settles_warnings(ledger: Ledger) -> None:
    """The settle stands and has crossed the fleet's warning share: the refusal says so, and
    the warning is not lost to a later settle (the window records it fired)."""
    took(ledger, [ScopeLimit("org:o", "month")], 0, 0.0)
    first = took(ledger, [USER], 10, 0.1)
    with pytest.raises(LedgerConflict) as caught:
        ledger.settle_and_reserve(
            first, tokens=70, cost_usd=0.07, reserve_tokens=10, reserve_cost_usd=0.1,
            lease_seconds=60, scopes=[USER, ORG], warn_at=0.6, at=DAY,
        )  # fmt: skip
    (warning,) = caught.value.warnings
    assert (warning.scope, warning.budget, warning.spent, warning.maximum) == (
        "user:u-1",
        "max_tokens",
        70,
        100,
    )


def test_status_reads_the_recorded_window(ledger: Ledger) -> None:
    """status() without a window gives the scope's recorded one, day for a scope nothing has
    drawn on; asking the recorded one by name is the same."""
    assert ledger.status("org:o", at=DAY).window == "day"
    ledger.settle(took(ledger, [ORG], 5, 0.05), tokens=4, cost_usd=0.04)
    status = ledger.status("org:o", at=DAY)
    assert (status.window, status.window_start, status.window_ends) == (
        "week",
        dt.datetime(2026, 3, 9, tzinfo=dt.UTC),
        dt.datetime(2026, 3, 16, tzinfo=dt.UTC),
    )
    assert status == ledger.status("org:o", window="week", at=DAY)
    assert (status.spent_tokens, status.spent_cost_usd) == (4, 0.04)


# ---------------------------------------------------------------------- the week


@pytest.mark.parametrize(
    ("at", "start"),
    [
        (dt.datetime(2026, 3, 15, 23, 59, 59, 999999, tzinfo=dt.UTC), dt.datetime(2026, 3, 9)),
        (dt.datetime(2026, 3, 16, tzinfo=dt.UTC), dt.datetime(2026, 3, 16)),
        (dt.datetime(2026, 3, 9, tzinfo=dt.UTC), dt.datetime(2026, 3, 9)),
        (dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), dt.datetime(2025, 12, 29)),
        # Monday 01:00 two hours east of UTC is still Sunday in UTC
        (
            dt.datetime(2026, 3, 16, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            dt.datetime(2026, 3, 9),
        ),
    ],
)
def test_a_week_runs_from_monday_midnight_utc(at: dt.datetime, start: dt.datetime) -> None:
    """The ISO week: from Monday 00:00 UTC to the next Monday 00:00 UTC."""
    begins = start.replace(tzinfo=dt.UTC)
    assert window_bounds("week", at) == (begins, begins + dt.timedelta(days=7))


def test_a_sunday_night_reservation_counts_in_the_week_that_began_on_monday(
    ledger: Ledger,
) -> None:
    """Spend settled late on Sunday is in the week from the Monday before; at Monday 00:00 a
    new week starts from nothing."""
    sunday_night = dt.datetime(2026, 3, 15, 23, 59, 59, tzinfo=dt.UTC)
    monday = dt.datetime(2026, 3, 16, tzinfo=dt.UTC)
    r = took(ledger, [ORG], 10, 0.1, at=sunday_night)
    assert (r.window_start, r.window_ends) == (dt.datetime(2026, 3, 9, tzinfo=dt.UTC), monday)
    ledger.settle(r, tokens=900, cost_usd=1.0)
    assert spent(ledger, "org:o", dt.datetime(2026, 3, 9, tzinfo=dt.UTC)) == (900, 1.0)
    assert spent(ledger, "org:o", monday) == (0, 0.0)
    assert take(ledger, [ORG], 101, 0.0, at=sunday_night) is None
    assert take(ledger, [ORG], 1000, 0.0, at=monday) is not None


# ---------------------------------------------------------------------- warnings


def test_a_warning_fires_once_per_scope_and_window_across_the_fleet(url: str) -> None:
    """Two ledger connections (two workers) settling into the same scopes: the settle whose
    spend first reaches warn_at of a scope's maximum reports it, the others do not; a reset,
    or a new window, lets it fire again."""
    with open_ledger(url) as one, open_ledger(url) as two:
        r = took(one, ALL, 10, 0.1)
        assert one.settle(r, tokens=70, cost_usd=0.5, warn_at=0.8) == ()
        r = took(two, ALL, 10, 0.1)
        assert two.settle(r, tokens=10, cost_usd=0.3, warn_at=0.8) == (
            ScopeWarning(
                scope="user:u-1",
                window="hour",
                window_ends=dt.datetime(2026, 3, 14, 16, tzinfo=dt.UTC),
                budget="max_tokens",
                spent=80,
                maximum=100,
            ),
            ScopeWarning(
                scope="team:t",
                window="day",
                window_ends=dt.datetime(2026, 3, 15, tzinfo=dt.UTC),
                budget="max_cost_usd",
                spent=0.8,
                maximum=1.0,
            ),
        )
        r = took(one, [USER, TEAM], 0, 0.0)
        assert one.settle(r, tokens=5, cost_usd=0.05, warn_at=0.8) == ()  # fired already
        # the organisation reaches both shares in one settle: its cost is judged first
        r = took(two, [ORG], 0, 0.0)
        (warning,) = two.settle(r, tokens=800, cost_usd=3.2, warn_at=0.8)
        assert (warning.scope, warning.budget, warning.spent, warning.maximum) == (
            "org:o",
            "max_cost_usd",
            4.0,  # 880 tokens of 1000 too
            5.0,
        )
        assert two.settle(took(two, [ORG]), tokens=100, cost_usd=0.9, warn_at=0.8) == ()
        # a reset clears the window's warning: the next settle to reach the share fires again
        one.reset("team:t", why="budget raised", at=DAY)
        assert one.settle(took(one, [TEAM]), tokens=0, cost_usd=0.79, warn_at=0.8) == ()
        (again,) = two.settle(took(two, [TEAM]), tokens=0, cost_usd=0.01, warn_at=0.8)
        assert (again.scope, again.budget, again.spent) == ("team:t", "max_cost_usd", 0.8)
        # the next day is a new window for the user (its hour) and the team, not the week
        sunday = DAY + dt.timedelta(days=1)
        r = took(one, ALL, at=sunday)
        found = one.settle(r, tokens=90, cost_usd=0.9, warn_at=0.8)
        assert [(w.scope, w.window_ends) for w in found] == [
            ("user:u-1", dt.datetime(2026, 3, 15, 16, tzinfo=dt.UTC)),
            ("team:t", dt.datetime(2026, 3, 16, tzinfo=dt.UTC)),
        ]


def test_no_warning_without_warn_at_or_a_maximum(ledger: Ledger) -> None:
    """A settle without warn_at, or in a scope with no maximum, reports nothing and marks
    nothing: a later settle with warn_at that reaches the share fires."""
    free = ScopeLimit("lab:free", "day")
    assert ledger.settle(took(ledger, [TEAM, free]), tokens=10**6, cost_usd=0.9) == ()
    r = took(ledger, [TEAM, free])
    (warning,) = ledger.settle(r, tokens=0, cost_usd=0.0, warn_at=0.5)
    assert (warning.scope, warning.spent) == ("team:t", 0.9)


def test_a_combined_settle_and_reserve_reports_the_warnings_of_its_settle(
    ledger: Ledger,
) -> None:
    first = took(ledger, ALL, 10, 0.1)
    second, warnings = ledger.settle_and_reserve(
        first, tokens=95, cost_usd=0.0, reserve_tokens=5, reserve_cost_usd=0.0,
        lease_seconds=60, scopes=ALL, warn_at=0.9, at=DAY,
    )  # fmt: skip
    assert second is not None
    assert [(w.scope, w.budget, w.spent) for w in warnings] == [("user:u-1", "max_tokens", 95)]


@pytest.mark.parametrize("warn_at", [0, 1, 1.5, -0.1, True, "0.8"])
def test_a_warning_share_must_be_between_zero_and_one(ledger: Ledger, warn_at: Any) -> None:
    r = took(ledger, ALL, 1, 0.0)
    with pytest.raises(UsageError, match="warn_at must be a number between 0 and 1"):
        ledger.settle(r, tokens=1, cost_usd=0.0, warn_at=warn_at)
    assert each(ledger, spent) == [(0, 0.0)] * 3


# ---------------------------------------------------------------------- resets


def test_a_reset_zeroes_the_windows_spend_keeps_what_is_reserved_and_leaves_a_record(
    ledger: Ledger,
) -> None:
    """reset() sets the current window's spend to zero, keeps live reservations, and records
    who, when, why and what was spent: the latest of runs(), and status().reset."""
    ledger.settle(took(ledger, [TEAM], 0, 0.6), tokens=30, cost_usd=0.6)
    took(ledger, [TEAM], 10, 0.1)
    assert take(ledger, [TEAM], 0, 0.31) is None
    record = ledger.reset("team:t", why="  budget\n raised ", by="ops@bastion", at=DAY)
    part = {
        "by": "ops@bastion",
        "window": "day",
        "window_start": "2026-03-14T00:00:00Z",
        "why": "budget raised",
        "spent": {"tokens": 30, "cost_usd": 0.6},
        "at": "2026-03-14T15:09:26Z",
    }
    assert record["reset"] == part
    assert (record["scope"], record["stop_reason"], record["ended"]) == (
        "team:t",
        "reset",
        "2026-03-14T15:09:26Z",
    )
    assert (record["run_id"], record["turns"], record["tokens"], record["cost_usd"]) == (
        None,
        0,
        0,
        0.0,
    )
    status = ledger.status("team:t", at=DAY)
    assert (status.spent_tokens, status.spent_cost_usd) == (0, 0.0)
    assert (status.reserved_tokens, status.reserved_cost_usd) == (10, 0.1)
    assert status.reset == part
    assert status.to_dict()["reset"] == part
    assert ledger.runs("team:t") == [record]
    assert ledger.status("team:t", at=DAY + dt.timedelta(days=1)).reset is None
    assert take(ledger, [TEAM], 0, 0.9) is not None  # room again: 0 + 0.1 + 0.9
    later = ledger.reset("team:t", why="again", at=DAY + dt.timedelta(minutes=1))
    assert later["reset"]["by"].endswith(f"@{socket.gethostname()}")
    assert ledger.status("team:t", at=DAY).reset == later["reset"]
    assert [r["reset"]["why"] for r in ledger.runs("team:t")] == ["again", "budget raised"]


def test_a_reset_of_another_window_kind_leaves_the_recorded_one(ledger: Ledger) -> None:
    """reset(window=) reaches that kind's counter (here empty), not the scope's own, and the
    scope keeps counting in its recorded window."""
    ledger.settle(took(ledger, [TEAM], 0, 0.0), tokens=30, cost_usd=0.6)
    record = ledger.reset("team:t", why="old counter", window="hour", at=DAY)
    assert record["reset"]["window"] == "hour"
    assert record["reset"]["window_start"] == "2026-03-14T15:00:00Z"
    assert record["reset"]["spent"] == {"tokens": 0, "cost_usd": 0.0}
    assert spent(ledger, "team:t") == (30, 0.6)
    assert ledger.window_of("team:t") == "day"
    assert ledger.status("team:t", at=DAY).reset is None


def test_a_reset_of_a_scope_nothing_drew_on_resets_its_day(ledger: Ledger) -> None:
    record = ledger.reset("team:new", why="start clean", at=DAY)
    assert record["reset"]["window"] == "day"
    assert ledger.window_of("team:new") is None
    assert ledger.status("team:new", at=DAY).reset == record["reset"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"why": ""}, "a reset says why"),
        ({"why": "   "}, "a reset says why"),
        ({"why": None}, "a reset says why"),
        ({"why": "x", "by": ""}, "by= must be a non-empty text"),
        ({"why": "x", "window": "fortnight"}, "unknown ledger window 'fortnight'"),
        ({"why": "x", "at": dt.datetime(2026, 3, 14)}, "at must be an aware datetime"),
    ],
)
def test_a_reset_that_cannot_be_carried_out_is_a_usage_error(
    ledger: Ledger, kwargs: dict[str, Any], message: str
) -> None:
    ledger.settle(took(ledger, [TEAM]), tokens=5, cost_usd=0.5)
    with pytest.raises(UsageError, match=message):
        ledger.reset("team:t", **kwargs)
    assert spent(ledger, "team:t") == (5, 0.5)
    assert ledger.runs("team:t") == []


# ---------------------------------------------------------------------- run records and parents


def test_a_run_record_with_parents_is_kept_and_counted_in_each_parent(ledger: Ledger) -> None:
    """record_run keeps the record in its scope and each parent, and counts it in the window
    each of them counts in; a parent named twice, or the scope itself, counts once."""
    for limit in ALL:
        took(ledger, [limit])
    record = {
        "run_id": "r-1", "scope": "user:u-1", "host": "w-7", "pid": 7, "started": DAY,
        "ended": DAY, "turns": 2, "tokens": 50, "cost_usd": 0.05, "stop_reason": "completed",
        "parents": ["team:t", "org:o", "team:t", "user:u-1"],
    }  # fmt: skip
    ledger.record_run(record)
    ledger.record_run({"run_id": "r-2", "scope": "team:t", "ended": DAY})
    for scope, ids in (("user:u-1", ["r-1"]), ("team:t", ["r-2", "r-1"]), ("org:o", ["r-1"])):
        found = ledger.runs(scope)
        assert [r["run_id"] for r in found] == ids
        assert found[-1]["scope"] == "user:u-1"
        assert found[-1]["parents"] == ["team:t", "org:o", "team:t", "user:u-1"]
        assert ledger.status(scope, at=DAY).runs == len(ids)
    assert ledger.status("org:o", at=DAY + dt.timedelta(days=2)).runs == 0  # the next week


@pytest.mark.parametrize(
    ("parents", "message"),
    [
        ("team:t", "a run record's parents are a list of scopes, not 'team:t'"),
        (["team t"], "ledger scope 'team t' is not 1 to 128"),
        ([7], "ledger scope 7 is not"),
    ],
)
def test_parents_that_are_not_scopes_are_refused(
    ledger: Ledger, parents: Any, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        ledger.record_run({"scope": "user:u-1", "parents": parents})
    assert ledger.runs("user:u-1") == []


def test_prune_removes_the_records_that_ended_before_in_every_scope(ledger: Ledger) -> None:
    """prune(before) removes run and reset records that ended before it, whatever order they
    were written in, from every scope they are kept in (each kept copy counts), and leaves
    spend alone."""
    ledger.settle(took(ledger, [TEAM]), tokens=5, cost_usd=0.5)

    def ended(day: int) -> dict[str, Any]:
        return {"ended": dt.datetime(2026, 3, day, 12, tzinfo=dt.UTC)}

    ledger.record_run({"run_id": "a-20", "scope": "team-a"} | ended(20))
    # judged by its own end, not by an earlier one its values hold
    ledger.record_run({"run_id": {"ended": "2026-03-01T00:00:00Z"}, "scope": "team:t"} | ended(15))
    ledger.record_run({"run_id": "a-01", "scope": "team-a"} | ended(1))  # a back-fill
    ledger.record_run({"run_id": "a-10", "scope": "team-a", "ended": "2026-03-10T00:00:00Z"})
    ledger.record_run(
        {"run_id": "u-05", "scope": "user:u", "parents": ["team-a", "org:o"]} | ended(5)
    )
    ledger.reset("team:t", why="old", at=dt.datetime(2026, 3, 2, tzinfo=dt.UTC))
    ledger.record_run({"run_id": "t-15", "scope": "team:t"} | ended(15))
    # a-01, u-05 in its scope and both parents, the reset: five records
    assert ledger.prune(dt.datetime(2026, 3, 10, tzinfo=dt.UTC)) == 5
    assert [r["run_id"] for r in ledger.runs("team-a")] == ["a-10", "a-20"]
    assert ledger.runs("user:u") == ledger.runs("org:o") == []
    assert [r["run_id"] for r in ledger.runs("team:t")] == [
        "t-15",
        {"ended": "2026-03-01T00:00:00Z"},
    ]
    assert ledger.prune(dt.datetime(2026, 3, 10, tzinfo=dt.UTC)) == 0
    assert spent(ledger, "team:t") == (5, 0.5)
    assert ledger.prune(dt.datetime(2026, 3, 21, tzinfo=dt.UTC)) == 4
    assert ledger.runs("team-a") == ledger.runs("team:t") == []
    with pytest.raises(UsageError, match="before must be an aware datetime"):
        ledger.prune(dt.datetime(2026, 3, 21))
    with pytest.raises(UsageError, match="before must be an aware datetime"):
        ledger.prune("2026-03-21")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda led: take(led, []), "scopes= takes a non-empty list of ScopeLimit"),
        (lambda led: led.reserve(scopes="team:t", tokens=0, cost_usd=0, lease_seconds=1), "not"),
        (lambda led: take(led, [USER, USER]), "scopes= names the scope user:u-1 twice"),
        (lambda led: take(led, [("team:t", "day")]), "holds ScopeLimit records, not tuple"),  # type: ignore[list-item]
        (lambda led: take(led, [ScopeLimit("team t")]), "ledger scope 'team t' is not"),
        (lambda led: take(led, [ScopeLimit("t", "year")]), "unknown ledger window 'year'"),
        (lambda led: take(led, [ScopeLimit("t", max_tokens=-1)]), "max_tokens must be"),
        (lambda led: take(led, [ScopeLimit("t", max_cost_usd=-1.0)]), "max_cost_usd must be"),
        (
            lambda led: led.reserve("t", scopes=[USER], tokens=0, cost_usd=0, lease_seconds=1),
            "either a scope with its maxima and window, or scopes=",
        ),
        (
            lambda led: led.reserve(
                scopes=[USER], max_tokens=5, tokens=0, cost_usd=0, lease_seconds=1
            ),
            "either a scope with its maxima and window, or scopes=",
        ),
        (lambda led: led.reserve(tokens=0, cost_usd=0, lease_seconds=1), "takes a scope"),
        (lambda led: led.window_of("team t"), "ledger scope 'team t' is not"),
    ],
)
def test_scopes_that_cannot_be_reserved_are_a_usage_error(
    ledger: Ledger, call: Any, message: str
) -> None:
    """Every scope is checked before anything is held; nothing is recorded."""
    with pytest.raises(UsageError, match=message):
        call(ledger)
    assert [ledger.window_of(scope) for scope in NAMES] == [None, None, None]


def test_a_reset_by_a_user_without_a_name_says_their_id(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process whose user id has no name (a container's) is named by its id."""
    import getpass
    import os

    def nameless() -> str:
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr(getpass, "getuser", nameless)
    record = ledger.reset("team:t", why="cleanup", at=DAY)
    assert record["reset"]["by"] == f"uid {os.getuid()}@{socket.gethostname()}"


def test_the_bounds_of_a_window_that_is_not_one_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown ledger window 'fortnight'"):
        window_bounds("fortnight")


def test_a_counters_name_pads_its_year_to_four_digits(ledger: Ledger) -> None:
    """The week of 0999-12-31 (a Tuesday) starts Monday 0999-12-30: its counter's name keeps
    four digits of year, as every other does, so that names sort as their moments do."""
    at = dt.datetime(999, 12, 31, 12, tzinfo=dt.UTC)
    held = ledger.reserve(scopes=[ScopeLimit("lab:old", "week")], tokens=1, cost_usd=0,
                          lease_seconds=60, at=at)  # fmt: skip
    assert held is not None
    assert held.scopes[0].key == "week:0999-12-30T00:00:00Z"
