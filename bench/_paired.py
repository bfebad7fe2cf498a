"""Two ways of doing one piece of work, timed in alternating pairs: what the second costs.

A shared machine's slow spells last longer than one run, so a cost read as the
difference of two medians moves with them. Here each repetition runs both sides
back to back, in turn first and second (neither always runs on the other's warm
caches), and the cost is the median of the repetitions' own differences: a slow
spell that falls on a pair slows both its halves.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable


def paired(
    first: Callable[[], int], second: Callable[[], int], repeat: int, turns: int
) -> tuple[float, float, float]:
    """Nanoseconds per turn: the median of ``first``, of ``second``, and of what each pair's
    ``second`` took over its ``first``. Each callable makes one run of ``turns`` turns and
    returns the nanoseconds of its timed part (what it builds first is outside the timing)."""
    firsts: list[float] = []
    seconds: list[float] = []
    for n in range(repeat):
        if n % 2:
            y = second()
            x = first()
        else:
            x = first()
            y = second()
        firsts.append(x / turns)
        seconds.append(y / turns)
    costs = [y - x for x, y in zip(firsts, seconds, strict=True)]
    return statistics.median(firsts), statistics.median(seconds), statistics.median(costs)
