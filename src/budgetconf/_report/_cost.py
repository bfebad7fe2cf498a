"""A run's cost: the price in force, and what the run spent by input, cached input and output.

Amounts are kept in whole picodollars, as the loop sums them, so that the
parts add up to the run's cost exactly. A response priced at the run's price
(``run_started``'s ``prices``) is split: its uncached input, cached input and
output tokens, each at its rate. A response whose cost was reported is one
sum, shown whole; so is one priced at another price than the run's (another
model's it named, a tiered price), which its cost tells apart: the rates do
not give it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

from budgetconf._report._runs import RunView, Turn
from budgetconf._report._text import attr, breakable, number, text

#: picodollars in a US dollar
PICO: Final = 10**12
#: a rate is in dollars per million tokens: at $1 per Mtok a token costs 10**6 picodollars
_PER_TOKEN: Final = 10**6
#: the parts a priced response is split into: key, and how the page names it
PARTS: Final = (("input", "input, not cached"), ("cached", "cached input"), ("output", "output"))
#: what a cost cell says when no response reported one (0 would say it cost nothing)
NOT_REPORTED: Final = "not reported"


@dataclass(slots=True)
class Share:
    """Responses whose cost is one sum: how many, their tokens, and what they cost."""

    responses: int = 0
    tokens: int = 0
    picodollars: int = 0
    models: list[str] = field(default_factory=list)  # the models they name, each once

    def add(self, turn: Turn, picodollars: int) -> None:
        self.responses += 1
        self.tokens += int(turn.tokens)
        self.picodollars += picodollars
        if turn.model is not None and turn.model not in self.models:
            self.models.append(turn.model)


@dataclass(slots=True)
class Costs:
    """What a run spent, in picodollars: split by part, and the sums that cannot be."""

    split: dict[str, int]  # input (not cached), cached, output: of the responses split
    tokens: dict[str, int]  # their tokens, by the same parts
    reported: Share  # responses that reported their own cost
    otherwise: Share  # responses priced at another price than the run's
    unknown: Share  # responses whose cost is not known
    children: int  # what its children spent, charged to it
    carried: int  # what a resumed run started from
    known: bool  # whether any of it is a cost known (else: not reported)

    @property
    def total(self) -> int:
        shares = self.reported.picodollars + self.otherwise.picodollars
        return sum(self.split.values()) + shares + self.children + self.carried


def picodollars(amount: float) -> int:
    """A number of US dollars (a float as JSON wrote it, or an integer) in whole picodollars."""
    if isinstance(amount, float):
        whole, _, decimals = repr(amount).partition(".")
        if len(decimals) <= 12 and decimals.isdigit() and whole.isdigit():  # 0.00072, not 1e-05
            return int(whole + decimals.ljust(12, "0"))  # as written: no float arithmetic
    return round(_exact(amount) * PICO)


def _exact(amount: float) -> Fraction:
    """The number as written: a float's shortest form (``0.15``, not its binary neighbour)."""
    return Fraction(repr(amount)) if isinstance(amount, float) else Fraction(amount)


def per_mtok(prices: dict[str, Any]) -> tuple[float, float, float]:
    """A price's rates in dollars per million tokens: input, cached input (the input's when
    the price gives none), output."""
    inputs, cached = prices["input_per_mtok"], prices.get("cached_input_per_mtok")
    return inputs, inputs if cached is None else cached, prices["output_per_mtok"]


