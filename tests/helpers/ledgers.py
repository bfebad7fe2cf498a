"""What the bridges' ledger tests share: a budget naming a ledger, its address, its state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import budgetconf
from budgetconf.ledger import open_ledger

SCOPE = "team-a"


def budget(url: str, **values: str) -> budgetconf.Resolution:
    """A resolution whose ledger is ``url`` (scope `SCOPE`), with ``values`` as variables."""
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_SCOPE": SCOPE}
    env.update({f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})
    return budgetconf.resolve(env=env)


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def status_and_runs(url: str) -> tuple[Any, list[dict[str, Any]]]:
    """The scope's day as it stands, and its run records."""
    with open_ledger(url) as led:
        return led.status(SCOPE, window="day"), led.runs(SCOPE)


def assert_two_calls_settled_at_the_price(url: str) -> None:
    """The scope settled two calls of 10 input and 5 output tokens at $0.15 / $0.60 per Mtok
    ($0.0000045 each), holds nothing, and its one run record says the same."""
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.spent_cost_usd, status.reserved_cost_usd) == (
        30,
        0.000009,
        0.0,
    )
    assert [r["cost_usd"] for r in runs] == [0.000009]


#: what a bridge's model double reports per call, and the scope's maximum, in the stop tests
PER_CALL, MOST = 100, 250


def assert_stopped_before_the_third_call(result: Any, url: str) -> None:
    """The run stopped at the scope's token maximum (`MOST`, `PER_CALL` reserved and used a
    call) before its third call, said so in the ledger's words, and left a record of two turns.
    """
    from budgetconf.loop import RunStatus, StopReason

    assert (result.status, result.stop_reason, result.stop_kind) == (
        RunStatus.TRUNCATED,
        "max_tokens",
        StopReason.MAX_TOKENS,
    )
    limit = result.limit
    assert limit is not None
    assert (limit["field"], limit["value"], limit["scope"]) == ("ledger.max_tokens", MOST, "ledger")
    assert (limit["spent"], limit["reserved"]) == (2 * PER_CALL, 0)
    assert limit["window_ends"].endswith("T00:00:00Z")
    assert result.message == (
        f"stopped: hit max_tokens ({MOST}): ledger.max_tokens = {MOST} from"
        f" env:BUDGETCONF_LEDGER_MAX_TOKENS; scope {SCOPE} has spent {2 * PER_CALL} of {MOST}"
        f" tokens this day (resets {limit['window_ends']}); raise it with"
        " BUDGETCONF_LEDGER_MAX_TOKENS or --ledger-max-tokens"
    )
    status, runs = status_and_runs(url)
    assert (status.spent_tokens, status.reserved_tokens) == (2 * PER_CALL, 0)
    assert [(r["turns"], r["tokens"], r["stop_reason"]) for r in runs] == [
        (2, 2 * PER_CALL, "max_tokens")
    ]


#: a lease shorter than the call that holds it, in the renewal tests: the call lasts `LINGER`
LEASE, LINGER = "0.3", 0.9


def assert_the_lease_outlived(seen: list[tuple[int, int]]) -> None:
    """The first call, lasting `LINGER` under a `LEASE` of its reservation, still held its
    `PER_CALL` tokens at its end: renewed at half its lease while it ran."""
    assert seen[0] == (0, PER_CALL)
