"""The ``step`` source: the overrides of one step of the workflow YAML."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from budgetconf.errors import SourceError
from budgetconf.schema import Schema, Unusable, did_you_mean, show_typed
from budgetconf.sources._base import Context, Layer, SourceSpec
from budgetconf.sources._formats import Table
from budgetconf.sources._sections import read_sections
from budgetconf.sources.workflow import read_workflow


class StepSource:
    """``step=NAME``: the entry of the workflow's ``steps`` list whose name is NAME.

    A step is a mapping with a name (the first of ``name_keys`` it has) and
    section mappings, like the top level of the file; its other keys belong to
    the application. Its locator is ``step:NAME (path:line)``. A name is
    compared as the file writes it: ``name: true`` is the step ``true``.
    """

    OPTIONS: ClassVar[Mapping[str, type]] = {"list": str, "name_keys": list}
    DEFINES_SECTIONS: ClassVar[bool] = True

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
        if not isinstance(steps, list):
            return self._fail(path, name, f"it has no {self._list!r} list of steps")
        entries = [e for e in steps if isinstance(e, Table)]
        names = [self._name(e) for e in entries]
        found = [e for e, n in zip(entries, names, strict=True) if n == name]
        if len(found) > 1:
            lines = ", ".join(str(e.line) for e in found)
            return self._fail(path, name, f"{len(found)} steps have that name (lines {lines})")
        if not found:
            known = [n for n in names if n is not None]
            hint = did_you_mean(name, known)
            if hint:
                why = f"did you mean {hint!r}?"
            else:
                why = f"its steps are {', '.join(known)}" if known else "no step has a name"
            return self._fail(path, name, f"no step named {name!r}; {why}")
        entry = found[0]

        def locate(line: int | None) -> str:
            return f"step:{name} ({path}:{line or entry.line})"

        return read_sections(entry, ctx.schema, locate, only=self._sections).layer(
            locate(entry.line)
        )

    def _name(self, entry: Table) -> str | None:
        for key in self._name_keys:
            if key in entry:
                value = entry[key]
                if isinstance(value, Unusable):
                    return value.text
                return value if isinstance(value, str) else show_typed(value)
        return None

    def _fail(self, path: str, name: str, why: str) -> Layer:
        error = SourceError(
            f"step {path}: {why}", source="step", locator=f"step:{name}", problem=why
        )
        return Layer.failed(error, f"step:{name}")
