"""The extension points of the sources, as runtime protocols.

An application's own source is any class that has these attributes and
methods; `typing.runtime_checkable` lets a test check one with `isinstance`.
`budgetconf.sources` imports this module only when one of its names is first
asked for, so that ``import budgetconf`` does not load `typing`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from budgetconf._description import SourceKind, SourceSpec
from budgetconf._schema import Schema
from budgetconf.sources._records import Context, Layer


@runtime_checkable
class Source(Protocol):
    """A provider of raw values. Sources never validate values: the resolver does.

    A source class is built once per preset as ``cls(spec, schema)``. Each
    resolution asks every source for its key; when the keys match those of an
    earlier resolution, its result is reused, else every source is loaded.

    A source may also have ``watch(ctx)``, which returns a function of no
    arguments that takes the key for ``ctx``'s request again at each call, for
    less than `key` costs (its keys need only equal one another); a source
    that has none is asked `key` in a new context each time.
    """

    def load(self, ctx: Context) -> Layer:
        """The source's values for this resolution. Raises only `UsageError`."""
        ...

    def key(self, ctx: Context) -> Hashable:
        """Everything `load` would read for this resolution, as a hashable value, cheaply.

        Equal keys promise an equal layer: a file's key holds its path and the
        signature of its current version, the environment's the values of the
        variables it reads. None when the source cannot promise that (the
        resolution is then never reused).
        """
        ...


class SourceClass(Protocol):
    """A source class: its kind's names and options, and how it is built for a preset.

    The constructor may refuse options that do not fit the preset's fields
    with a `ValueError` whose message begins with the option's name
    (``section: no section 'x' in the fields``).
    """

    KIND: SourceKind

    def __call__(self, spec: SourceSpec, schema: Schema) -> Source: ...


# set here, not in the class bodies, where a protocol would count it as a member
Source.__module__ = SourceClass.__module__ = "budgetconf.sources"
