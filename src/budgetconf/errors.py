"""The whole error hierarchy of budgetconf.

Every exception the package raises derives from `BudgetConfError`, and each
carries the context a person needs to fix the problem. Running out of budget is
not an error: the loop executor reports it as a stop reason.

This module imports nothing from the package, so any module may import it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BudgetConfError",
    "BudgetConfWarning",
    "ConfigError",
    "LedgerConflict",
    "LedgerUnavailable",
    "ModelError",
    "PresetError",
    "SourceError",
    "UsageError",
    "UsageTypeError",
]


class BudgetConfError(Exception):
    """Base of every error budgetconf raises."""

    __module__ = "budgetconf"


class ConfigError(BudgetConfError, ValueError):
    """A configuration problem under the ``error`` policy.

    When the problem is one value, ``field``, ``source``, ``locator`` and
    ``raw`` name it (``raw`` is already masked for secret fields) and
    ``reason`` says what is wrong with it. When several problems were found,
    ``errors`` holds each of them and the message lists them all.
    """

    __module__ = "budgetconf"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        source: str | None = None,
        locator: str | None = None,
        raw: object = None,
        reason: str | None = None,
        errors: tuple[ConfigError, ...] = (),
    ) -> None:
        super().__init__(message)
        self.field = field
        self.source = source
        self.locator = locator
        self.raw = raw
        self.reason = reason
        self.errors = errors or (self,)

    @classmethod
    def combine(cls, errors: list[ConfigError]) -> ConfigError:
        """One error for several: the only one itself, or a summary of all."""
        if len(errors) == 1:
            return errors[0]
        lines = "\n".join(f"  - {e}" for e in errors)
        return cls(f"{len(errors)} configuration errors:\n{lines}", errors=tuple(errors))


class SourceError(ConfigError):
    """A source that exists, or that the caller named, and cannot be read or parsed."""

    __module__ = "budgetconf"

    def __init__(
        self,
        message: str,
        *,
        source: str,
        locator: str | None = None,
        line: int | None = None,
        problem: str | None = None,
    ) -> None:
        super().__init__(message, source=source, locator=locator, reason=problem)
        self.line = line


class PresetError(ConfigError):
    """A preset that does not exist or whose file breaks the preset format."""

    __module__ = "budgetconf"


class UsageError(BudgetConfError, ValueError):
    """A call budgetconf cannot carry out as made: a programming error, not a configuration one.

    A file for a source the preset does not have, a loop executor asked to
    resume a run that finished: the caller's code must change, so this is no
    `ConfigError`, and ``except ConfigError`` does not swallow it. The
    command line reports these as usage errors (exit 64).
    """

    __module__ = "budgetconf"


class UsageTypeError(UsageError, TypeError):
    """A `UsageError` about a value of the wrong type: a model that is not callable, say."""

    __module__ = "budgetconf"


class ModelError(BudgetConfError):
    """A model adapter's request that failed: the server was not reached, or answered an error.

    ``status`` is the HTTP status when the server answered. The loop executor
    ends the run with ``error`` and quotes the message.
    """

    __module__ = "budgetconf"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LedgerUnavailable(BudgetConfError):
    """A shared ledger that could not be reached or used: refused, timed out, locked, not a ledger.

    The message names the ledger by its address with any password masked,
    and the cause. The loop executor applies ``ledger.on_unavailable``: it
    ends the run (``stop``) or goes on without the ledger (``continue``).
    """

    __module__ = "budgetconf"


class LedgerConflict(BudgetConfError, ValueError):
    """A scope asked for under a window other than the one the shared ledger counts it in.

    A scope has one window, recorded by the first run that draws on it, so that
    no run's settings can split its counter: ``scope`` names it, ``window`` is
    the window recorded and ``asked`` the one asked for. Raised by
    `Ledger.settle_and_reserve`, whose settle stands, ``warnings`` are the
    settle's (`budgetconf.ledger.ScopeWarning`); else empty.
    """

    __module__ = "budgetconf"

    def __init__(self, message: str, *, scope: str, window: str, asked: str) -> None:
        super().__init__(message)
        self.scope = scope
        self.window = window
        self.asked = asked
        self.warnings: tuple[Any, ...] = ()  # ScopeWarning records


class BudgetConfWarning(UserWarning):
    """A value ignored under the ``fallback`` policy, or a key nobody reads."""

    __module__ = "budgetconf"
