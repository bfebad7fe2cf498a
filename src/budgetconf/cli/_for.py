"""``budgetconf explain --for FRAMEWORK``: what a framework bridge would get from the budgets.

Under the usual table (or as the JSON document's ``framework`` key): the
keywords the bridge's `limits()` passes, and for each budget that is set
what enforces it, the framework's own knob or the bridge, or that nothing
does. The frameworks are described by plain data: none is imported.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from budgetconf.cli._output import say
from budgetconf.errors import PresetError
from budgetconf.integrations._frameworks import describe, framework_named
from budgetconf.loop._budget import Budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    from budgetconf._resolution import Resolution


def framework_choice(text: str) -> str:
    """The module name of the framework ``text`` names (argparse's type for ``--for``)."""
    import argparse

    try:
        return framework_named(text).name
    except KeyError as exc:
        raise argparse.ArgumentTypeError(exc.args[0]) from None


def described(name: str, res: Resolution) -> dict[str, Any]:
    """What the framework ``name`` gets from ``res``; ``{"error": ...}`` if it bounds no loop."""
    try:
        return describe(framework_named(name), Budget.from_resolution(res))
    except PresetError as exc:
        return {"error": str(exc)}


def refused(found: dict[str, Any]) -> bool:
    """Whether the framework would refuse a budget (or there is no loop to bound)."""
    return "error" in found or any(b["enforced_by"] == "refused" for b in found["budgets"])


def write(found: dict[str, Any], out: TextIO, err: TextIO) -> None:
    """The lines under the explain table."""
    if "error" in found:
        say(err, f"budgetconf: error: --for: {found['error']}")
    else:
        _table(found, out)


def _table(described: dict[str, Any], out: TextIO) -> None:
    """``enforced by`` column first, as the explain table puts the status of a candidate."""
    out.write(f"\nfor {described['extra']} ({described['module']})\n")
    keywords = ", ".join(f"{k}={_shown(v)}" for k, v in described["limits"].items())
    rows = [("limits() passes", keywords or "nothing")]
    for budget in described["budgets"]:
        by = budget["enforced_by"]
        what = f"{budget['field']} = {_shown(budget['value'])}"
        if by in ("framework", "bridge"):
            rows.append((f"by the {by}", f"{what}: {budget['how']}"))
        elif by == "default":
            rows.append(("not enforced", f"{what}: the preset's default, left as it is"))
        else:
            why = f"{described['package']} cannot enforce it; run() refuses it"
            rows.append(("refused", f"{what} from {budget['locator']}: {why}"))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        out.write(f"  {label:<{width}}  {text}\n")


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
