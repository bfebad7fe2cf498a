"""One field set twice in one place, by two of its names: which one stands, and why not the other.

A field answers to its name and to its aliases (``max_steps``, ``max_turns``).
A section of a file, a workflow step or a mapping given in code that sets one
field by two of them has said two things at once; nothing tells which was
meant, so the source refuses all but one. The field's own name stands over an
alias, and of two aliases the one the preset lists first, as of a field's
variables the first listed wins. The others are offered refused, with a reason
that names the one that stands and where it is: the merge then rejects them
like any bad value, an error under the source's ``error`` policy and a warning
under ``fallback``.
"""

from __future__ import annotations

from budgetconf._field import Field
from budgetconf._schema import Schema
from budgetconf.sources._records import Offer


def one_name_each(offers: list[Offer], schema: Schema, *, dotted: bool = False) -> list[Offer]:
    """``offers``, from one place, with each field's second name (and third) refused.

    ``dotted`` names keys with their section, as code writes them
    (``loop.max_turns``); there every offer has the same locator, so the
    reason does not repeat it.
    """
    by_field: dict[tuple[str, str | None], list[Offer]] = {}
    for offer in offers:  # a table's keys are set each as a field of its own
        by_field.setdefault((offer.field, offer.entry), []).append(offer)
    if all(len(same) == 1 for same in by_field.values()):
        return offers  # the common case: every field set once
    refused: dict[int, Offer] = {}
    for (path, _), same in by_field.items():
        if len(same) == 1:
            continue
        field = schema.by_path[path]
        standing = min(same, key=lambda offer: _rank(field, offer))
        for offer in same:  # a table's keys it cannot take are offered apart, by one name
            if offer.key != standing.key:
                why = _why(field, offer, standing, dotted=dotted)
                refused[id(offer)] = offer.replace(refused=why)
    return [refused.get(id(offer), offer) for offer in offers]


def _rank(field: Field, offer: Offer) -> int:
    """0 for the field's own name, then its aliases in the order the preset lists them."""
    return 0 if offer.key is None else 1 + field.aliases.index(offer.key)


def _why(field: Field, offer: Offer, standing: Offer, *, dotted: bool) -> str:
    def named(key: str | None) -> str:
        name = field.name if key is None else key
        return f"{field.section}.{name}" if dotted else name

    loser, winner = named(offer.key), named(standing.key)
    where = "given too" if dotted else f"set too at {standing.locator}"
    if standing.key is None:
        return f"{loser} is an alias of {winner}, which is {where}"
    both = f"{loser} and {winner} are both aliases of {field.path}"
    return f"{both}, and {winner} (listed first) is {where}"
