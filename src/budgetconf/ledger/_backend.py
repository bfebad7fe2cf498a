"""What every ledger backend shares: `Backend`, the `Ledger` that checks each call's arguments
once (`_checks`), in the units a backend writes, and hands the backend the checked operation
(the methods with a leading ``_``).
"""

from __future__ import annotations

from abc import abstractmethod

from budgetconf.errors import LedgerConflict
from budgetconf.ledger._base import Ledger
from budgetconf.ledger._checks import Asked, Resetting, Settling, check_moment, check_scope
from budgetconf.ledger._records import iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Sequence
    from typing import Any

    from budgetconf.ledger._records import Reservation, ScopeLimit, ScopeWarning


class Backend(Ledger):
    """A ledger whose operations a backend carries out on arguments checked here."""

    def reserve(
        self,
        scope: str | None = None,
        *,
        tokens: int,
        cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        scopes: Sequence[ScopeLimit] | None = None,
        at: _dt.datetime | None = None,
    ) -> Reservation | None:

        asked = Asked.of(
            scope,
            scopes,
            tokens=tokens,
            cost_usd=cost_usd,
            lease_seconds=lease_seconds,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            window=window,
            at=at,
        )
        return asked.reservation() if self._reserve(asked) else None

    def settle(
        self,
        reservation: Reservation,
        *,
        tokens: int,
        cost_usd: float,
        warn_at: float | None = None,
    ) -> tuple[ScopeWarning, ...]:

        settling = Settling(reservation, tokens, cost_usd, warn_at)
        return settling.warnings(self._finish(settling))

    def release(self, reservation: Reservation) -> None:

        self._finish(Settling(reservation, None, None, None))

    def settle_and_reserve(
        self,
        reservation: Reservation,
        *,
        tokens: int,
        cost_usd: float,
        reserve_tokens: int,
        reserve_cost_usd: float,
        lease_seconds: float,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        window: str = "day",
        scopes: Sequence[ScopeLimit] | None = None,
        warn_at: float | None = None,
        at: _dt.datetime | None = None,
    ) -> tuple[Reservation | None, tuple[ScopeWarning, ...]]:

        settling = Settling(reservation, tokens, cost_usd, warn_at)
        asked = Asked.of(
            reservation.scope if scopes is None else None,
            scopes,
            tokens=reserve_tokens,
            cost_usd=reserve_cost_usd,
            lease_seconds=lease_seconds,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            window=window,
            at=at,
        )
        granted, crossed = self._finish_and_reserve(settling, asked)
        warnings = settling.warnings(crossed)
        if isinstance(granted, LedgerConflict):  # the settle stands, and says its warnings
            granted.warnings = warnings
            raise granted
        return (asked.reservation() if granted else None), warnings

    def window_of(self, scope: str) -> str | None:
        return self._window_of(check_scope(scope))

    def reset(
        self,
        scope: str,
        *,
        why: str,
        window: str | None = None,
        by: str | None = None,
        at: _dt.datetime | None = None,
    ) -> dict[str, Any]:
        return self._reset(Resetting(scope, why=why, window=window, by=by, at=at))

    def prune(self, before: _dt.datetime) -> int:
        return self._prune(iso(check_moment(before, "before")) or "")

    # ------------------------------------------------------------------ what a backend does

    @abstractmethod
    def _reserve(self, asked: Asked) -> bool:
        """Hold ``asked`` in every scope, or nothing when one has no room (False)."""

    @abstractmethod
    def _finish(self, settling: Settling) -> list[tuple[int, str, int]]:
        """End ``settling.reservation`` (add what it used, or nothing when released); the
        warnings its settle crossed, each (its scope's index, ``tokens``/``nano``, spent)."""

    def _finish_and_reserve(
        self, settling: Settling, asked: Asked
    ) -> tuple[bool | LedgerConflict, list[tuple[int, str, int]]]:
        """`_finish`, then `_reserve`: a backend that can does both in one step. A scope the
        reservation asks in another window is the answer, not raised: the settle stands."""
        crossed = self._finish(settling)
        try:
            return self._reserve(asked), crossed
        except LedgerConflict as exc:
            return exc, crossed

    @abstractmethod
    def _window_of(self, scope: str) -> str | None: ...

    @abstractmethod
    def _reset(self, resetting: Resetting) -> dict[str, Any]: ...

    @abstractmethod
    def _prune(self, before: str) -> int: ...
