"""The records a source works with: the request, the context of one resolution, and a layer.

A source is asked for one resolution with a `Context` (the `Request` and what
the preset makes of it), and answers with a `Layer`: its `Offer`s of raw
values, the `Problem`s found in their shape, and its status.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from budgetconf._record import Record, set_field
from budgetconf.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final, TypeVar

    T = TypeVar("T")

    from budgetconf._rules import Rule
    from budgetconf._schema import Schema


#: where a field's built-in default is set: the default source's locator
DEFAULT_LOCATOR: Final = "built-in default"


class SourceStatus(StrEnum):
    """How a source fared in one resolution."""

    __module__ = "budgetconf.sources"

    LOADED = "loaded"
    MISSING = "missing"
    ERROR = "error"
    NOT_CONFIGURED = "not configured"


_NOTHING: Final[Mapping[Any, Any]] = MappingProxyType({})


class Request(Record):
    """Everything one resolution was asked with: `budgetconf.resolve`'s keywords.

    ``arguments`` holds each keyword that was given (not None) by its name,
    paths as text; each source reads the one its kind's `Argument` names. No
    ``env`` means the process's: the live mapping, so a request kept and used
    again sees the variables as they are then.
    """

    __module__ = "budgetconf.sources"
    __slots__ = ("arguments", "env", "explicit_is_text")
    unshown = ("env",)  # the environment holds secrets as often as budgets

    env: Mapping[str, str]
    arguments: Mapping[str, Any]
    explicit_is_text: bool

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        explicit_is_text: bool = False,  # `--set` gives text, code gives typed values
        **arguments: object,
    ) -> None:
        given = {
            name: os.fspath(value) if isinstance(value, os.PathLike) else value
            for name, value in arguments.items()
            if value is not None
        }
        set_field(self, "env", os.environ if env is None else env)
        set_field(self, "arguments", MappingProxyType(given))
        set_field(self, "explicit_is_text", explicit_is_text)

    def _shown(self, name: str) -> str:
        if name == "arguments":  # by name: the values given in code may be secrets
            return repr(list(self.arguments))
        return super()._shown(name)


class Context:
    """A request plus what the preset makes of it, shared by the sources of one resolution.

    ``home`` is the preset's folder (``~/.budgetconf``), moved by its
    ``home_env`` variable when that is set; it is worked out when a source
    first asks for it. ``sources`` are the preset's sources by kind, for a
    source that reads what another one finds (a profile named by a workflow
    step).
    """

    __module__ = "budgetconf.sources"
    __slots__ = (
        "_home",
        "env",
        "home_env",
        "home_template",
        "max_file_bytes",
        "request",
        "schema",
        "sources",
    )

    def __init__(
        self,
        request: Request,
        schema: Schema,
        home_template: str,
        home_env: str | None,
        max_file_bytes: int,
        sources: Mapping[str, object] = _NOTHING,
    ) -> None:
        self.request = request
        self.schema = schema
        self.home_template = home_template
        self.home_env = home_env
        self.max_file_bytes = max_file_bytes
        self.sources = sources
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
        try:
            return os.path.abspath(path)
        except FileNotFoundError:  # the working directory was removed: nothing is relative to it
            return os.path.normpath(path)

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
    """One raw value a source offers for a field.

    ``empty`` marks a name that is there with nothing in it (an empty
    variable): it offers no value, and the trace keeps it as ``empty``.
    ``refused`` is why the source itself turns the value down (the field is
    set a second time in one place, by another of its names): the trace keeps
    it as ``rejected`` with that reason, judged by the source's policy.
    ``entry`` is the key of a table field this offer is the value of
    (``web_search`` of ``tools.max_calls``); None for a scalar field, or for a
    whole table's value, which the merge takes apart key by key.
    """

    __module__ = "budgetconf.sources"
    __slots__ = ("empty", "entry", "field", "key", "locator", "refused", "text", "value")
    unshown = ("value",)  # not yet judged by its field, it may be a secret's

    field: str
    value: object
    locator: str
    text: bool
    key: str | None
    empty: bool
    refused: str | None
    entry: str | None

    def __init__(
        self,
        field: str,
        value: object,
        locator: str,
        text: bool = False,
        key: str | None = None,  # the alias it was set by, when not the field's own name
        *,
        empty: bool = False,
        refused: str | None = None,
        entry: str | None = None,
    ) -> None:
        set_field(self, "field", field)
        set_field(self, "value", value)
        set_field(self, "locator", locator)
        set_field(self, "text", text)
        set_field(self, "key", key)
        set_field(self, "empty", empty)
        set_field(self, "refused", refused)
        set_field(self, "entry", entry)


class Problem(Record):
    """Something wrong with a source's shape, judged by the source's invalid policy.

    ``message`` says what is wrong and where, and quotes no value: a value
    goes in ``raw``, which the error carries as its field allows (`MASK` for a
    secret field; nothing when ``field`` is None, as its secrecy is unknown).
    """

    __module__ = "budgetconf.sources"
    __slots__ = ("field", "locator", "message", "raw")
    unshown = ("raw",)

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
    source that cannot be read, an unknown field in code. ``rules`` are the
    policy source's, by field path: bounds on the other sources' values, not
    values of their own.
    """

    __module__ = "budgetconf.sources"
    __slots__ = (
        "errors",
        "locator",
        "offers",
        "problems",
        "rules",
        "sections",
        "status",
        "warnings",
    )

    status: SourceStatus
    locator: str | None
    offers: tuple[Offer, ...]
    sections: Mapping[str, str]
    problems: tuple[Problem, ...]
    warnings: tuple[str, ...]
    errors: tuple[ConfigError, ...]
    rules: Mapping[str, Rule]

    def __init__(
        self,
        status: SourceStatus,
        locator: str | None = None,
        offers: tuple[Offer, ...] = (),
        sections: Mapping[str, str] = _NOTHING,
        problems: tuple[Problem, ...] = (),
        warnings: tuple[str, ...] = (),
        errors: tuple[ConfigError, ...] = (),
        rules: Mapping[str, Rule] = _NOTHING,
    ) -> None:
        set_field(self, "status", status)
        set_field(self, "locator", locator)
        set_field(self, "offers", offers)
        set_field(self, "sections", sections)
        set_field(self, "problems", problems)
        set_field(self, "warnings", warnings)
        set_field(self, "errors", errors)
        set_field(self, "rules", rules)

    @classmethod
    def failed(cls, error: ConfigError, locator: str | None) -> Layer:
        return cls(SourceStatus.ERROR, locator, errors=(error,))

    @classmethod
    def not_configured(cls) -> Layer:
        return cls(SourceStatus.NOT_CONFIGURED)
