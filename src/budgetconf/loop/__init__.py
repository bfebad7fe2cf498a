"""The loop executor: runs an agent loop within resolved budgets, and says what stopped it.

>>> from budgetconf.loop import LoopExecutor
>>> def model(messages, tools):
...     return {"content": "done"}
>>> LoopExecutor(model, budget={"loop.max_steps": 3}).run("hi").status
<RunStatus.OK: 'ok'>
"""

from budgetconf._loop_table import BudgetName, LastTurn, LoopSpec, OverCap, RunStatus, StopReason
from budgetconf._usage import Usage
from budgetconf.loop._budget import Budget, LedgerSettings, ScopeBudget
from budgetconf.loop._child_meter import ChildMeter
from budgetconf.loop._children import ChildBudget, RunHandle, current_run, meter_for, running
from budgetconf.loop._executor import LoopExecutor
from budgetconf.loop._limit import Limit
from budgetconf.loop._meter import Meter
from budgetconf.loop._plan import Plan
from budgetconf.loop._response import Call
from budgetconf.loop._result import RunResult, Totals
from budgetconf.loop._scripted import ScriptedModel

__all__ = [
    "Budget",
    "BudgetName",
    "Call",
    "ChildBudget",
    "ChildMeter",
    "LastTurn",
    "LedgerSettings",
    "Limit",
    "LoopExecutor",
    "LoopSpec",
    "Meter",
    "OverCap",
    "Plan",
    "RunHandle",
    "RunResult",
    "RunStatus",
    "ScopeBudget",
    "ScriptedModel",
    "StopReason",
    "Totals",
    "Usage",
    "current_run",
    "meter_for",
    "running",
]
