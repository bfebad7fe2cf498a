"""The ``yaml`` source: the top-level sections of a workflow YAML file."""

from __future__ import annotations

from collections.abc import Hashable

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._files import stamp
from budgetconf._schema import Schema
from budgetconf.sources._records import Context, Layer
from budgetconf.sources._sections import chosen_sections, file_locator, read_sections
from budgetconf.sources._settings_file import read_mapping

__all__ = ["WorkflowSource"]


class WorkflowSource:
    """``workflow=``: the preset's sections at the top level of the file.

    Only the top-level keys the preset reads are looked at (by default, its
    sections); the rest of the file belongs to the application and is ignored
    without a warning.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "yaml",
        options={"sections": list},
        defines_sections=True,
        argument=Argument(
            "workflow", option="--workflow", metavar="PATH", help="a workflow YAML file", text=True
        ),
        label="the workflow file",
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        only = chosen_sections(spec, schema)
        self._only = frozenset(schema.sections) if only is None else only

    def key(self, ctx: Context) -> Hashable:
        workflow = ctx.request.arguments.get("workflow")
        if workflow is None:
            return ()
        path = ctx.user_path(workflow)
        version = stamp(path, ctx.max_file_bytes)
        return None if version is None else (path, version)

    def load(self, ctx: Context) -> Layer:
        workflow = ctx.request.arguments.get("workflow")
        if workflow is None:
            return Layer.not_configured()
        path = ctx.user_path(workflow)
        table = read_mapping(ctx, path, "yaml", "yaml", named=True)
        if isinstance(table, Layer):
            return table
        return read_sections(table, ctx.schema, file_locator(path), only=self._only).layer(path)
