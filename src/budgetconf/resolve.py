"""The ranked merge: every source's offers, validated and ranked into values and traces.

For each source of the stack, lowest rank first:

1. the source loads (files come from the parse cache, the environment is
   read afresh);
2. if the source defines a section it merges with ``replace``, every
   candidate that lower sources (other than ``default``) gave for that
   section is marked ``replaced``;
3. each offer is checked against its field; a value the field cannot take is
   ``rejected`` and, under the source's ``error`` policy, becomes a
   `ConfigError`, under ``fallback`` a warning.

The last valid candidate of each field wins; earlier valid ones are
``shadowed``. A field with ``default_from`` that is left unset takes the
other field's value: the candidate that left it unset is ``shadowed``, and a
candidate that carries the other field's value, source and locator wins.
Nothing here prints, and nothing writes a file.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType

from budgetconf._record import ReadOnly, set_field
from budgetconf.errors import BudgetConfWarning, ConfigError, UsageError
from budgetconf.presets import LoopSpec, Preset, is_preset_path, load_preset
from budgetconf.schema import Field, Invalid, Schema, Unusable, Value, show_value
from budgetconf.sources import Context, MergeMode, Offer, Policy, Request
from budgetconf.sources._base import Problem, snapshot
from budgetconf.trace import Candidate, FieldTrace, SourceReport, Status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeVar

    T = TypeVar("T")

__all__ = ["Resolution", "factory", "resolve"]

PathArg = str | os.PathLike[str]
_MEMO_SIZE: Final = 64  # resolutions kept per preset


class Resolution(ReadOnly):
    """The values of one resolution, and the evidence for each.

    ``res["loop.max_steps"]`` is the typed value, ``res.values`` all of them,
    ``res.trace(path)`` the candidates behind one, and ``res.to_dict()`` the
    version-1 explain document (secrets masked). It is read-only: a later
    resolution from the same inputs may return this very object.
    """

    __slots__ = ("_traces", "errors", "loop", "preset", "schema", "sources", "values", "warnings")

    def __init__(
        self,
        preset: Preset,
        traces: dict[str, FieldTrace],
        sources: tuple[SourceReport, ...],
        warnings: tuple[str, ...],
        errors: tuple[ConfigError, ...],
    ) -> None:
        values = MappingProxyType({p: t.winner.value for p, t in traces.items()})
        set_field(self, "preset", preset.name)
        set_field(self, "schema", preset.schema)
        set_field(self, "loop", preset.loop)  # how the preset bounds a loop, for the executor
        set_field(self, "_traces", traces)
        set_field(self, "values", values)
        set_field(self, "sources", sources)
        set_field(self, "warnings", warnings)
        set_field(self, "errors", errors)

    if TYPE_CHECKING:
        preset: str
        schema: Schema
        loop: LoopSpec | None
        _traces: dict[str, FieldTrace]
        values: Mapping[str, Value]
        sources: tuple[SourceReport, ...]
        warnings: tuple[str, ...]
        errors: tuple[ConfigError, ...]

    def __getitem__(self, path: str) -> Value:
        try:
            return self.values[path]
        except KeyError:
            return self.values[self._path(path)]

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        try:
            self._path(path)
        except KeyError:
            return False
        return True

    def __repr__(self) -> str:
        shown = {p: ("***" if t.field.secret else t.winner.value) for p, t in self._traces.items()}
        return f"Resolution(preset={self.preset!r}, values={shown!r})"

    def _path(self, path: str) -> str:
        if path in self._traces:
            return path
        return self.schema.lookup(path).path  # an alias, or a KeyError with a suggestion

    def trace(self, path: str) -> FieldTrace:
        """Every candidate for the field at ``path``, and the one that won."""
        return self._traces[self._path(path)]

    def traces(self) -> tuple[FieldTrace, ...]:
        """The traces of all fields, in schema order."""
        return tuple(self._traces.values())

    def sections(self) -> dict[str, dict[str, Value]]:
        """The values nested by section: ``{"loop": {"max_steps": 40, ...}, ...}``."""
        nested: dict[str, dict[str, Value]] = {}
        for trace in self._traces.values():
            nested.setdefault(trace.field.section, {})[trace.field.name] = trace.winner.value
        return nested

    def to_dict(self, fields: Sequence[str] | None = None) -> dict[str, Any]:
        """The version-1 explain document, for all fields or the ones named."""
        chosen = [self._path(f) for f in fields] if fields else list(self._traces)
        entries = {path: self._traces[path].to_dict() for path in chosen}
        return {
            "version": 1,
            "preset": self.preset,
            "values": {path: entry["value"] for path, entry in entries.items()},
            "fields": entries,
            "sources": [s.to_dict() for s in self.sources],
            "warnings": list(self.warnings),
            "errors": [str(e) for e in self.errors],
        }

    def structure(self, cls: type[T]) -> T:
        """An instance of ``cls`` built from the values nested by section, with cattrs.

        The conversion is strict: a bool is not an int, and a float is never
        truncated to one. Sections and fields ``cls`` does not declare are
        ignored. Raises `ConfigError` when the values do not fit ``cls``.
        """
        from budgetconf._structure import structure

        return structure(self.sections(), cls)


class _Work:
    """A candidate while the stack is being merged; statuses settle at the end."""

    __slots__ = ("offer", "policy", "reason", "source", "status", "value")

    def __init__(
        self, offer: Offer, source: str, policy: Policy, value: Value, reason: str | None
    ) -> None:
        self.offer = offer
        self.source = source
        self.policy = policy
        self.value = value
        self.reason = reason
        self.status = Status.REJECTED if reason is not None else Status.WON


def _located(field: str, locator: str, source: str) -> str:
    return f"{field} from {locator}" + ("" if locator.startswith(source) else f" ({source})")


def resolve_request(preset: Preset, request: Request) -> Resolution:
    """Resolve every field of ``preset`` for ``request``. Problems are collected, not raised.

    A resolution whose sources' keys equal those of a recent one is that one:
    nothing a source reads has changed. Otherwise the sources load from one
    copy of the environment, and the result is kept only when it has no
    errors and the keys, taken again (from that copy, and the files as they
    are now), still match: a file changed while it was read is never kept,
    nor a result read from variables other than its key's.
    """
    ctx = Context(
        request, preset.schema, preset.home, preset.home_env, preset.max_file_bytes, preset.steps
    )
    key = _key(preset, ctx)
    if key is not None:
        known: Resolution | None = preset.memo.get(key)
        if known is not None:
            return known
    ctx.env = snapshot(ctx.env)
    result = _merge(preset, ctx)
    if key is not None and not result.errors and _key(preset, ctx) == key:
        if len(preset.memo) >= _MEMO_SIZE:
            preset.memo.clear()
        preset.memo[key] = result
    return result


def _key(preset: Preset, ctx: Context) -> tuple[Hashable, ...] | None:
    keys = tuple([key(ctx) for key in preset.keys])
    return None if None in keys else keys


def _merge(preset: Preset, ctx: Context) -> Resolution:
    """Load every source and merge what they offer."""
    schema = preset.schema
    work: dict[str, list[_Work]] = {path: [] for path in schema.by_path}
    merge_of: dict[tuple[str, str], MergeMode] = {}
    reports: list[SourceReport] = []
    found_warnings: list[str] = []
    errors: list[ConfigError] = []

    for spec, source in zip(preset.stack, preset.sources, strict=True):
        layer = source.load(ctx)
        for error in layer.errors:
            # the yaml and step sources read one workflow file: say what is wrong with it once
            if not any(_same_problem(error, known) for known in errors):
                errors.append(error)
        error_text = "; ".join(str(e) for e in layer.errors) or None
        reports.append(
            SourceReport(spec.kind, layer.status, layer.locator, len(layer.offers), error_text)
        )
        found_warnings.extend(layer.warnings)
        for problem in layer.problems:
            _judge_problem(problem, spec.kind, spec.invalid, errors, found_warnings)
        for section, where in layer.sections.items():
            mode = spec.merge_mode(section)
            merge_of[(spec.kind, section)] = mode
            if mode is MergeMode.REPLACE:
                why = f"section {section} replaced whole by {spec.kind} {where}"
                _replace([item for f in schema.sections[section] for item in work[f.path]], why)
        for offer in layer.offers:
            field = schema.by_path[offer.field]
            value, reason = _check(field, offer)
            if reason is not None and spec.invalid is Policy.ERROR:
                errors.append(_value_error(field, offer, spec.kind, reason))
            work[offer.field].append(_Work(offer, spec.kind, spec.invalid, value, reason))

    settled: dict[str, FieldTrace] = {}
    # a field that defaults to another is settled after it (the loader refuses chains)
    for field in sorted(schema, key=lambda f: f.default_from is not None):
        settled[field.path] = _settle(field, work[field.path], merge_of, settled)
    for field in schema:
        trace = settled[field.path]
        for item in work[field.path]:
            if item.status is Status.REJECTED and item.policy is Policy.FALLBACK:
                where = _located(field.path, item.offer.locator, item.source)
                using = field.mask(show_value(trace.value))
                found_warnings.append(
                    f"{where}: {item.reason}; ignored, using {using} from {trace.winner.where}"
                )
    traces = {f.path: settled[f.path] for f in schema}
    return Resolution(preset, traces, tuple(reports), tuple(found_warnings), tuple(errors))


def _settle(
    field: Field,
    items: list[_Work],
    merge_of: Mapping[tuple[str, str], MergeMode],
    settled: Mapping[str, FieldTrace],
) -> FieldTrace:
    """The field's trace: the last valid candidate wins, earlier valid ones are shadowed.

    When the winner leaves a ``default_from`` field unset, the other field's
    trace, in ``settled``, gives the value.
    """
    winner = next(i for i in reversed(items) if i.status is Status.WON)
    for item in items:
        if item.status is Status.WON and item is not winner:
            item.status = Status.SHADOWED
    candidates = [_candidate(i, field.secret) for i in items]
    at = items.index(winner)
    if field.default_from is None or winner.value is not None:
        merge = merge_of.get((winner.source, field.section), MergeMode.FIELD)
        return FieldTrace(field, candidates[at], tuple(candidates), merge)
    # Unset, the field takes the other field's value. The candidate that left it
    # unset stays in the trace, shadowed; the value it stands for comes right after.
    other = settled[field.default_from]
    why = f"unset, so it takes the value of {other.field.path}"
    candidates[at] = candidates[at].replace(status=Status.SHADOWED, reason=why)
    derived = Candidate(
        source=other.source,
        locator=other.locator,
        status=Status.WON,
        value=other.value,
        raw=other.value,
        secret=field.secret,
        derived_from=other.field.path,
    )
    candidates.insert(at + 1, derived)
    return FieldTrace(field, derived, tuple(candidates), other.merge)


def _same_problem(a: ConfigError, b: ConfigError) -> bool:
    """The same fault, reported by two sources (only their names differ in the message)."""
    return a.reason is not None and (type(a), a.locator, a.field, a.reason) == (
        type(b),
        b.locator,
        b.field,
        b.reason,
    )


def _replace(items: list[_Work], why: str) -> None:
    """Discard what lower sources said for a section; the built-in defaults stay."""
    for item in items:
        if item.status is Status.WON and item.source != "default":
            item.status = Status.REPLACED
            item.reason = why


def _check(field: Field, offer: Offer) -> tuple[Value, str | None]:
    """The offer's value for ``field``, or None and the reason it cannot be one."""
    try:
        if offer.text and isinstance(offer.value, str):
            return field.parse_text(offer.value), None
        return field.check_value(offer.value), None
    except Invalid as exc:
        return None, exc.reason


