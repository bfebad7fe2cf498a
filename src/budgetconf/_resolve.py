"""The public way in: `resolve`, `factory`, and the check that a request fits its preset."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence

from budgetconf._description import Argument
from budgetconf._engine import Preset, is_preset_path, load_preset, resolve_request, resolver
from budgetconf._resolution import Resolution
from budgetconf._values import Value
from budgetconf.errors import BudgetConfWarning, ConfigError, UsageError, UsageTypeError
from budgetconf.sources import KINDS
from budgetconf.sources._records import Request, names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, NoReturn

PathArg = str | os.PathLike[str]


def resolve(
    preset: PathArg = "budgetconf",
    *,
    env: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
    global_file: PathArg | None = None,
    project_file: PathArg | None = None,
    profile: PathArg | None = None,
    workflow: PathArg | None = None,
    step: str | None = None,
    explicit: Mapping[str, object] | None = None,
    dynaconf: object = None,
    policy_file: PathArg | None = None,
) -> Resolution:
    """Resolve every field of ``preset`` from its ranked sources.

    ``preset`` is a built-in name or the path of a preset file. ``env``
    defaults to ``os.environ``; ``argv`` feeds the ``cli`` source (``sys.argv``
    is never read). Warnings (fallback rejections, unknown keys) are emitted as
    `BudgetConfWarning`. Problems under the ``error`` policy raise: one problem
    as itself (a `SourceError` for a source that cannot be read), several as
    one `ConfigError` that lists them all and holds each in ``errors``. An
    argument the preset has no source for raises `UsageError`. ``dynaconf`` is
    an application's dynaconf settings object, for the ``dynaconf`` source.
    ``policy_file`` names one more policy file, which adds to the preset's
    own (both apply); it must exist, and the preset must have a policy.
    """
    loaded = load_preset(_preset_arg(preset))
    request = Request(
        env,
        argv=argv,
        global_file=global_file,
        project_file=project_file,
        profile=profile,
        workflow=workflow,
        step=step,
        explicit=explicit,
        dynaconf=dynaconf,
        policy_file=policy_file,
    )
    check_request(loaded, request)
    return _resolved(loaded, request)


def _resolved(preset: Preset, request: Request) -> Resolution:
    """The resolution, its warnings emitted and its errors raised, for resolve()'s callers."""
    return _answer(resolve_request(preset, request), stacklevel=4)


def _answer(result: Resolution, stacklevel: int = 3) -> Resolution:
    """``result``, its warnings emitted and its errors raised."""
    for message in result.warnings:
        warnings.warn(message, BudgetConfWarning, stacklevel=stacklevel)
    if result.errors:
        raise ConfigError.combine(list(result.errors))
    return result


#: each resolve() argument, with the kind of source it feeds
_ARGUMENTS: Final = {
    source.KIND.argument.name: (source.KIND.argument, kind)
    for kind, source in KINDS.items()
    if source.KIND.argument is not None
}
#: an argument -> the kinds whose own argument needs it (``workflow`` -> the step source)
_NEEDED_BY: Final = {
    argument.needs: frozenset(k for a, k in _ARGUMENTS.values() if a.needs == argument.needs)
    for argument, _ in _ARGUMENTS.values()
    if argument.needs is not None
}


def _kept(request: Request) -> Request:
    """``request`` with copies of the mapping and the list given to it, read once by a factory."""
    given = dict(request.arguments)
    for name, value in given.items():
        if _ARGUMENTS[name][0].pairs:
            given[name] = dict(value)
        elif name == "argv":
            given[name] = tuple(value)
    return Request(request.env, explicit_is_text=request.explicit_is_text, **given)


def _preset_arg(preset: object) -> PathArg:
    """``preset`` as `load_preset` takes it: a name or a path, never empty. Raises `UsageError`."""
    if type(preset) is not str and isinstance(preset, os.PathLike):  # str first: ABCs are slow
        preset = os.fspath(preset)
    if not isinstance(preset, str):
        raise UsageTypeError(
            "preset: expected a preset name or path (str or os.PathLike[str]),"
            f" got {type(preset).__name__}"
        )
    if not preset:
        raise UsageError("preset= is empty")
    return preset


def check_request(preset: Preset, request: Request, *, command_line: bool = False) -> None:
    """Refuse what would be lost: an argument of the wrong type, or for a source the preset
    lacks, an empty path.

    With ``command_line``, arguments are named as the command line spells
    them (``--global``), else as `resolve` keywords (``global_file=``).
    Problems are found in the registry's order, each kind of them in turn.
    """
    given = request.arguments
    asked = [entry for name, entry in _ARGUMENTS.items() if name in given]
    _check_env(request.env)
    for argument, _ in asked:
        _check_type(argument, given[argument.name])
    for argument, _ in asked:
        if argument.text and given[argument.name] == "":
            raise UsageError(f"{_spelled(argument, command_line)} is empty")
        if argument.needs is not None and argument.needs not in given:
            needed = _ARGUMENTS[argument.needs][0]
            raise UsageError(
                f"{_spelled(argument, command_line)} needs {_spelled(needed, command_line)}:"
                f" {argument.needs_reason}"
            )
    kinds = preset.by_kind.keys()
    for argument, kind in asked:
        if kind in kinds or not kinds.isdisjoint(_NEEDED_BY.get(argument.name, ())):
            continue  # a source reads it, or one that needs it: `workflow`, the step source
        have = ", ".join(preset.description.source_kinds)
        raise UsageError(
            f"preset {preset.name!r} has no {kind} source for {_spelled(argument, command_line)}"
            f" (its sources: {have})"
        )


