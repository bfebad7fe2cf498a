"""The ``step`` source: the overrides of one step of the workflow YAML."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from budgetconf.errors import SourceError
from budgetconf.schema import Schema, did_you_mean
from budgetconf.sources._base import Context, Layer, SourceSpec
from budgetconf.sources._formats import Table
from budgetconf.sources._sections import read_sections
from budgetconf.sources.workflow import read_workflow


class StepSource:
    """``step=NAME``: the entry of the workflow's ``steps`` list whose name is NAME.

    A step is a mapping with a name (the first of ``name_keys`` it has) and
    section mappings, like the top level of the file. Its locator is
    ``step:NAME (path:line)``.
    """

    OPTIONS: ClassVar[Mapping[str, type]] = {"list": str, "name_keys": list}

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._list: str = spec.options.get("list", "steps")
        self._name_keys: tuple[str, ...] = tuple(spec.options.get("name_keys", ("name",)))
        self._sections = frozenset(schema.sections)

    def load(self, ctx: Context) -> Layer:
        name = ctx.request.step
        if name is None:
            return Layer.not_configured()
        assert ctx.request.workflow is not None, "check_request refuses a step without a workflow"
        path, table = read_workflow(ctx, "step")
        if isinstance(table, Layer):
            return table
        steps = table.get(self._list)
        entries = [e for e in steps if isinstance(e, Table)] if isinstance(steps, list) else []
        names = [self._name(e) for e in entries]
        if name not in names:
            error = SourceError(
                f"step {path}: no step named {name!r}{self._known(name, names)}",
                source="step",
                locator=f"step:{name}",
            )
            return Layer.failed(error, f"step:{name}")
        entry = entries[names.index(name)]

        def locate(line: int | None) -> str:
            return f"step:{name} ({path}:{line or entry.line})"

        found = read_sections(entry, ctx.schema, locate, only=self._sections)
        return found.layer(locate(entry.line))

    def _name(self, entry: Table) -> str | None:
        return next((str(entry[k]) for k in self._name_keys if k in entry), None)

    def _known(self, name: str, names: list[str | None]) -> str:
        known = [n for n in names if n is not None]
        hint = did_you_mean(name, known)
        if hint:
            return f"; did you mean {hint!r}?"
        if known:
            return f"; its steps are {', '.join(known)}"
        return f"; it has no {self._list!r} list of named steps"
