"""What every source has in common: the protocol, and the records it returns."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType

from budgetconf._record import Record, set_field
from budgetconf.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final, Protocol, TypeVar

    T = TypeVar("T")

    from budgetconf.schema import Schema
    from budgetconf.sources._steps import StepFinder

DEFAULT_MAX_FILE_BYTES: Final = 1 << 20


class Policy(StrEnum):
    """What a source does with a value its field cannot take."""

    ERROR = "error"
    FALLBACK = "fallback"


class MergeMode(StrEnum):
    """How a source's section combines with what lower sources said for it."""

    FIELD = "field"
    REPLACE = "replace"


class SourceStatus(StrEnum):
    """How a source fared in one resolution."""

    LOADED = "loaded"
    MISSING = "missing"
    ERROR = "error"
    NOT_CONFIGURED = "not configured"


_NOTHING: Final[Mapping[Any, Any]] = MappingProxyType({})


class SourceSpec(Record):
    """One entry of a preset's stack, as its file declares it."""

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


class Request(Record):
    """Everything one resolution was asked with: `budgetconf.resolve`'s keywords.

    Paths become text, and no ``env`` means the process's: the live mapping,
    so a request kept and used again sees the variables as they are then.
    """

    __slots__ = (
        "argv",
        "dynaconf",
        "env",
        "explicit",
        "explicit_is_text",
        "global_file",
        "profile",
        "project_file",
        "step",
        "workflow",
    )

    env: Mapping[str, str]
    argv: Sequence[str] | None
    global_file: str | None
    project_file: str | None
    profile: str | None
    workflow: str | None
    step: str | None
    explicit: Mapping[str, object] | None
    explicit_is_text: bool
    dynaconf: object

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        argv: Sequence[str] | None = None,
        global_file: str | os.PathLike[str] | None = None,
        project_file: str | os.PathLike[str] | None = None,
        profile: str | os.PathLike[str] | None = None,
        workflow: str | os.PathLike[str] | None = None,
        step: str | None = None,
        explicit: Mapping[str, object] | None = None,
        explicit_is_text: bool = False,  # `--set` gives text, code gives typed values
        dynaconf: object = None,  # an application's dynaconf settings object
    ) -> None:
        set_field(self, "env", os.environ if env is None else env)
        set_field(self, "argv", argv)
        set_field(self, "global_file", _text(global_file))
        set_field(self, "project_file", _text(project_file))
        set_field(self, "profile", _text(profile))
        set_field(self, "workflow", _text(workflow))
        set_field(self, "step", step)
        set_field(self, "explicit", explicit)
        set_field(self, "explicit_is_text", explicit_is_text)
        set_field(self, "dynaconf", dynaconf)


def _text(path: str | os.PathLike[str] | None) -> str | None:
    return None if path is None else os.fspath(path)


class Context:
    """A request plus what the preset makes of it, shared by the sources of one resolution.

    ``home`` is the preset's folder (``~/.budgetconf``), moved by its
    ``home_env`` variable when that is set; it is worked out when a source
    first asks for it. ``steps`` finds the selected workflow step, as the
    preset's step source does, for any source that reads that step (None when
    the preset has no step source).
    """

    __slots__ = (
        "_home",
        "env",
        "home_env",
        "home_template",
        "max_file_bytes",
        "request",
        "schema",
        "steps",
    )

    def __init__(
        self,
        request: Request,
        schema: Schema,
        home_template: str,
        home_env: str | None,
        max_file_bytes: int,
        steps: StepFinder | None = None,
    ) -> None:
        self.request = request
        self.schema = schema
        self.home_template = home_template
        self.home_env = home_env
        self.max_file_bytes = max_file_bytes
        self.steps = steps
        # the request's mapping, live; a copy once the sources load (see `snapshot`)
        self.env: Mapping[str, str] = request.env
        self._home: str | None = None

    @property
    def home(self) -> str:
        if self._home is None:
            moved = self.getenv(self.home_env) if self.home_env else None
            self._home = self.user_path(moved or self.home_template)
        return self._home

    def getenv(self, name: str) -> str | None:
        """A control variable: from the request's env mapping, else from the process."""
        value = self.env.get(name)
        return os.environ.get(name) if value is None else value

    def user_path(self, path: str) -> str:
        """An absolute path from one a person gave: ``~`` expanded, relative to the cwd.

        A bare ``~`` is the ``HOME`` of the env mapping when it has one.
        """
        if path == "~" or path.startswith("~/"):
            home = self.getenv("HOME") or os.path.expanduser("~")
            path = home + path[1:]
        elif path.startswith("~"):
            path = os.path.expanduser(path)  # ~user/...
        return os.path.abspath(path)

    def preset_path(self, template: str) -> str:
        """An absolute path from a preset's template, where ``{home}`` is the preset's folder.

        Only presets' paths are templates: a path a person gives is taken as written.
        """
        return self.user_path(template.replace("{home}", self.home))


