"""The public way in: `resolve`, `factory`, and the check that a request fits its preset."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence

from budgetconf._description import Argument
from budgetconf._engine import Preset, is_preset_path, load_preset, resolve_request
from budgetconf._resolution import Resolution
from budgetconf._schema import Value
from budgetconf.errors import BudgetConfWarning, ConfigError, UsageError
from budgetconf.sources import KINDS
from budgetconf.sources._records import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["check_request", "factory", "resolve"]

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
    """
    loaded = load_preset(preset)
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
    )
    check_request(loaded, request)
    return _resolved(loaded, request)


def _resolved(preset: Preset, request: Request) -> Resolution:
    """The resolution, its warnings emitted and its errors raised, for resolve()'s callers."""
    result = resolve_request(preset, request)
    for message in result.warnings:
        warnings.warn(message, BudgetConfWarning, stacklevel=3)
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


def check_request(preset: Preset, request: Request, *, command_line: bool = False) -> None:
    """Refuse what would be lost: an argument for a source the preset lacks, an empty path.

    With ``command_line``, arguments are named as the command line spells
    them (``--global``), else as `resolve` keywords (``global_file=``).
    Problems are found in the registry's order, each kind of them in turn.
    """
    given = request.arguments
    asked = [entry for name, entry in _ARGUMENTS.items() if name in given]
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
    """
    loaded = load_preset(preset)
    try:
        path = loaded.schema.lookup(field).path
    except KeyError as exc:
        raise ConfigError(exc.args[0], field=field) from None
    unknown = sorted(set(options).difference(resolve.__kwdefaults__ or ()))
    if unknown:
        raise TypeError(f"factory() got unexpected keyword arguments: {', '.join(unknown)}")
    request = Request(options.pop("env", None), **options)
    check_request(loaded, request)
    builtin = not is_preset_path(preset)

    def make() -> Value:
        # a preset file is loaded again when it changes; a built-in one never does
        current = loaded if builtin else load_preset(preset)
        if current is not loaded:
            check_request(current, request)
        return _resolved(current, request)[path]

    make.__qualname__ = make.__name__ = f"budgetconf_{path.replace('.', '_')}"
    return make
