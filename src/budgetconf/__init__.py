"""Resolve, explain and enforce agent loop budgets from ranked configuration sources.

>>> import budgetconf
>>> res = budgetconf.resolve(env={})
>>> res["loop.max_steps"]
40
"""

from budgetconf._arguments import add_arguments, argv_from
from budgetconf._field import Field, Kind
from budgetconf._resolution import Resolution
from budgetconf._resolve import factory, resolve
from budgetconf._schema import Schema
from budgetconf._trace import Candidate, FieldTrace, SourceReport, Status
from budgetconf.errors import (
    BudgetConfError,
    BudgetConfWarning,
    ConfigError,
    LedgerConflict,
    LedgerUnavailable,
    ModelError,
    PresetError,
    SourceError,
    UsageError,
    UsageTypeError,
)

__all__ = [
    "BudgetConfError",
    "BudgetConfWarning",
    "Candidate",
    "ConfigError",
    "Field",
    "FieldTrace",
    "Kind",
    "LedgerConflict",
    "LedgerUnavailable",
    "ModelError",
    "PresetError",
    "Resolution",
    "Schema",
    "SourceError",
    "SourceReport",
    "Status",
    "UsageError",
    "UsageTypeError",
    "add_arguments",
    "argv_from",
    "factory",
    "resolve",
]

__version__ = "0.1.0"
