"""The ``env`` source: environment variables named by the schema."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable
from functools import partial

from budgetconf._description import SourceKind, SourceSpec
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped
from budgetconf.sources._records import Context, Layer, Offer, SourceStatus, names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["EnvSource"]

_SPACE: Final = " \t\n\r\f\v"  # ASCII white space, as text values are stripped of


_UNSET: Final = "\0unset"  # no variable's value: a NUL cannot be in one


class EnvSource:
    """One text offer per variable that is set, read afresh at every resolution.

    A variable that is empty, or holds only white space, is as if unset: it
    offers no value, and the trace keeps it as ``empty``. A field may have
    several variables; the first one listed wins. With a ``prefix``, variables
    that start with it and map to nothing are reported (with a suggestion),
    except the control variables listed in ``ignore``.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind("env", options={"prefix": str, "ignore": list})

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._prefix: str | None = spec.options.get("prefix")
        self._ignore = frozenset(spec.options.get("ignore", ()))
        self._fields = tuple((f.path, f.env) for f in schema if f.env)
        self._variables = tuple(name for _, variables in self._fields for name in variables)
        self._known = frozenset(schema.by_env)

    def key(self, ctx: Context) -> Hashable:
        env = ctx.env  # looking a variable up is safe while another thread changes them
        values = tuple(map(env.get, self._variables))
        if env is not os.environ:  # whose values are text
            for value in values:
                if value is not None and type(value) is not str:  # "1" only: 1 == True == 1.0
                    return None
        return (values, self._strays(names(env))) if self._prefix else values  # iterating is not

    def watch(self, ctx: Context) -> Callable[[], Hashable]:
        """`key` for ``ctx``'s request at each call; for the process's variables, for less."""
        env = ctx.env
        if self._prefix or env is not os.environ:
            return partial(self.key, ctx)  # which reads nothing else of the context
        variables = self._variables
        if len(variables) == 1:
            return partial(env.get, variables[0], _UNSET)  # None would say "no key"
        return lambda: tuple(map(env.get, variables))

    def load(self, ctx: Context) -> Layer:
        env = ctx.env  # a copy, by now: see the engine's resolve_request
        offers = tuple(
            offer
            for path, variables in self._fields
            for offer in _offers(path, [(name, env[name]) for name in variables if name in env])
        )
        warnings = []
        for name in sorted(self._strays(env)):
            upper = name.upper()
            spelled = upper in self._known or upper in self._ignore
            hint = upper if spelled else self._near(upper)
            tail = f"; did you mean {hint}?" if hint else ""
            warnings.append(f"{clipped(name)} is not a known variable{tail}")
        return Layer(SourceStatus.LOADED, "environment", offers, warnings=tuple(warnings))

    def _near(self, upper: str) -> str | None:
        """The known variable ``upper`` is a slip for, its prefix left out of the likeness.

        Every name shares the prefix, which would make any two look alike:
        ``BUDGETCONF_QQQ`` is no slip for ``BUDGETCONF_OTEL``.
        """
        cut = len(self._prefix or "")
        tails = {name[cut:]: name for name in self._known if name.startswith(upper[:cut])}
        hit = did_you_mean(upper[cut:], sorted(tails))
        return tails[hit] if hit else None

    def _strays(self, env: Iterable[str]) -> tuple[str, ...]:
        """The variables with the prefix, in any case, that map to nothing."""
        prefix, known, ignore = self._prefix, self._known, self._ignore
        if not prefix:
            return ()
        prefix = prefix.upper()  # budgetconf_max_steps is a typo, not another name
        return tuple(
            name
            for name in env
            if name.upper().startswith(prefix) and name not in known and name not in ignore
        )


def _blank(value: str) -> bool:
    """Whether a variable holds nothing: empty, or only white space (``export X=``).

    An ``env=`` mapping may hold what is no text at all; the field judges that.
    """
    return isinstance(value, str) and not value.strip(_SPACE)


def _offers(path: str, found: list[tuple[str, str]]) -> list[Offer]:
    """The offers of the variables of one field that are set, lowest precedence first.

    The first variable listed is offered last, so that it wins; a bad value
    there falls back to the next one, as any rejected value does.
    """
    return [
        Offer(path, value, f"env:{name}", text=True, empty=_blank(value))
        for name, value in reversed(found)
    ]
