"""The ranked merge: every source's offers, validated and ranked into values and traces.

For each source of the stack, lowest rank first:

1. the source loads (files come from the parse cache, the environment is
   read afresh);
2. if the source defines a section it merges with ``replace``, every
   candidate that lower sources (other than ``default``) gave for that
   section is marked ``replaced``;
3. each offer is checked against its field; a value the field cannot take,
   or one the source refuses itself (a field set twice in one place), is
   ``rejected`` and, under the source's ``error`` policy, becomes a
   `ConfigError`, under ``fallback`` a warning. An offer of nothing (an
   empty variable) is ``empty``: it is kept in the trace and never wins.

The last valid candidate of each field wins; earlier valid ones are
``shadowed``. A field with ``default_from`` that is left unset takes the
other field's value: the candidate that left it unset is ``shadowed``, and a
candidate that carries the other field's value, source and locator wins.
The policy source's rules are applied to each field once it is settled
(see `budgetconf._policing`). A text whose URL has the mask (``***``) for its
password, as every rendering shows one, is a warning wherever it was read:
it was most likely copied from explain's output, and is no password; so is a
secret text field whose value is the mask.
Nothing here prints, and nothing writes a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from budgetconf._description import Description, MergeMode, Policy, SourceKind, SourceSpec
from budgetconf._field import Field, Invalid, Kind
from budgetconf._record import MASK, Unusable
from budgetconf._resolution import Resolution
from budgetconf._schema import Schema
from budgetconf._table import entries
from budgetconf._trace import Candidate, FieldTrace, SourceReport, Status, unset_trace
from budgetconf._values import Value, show_value
from budgetconf.errors import ConfigError
from budgetconf.ledger._address import has_masked_password
from budgetconf.sources._records import Context, Layer, Offer, Problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    from budgetconf._rules import Rule
    from budgetconf.sources._protocols import Source


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
        if offer.empty:
            self.status = Status.EMPTY  # a name with nothing in it: no value, as if unset
        else:
            self.status = Status.REJECTED if reason is not None else Status.WON


def _located(field: str, locator: str, source: str) -> str:
    return f"{field} from {locator}" + ("" if locator.startswith(source) else f" ({source})")


def merge(preset: Description, sources: Sequence[Source], ctx: Context) -> Resolution:
    """Load every source and merge what they offer."""
    merging = _Merging(preset)
    for spec, source in zip(preset.stack, sources, strict=True):
        kind: SourceKind = type(source).KIND  # type: ignore[attr-defined]  # a SourceClass's
        merging.add(spec, source.load(ctx), kind)
    return merging.resolution()


class _Merging:
    """The stack merged so far: every candidate of every field, and what was found on the way."""

    __slots__ = ("errors", "keys", "merge_of", "preset", "reports", "rules", "warnings", "work")

    def __init__(self, preset: Description) -> None:
        self.preset = preset
        self.work: dict[str, list[_Work]] = {path: [] for path in preset.schema.by_path}
        # each table's keys as first offered (each key's candidates are under its entry's path)
        self.keys: dict[str, dict[str, None]] = {
            f.path: {} for f in preset.schema if f.kind is Kind.TABLE
        }
        self.merge_of: dict[tuple[str, str], MergeMode] = {}
        self.reports: list[SourceReport] = []
        self.warnings: list[str] = []
        self.errors: list[ConfigError] = []
        self.rules: dict[str, Rule] = {}

    def add(self, spec: SourceSpec, layer: Layer, kind: SourceKind) -> None:
        """One more source's layer, above those added before it; ``kind`` is its declaration."""
        self._keep_errors(layer.errors)
        self.reports.append(_report(spec, layer, kind))
        self.warnings.extend(layer.warnings)
        self.rules.update(layer.rules)
        self._judge_problems(spec, layer)
        self._replace_sections(spec, layer)
        self._check_offers(spec, layer)

    def _keep_errors(self, found: Iterable[ConfigError]) -> None:
        """The source's own errors, each fault once: the yaml and step sources read one
        workflow file, and what is wrong with it is said once."""
        errors = self.errors
        for error in found:
            if not any(_same_problem(error, known) for known in errors):
                errors.append(error)

    def _judge_problems(self, spec: SourceSpec, layer: Layer) -> None:
        """Each problem the source found: an error under its policy, else a warning."""
        schema = self.preset.schema
        for problem in layer.problems:
            raw = _problem_raw(problem, schema)
            policy = _policy(spec, schema, problem.field)
            _judge_problem(problem, raw, spec.kind, policy, self.errors, self.warnings)

    def _replace_sections(self, spec: SourceSpec, layer: Layer) -> None:
        """Each section the source defines: how it merges, and, replaced whole, what lower
        sources said for it discarded."""
        schema, work = self.preset.schema, self.work
        for section, where in layer.sections.items():
            mode = spec.merge_mode(section)
            self.merge_of[(spec.kind, section)] = mode
            if mode is MergeMode.REPLACE:
                why = f"section {section} replaced whole by {spec.kind} {where}"
                paths = [path for f in schema.sections[section] for path in self._paths(f)]
                _replace([item for path in paths for item in work[path]], why)

    def _paths(self, field: Field) -> list[str]:
        """The paths ``field`` is resolved at: its own, or each offered key's of a table."""
        keys = self.keys.get(field.path)
        return [field.path] if keys is None else [f"{field.path}.{key}" for key in keys]

    def _check_offers(self, spec: SourceSpec, layer: Layer) -> None:
        """Each offer checked against its field and added to its candidates; one the field
        cannot take is an error under the source's policy."""
        schema = self.preset.schema
        for offer in layer.offers:
            field = schema.by_path[offer.field]
            if field.kind is not Kind.TABLE:
                self._check_offer(spec, field, offer)
            elif offer.entry is not None:
                self._check_offer(spec, self._entry(field, offer.entry), offer)
            elif not offer.empty:  # an empty variable names no key to be empty for
                self._check_table(spec, field, offer)

    def _check_offer(self, spec: SourceSpec, field: Field, offer: Offer) -> None:
        value, reason = _check(field, offer)
        if reason is not None and _policy_of(spec, field) is Policy.ERROR:
            self.errors.append(_value_error(field, offer, spec.kind, reason))
        self.work[field.path].append(_Work(offer, spec.kind, spec.invalid, value, reason))

    def _check_table(self, spec: SourceSpec, table: Field, offer: Offer) -> None:
        """A whole table's value, taken apart: each key an offer of its own; a key the table
        cannot take, or a value that is no table, is refused under the source's policy."""
        found, problems = entries(table, offer.value, offer.text)
        if offer.refused is not None:
            found, problems = [], [offer.refused]
        for reason in problems:
            if _policy_of(spec, table) is Policy.ERROR:
                self.errors.append(_value_error(table, offer, spec.kind, reason))
            else:
                self.warnings.append(
                    f"{_located(table.path, offer.locator, spec.kind)}: {reason}; ignored"
                )
        for key, raw in found:
            self._check_offer(spec, self._entry(table, key), offer.replace(value=raw, entry=key))

    def _entry(self, table: Field, key: str) -> Field:
        """The entry of ``table`` at ``key``, whose candidates are gathered from now on."""
        entry = self.preset.schema.at(f"{table.path}.{key}")
        if key not in self.keys[table.path]:
            self.keys[table.path][key] = None
            self.work[entry.path] = []
        return entry

    def resolution(self) -> Resolution:
        """Every field settled: its winner, and what became of each other candidate."""
        schema = self.preset.schema
        settled: dict[str, FieldTrace] = {}
        # a field that defaults to another is settled after it (the reader refuses chains)
        for field in sorted(schema, key=lambda f: f.default_from is not None):
            for entry in self._resolved(field):
                trace = _settle(entry, self.work[entry.path], self.merge_of, settled)
                rule = self.rules.get(entry.path) or self.rules.get(entry.table or "")
                if rule is not None:
                    from budgetconf._policing import police  # only a policy with rules needs it

                    trace = police(trace, rule)
                settled[entry.path] = trace
        traces = {path: settled[path] for f in schema for path in self._paths(f)}
        for trace in traces.values():
            self._warn_fallbacks(trace.field, trace)
            self._warn_masks(trace)
        return Resolution(
            self.preset,
            traces,
            tuple(self.reports),
            tuple(self.warnings),
            tuple(self.errors),
            _notes(schema, traces.values()),
        )

    def _resolved(self, field: Field) -> list[Field]:
        """The fields ``field`` is settled as: itself, or a table's entries, in the order of
        their keys. A key the policy names with a locked value, a default or a ceiling is one
        even when no source set it: unset, it takes the ceiling, as any field does."""
        keys = self.keys.get(field.path)
        if keys is None:
            return [field]
        prefix = field.path + "."
        for path, rule in self.rules.items():
            if path.startswith(prefix) and (rule.value or rule.default or rule.max) is not None:
                self._entry(field, path[len(prefix) :])
        self.keys[field.path] = dict.fromkeys(sorted(keys))
        return [self.preset.schema.at(path) for path in self._paths(field)]

    def _warn_fallbacks(self, field: Field, trace: FieldTrace) -> None:
        for item in self.work[field.path]:
            if (
                item.status is Status.REJECTED
                and item.policy is Policy.FALLBACK
                and not field.strict
            ):
                where = _located(field.path, item.offer.locator, item.source)
                using = field.mask(show_value(trace.value))
                instead = f"using {using} from {trace.winner.where}"
                if field.table is not None and trace.value is None:
                    instead = "the key stays unset"  # no source set it otherwise
                self.warnings.append(f"{where}: {item.reason}; ignored, {instead}")

    def _warn_masks(self, trace: FieldTrace) -> None:
        """A warning for each value of the field that is `MASK` where a secret was shown: a
        secret field's whole value, or a URL's password."""
        field = trace.field
        for candidate in trace.candidates:
            if candidate.status in _NO_VALUE or candidate.derived_from is not None:
                continue  # no value, or the other field's, warned of there
            warning = mask_warning(field, candidate.value, candidate.locator, candidate.source)
            if warning is not None and warning not in self.warnings:  # a file two sources
                self.warnings.append(warning)  # read is one place


