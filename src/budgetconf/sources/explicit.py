"""The ``explicit`` source: values passed in code (``explicit=``) or with ``--set``."""

from __future__ import annotations

from collections.abc import Hashable

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._field import BadKey
from budgetconf._formats import readable
from budgetconf._schema import Schema
from budgetconf._text import clipped
from budgetconf.errors import ConfigError
from budgetconf.sources._names import one_name_each
from budgetconf.sources._records import Context, Layer, Offer, SourceStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["ExplicitSource"]

LOCATOR: Final = "explicit"
# the types of the values a key may hold: each compares equal only to its own kind of value
_KEYED: Final = frozenset({str, int, float, bool, type(None)})


class ExplicitSource:
    """``{"loop.max_steps": 100}``: dotted paths, aliases allowed.

    A path the schema does not know is a typo in code, so it is an error
    whatever the source's invalid policy.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "explicit",
        argument=Argument(
            "explicit",
            option="--set",
            metavar="FIELD=VALUE",
            help="a value for the explicit source, parsed like a flag's (repeatable)",
            pairs=True,
        ),
        label="code (explicit)",
        request_keyed=True,
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        pass

    def key(self, ctx: Context) -> Hashable:
        given = ctx.request.arguments.get("explicit")
        if given is None:
            return ()
        key: list[Hashable] = [ctx.request.explicit_is_text]
        for path, value in given.items():
            kind = type(value)
            if kind not in _KEYED:
                return None  # a list, an enum, an object: let the resolver judge it afresh
            # with its type: True == 1 == 1.0, but only one of them is an integer
            key.append((path, kind, value.hex() if isinstance(value, float) else value))
        return tuple(key)

    def load(self, ctx: Context) -> Layer:
        given = ctx.request.arguments.get("explicit")
        if given is None:
            return Layer.not_configured()
        offers: list[Offer] = []
        errors: list[ConfigError] = []
        for path, value in given.items():
            try:
                target = ctx.schema.lookup(path)
            except KeyError as exc:
                errors.append(_unknown(ctx.schema, path, exc))
                continue
            text = ctx.request.explicit_is_text
            if target.table is not None:  # one key of a table: tools.max_calls.web_search
                table = ctx.schema.by_path[target.table]
                name = path.split(".")[1]  # the table's name, or an alias of it
                alias = None if name == table.name else name
                entry = Offer(table.path, readable(value), LOCATOR, text, alias, entry=target.key)
                offers.append(entry)
                continue
            alias = None if path == target.path else path.partition(".")[2]
            offers.append(Offer(target.path, readable(value), LOCATOR, text=text, key=alias))
        settled = one_name_each(offers, ctx.schema, dotted=True)  # loop.max_turns and max_steps
        return Layer(SourceStatus.LOADED, LOCATOR, tuple(settled), errors=tuple(errors))


def _unknown(schema: Schema, path: str, exc: KeyError) -> ConfigError:
    """The error of a path no field has: a typo (the nearest field suggested), or a table's
    key that its rule refuses (why)."""
    if isinstance(exc, BadKey):
        why = str(exc.args[0])
    else:
        hint = schema.suggest(path)
        why = "unknown field" + (f"; did you mean {hint!r}?" if hint else "")
    return ConfigError(
        f"{clipped(path)} from {LOCATOR}: {why}",
        field=path,
        source="explicit",
        locator=LOCATOR,
        reason=why,  # no raw: a value of no known field may be a secret
    )
