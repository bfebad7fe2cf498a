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