def mask_warning(field: Field, value: object, locator: str, source: str) -> str | None:
    """The warning of ``value``, read for ``field`` at ``locator``, when it holds `MASK` where
    a secret was shown (a secret text field's whole value, a URL's password); else None."""
    if field.kind is not Kind.TEXT:
        return None
    if field.secret and value == MASK:
        read = _SECRET_READ
    elif has_masked_password(value):
        read = _MASK_READ
    else:
        return None
    return f"{_located(field.path, locator, source)}: {read}"


#: the statuses of a candidate that offers no value
_NO_VALUE: Final = (Status.REJECTED, Status.EMPTY)
#: what a warning says of a secret field read as the mask, after the locator
_SECRET_READ: Final = (
    f"the value is {MASK}, the mask shown in place of a secret field's value, not the value"
    " (copied from explain's output?)"
)
#: what a warning says of a URL read with the mask for its password, after the locator
_MASK_READ: Final = (
    f"the URL's password is {MASK}, the mask shown in place of a password, not a password"
    " (copied from explain's output?)"
)


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
    winner = next((i for i in reversed(items) if i.status is Status.WON), None)
    if winner is None:  # a table's key that no source left set: unset, as its default is
        unset = unset_trace(field).winner
        rest = (_candidate(i, field.secret) for i in items)
        return FieldTrace(field, unset, (unset, *rest), MergeMode.FIELD)
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


