"""What every source has in common: the protocol, and the records it returns."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

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


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One entry of a preset's stack, as its file declares it."""

    kind: str
    invalid: Policy
    merge: Mapping[str, MergeMode] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def merge_mode(self, section: str) -> MergeMode:
        return self.merge.get(section, MergeMode.FIELD)


@dataclass(frozen=True, slots=True)
class Request:
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


@dataclass(frozen=True, slots=True)
class Context:
    """A request plus what the preset makes of it, shared by the sources of one resolution.

    ``home`` is the preset's folder (``~/.budgetconf``), moved by its
    ``home_env`` variable when that is set. ``steps`` finds the selected
    workflow step, as the preset's step source does, for any source that
    reads that step (None when the preset has no step source).
    """

    request: Request
    schema: Schema
    home_template: str
    home_env: str | None
    max_file_bytes: int
    steps: StepFinder | None = None
    home: str = field(init=False)

    def __post_init__(self) -> None:
        moved = self.getenv(self.home_env) if self.home_env else None
        object.__setattr__(self, "home", self.user_path(moved or self.home_template))

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


@dataclass(frozen=True, slots=True)
class Offer:
    """One raw value a source offers for a field."""

    field: str
    value: object
    locator: str
    text: bool = False
    key: str | None = None  # the alias it was set by, when not the field's own name


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with a source's shape, judged by the source's invalid policy."""

    message: str
    locator: str
    field: str | None = None
    raw: object = None


@dataclass(frozen=True, slots=True)
class Layer:
    """What one source gave in one resolution."""

    status: SourceStatus
    locator: str | None = None
    offers: tuple[Offer, ...] = ()
    # sections the source defines (even empty), with where, for `replace` merging
    sections: Mapping[str, str] = field(default_factory=dict)
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

    A source class is built once per preset as ``cls(spec, schema)`` and
    loaded once per resolution.
    """

    def load(self, ctx: Context) -> Layer:
        """The source's values for this resolution. Raises only `UsageError`."""
        ...
