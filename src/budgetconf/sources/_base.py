"""What every source has in common: the protocol, and the records it returns."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from budgetconf.errors import ConfigError

if TYPE_CHECKING:
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


class SourceSpec(NamedTuple):
    """One entry of a preset's stack, as its file declares it."""

    kind: str
    invalid: Policy
    merge: Mapping[str, MergeMode] = _NOTHING
    options: Mapping[str, Any] = _NOTHING

    def merge_mode(self, section: str) -> MergeMode:
        return self.merge.get(section, MergeMode.FIELD)


class Request(NamedTuple):
    """Everything one resolution was asked with."""

    env: Mapping[str, str]
    argv: Sequence[str] | None = None
    global_file: str | None = None
    project_file: str | None = None
    profile: str | None = None
    workflow: str | None = None
    step: str | None = None
    explicit: Mapping[str, object] | None = None
    # `--set` gives text, code gives typed values
    explicit_is_text: bool = False
    dynaconf: object = None  # an application's dynaconf settings object


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
        self._home: str | None = None

    @property
    def home(self) -> str:
        if self._home is None:
            moved = self.getenv(self.home_env) if self.home_env else None
            self._home = self.user_path(moved or self.home_template)
        return self._home

    def getenv(self, name: str) -> str | None:
        """A control variable: from the request's env mapping, else from the process."""
        value = self.request.env.get(name)
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


class Offer(NamedTuple):
    """One raw value a source offers for a field."""

    field: str
    value: object
    locator: str
    text: bool = False
    key: str | None = None  # the alias it was set by, when not the field's own name


class Problem(NamedTuple):
    """Something wrong with a source's shape, judged by the source's invalid policy."""

    message: str
    locator: str
    field: str | None = None
    raw: object = None


class Layer(NamedTuple):
    """What one source gave in one resolution."""

    status: SourceStatus
    locator: str | None = None
    offers: tuple[Offer, ...] = ()
    # sections the source defines (even empty), with where, for `replace` merging
    sections: Mapping[str, str] = _NOTHING
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()
    # errors whatever the policy: a source that cannot be read, an unknown field in code
    errors: tuple[ConfigError, ...] = ()

    @classmethod
    def failed(cls, error: ConfigError, locator: str | None) -> Layer:
        return cls(SourceStatus.ERROR, locator, errors=(error,))

    @classmethod
    def not_configured(cls) -> Layer:
        return cls(SourceStatus.NOT_CONFIGURED)


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