def _notes(schema: Schema, traces: Iterable[FieldTrace]) -> tuple[str, ...]:
    """A note for each place that used an alias which names another field in another section.

    ``max_tool_calls`` under ``loop`` sets the per-response cap, not the whole
    run's total ``limits.max_tool_calls``: a value that may not be what was meant.
    """
    notes: dict[str, None] = {}
    for trace in traces:
        field = trace.field
        for candidate in trace.candidates:
            if candidate.alias is None:
                continue
            others = _namesakes(schema, field, candidate.alias)
            if others:
                other = " or ".join(f.path for f in others)
                alias, section = candidate.alias, field.section
                note = f"{alias} under {section} is an alias of {field.path}, not {other}"
                notes[f"{candidate.where}: {note}"] = None
    return tuple(notes)


def _namesakes(schema: Schema, field: Field, key: str) -> tuple[Field, ...]:
    """The fields of other sections whose own name is ``key``, an alias of ``field``.

    In the default preset ``max_tool_calls`` under ``loop`` is the per-response
    cap's alias, while under ``limits`` it is the whole run's total.
    """
    return tuple(f for f in schema if f.name == key and f.section != field.section)


def _report(spec: SourceSpec, layer: Layer, kind: SourceKind) -> SourceReport:
    """The source's line of the report: what it offered, what failed, where a value is raised."""
    error_text = "; ".join(str(e) for e in layer.errors) or None
    offered = sum(not offer.empty for offer in layer.offers) + len(layer.rules)
    place = kind.label
    if place is not None and kind.names_file and layer.locator:
        place = f"{place} {layer.locator}"
    option = None if kind.argument is None else kind.argument.option
    return SourceReport(spec.kind, layer.status, layer.locator, offered, error_text, place, option)


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
    if offer.empty:
        return None, None
    if offer.refused is not None:
        return None, offer.refused
    try:
        if offer.text and isinstance(offer.value, str):
            return field.parse_text(offer.value), None
        return field.check_value(offer.value), None
    except Invalid as exc:
        return None, exc.reason


def _policy(spec: SourceSpec, schema: Schema, path: str | None) -> Policy:
    """The source's invalid policy for the field at ``path``: ``error`` for a strict one
    (a `ledger-url` one), whatever the source's."""
    field = None if path is None else schema.by_path.get(path)
    return spec.invalid if field is None else _policy_of(spec, field)


def _policy_of(spec: SourceSpec, field: Field) -> Policy:
    return Policy.ERROR if field.strict else spec.invalid


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
    raw = field.public(raw)
    return ConfigError(
        f"{_located(field.path, offer.locator, source)}: {reason}",
        field=field.path,
        source=source,
        locator=offer.locator,
        raw=raw,
        reason=reason,
    )


def _problem_raw(problem: Problem, schema: Schema) -> object:
    """What an error may hold of a problem's value: none without a field, `MASK` for a secret."""
    field = schema.by_path.get(problem.field) if problem.field is not None else None
    if field is None or problem.raw is None:
        return None
    return field.public(problem.raw)


def _judge_problem(
    problem: Problem,
    raw: object,
    source: str,
    policy: Policy,
    errors: list[ConfigError],
    found: list[str],
) -> None:
    message = f"{problem.locator} ({source}): {problem.message}"
    if policy is Policy.ERROR:
        errors.append(
            ConfigError(
                message,
                field=problem.field,
                source=source,
                locator=problem.locator,
                raw=raw,
                reason=problem.message,
            )
        )
    else:
        found.append(f"{message}; ignored")