#: what a text argument holds, by its metavar, for a message: a path, or a name or a path
_TEXT: Final = {"PATH": "a path", "NAME|PATH": "a name or a path"}
_PATH_TYPES: Final = " (str or os.PathLike[str])"


def _check_type(argument: Argument, value: Any) -> None:
    """Refuse a value that is not of the argument's type: it would be read as something else.

    A string where a list of strings belongs would be read a character at a
    time, a generator used up by the first reading. Raises `UsageTypeError`.
    (Exact types are tried first: an ABC's check costs more than the rest.)
    """
    if argument.text:
        if type(value) is not str and not isinstance(value, str):
            what = _TEXT.get(argument.metavar or "")
            _refuse(argument, "a string" if what is None else what + _PATH_TYPES, value)
    elif argument.pairs:
        _check_pairs(argument, value)
    elif argument.name == "argv":  # the cli source's flags: the one argument that is a list
        _check_strings(argument, value)


def _check_pairs(argument: Argument, value: Any) -> None:
    wanted = "a mapping of field paths to values"
    if type(value) is not dict and not isinstance(value, Mapping):
        _refuse(argument, wanted, value)
    for key in value:
        if type(key) is not str:
            _refuse(argument, wanted, key, " as a path")


def _check_strings(argument: Argument, value: Any) -> None:
    wanted = "a list of strings"
    if type(value) not in (list, tuple) and (
        isinstance(value, str | bytes) or not isinstance(value, Sequence)
    ):
        _refuse(argument, wanted, value)
    for at, item in enumerate(value):
        if type(item) is not str:
            _refuse(argument, wanted, item, f" at index {at}")


def _refuse(argument: Argument, wanted: str, got: object, where: str = "") -> NoReturn:
    raise UsageTypeError(f"{argument.name}=: expected {wanted}, got {type(got).__name__}{where}")


def _check_env(env: Any) -> None:
    """Refuse an ``env`` that is not a mapping keyed by names (``os.environ`` always is).

    A value that is not text is left to the env source, which judges it as a
    typed value: ``{"X": 5}`` gives 5, ``{"X": True}`` is rejected.
    """
    if env is os.environ:
        return
    wanted = "env=: expected a mapping of variable names to values"
    if type(env) is not dict and not isinstance(env, Mapping):
        raise UsageTypeError(f"{wanted}, got {type(env).__name__}")
    for key in names(env):  # whole, even while another thread changes it; a value is
        # judged by its field, as the env source's text is
        if type(key) is not str:
            raise UsageTypeError(f"{wanted}, got {type(key).__name__} as a name")


def _spelled(argument: Argument, command_line: bool) -> str:
    if command_line and argument.spelled is not None:
        return argument.spelled
    return f"{argument.name}="


def factory(field: str, preset: PathArg = "budgetconf", **options: Any) -> Callable[[], Value]:
    """A zero-argument callable for ``dataclasses.field(default_factory=...)``.

    Each call resolves afresh, so a variable exported before each run takes
    effect at once; a value passed to the dataclass constructor never calls it,
    so an explicit argument always wins. ``options`` are `resolve` keywords,
    checked here, once: a wrong one fails at once, not at the first construction.
    They are read once too: a mapping or a list given is copied.
    """
    loaded = load_preset(_preset_arg(preset))
    try:
        path = loaded.schema.lookup(field).path
    except KeyError as exc:
        raise ConfigError(exc.args[0], field=field) from None
    unknown = sorted(set(options).difference(resolve.__kwdefaults__ or ()))
    if unknown:
        raise TypeError(f"factory() got unexpected keyword arguments: {', '.join(unknown)}")
    request = Request(options.pop("env", None), **options)
    check_request(loaded, request)
    request = _kept(request)
    if not is_preset_path(preset):  # a built-in preset never changes
        resolved = resolver(loaded, request)

        def make() -> Value:
            result = resolved()
            if result.warnings or result.errors:
                _answer(result)
            return result.values[path]

    else:

        def make() -> Value:
            current = load_preset(preset)  # again when the file has changed
            if current is not loaded:
                check_request(current, request)
            return _resolved(current, request)[path]

    make.__qualname__ = make.__name__ = f"budgetconf_{path.replace('.', '_')}"
    return make
