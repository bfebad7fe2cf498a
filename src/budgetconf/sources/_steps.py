"""Finding the step that ``step=`` names in a workflow file.

The ``step`` source reads the step's overrides; a ``profile`` source with
``from_step`` reads the path of its profile from the same step. Both find it
the same way, with the step source's options.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._formats import Document, Items, Table
from budgetconf._record import Record, set_field
from budgetconf._schema import Unusable, did_you_mean, typed_text
from budgetconf._text import clipped, listed
from budgetconf.errors import SourceError
from budgetconf.sources._records import Context, Layer
from budgetconf.sources._settings_file import read_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

#: the ``list`` option's word for a workflow file that is itself the list of steps
WHOLE_FILE: Final = "."


class Step:
    """The selected step: its name, the workflow file it is in, and its mapping."""

    __slots__ = ("entry", "name", "path")

    def __init__(self, name: str, path: str, entry: Table) -> None:
        self.name = name
        self.path = path
        self.entry = entry

    def locator(self, line: int | None = None) -> str:
        """``step:NAME (path:line)``, at ``line`` or else where the step starts."""
        return f"step:{self.name} ({self.path}:{line or self.entry.line})"


class StepFinder(Record):
    """How a workflow lists its steps, and which keys name them.

    ``list_key`` is the top-level key that holds the list of steps, or ``"."``
    when the file itself is the list (``- agent: reviewer``). A step is named
    by the first of ``name_keys`` it has, compared as the file writes it:
    ``name: true`` is the step ``true``.
    """

    __slots__ = ("list_key", "name_keys")

    list_key: str
    name_keys: tuple[str, ...]

    def __init__(self, list_key: str = "steps", name_keys: tuple[str, ...] = ("name",)) -> None:
        set_field(self, "list_key", list_key)
        set_field(self, "name_keys", name_keys)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> StepFinder:
        """The finder a step source's preset options describe."""
        return cls(options.get("list", "steps"), tuple(options.get("name_keys", ("name",))))

    def find(self, ctx: Context, kind: str) -> Step | Layer:
        """The step ``ctx.request.step`` names, or a failed layer of ``kind`` that says why not."""
        name, workflow = ctx.request.arguments.get("step"), ctx.request.arguments.get("workflow")
        assert name is not None, "callers read a step only when one is asked for"
        assert workflow is not None, "check_request refuses a step without a workflow"
        path = ctx.user_path(workflow)
        document = read_file(ctx, path, "yaml", kind, named=True)
        if isinstance(document, Layer):
            return document
        steps = self._steps(document)
        if steps is None:
            return _fail(kind, path, name, self._no_list())
        entries = [e for e in steps if isinstance(e, Table)]
        # a step answers to each of its name keys: `agent: reviewer` and `name: first-pass`
        found = [e for e in entries if name in self._names(e)]
        if len(found) > 1:
            lines = ", ".join(str(e.line) for e in found)
            return _fail(kind, path, name, f"{len(found)} steps have that name (lines {lines})")
        if not found:
            return _fail(kind, path, name, self._no_such_step(name, entries))
        return Step(name, path, found[0])

    def _no_such_step(self, name: str, entries: list[Table]) -> str:
        """Why no step is ``name``, with the nearest name the steps have, or else all of them."""
        known = list(dict.fromkeys(n for e in entries for n in self._names(e)))
        hint = did_you_mean(name, known)
        if hint:
            why = f"did you mean {hint!r}?"
        else:
            why = f"its steps are {listed(known)}" if known else "no step has a name"
        return f"no step named {clipped(name, repr)}; {why}"

    def _steps(self, document: Document) -> list[Any] | None:
        if self.list_key == WHOLE_FILE:
            return document if isinstance(document, Items) else None
        steps = document.get(self.list_key) if isinstance(document, Table) else None
        return steps if isinstance(steps, list) else None

    def _no_list(self) -> str:
        if self.list_key == WHOLE_FILE:
            return "its top level is not a list of steps"
        return f"it has no {self.list_key!r} list of steps"

    def _names(self, entry: Table) -> list[str]:
        """Every name the step answers to, as the file writes it (``name: true`` is ``true``)."""
        names = []
        for key in self.name_keys:
            if key in entry:
                value = entry[key]
                if isinstance(value, Unusable):
                    names.append(value.text)
                else:
                    names.append(value if isinstance(value, str) else typed_text(value))
        return names


def _fail(kind: str, path: str, name: str, why: str) -> Layer:
    locator = f"step:{name}"
    error = SourceError(f"{kind} {path}: {why}", source=kind, locator=locator, problem=why)
    return Layer.failed(error, locator)