class Rates:
    """A price's rates per token in picodollars, exactly, as whole numbers over one
    ``denominator``: a rate of seven decimals is a fraction of a picodollar a token, and
    whole numbers keep a long run's sums fast."""

    __slots__ = ("denominator", "scaled")

    def __init__(self, prices: dict[str, Any]) -> None:
        exact = [_exact(r) * _PER_TOKEN for r in per_mtok(prices)]
        self.denominator = math.lcm(*(r.denominator for r in exact))
        self.scaled = [int(r * self.denominator) for r in exact]

    def parts(self, turn: Turn) -> list[int] | None:
        """The response's cost at these rates, by part, times ``denominator``; None when its
        event gives no split counts, or counts no split holds (more cached than input)."""
        inputs, cached, outputs = turn.input_tokens, turn.cached_input_tokens, turn.output_tokens
        if inputs is None or cached is None or outputs is None or cached > inputs:
            return None
        counts = (inputs - cached, cached, outputs)
        return [n * rate for n, rate in zip(counts, self.scaled, strict=True)]

    def make(self, parts: list[int], spent: int) -> bool:
        """Whether the parts make the response's cost: to a few picodollars (the loop prices
        in floats), and a part in 10**12 of a large one."""
        return abs(sum(parts) - spent * self.denominator) <= (2 + spent // PICO) * self.denominator


class _Tally:
    """The run's responses, each counted where its cost belongs."""

    def __init__(self, run: RunView) -> None:
        self.rates = Rates(run.prices) if run.prices is not None else None
        self.scaled = [0] * len(PARTS)  # the split's exact parts, times the rates' denominator
        self.tokens = [0] * len(PARTS)
        self.split = 0  # responses split
        self.target = 0  # what they cost, as their events say
        self.reported, self.otherwise, self.unknown = Share(), Share(), Share()

    def add(self, turn: Turn) -> None:
        spent = picodollars(turn.cost_usd)
        if not turn.cost_reported:
            self.unknown.add(turn, 0)
        elif turn.cost_source != "priced":
            self.reported.add(turn, spent)  # a version-1 event's cost above 0 was reported too
        else:
            rates = self.rates
            parts = None if rates is None else rates.parts(turn)
            if rates is None or parts is None or not rates.make(parts, spent):
                self.otherwise.add(turn, spent)
                return
            self.scaled = [a + b for a, b in zip(self.scaled, parts, strict=True)]
            self.tokens = [a + b for a, b in zip(self.tokens, _counts(turn), strict=True)]
            self.split += 1
            self.target += spent

    def exact(self) -> list[Fraction]:
        denominator = self.rates.denominator if self.rates is not None else 1
        return [Fraction(part, denominator) for part in self.scaled]


def costs_of(run: RunView) -> Costs:
    """The run's cost: its responses' (split where they can be), its children's, and what it
    carried over."""
    tally = _Tally(run)
    for turn in (run.turns[n] for n in sorted(run.turns)):
        if turn.responded:
            tally.add(turn)
    children = sum(picodollars(spent) for spent in _children_spent(run))
    carried = picodollars(run.carried_over("cost_usd"))
    known = bool(tally.split or tally.reported.responses or tally.otherwise.responses)
    keys = [key for key, _ in PARTS]
    return Costs(
        dict(zip(keys, apportioned(tally.exact(), tally.target), strict=True)),
        dict(zip(keys, tally.tokens, strict=True)),
        tally.reported,
        tally.otherwise,
        tally.unknown,
        children,
        carried,
        known or bool(children or carried),
    )


def _children_spent(run: RunView) -> list[float]:
    """What each child spent, as its end says: charged to the run as `RunView.charged` counts."""
    ends = (child.end or {} for child in run.children)
    found = (end.get("cost_usd") for end in ends)
    return [spent for spent in found if isinstance(spent, int | float) and spent]


def _counts(turn: Turn) -> tuple[int, int, int]:
    inputs, cached = turn.input_tokens or 0, turn.cached_input_tokens or 0
    return inputs - cached, cached, turn.output_tokens or 0


def apportioned(exact: list[Fraction], target: int) -> list[int]:
    """Whole picodollars for each exact part, summing to ``target``: each part rounded down,
    then the picodollars left given to the parts that lost the most (largest remainder), and
    what is still left (the loop's rounding, a picodollar a response) to the largest part."""
    whole = [int(part // 1) for part in exact]
    left = target - sum(whole)
    order = sorted(range(len(exact)), key=lambda i: exact[i] - whole[i], reverse=True)
    for i in order[: max(0, min(left, len(order)))]:
        whole[i] += 1
        left -= 1
    if left:
        whole[max(range(len(whole)), key=whole.__getitem__)] += left
    return whole


def usd(amount: int) -> str:
    """Picodollars as US dollars, every digit they have: ``$0.00015``, ``$1,234.5``."""
    dollars = Decimal(amount).scaleb(-12)
    shown = f"{dollars.normalize():,f}"
    return "$" + (shown if len(shown) <= 30 else f"{dollars:.6g}")  # 10**20 dollars: no one's


def rate(value: float) -> str:
    """A rate as prices are written (``0.60``, two decimals), or with all the digits it has."""
    if value >= 10**15:  # a rate no model has: shown as the number it is
        return number(float(value))
    cents = f"{float(value):.2f}"
    if float(cents) == value:
        return cents
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    return f"{exact:f}"


def rates_shown(prices: dict[str, Any]) -> str:
    """``$0.15 / $0.60 per Mtok`` (input / output), the cached rate where it differs, as the
    stop message and `budgetconf prices` say it."""
    inputs, cached, outputs = per_mtok(prices)
    shown = f"${rate(inputs)} / ${rate(outputs)}"
    if cached != inputs:
        shown += f" (cached ${rate(cached)})"
    return shown + " per Mtok"


def price_line(run: RunView) -> str:
    """The price in force: ``gpt-4o-mini at genai-prices 0.2.3: $0.15 / $0.60 per Mtok``,
    with its source; or that there was none, or that the events name none."""
    prices = run.prices
    if prices is None:
        if run.prices_named:
            said = "No price in force: a cost counts only where a response reported it."
        else:
            said = (
                "No price named: these events are from before a run named its price; a cost"
                " counts only where a response reported it."
            )
        return f'<p class="price">{said}</p>'
    model = prices.get("model")
    who = text(model) if model else "any model"  # the price fields price whatever model runs
    locator = prices.get("locator")
    at = f" at {breakable(locator)}" if locator else ""
    source = prices.get("source")
    whence = f" (source: {text(source)})" if source else ""
    return (
        f'<p class="price">Price in force: <span class="model">{who}</span>{at}:'
        f" {text(rates_shown(prices))}{whence}.</p>"
    )


def section(run: RunView) -> str:
    """The run's cost section; none for a run that tells nothing of cost (no cost budget,
    no price, no cost known)."""
    costs = costs_of(run)
    if not (costs.known or run.prices is not None or "max_cost_usd" in run.limits):
        return ""
    rows = _split_rows(run, costs) + _share_rows(costs)
    if costs.children:
        rows.append(_row("children", "its children", "–", "–", costs.children))
    if costs.carried:
        rows.append(_row("carried", "carried over (resumed)", "–", "–", costs.carried))
    rows.append(_row("total", "total", "–", "", costs.total if costs.known else None))
    head = "<tr><th>part</th><th>tokens</th><th>$ per Mtok</th><th>cost</th></tr>"
    table = f'<div class="scroll"><table class="cost">{head}{"".join(rows)}</table></div>'
    return (
        f'<section class="cost"><h3>Cost</h3>{price_line(run)}{table}{_notes(run, costs)}</section>'
    )


def _split_rows(run: RunView, costs: Costs) -> list[str]:
    if run.prices is None:
        return []
    return [
        _row(key, label, number(costs.tokens[key]), f"${rate(r)}", costs.split[key])
        for (key, label), r in zip(PARTS, per_mtok(run.prices), strict=True)
    ]


def _share_rows(costs: Costs) -> list[str]:
    rows = []
    for key, share, label in (
        ("reported", costs.reported, "reported by the responses, not split"),
        ("otherwise", costs.otherwise, "priced at another price, not split"),
        ("unknown", costs.unknown, "no cost known"),
    ):
        if share.responses:
            spent = share.picodollars if key != "unknown" else None
            said = f"{label} ({share.responses:,} response{'' if share.responses == 1 else 's'})"
            rows.append(_row(key, said, number(share.tokens), "–", spent))
    return rows


def _row(key: str, label: str, tokens: str, per_mtok: str, spent: int | None) -> str:
    """One part: its tokens, its rate, its cost (None: not reported), in picodollars too."""
    cost = usd(spent) if spent is not None else NOT_REPORTED
    exact = f' data-picodollars="{spent}"' if spent is not None else ""
    return (
        f'<tr data-part="{attr(key)}"{exact}><td>{label}</td><td class=num>{tokens}</td>'
        f"<td class=num>{text(per_mtok)}</td><td class=num>{text(cost)}</td></tr>"
    )


def _notes(run: RunView, costs: Costs) -> str:
    said = []
    if costs.reported.responses:
        said.append(
            "A cost a response reported is one sum: it cannot be split by input, cached and"
            " output, and is shown as reported."
        )
    if costs.otherwise.responses:
        models = ", ".join(text(m, 80) for m in costs.otherwise.models[:5])
        named = f" (they name {models})" if models else ""
        said.append(
            "A response priced at another price than the run's, another model's or a tiered one,"
            f" is shown whole{named}."
        )
    recorded = (run.stopped or {}).get("cost_usd")
    if isinstance(recorded, int | float) and costs.known:
        spent = picodollars(recorded)
        if abs(spent - costs.total) > 2 + spent // PICO:
            said.append(
                f"The run's stopped event counts {text(usd(spent))}: the events above account"
                f" for {text(usd(costs.total))} (a line left out, or a child's end missing?)."
            )
    return "".join(f'<p class="empty">{line}</p>' for line in said)
