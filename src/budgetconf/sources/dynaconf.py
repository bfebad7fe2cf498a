"""The ``dynaconf`` source: a part of an application's dynaconf settings object.

dynaconf is never imported: the source reads any object with a ``get``
method, as a dynaconf ``Dynaconf``/``LazySettings`` object has, and the
mappings it returns.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._formats import Table
from budgetconf._schema import Schema
from budgetconf._values import type_name
from budgetconf.errors import SourceError, UsageTypeError
from budgetconf.sources._records import Context, Layer, Problem, SourceStatus
from budgetconf.sources._sections import read_fields, read_sections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["DynaconfSource"]


class DynaconfSource:
    """``dynaconf=settings``: the sections (or one section's fields) under a key of it.

    ``key`` is the dotted key of the mapping that holds the sections
    (``budgets`` for ``settings.budgets.loop.max_steps``); without it the
    preset's sections are read from the top level and the application's other
    keys are ignored. With ``section``, the mapping at ``key`` holds that
    section's fields directly, beside the application's own keys
    (``settings.agent.max_steps``). Keys match whatever their case, as in
    dynaconf; values keep the type dynaconf gave them. A value's locator is
    ``dynaconf:`` and its dotted key.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "dynaconf",
        options={"key": str, "section": str},
        defines_sections=True,
        argument=Argument("dynaconf"),
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._key: str | None = spec.options.get("key")
        self._section: str | None = spec.options.get("section")
        if self._key is not None and not all(self._key.split(".")):
            raise ValueError(f"key: expected a dotted key, got {self._key!r}")
        if self._section is not None:
            if self._section not in schema.sections:
                raise ValueError(f"section: no section {self._section!r} in the fields")
            if self._key is None:
                raise ValueError("section: needs a key, the mapping that holds the fields")
        self._sections = tuple(schema.sections)

    def key(self, ctx: Context) -> Hashable:
        # a settings object can change under it at any time (``settings.set``, a
        # reload): a resolution that reads one is never reused
        return () if ctx.request.arguments.get("dynaconf") is None else None

    def load(self, ctx: Context) -> Layer:
        settings: Any = ctx.request.arguments.get("dynaconf")
        if settings is None:
            return Layer.not_configured()
        if not callable(getattr(settings, "get", None)):
            raise UsageTypeError(
                f"dynaconf=: expected a dynaconf settings object, got {type(settings).__name__}"
            )
        where = f"dynaconf:{self._key}" if self._key else "dynaconf"
        keys = _Keys()
        try:
            if self._key is None:
                table = keys.table(keys.present(settings, self._sections), None, depth=2)
            else:
                node = _lookup(settings, self._key)
                if node is None:
                    return Layer(SourceStatus.MISSING, where)
                if not isinstance(node, Mapping):
                    what = "sections" if self._section is None else f"{self._section} fields"
                    problem = Problem(f"must be a table of {what}, got {type_name(node)}", where)
                    return Layer(SourceStatus.LOADED, where, problems=(problem,))
                table = keys.table(node, self._key, depth=1 if self._section else 2)
        except Exception as exc:  # the application's settings failed to evaluate a value
            # named by its type and the key being read: its text may quote the value, a secret
            at = keys.reading or where
            message = f"{at}: cannot read the settings: {type(exc).__name__}"
            return Layer.failed(SourceError(message, source="dynaconf", locator=at), at)
        if self._section is not None:
            found = read_fields(table, self._section, ctx.schema, keys.locate)
        else:
            only = self._sections if self._key is None else None  # the top level is the app's
            found = read_sections(table, ctx.schema, keys.locate, only=only)
        found.problems.extend(keys.clashes)
        return found.layer(where)


def _lookup(settings: Any, key: str) -> object:
    """The value at a dotted key, or None; each mapping on the way is asked with ``get``."""
    node: object = settings
    for part in key.split("."):
        get = getattr(node, "get", None)
        if not callable(get):
            return None
        node = get(part)
    return node


class _Keys:
    """The dotted keys read, numbered.

    A `Table` knows the line of each of its keys; here a key's "line" is its
    number in this list, so the readers shared with the file sources name each
    value by its dynaconf key. Of two keys of one mapping that differ only in
    case, the first is read and the second is a clash, judged by the source's
    policy.
    """

    def __init__(self) -> None:
        self._names: list[str] = []
        self.reading: str | None = None  # the locator of the value being read, for an error
        #: keys that are another key of the same mapping in another case (``MAX_STEPS``)
        self.clashes: list[Problem] = []

    def present(self, settings: Any, sections: tuple[str, ...]) -> dict[str, Any]:
        """The sections ``settings`` has, by name."""
        found = {}
        for section in sections:
            self.reading = f"dynaconf:{section}"
            value = settings.get(section)
            if value is not None:
                found[section] = value
        self.reading = None
        return found

    def locate(self, number: int | None) -> str:
        return f"dynaconf:{self._names[number - 1]}" if number else "dynaconf"

    def _number(self, name: str) -> int:
        self._names.append(name)
        return len(self._names)  # from 1: no line at all is None or 0

    def table(self, node: Mapping[Any, Any], prefix: str | None, depth: int) -> Table:
        """``node`` as a `Table` whose keys are lower case, down to ``depth`` levels.

        Each value is read by indexing, so that dynaconf evaluates a lazy one.
        """
        items: dict[Any, Any] = {}
        lines: dict[Any, int] = {}
        for key in node:
            name = key if prefix is None else f"{prefix}.{key}"
            folded = key.lower() if isinstance(key, str) else key
            if folded in items:  # `max_steps` and `MAX_STEPS`: one key, said twice
                first = self._names[lines[folded] - 1]
                why = f"the same key as dynaconf:{first}, as keys match whatever their case"
                self.clashes.append(Problem(why, f"dynaconf:{name}"))
                continue
            self.reading = f"dynaconf:{name}"
            value = node[key]
            self.reading = None
            if depth > 1 and isinstance(value, Mapping):
                value = self.table(value, name, depth - 1)
            items[folded] = value
            lines[folded] = self._number(name)
        line = None if prefix is None else self._number(prefix)
        return Table(items, lines, line)
