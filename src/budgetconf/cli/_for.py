"""``budgetconf explain --for FRAMEWORK``: what a framework bridge would get from the budgets.

Under the usual table (or as the JSON document's ``framework`` key): the
keywords the bridge's `limits()` passes, and for each budget that is set
what enforces it, the framework's own knob or the bridge, or that nothing
does. The frameworks are described by plain data: none is imported.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from budgetconf.cli._output import EXIT_ERROR, say, write_json
from budgetconf.cli._resolution import Resolved
from budgetconf.errors import PresetError
from budgetconf.integrations._frameworks import describe, framework_named
from budgetconf.loop._budget import Budget

__all__ = ["explain_for", "framework_choice"]


def framework_choice(text: str) -> str:
    """The module name of the framework ``text`` names (argparse's type for ``--for``)."""
    import argparse

    try:
        return framework_named(text).name
    except KeyError as exc:
        raise argparse.ArgumentTypeError(exc.args[0]) from None


def explain_for(name: str, found: Resolved, fmt: str, out: TextIO, err: TextIO) -> int:
    """``explain`` in ``fmt``, then what the framework ``name`` gets; 1 on a budget it refuses."""
    from budgetconf.cli._explain import explain

    try:
        described = describe(framework_named(name), Budget.from_resolution(found.res))
    except PresetError as exc:
        described = None
        problem = str(exc)
    if fmt == "json":
        data = found.res.to_dict(found.fields)
        data["framework"] = described if described is not None else {"error": problem}
        write_json(data, out)
        code = EXIT_ERROR if found.res.errors else 0
    else:
        code = explain(found, fmt, out, err)
        if described is None:
            say(err, f"budgetconf: error: --for: {problem}")
        else:
            _table(described, out)
    refused = described is None or any(b["enforced_by"] == "refused" for b in described["budgets"])
    return EXIT_ERROR if refused else code


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