def _candidate(item: _Work, secret: bool) -> Candidate:
    offer = item.offer
    return Candidate(
        source=item.source,
        locator=offer.locator,
        status=item.status,
        value=item.value,
        raw=offer.value,
        text=offer.text,
        reason=item.reason,
        alias=offer.key,
        secret=secret,
    )


def _value_error(field: Field, offer: Offer, source: str, reason: str) -> ConfigError:
    raw = offer.value.text if isinstance(offer.value, Unusable) else offer.value
    raw = "***" if field.secret else raw
    return ConfigError(
        f"{_located(field.path, offer.locator, source)}: {reason}",
        field=field.path,
        source=source,
        locator=offer.locator,
        raw=raw,
        reason=reason,
    )


def _judge_problem(
    problem: Problem, source: str, policy: Policy, errors: list[ConfigError], found: list[str]
) -> None:
    message = f"{problem.locator} ({source}): {problem.message}"
    if policy is Policy.ERROR:
        errors.append(
            ConfigError(
                message,
                field=problem.field,
                source=source,
                locator=problem.locator,
                raw=problem.raw,
                reason=problem.message,
            )
        )
    else:
        found.append(f"{message}; ignored")


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
        env=env,
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


#: resolve() argument -> the source it feeds
_ARGUMENT_SOURCES: Final = {
    "argv": "cli",
    "global_file": "global",
    "project_file": "project",
    "profile": "profile",
    "workflow": "yaml",
    "step": "step",
    "explicit": "explicit",
    "dynaconf": "dynaconf",
}
_PATHS: Final = ("global_file", "project_file", "profile", "workflow", "step")


def check_request(preset: Preset, request: Request, names: Mapping[str, str] | None = None) -> None:
    """Refuse what would be lost: an argument for a source the preset lacks, an empty path.

    ``names`` spells the arguments as the caller knows them (``--global``).
    """

    def name(argument: str) -> str:
        return (names or {}).get(argument, f"{argument}=")

    for argument in _PATHS:
        if getattr(request, argument) == "":
            raise UsageError(f"{name(argument)} is empty")
    if request.step is not None and request.workflow is None:
        raise UsageError(f"{name('step')} needs {name('workflow')}: steps are found in a workflow")
    for argument, kind in _ARGUMENT_SOURCES.items():
        if getattr(request, argument) is None or preset.has_source(kind):
            continue
        if argument == "workflow" and preset.has_source("step"):
            continue
        have = ", ".join(preset.source_kinds)
        raise UsageError(
            f"preset {preset.name!r} has no {kind} source for {name(argument)}"
            f" (its sources: {have})"
        )


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
    request = Request(**options)
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