_TRIES: Final = 100


def snapshot(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env``, whole even while another thread sets and unsets variables."""
    return _whole(lambda: dict(env))


def names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The names in ``env`` (cheaper than a copy: values are not read), as `snapshot` does."""
    return _whole(lambda: tuple(env))


def _whole(read: Callable[[], T]) -> T:
    """``read()`` of a mapping another thread may be changing, taken again if interrupted.

    Iterating ``os.environ`` as it changes size raises RuntimeError, and a
    variable unset between seeing its name and reading it raises KeyError.
    """
    for _ in range(_TRIES - 1):
        try:
            return read()
        except (RuntimeError, KeyError):
            continue
    return read()


class Offer(Record):
    """One raw value a source offers for a field."""

    __slots__ = ("field", "key", "locator", "text", "value")

    field: str
    value: object
    locator: str
    text: bool
    key: str | None

    def __init__(
        self,
        field: str,
        value: object,
        locator: str,
        text: bool = False,
        key: str | None = None,  # the alias it was set by, when not the field's own name
    ) -> None:
        set_field(self, "field", field)
        set_field(self, "value", value)
        set_field(self, "locator", locator)
        set_field(self, "text", text)
        set_field(self, "key", key)


class Problem(Record):
    """Something wrong with a source's shape, judged by the source's invalid policy."""

    __slots__ = ("field", "locator", "message", "raw")

    message: str
    locator: str
    field: str | None
    raw: object

    def __init__(
        self, message: str, locator: str, field: str | None = None, raw: object = None
    ) -> None:
        set_field(self, "message", message)
        set_field(self, "locator", locator)
        set_field(self, "field", field)
        set_field(self, "raw", raw)


class Layer(Record):
    """What one source gave in one resolution.

    ``sections`` are the sections the source defines (even empty), with
    where, for ``replace`` merging; ``errors`` count whatever the policy: a
    source that cannot be read, an unknown field in code.
    """

    __slots__ = ("errors", "locator", "offers", "problems", "sections", "status", "warnings")

    status: SourceStatus
    locator: str | None
    offers: tuple[Offer, ...]
    sections: Mapping[str, str]
    problems: tuple[Problem, ...]
    warnings: tuple[str, ...]
    errors: tuple[ConfigError, ...]

    def __init__(
        self,
        status: SourceStatus,
        locator: str | None = None,
        offers: tuple[Offer, ...] = (),
        sections: Mapping[str, str] = _NOTHING,
        problems: tuple[Problem, ...] = (),
        warnings: tuple[str, ...] = (),
        errors: tuple[ConfigError, ...] = (),
    ) -> None:
        set_field(self, "status", status)
        set_field(self, "locator", locator)
        set_field(self, "offers", offers)
        set_field(self, "sections", sections)
        set_field(self, "problems", problems)
        set_field(self, "warnings", warnings)
        set_field(self, "errors", errors)

    @classmethod
    def failed(cls, error: ConfigError, locator: str | None) -> Layer:
        return cls(SourceStatus.ERROR, locator, errors=(error,))

    @classmethod
    def not_configured(cls) -> Layer:
        return cls(SourceStatus.NOT_CONFIGURED)


# The protocol exists for the type checker only: `typing` is not imported at run time.
if TYPE_CHECKING:

    class Source(Protocol):
        """A provider of raw values. Sources never validate values: the resolver does.

        A source class is built once per preset as ``cls(spec, schema)``. Each
        resolution asks every source for its key; when the keys match those of an
        earlier resolution, its result is reused, else every source is loaded.
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
