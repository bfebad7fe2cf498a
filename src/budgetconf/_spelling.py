"""Near misses: which known name a mistyped one was most likely meant to be.

A leaf every room may use, for the did-you-mean of a field, a section, a
step, a profile, a variable or a flag.
"""

from __future__ import annotations


def did_you_mean(word: str, candidates: tuple[str, ...] | list[str]) -> str | None:
    """The candidate closest to ``word``, if any is close; case is ignored."""
    import difflib  # only on the error path

    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[hits[0]] if hits else None


def edits(a: str, b: str) -> int:
    """How many edits turn ``a`` into ``b``, case ignored.

    An edit inserts, deletes or replaces a letter, or swaps two neighbours
    (``lopo`` is one edit from ``loop``).
    """
    a, b = a.lower(), b.lower()
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        earlier, before, row = before, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(
                before[j] + 1,
                row[j - 1] + 1,
                before[j - 1] + (a[i - 1] != b[j - 1]),
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], earlier[j - 2] + 1)
    return row[len(b)]
