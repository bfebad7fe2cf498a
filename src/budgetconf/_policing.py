"""The policy applied to a field's settled trace: locked values, defaults, ceilings, floors.

The merge settles each field as if there were no policy, then hands the
trace and the field's rule here. In order:

1. a locked ``value`` wins, and every other candidate is ``shadowed``;
2. a ``default`` wins when no source but the built-in default gave a value;
3. a bound that rejects marks every candidate past it ``rejected`` and the
   highest one left wins; when none is left, the bound itself wins;
4. a bound that clamps takes the place of a winner past it, which stays in
   the trace as ``clamped``; an unset field with a ceiling takes the ceiling.

When the policy decides the value, its candidate ends the trace, ``won``;
otherwise it adds none. A rejection here is the administrator's, never a
configuration error or a warning.
"""

from __future__ import annotations

from budgetconf._field import Field
from budgetconf._rules import Bound, Rule
from budgetconf._trace import Candidate, FieldTrace, Status
from budgetconf._values import show_value

_STANDING = (Status.WON, Status.SHADOWED)


def police(trace: FieldTrace, rule: Rule) -> FieldTrace:
    """``trace`` with ``rule`` applied, and the rule kept on it for explain."""
    field = trace.field
    candidates = list(trace.candidates)
    if rule.value is not None:
        _shadow(candidates)
        return _decided(trace, rule, candidates, rule.value, "locked")
    if rule.default is not None and not _offered(candidates):
        _shadow(candidates)
        return _decided(trace, rule, candidates, rule.default, "default")
    winner = trace.winner
    at = next(i for i, c in enumerate(candidates) if c is winner)
    rejecting = [b for b in (rule.max, rule.min) if b is not None and b.reject]
    if rejecting:
        for i, candidate in enumerate(candidates):
            past = _past(candidate, rule, rejecting)
            if candidate.status in _STANDING and past is not None:
                candidates[i] = candidate.replace(status=Status.REJECTED, reason=_why(field, *past))
        if candidates[at].status is Status.REJECTED:
            return _rejected(trace, rule, candidates, winner)
    return _clamped(trace, rule, candidates, at)


def _rejected(
    trace: FieldTrace, rule: Rule, candidates: list[Candidate], winner: Candidate
) -> FieldTrace:
    """The winner was past a rejecting bound: the highest candidate left wins, else the bound."""
    left = [i for i, c in enumerate(candidates) if c.status in _STANDING and c.value is not None]
    if not left:
        past = _past(winner, rule, [b for b in (rule.max, rule.min) if b is not None])
        assert past is not None, "a rejected winner is past a bound"
        word, bound = past
        return _decided(trace, rule, candidates, bound, word, asked=winner)
    at = left[-1]  # the winner was rejected: no other candidate is won
    candidates[at] = candidates[at].replace(status=Status.WON)
    return _clamped(trace, rule, candidates, at)


def _clamped(trace: FieldTrace, rule: Rule, candidates: list[Candidate], at: int) -> FieldTrace:
    """The candidate at ``at`` wins, unless a clamping bound takes its place."""
    winner = candidates[at]
    field = trace.field
    if winner.value is None and rule.max is not None:  # unset: a ceiling means there is a limit
        why = f"unset, so it takes the policy ceiling {_shown(field, rule.max)}"
        candidates[at] = winner.replace(status=Status.SHADOWED, reason=why)
        return _decided(trace, rule, candidates, rule.max, "ceiling")
    past = _past(winner, rule, [b for b in (rule.max, rule.min) if b is not None])
    if past is None:
        return FieldTrace(
            trace.field, winner, tuple(candidates), trace.merge, policy=rule, ruling=None
        )
    word, bound = past
    candidates[at] = winner.replace(status=Status.CLAMPED, reason=_why(field, word, bound))
    return _decided(trace, rule, candidates, bound, word, asked=winner)


def _decided(
    trace: FieldTrace,
    rule: Rule,
    candidates: list[Candidate],
    bound: Bound,
    ruling: str,
    asked: Candidate | None = None,
) -> FieldTrace:
    """The trace whose value the policy decided: its candidate ends the list, ``won``."""
    won = Candidate(
        source="policy",
        locator=bound.locator,
        status=Status.WON,
        value=bound.value,
        raw=bound.value,
        secret=trace.field.secret,
    )
    candidates.append(won)
    return FieldTrace(
        trace.field, won, tuple(candidates), trace.merge, policy=rule, ruling=ruling, asked=asked
    )


def _shadow(candidates: list[Candidate]) -> None:
    """Every candidate still standing is shadowed: the policy's value takes their place."""
    for at, candidate in enumerate(candidates):
        if candidate.status is Status.WON:
            candidates[at] = candidate.replace(status=Status.SHADOWED)


def _offered(candidates: list[Candidate]) -> bool:
    """Whether a source other than the built-in default gave the field a value."""
    return any(
        c.status in _STANDING and c.source != "default" and c.derived_from is None
        for c in candidates
    )


def _past(candidate: Candidate, rule: Rule, bounds: list[Bound]) -> tuple[str, Bound] | None:
    """Which of ``bounds`` the candidate's value is past, as ``("ceiling", max)`` or
    ``("floor", min)``."""
    value = candidate.value
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    for bound in bounds:
        limit = bound.value
        assert isinstance(limit, int | float), "max and min are numbers"
        if bound is rule.max and value > limit:
            return "ceiling", bound
        if bound is rule.min and value < limit:
            return "floor", bound
    return None


def _why(field: Field, word: str, bound: Bound) -> str:
    """``above the policy ceiling 200 (/etc/budgetconf/policy.json:4)``."""
    side = "above" if word == "ceiling" else "below"
    return f"{side} the policy {word} {_shown(field, bound)}"


def _shown(field: Field, bound: Bound) -> str:
    value = "" if field.secret else show_value(bound.value) + " "
    return f"{value}({bound.locator})"
