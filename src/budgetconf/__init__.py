"""Resolve, explain and enforce agent loop budgets from ranked configuration sources.

>>> import budgetconf
>>> res = budgetconf.resolve(env={})
>>> res["loop.max_steps"]
40
"""

from budgetconf._arguments import add_arguments, argv_from
from budgetconf.errors import (
    BudgetConfError,
    BudgetConfWarning,
    ConfigError,
    ModelError,
    PresetError,
    SourceError,
    UsageError,
)
from budgetconf.resolve import Resolution, factory, resolve

__all__ = [
    "BudgetConfError",
    "BudgetConfWarning",
    "ConfigError",
    "ModelError",
    "PresetError",
    "Resolution",
    "SourceError",
    "UsageError",
    "add_arguments",
    "argv_from",
    "factory",
    "resolve",
]

__version__ = "0.1.0"
