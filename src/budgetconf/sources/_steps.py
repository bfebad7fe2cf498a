"""Finding the step that ``step=`` names in a workflow file.

The ``step`` source reads the step's overrides; a ``profile`` source with
``from_step`` reads the path of its profile from the same step. Both find it
the same way, with the step source's options.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf._formats import Document, Items, Table
from budgetconf._record import Record, Unusable, set_field
from budgetconf._spelling import did_you_mean
from budgetconf._text import clipped, listed
from budgetconf._values import typed_text
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
        steps = self._steps(document, name)
        if isinstance(steps, tuple):
            line, why = steps
            return _fail(kind, path, name, why, line)
        found = self._named(steps, name)
        if isinstance(found, tuple):
            line, why = found
            return _fail(kind, path, name, why, line)
        return Step(name, path, found)

    def _named(self, steps: Items, name: str) -> Table | tuple[int | None, str]:
        """The one step named ``name``, or the line and the words of why there is none."""
        entries = [e for e in steps if isinstance(e, Table)]
        # a step answers to each of its name keys: `agent: reviewer` and `name: first-pass`
        found = [e for e in entries if name in self._names(e)]
        if len(found) > 1:
            lines = ", ".join(str(e.line) for e in found)
            return None, f"{len(found)} steps have that name (lines {lines})"
        if found:
            return found[0]
        return self._no_such_step(steps, name, entries)

    def _no_such_step(
        self, steps: Items, name: str, entries: list[Table]
    ) -> tuple[int | None, str]:
        """Why no step is ``name``: an entry that is no mapping (it may be the one meant,
        `- - name: review`), else the nearest name the steps have, or else all of them."""
        for at, entry in enumerate(steps):
            if not isinstance(entry, Table):
                line = getattr(entry, "line", None) or steps.line
                example, got = self._example(name), _shape(entry)
                why = f"no step named {name!r}, and {self._entry(at)} is {got}, not a mapping"
                return line, f"{why} ({example})"
        known = list(dict.fromkeys(n for e in entries for n in self._names(e)))
        hint = did_you_mean(name, known)
        if hint:
            why = f"did you mean {hint!r}?"
        else:
            why = f"its steps are {listed(known)}" if known else "no step has a name"
        return None, f"no step named {clipped(name, repr)}; {why}"

    def _steps(self, document: Document, name: str) -> Items | tuple[int | None, str]:
        """The list of steps, or the line and the words of why the file has none."""
        example = self._example(name)
        if self.list_key == WHOLE_FILE:
            if isinstance(document, Items):
                return document
            why = f"the top level must be the list of steps ({example}), got a mapping"
            return document.line, why
        key = self.list_key
        if isinstance(document, Items):
            why = f"the top level must be a mapping with a {key}: list of steps, got a list"
            return document.line, why
        if key not in document:
            return None, f"no top-level {key}: list of steps (expected {key}: / {example})"
        steps = document[key]
        if isinstance(steps, Items):
            return steps
        got = _shape(steps)
        return document.lines.get(key), f"{key} must be a list of steps ({example}), got {got}"

    def _example(self, name: str) -> str:
        """How a step named ``name`` is written: ``- name: review``."""
        return f"- {self.name_keys[0]}: {name}" if self.name_keys else "- …"

    def _entry(self, at: int) -> str:
        """The ``at``-th step, as a person counts them: ``step 2 of steps``."""
        where = "the file" if self.list_key == WHOLE_FILE else self.list_key
        return f"step {at + 1} of {where}"

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


def _fail(kind: str, path: str, name: str, why: str, line: int | None = None) -> Layer:
    locator = f"step:{name}"
    where = f"{path}:{line}" if line else path
    error = SourceError(
        f"{kind} {where}: {why}", source=kind, locator=locator, line=line, problem=why
    )
    return Layer.failed(error, locator)


def _shape(value: object) -> str:
    """What a YAML value is, in its own words, without quoting it (it may be a secret)."""
    if isinstance(value, Table):
        return "a mapping"
    if isinstance(value, Items):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float | Unusable):  # Unusable: a number YAML reads two ways
        return "a number"
    return "a " + type(value).__name__  # a date
