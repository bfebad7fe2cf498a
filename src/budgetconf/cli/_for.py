"""``budgetconf explain --for FRAMEWORK``: what a framework bridge would get from the budgets.

Under the usual table (or as the JSON document's ``framework`` key): the
keywords the bridge's `limits()` passes, or the budgets it refuses, and for
each budget that is set what enforces it in `run()`, the framework's own knob
or the bridge, or that `run()` refuses it. Both come from the judgement
`limits()` and `run()` make themselves (`verdicts`). A cost budget is shown
enforced at the price of the model ``--model-name`` names (its rates, source
and locator), or refused for want of one. The frameworks are described by
plain data: none is imported.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from budgetconf.cli._output import say
from budgetconf.errors import PresetError, SourceError
from budgetconf.integrations._frameworks import framework_named
from budgetconf.integrations._verdicts import describe
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


def described(name: str, res: Resolution, model: str | None = None) -> dict[str, Any]:
    """What the framework ``name`` gets from ``res``, for an agent whose model is ``model``;
    ``{"error": ...}`` if it bounds no loop, or its price table cannot be read."""
    try:
        return describe(framework_named(name), Budget.from_resolution(res), model)
    except (PresetError, SourceError) as exc:
        return {"error": str(exc)}


def refused(found: dict[str, Any], via: str = "run") -> bool:
    """Whether the bridge's ``run()`` (or, ``via`` ``limits``, its ``limits()``) would refuse a
    budget, or there is no loop to bound."""
    if "error" in found:
        return True
    if via == "limits":
        return bool(found["limits_refused"])
    return any(b["enforced_by"] == "refused" for b in found["budgets"])


def write(found: dict[str, Any], out: TextIO, err: TextIO) -> None:
    """The lines under the explain table."""
    if "error" in found:
        say(err, f"budgetconf: error: --for: {found['error']}")
    else:
        _table(found, out)


def _table(described: dict[str, Any], out: TextIO) -> None:
    """``enforced by`` column first, as the explain table puts the status of a candidate."""
    model = described.get("model")
    agent = "" if model is None else f", an agent on {model}"
    out.write(f"\nfor {described['extra']} ({described['module']}){agent}\n")
    rows = [("limits() refuses", budget["why"]) for budget in described["limits_refused"]]
    if described["limits"] is not None:
        keywords = ", ".join(f"{k}={_shown(v)}" for k, v in described["limits"].items())
        rows.append(("limits() passes", keywords or "nothing"))
    for budget in described["budgets"]:
        by = budget["enforced_by"]
        what = f"{budget['field']} = {_shown(budget['value'])}"
        if by in ("framework", "bridge"):
            rows.append(("run() enforces", f"{what}, by the {by}: {budget['how']}"))
        elif by == "default":
            rows.append(("not enforced", f"{what}: the preset's default, left as it is"))
        elif by == "warned":
            rows.append(("run() warns", budget["why"]))
        else:
            rows.append(("run() refuses", budget["why"]))
            if model is None and budget.get("price", False) is None and "unpriced" not in budget:
                rows.append(("", "--model-name NAME judges it at that model's price"))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        out.write(f"  {label:<{width}}  {text}\n")


def _shown(value: object) -> str:
    """A keyword's or a budget's value as the explain table shows values (``true``)."""
    if isinstance(value, dict | bool):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
