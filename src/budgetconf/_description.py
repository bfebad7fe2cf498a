"""What a preset says, as plain records: its stack, policies, merge modes and loop table.

This is the vocabulary shared by the preset reader (which produces these
records from a TOML file), the engine (which builds sources from them), the
resolver and the loop executor (which read them). Every closed set of words a
preset may use is an enum here, and the names of the loop's budgets and stops
are defined here once. The module imports only the schema: nothing here reads
a file or builds a source.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from budgetconf._record import Record, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

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


class RunStatus(StrEnum):
    """The outcome of a run, as a caller branches on it."""

    __module__ = "budgetconf.loop"

    OK = "ok"
    TRUNCATED = "truncated"
    FAILED = "failed"
    BLOCKED = "blocked"


class BudgetName(StrEnum):
    """A budget the loop enforces: a key of a preset's ``[loop]`` table."""

    __module__ = "budgetconf.loop"

    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS_PER_TURN = "max_tool_calls_per_turn"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_COST_USD = "max_cost_usd"
    TIMEOUT_SECONDS = "timeout_seconds"

    @property
    def counted(self) -> bool:
        """Whether the budget counts whole things (steps, calls, tokens): only an int will do."""
        return self not in (BudgetName.MAX_COST_USD, BudgetName.TIMEOUT_SECONDS)


class StopReason(StrEnum):
    """Why a run stopped. A preset may give a budget stop its own name (``max_turns_exhausted``)."""

    __module__ = "budgetconf.loop"

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_COST = "max_cost"
    TIMEOUT = "timeout"
    ERROR = "error"
    CANCELLED = "cancelled"
    CONTENT_FILTERED = "content_filtered"
    REFUSED = "refused"
    LENGTH_TRUNCATED = "length_truncated"

    @property
    def status(self) -> RunStatus:
        return _STATUS[self]

    @property
    def budget(self) -> BudgetName | None:
        """The budget whose exhaustion this is, if any: only these stops a preset may rename."""
        return _BUDGET.get(self)


_STATUS: Final = {
    StopReason.COMPLETED: RunStatus.OK,
    StopReason.MAX_STEPS: RunStatus.TRUNCATED,
    StopReason.MAX_TOOL_CALLS: RunStatus.TRUNCATED,
    StopReason.MAX_TOKENS: RunStatus.TRUNCATED,
    StopReason.MAX_COST: RunStatus.TRUNCATED,
    StopReason.TIMEOUT: RunStatus.TRUNCATED,
    StopReason.ERROR: RunStatus.FAILED,
    StopReason.CANCELLED: RunStatus.FAILED,
    StopReason.CONTENT_FILTERED: RunStatus.BLOCKED,
    StopReason.REFUSED: RunStatus.BLOCKED,
    StopReason.LENGTH_TRUNCATED: RunStatus.BLOCKED,
}
_BUDGET: Final = {
    StopReason.MAX_STEPS: BudgetName.MAX_STEPS,
    StopReason.MAX_TOOL_CALLS: BudgetName.MAX_TOOL_CALLS,
    StopReason.MAX_TOKENS: BudgetName.MAX_TOKENS,
    StopReason.MAX_COST: BudgetName.MAX_COST_USD,
    StopReason.TIMEOUT: BudgetName.TIMEOUT_SECONDS,
}


class LastTurn(StrEnum):
    """What the loop does before the last permitted turn (the first is a preset's default)."""

    __module__ = "budgetconf.loop"

    NONE = "none"
    WARN = "warn"
    WRAP_UP = "wrap_up"


class OverCap(StrEnum):
    """What the loop does with a response over the per-turn tool-call cap (the first: default)."""

    __module__ = "budgetconf.loop"

    REJECT = "reject"
    TRUNCATE = "truncate"


#: the loop's behaviours, each set by a field of the preset or one of its words
BEHAVIOURS: Final[Mapping[str, type[StrEnum]]] = {"last_turn": LastTurn, "over_cap": OverCap}

WARN_MESSAGE: Final = (
    "This is your last turn: tools you call now will not run. "
    "Give your final answer without calling tools."
)
WRAP_UP_MESSAGE: Final = (
    "You have reached the step budget for this task. Stop calling tools now and give "
    "your best final answer: summarise the work done so far and say clearly what is "
    "left incomplete."
)


class LoopSpec(Record):
    """How a preset's loop is bounded: which field holds each budget, and what happens at it.

    ``budgets`` maps a budget (``max_steps``, ``max_tokens``, …) to the path
    of the field that holds it; a budget with no field is not enforced.
    ``behaviours`` maps ``last_turn`` and ``over_cap`` to a field path or a
    fixed word. ``stop_reasons`` renames budget stops (``max_steps`` ->
    ``max_turns_exhausted``).
    """

    __module__ = "budgetconf.loop"
    __slots__ = (
        "behaviours",
        "budgets",
        "stop_reasons",
        "truncated_warning",
        "warn_message",
        "wrap_up_message",
    )

    budgets: Mapping[str, str]
    behaviours: Mapping[str, str]
    stop_reasons: Mapping[str, str]
    warn_message: str
    wrap_up_message: str
    truncated_warning: str | None

    def __init__(
        self,
        budgets: Mapping[str, str],
        behaviours: Mapping[str, str],
        stop_reasons: Mapping[str, str],
        warn_message: str = WARN_MESSAGE,
        wrap_up_message: str = WRAP_UP_MESSAGE,
        truncated_warning: str | None = None,
    ) -> None:
        set_field(self, "budgets", MappingProxyType(dict(budgets)))
        set_field(self, "behaviours", MappingProxyType(dict(behaviours)))
        set_field(self, "stop_reasons", MappingProxyType(dict(stop_reasons)))
        set_field(self, "warn_message", warn_message)
        set_field(self, "wrap_up_message", wrap_up_message)
        set_field(self, "truncated_warning", truncated_warning)


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

    def has_source(self, kind: str) -> bool:
        return any(spec.kind == kind for spec in self.stack)

    @property
    def source_kinds(self) -> tuple[str, ...]:
        return tuple(spec.kind for spec in self.stack)
