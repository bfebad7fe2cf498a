"""Each tool's own limit, the warnings before a limit and the stop of a run that goes nowhere,
as every framework's bridge takes them (no framework imported): by the Meter in `run()`,
refused by `limits()`, and refused by name where BRIDGES.md allows."""

from __future__ import annotations

import pytest

import budgetconf
from budgetconf.integrations._bridge import bridge_budget
from budgetconf.integrations._frameworks import FRAMEWORKS, Framework
from budgetconf.integrations._verdicts import verdicts
from budgetconf.loop import Budget

SETTINGS = {
    "BUDGETCONF_TOOLS_MAX_CALLS": "web_search=3,fetch=10",
    "BUDGETCONF_MAX_REPEATS": "3",
    "BUDGETCONF_WARN_AT": "0.8",
    "BUDGETCONF_WARN_MODEL": "true",
}
#: the fields those set, as each verdict names them
FIELDS = [
    "tools.max_calls.fetch",
    "tools.max_calls.web_search",
    "loop.max_repeats",
    "limits.warn_at",
    "loop.warn_model",
]


def budget() -> Budget:
    return Budget.from_resolution(budgetconf.resolve(env=SETTINGS))


def judged(framework: Framework, through: str) -> dict[str, dict[str, object]]:
    found = verdicts(framework, budget(), through)  # type: ignore[arg-type]
    return {str(v["field"]): v for v in found if v["field"] in FIELDS}


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_every_bridge_enforces_them_in_run(name: str) -> None:
    found = judged(FRAMEWORKS[name], "run")
    assert sorted(found) == sorted(FIELDS)
    assert {v["enforced_by"] for v in found.values()} == {"bridge"}
    assert found["tools.max_calls.web_search"]["budget"] == "max_calls_by_tool"
    assert found["tools.max_calls.web_search"]["value"] == 3
    assert "tools.max_calls" in str(found["tools.max_calls.fetch"]["how"])
    assert "max_repeats times in a row" in str(found["loop.max_repeats"]["how"])
    assert "in the last-turn notice's place" in str(found["loop.warn_model"]["how"])
    bridge_budget(FRAMEWORKS[name], None, {"env": SETTINGS}, through="run")  # no refusal


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_limits_refuses_them_as_no_framework_keyword_carries_them(name: str) -> None:
    found = judged(FRAMEWORKS[name], "limits")
    assert {v["enforced_by"] for v in found.values()} == {"refused"}
    with pytest.raises(budgetconf.UsageError) as caught:
        bridge_budget(FRAMEWORKS[name], None, {"env": SETTINGS}, through="limits")
    for field in FIELDS:
        assert field in str(caught.value)


def test_a_langgraph_graph_without_middleware_refuses_a_tools_limit_and_telling_the_model() -> None:
    from budgetconf.integrations.langgraph import _UNDRAWN  # the table a bare graph runs by

    found = judged(_UNDRAWN, "run")
    refused = sorted(f for f, v in found.items() if v["enforced_by"] == "refused")
    assert refused == ["loop.warn_model", "tools.max_calls.fetch", "tools.max_calls.web_search"]
    assert found["loop.warn_model"]["why"] == (
        "loop.warn_model = true from env:BUDGETCONF_WARN_MODEL: langgraph gives the bridge no way"
        " to edit one model call's input"
    )
    assert found["loop.max_repeats"]["enforced_by"] == "bridge"  # it sees each tool message
    assert found["limits.warn_at"]["enforced_by"] == "bridge"


def test_warn_model_left_false_is_no_setting_to_judge() -> None:
    quiet = Budget.from_resolution(budgetconf.resolve(env={"BUDGETCONF_WARN_AT": "0.5"}))
    assert list(quiet.warnings) == ["warn_at"]
    assert not quiet.warn_model
    assert quiet.warn_at == 0.5
