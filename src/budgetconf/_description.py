"""What a preset says, as plain records: its stack, policies, merge modes and kinds of source.

This is the vocabulary shared by the preset reader (which produces these
records from a TOML file), the engine (which builds sources from them) and
the resolver (which reads them); its loop table is in `budgetconf._loop_table`,
the other half of the description. Every closed set of words a stack may use
is an enum here. The module imports only the schema: nothing here reads a
file or builds a source.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from budgetconf._record import Record, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from budgetconf._loop_table import LoopSpec
    from budgetconf._schema import Schema

_NOTHING: Final[Mapping[Any, Any]] = MappingProxyType({})


class Policy(StrEnum):
    """What a source does with a value its field cannot take."""

    __module__ = "budgetconf.sources"

    ERROR = "error"
    FALLBACK = "fallback"


class MergeMode(StrEnum):
    """How a source's section combines with what lower sources said for it."""

    __module__ = "budgetconf.sources"

    FIELD = "field"
    REPLACE = "replace"


class SourceSpec(Record):
    """One entry of a preset's stack, as its file declares it."""

    __module__ = "budgetconf.sources"
    __slots__ = ("invalid", "kind", "merge", "options")

    kind: str
    invalid: Policy
    merge: Mapping[str, MergeMode]
    options: Mapping[str, Any]

    def __init__(
        self,
        kind: str,
        invalid: Policy,
        merge: Mapping[str, MergeMode] = _NOTHING,
        options: Mapping[str, Any] = _NOTHING,
    ) -> None:
        set_field(self, "kind", kind)
        set_field(self, "invalid", invalid)
        set_field(self, "merge", merge)
        set_field(self, "options", options)

    def merge_mode(self, section: str) -> MergeMode:
        return self.merge.get(section, MergeMode.FIELD)


class Argument(Record):
    """The `budgetconf.resolve` keyword that feeds a source kind, and how the command line names it.

    ``option`` is the command line's option for it (``--global``), None when
    the command line has none; ``shown`` is how a message names it there, when
    not by ``option`` (``arguments after --``). ``text`` marks a path or a
    name, which may not be empty; ``pairs`` marks an option given once per
    ``FIELD=VALUE`` pair (``--set``), whose pairs make a mapping. ``needs``
    names another argument this one cannot go without (``step`` needs
    ``workflow``), and ``needs_reason`` says why.
    """

    __module__ = "budgetconf.sources"
    __slots__ = (
        "help",
        "metavar",
        "name",
        "needs",
        "needs_reason",
        "option",
        "pairs",
        "shown",
        "text",
    )

    name: str
    option: str | None
    metavar: str | None
    help: str
    shown: str | None
    text: bool
    pairs: bool
    needs: str | None
    needs_reason: str

    def __init__(
        self,
        name: str,
        *,
        option: str | None = None,
        metavar: str | None = None,
        help: str = "",
        shown: str | None = None,
        text: bool = False,
        pairs: bool = False,
        needs: str | None = None,
        needs_reason: str = "",
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "option", option)
        set_field(self, "metavar", metavar)
        set_field(self, "help", help)
        set_field(self, "shown", shown)
        set_field(self, "text", text)
        set_field(self, "pairs", pairs)
        set_field(self, "needs", needs)
        set_field(self, "needs_reason", needs_reason)

    @property
    def spelled(self) -> str | None:
        """How the command line names this argument in a message, if it has it at all."""
        return self.shown or self.option


class SourceKind(Record):
    """Everything about a kind of source that is not in its code: its names and its options.

    Each source class declares one as its ``KIND``; the registry of kinds is
    the only table of them, and every other list of kinds (the preset
    reader's, the command line's options, the places a limit can be raised)
    is read from it.

    ``options`` maps each option a preset file may give the kind to its type;
    ``needs`` maps an option to another kind it relies on. ``defines_sections``
    says whether the kind reads sections, so that a merge mode means something
    for it. ``argument`` is the `resolve` keyword that feeds it. ``label`` is
    how a person names the place a value of this kind is set ("the global
    file"), None where a limit's message names variables or flags instead;
    ``names_file`` adds the file's path to the label. ``format`` is the format
    of the settings file of sections that ``budgetconf schema`` and ``init``
    describe for it, with ``title`` the heading ``init`` writes.
    ``request_keyed`` says the source's key depends on the request alone, not
    on variables or files, so that one taken for a request holds for as long
    as the request does (see the engine's `resolver`).
    """

    __module__ = "budgetconf.sources"
    __slots__ = (
        "argument",
        "defines_sections",
        "format",
        "label",
        "name",
        "names_file",
        "needs",
        "options",
        "request_keyed",
        "title",
    )

    name: str
    options: Mapping[str, type]
    defines_sections: bool
    needs: Mapping[str, str]
    argument: Argument | None
    label: str | None
    names_file: bool
    format: str | None
    title: str | None
    request_keyed: bool

    def __init__(
        self,
        name: str,
        *,
        options: Mapping[str, type] = _NOTHING,
        defines_sections: bool = False,
        needs: Mapping[str, str] = _NOTHING,
        argument: Argument | None = None,
        label: str | None = None,
        names_file: bool = False,
        format: str | None = None,
        title: str | None = None,
        request_keyed: bool = False,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "options", MappingProxyType(dict(options)))
        set_field(self, "defines_sections", defines_sections)
        set_field(self, "needs", MappingProxyType(dict(needs)))
        set_field(self, "argument", argument)
        set_field(self, "label", label)
        set_field(self, "names_file", names_file)
        set_field(self, "format", format)
        set_field(self, "title", title)
        set_field(self, "request_keyed", request_keyed)


class Description(Record):
    """A whole preset as its file says it: schema, stack, folders, limits and loop table.

    ``origin`` is "built-in" or the file's path, ``path`` the file that was
    read; ``loop`` None means the preset bounds no loop.
    """

    __slots__ = (
        "home",
        "home_env",
        "loop",
        "max_file_bytes",
        "name",
        "origin",
        "path",
        "schema",
        "stack",
        "summary",
    )

    name: str
    summary: str
    schema: Schema
    stack: tuple[SourceSpec, ...]
    home: str
    home_env: str | None
    max_file_bytes: int
    origin: str
    path: str
    loop: LoopSpec | None

    def __init__(
        self,
        *,
        name: str,
        summary: str,
        schema: Schema,
        stack: tuple[SourceSpec, ...],
        home: str,
        home_env: str | None,
        max_file_bytes: int,
        origin: str,
        path: str,
        loop: LoopSpec | None = None,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "summary", summary)
        set_field(self, "schema", schema)
        set_field(self, "stack", stack)
        set_field(self, "home", home)
        set_field(self, "home_env", home_env)
        set_field(self, "max_file_bytes", max_file_bytes)
        set_field(self, "origin", origin)
        set_field(self, "path", path)
        set_field(self, "loop", loop)

    def __repr__(self) -> str:
        return f"Description({self.name!r}, origin={self.origin!r})"

    @property
    def source_kinds(self) -> tuple[str, ...]:
        return tuple(spec.kind for spec in self.stack)
