"""The ``cli`` source: the application's own command-line flags."""

from __future__ import annotations

from collections.abc import Hashable

from budgetconf._description import Argument, SourceKind, SourceSpec
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean
from budgetconf.sources._records import Context, Layer, Offer, Problem, SourceStatus

__all__ = ["CliSource"]


class CliSource:
    """Flags from ``argv=`` (``--max-steps 300`` or ``--max-steps=300``), as text.

    Arguments that are not the schema's flags belong to the application and
    are skipped; one that looks like a misspelt flag is reported. A flag given
    twice offers both values, the later one winning, as with argparse; a flag
    followed by another ``--`` argument has no value (``-5`` is a value).
    ``sys.argv`` is never read: without ``argv=`` the source is not configured.
    """

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "cli", argument=Argument("argv", shown="arguments after --"), request_keyed=True
    )

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        self._flags = schema.by_flag

    def key(self, ctx: Context) -> Hashable:
        argv = ctx.request.arguments.get("argv")
        return () if argv is None else ("argv", *argv)

    def load(self, ctx: Context) -> Layer:
        argv = ctx.request.arguments.get("argv")
        if argv is None:
            return Layer.not_configured()
        offers: list[Offer] = []
        problems: list[Problem] = []
        warnings: list[str] = []
        args = list(argv)
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                break
            if not arg.startswith("--"):
                continue
            flag, eq, value = arg.partition("=")
            fields = self._flags.get(flag)
            if fields is None:
                hint = did_you_mean(flag, list(self._flags))
                if hint:
                    warnings.append(f"{flag} is not a known flag; did you mean {hint}?")
                continue
            if not eq:
                if i >= len(args) or args[i].startswith("--"):  # as argparse: not a value
                    problems.append(Problem(f"{flag} needs a value", flag, fields[0].path))
                    continue
                value = args[i]
                i += 1
            offers.extend(Offer(f.path, value, flag, text=True) for f in fields)
        return Layer(
            SourceStatus.LOADED,
            "command line",
            tuple(offers),
            {},
            tuple(problems),
            tuple(warnings),
        )
