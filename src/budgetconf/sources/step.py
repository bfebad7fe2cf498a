"""The ``step`` source: the overrides of one step of the workflow YAML."""

from __future__ import annotations

from collections.abc import Hashable

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._files import stamp
from budgetconf._schema import Schema
from budgetconf.sources._records import Context, Layer
from budgetconf.sources._sections import read_fields, read_sections
from budgetconf.sources._steps import Step, StepFinder

__all__ = ["StepSource"]


class StepSource:
    """``step=NAME``: the step of the workflow whose name is NAME.

    The steps are the list under the top-level key ``list`` (default
    ``steps``), or the whole file when ``list`` is ``"."``; a step is named by
    the first of ``name_keys`` it has (default ``["name"]``). A step holds
    section mappings like the top level of the file, or, with ``section``, the
    fields of that one section written directly on it (``max_turns: 15``).
    Its other keys belong to the application. Its locator is
    ``step:NAME (path:line)``.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "step",
        options={"list": str, "name_keys": list, "section": str},
        defines_sections=True,
        argument=Argument(
            "step",
            option="--step",
            metavar="NAME",
            help="the workflow step whose overrides apply",
            text=True,
            needs="workflow",
            needs_reason="steps are found in a workflow",
        ),
        label="a workflow step",
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._finder = StepFinder.from_options(spec.options)
        self._section: str | None = spec.options.get("section")
        if self._section is not None and self._section not in schema.sections:
            raise ValueError(f"section: no section {self._section!r} in the fields")
        self._sections = frozenset(schema.sections)

    def find(self, ctx: Context, kind: str) -> Step | Layer:
        """The step the request names, or a failed layer of ``kind`` that says why not."""
        return self._finder.find(ctx, kind)

    def key(self, ctx: Context) -> Hashable:
        step, workflow = ctx.request.arguments.get("step"), ctx.request.arguments.get("workflow")
        if step is None or workflow is None:
            return ()
        path = ctx.user_path(workflow)
        version = stamp(path, ctx.max_file_bytes)
        return None if version is None else (step, path, version)

    def load(self, ctx: Context) -> Layer:
        if ctx.request.arguments.get("step") is None:
            return Layer.not_configured()
        step = self.find(ctx, self.KIND.name)
        if isinstance(step, Layer):
            return step
        if self._section is None:
            found = read_sections(step.entry, ctx.schema, step.locator, only=self._sections)
        else:
            found = read_fields(step.entry, self._section, ctx.schema, step.locator)
        return found.layer(step.locator())
