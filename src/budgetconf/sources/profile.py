"""The ``profile`` source: a named or given JSON profile, or the one a workflow step names."""

from __future__ import annotations

import os

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._formats import Table
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean
from budgetconf._values import type_name
from budgetconf.errors import SourceError
from budgetconf.sources._records import Context, Layer
from budgetconf.sources._settings_file import FILE_OPTIONS, FileSource, neighbours
from budgetconf.sources._steps import Step
from budgetconf.sources.step import StepSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

__all__ = ["ProfileSource"]

#: how many files of a profiles folder a did-you-mean looks at: a folder may hold thousands


def is_path(profile: str) -> bool:
    """A profile given as a path rather than a name: a separator, a leading ``~``, ``.json``."""
    return (
        os.sep in profile
        or (os.altsep is not None and os.altsep in profile)
        or profile.startswith("~")
        or profile.endswith(".json")
    )


class ProfileSource(FileSource):
    """``profile=``: a path, or a name looked up as ``<folder>/<name>.json``.

    Either way the caller named it, so a profile that does not exist is an
    error. With ``from_step`` (a dotted key such as ``config.file``) and no
    ``profile=``, the selected workflow step names the profile's path under
    that key: ``~`` is expanded and a relative path is read from the workflow
    file's folder. A step without the key has no profile.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "profile",
        options={**FILE_OPTIONS, "folder": str, "from_step": str},
        defines_sections=True,
        needs={"from_step": "step"},
        argument=Argument(
            "profile",
            option="--profile",
            metavar="NAME|PATH",
            help="a profile by name or path",
            text=True,
        ),
        label="a profile",
        format="json",
        title="A profile",
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        super().__init__(spec, schema)
        self._folder: str = spec.options.get("folder", "{home}/profiles")
        self._from_step: str | None = spec.options.get("from_step")

    def target(self, ctx: Context) -> tuple[str | None, bool] | Layer:
        profile = ctx.request.arguments.get("profile")
        if profile is not None:
            if is_path(profile):
                return ctx.user_path(profile), True
            return os.path.join(ctx.preset_path(self._folder), profile + ".json"), True
        if self._from_step is None or ctx.request.arguments.get("step") is None:
            return None, False
        steps = ctx.sources.get("step")
        assert isinstance(steps, StepSource), "the preset reader refuses from_step without one"
        step = steps.find(ctx, self.KIND.name)
        if isinstance(step, Layer):
            return None, False  # the step source reports what is wrong with the step
        found = self._named_by(step, self._from_step)
        if found is None or isinstance(found, Layer):
            return (None, False) if found is None else found
        if found.startswith("~"):
            return ctx.user_path(found), True
        return os.path.normpath(os.path.join(os.path.dirname(step.path), found)), True

    def nearest(self, ctx: Context, path: str) -> str | None:
        """A profile given by name is suggested by name (``fast``), one given by path (or
        named by a workflow step) by its path."""
        profile = ctx.request.arguments.get("profile")
        if profile is None or is_path(profile):
            folder, wanted = os.path.split(path)
            hit = did_you_mean(wanted, neighbours(folder, ".json"))
            return None if hit is None else os.path.join(folder, hit)
        names = [name.removesuffix(".json") for name in neighbours(os.path.dirname(path), ".json")]
        return did_you_mean(os.path.basename(path).removesuffix(".json"), names)

    def _named_by(self, step: Step, dotted: str) -> str | Layer | None:
        """The text under ``dotted`` in the step, None when it is absent, or why it is no path."""
        node: object = step.entry
        line = step.entry.line
        keys = dotted.split(".")
        for depth, key in enumerate(keys):
            if not isinstance(node, Table):  # `config: file.json` where a mapping belongs
                return self._not_a_path(step, line, ".".join(keys[:depth]), node, "a mapping")
            if key not in node:
                return None
            line = node.lines.get(key, line)
            node = node[key]
        if node is None or (isinstance(node, str) and node):
            return node
        return self._not_a_path(step, line, dotted, node, "the path of a profile")

    def _not_a_path(
        self, step: Step, line: int | None, key: str, node: object, wanted: str
    ) -> Layer:
        locator = step.locator(line)
        why = f"{key} must be {wanted}, got {type_name(node)}"  # the step's value is not shown
        kind = self.KIND.name
        error = SourceError(f"{kind} {locator}: {why}", source=kind, locator=locator, problem=why)
        return Layer.failed(error, locator)
