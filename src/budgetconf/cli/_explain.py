"""``budgetconf explain``: every value, where it came from and what it overrode.

Three formats: the table for people (drawn by ``_table``, the only user of
rich), the JSON document for tools, and TOML, the values as a project file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from budgetconf._field import Kind
from budgetconf._record import MASK
from budgetconf._resolution import explain_document
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, document, problems, say, write_json
from budgetconf.cli._parser import CommandLine, Usage
from budgetconf.cli._resolution import PresetFailed, Resolved, chosen_traces, resolve
from budgetconf.ledger._address import conceal

if TYPE_CHECKING:
    from budgetconf._field import Field
    from budgetconf._resolution import Resolution


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``explain``: the exit code is 1 when a value or a source failed, or with
    ``--for`` when the framework would refuse a budget."""
    name = getattr(line.ns, "framework", None)
    via = getattr(line.ns, "via", None)
    model = getattr(line.ns, "model_name", None)
    if name is None:
        if via is not None:
            raise Usage("--via says which way into a bridge --for judges: give --for FRAMEWORK")
        if model is not None:
            raise Usage("--model-name names the model of the bridge --for judges: give --for")
        return shown(line, explain, out, err)
    if line.ns.format == "toml":
        raise Usage("--for shows in the table and in the JSON document, not in TOML")
    if model is not None and not model.strip():
        raise Usage("--model-name: expected a model's name, got an empty one")
    from functools import partial

    return shown(line, partial(_explain_for, name, via or "run", model), out, err)


def _explain_for(
    name: str, via: str, model: str | None, found: Resolved, fmt: str, out: TextIO, err: TextIO
) -> int:
    """``explain`` in ``fmt``, and what the framework ``name`` gets (a cost budget judged at
    the price of ``model``): 1 on a budget it refuses ``via`` its ``run()`` or its
    ``limits()``."""
    from budgetconf.cli import _for  # the frameworks' table, only when asked for

    framework = _for.described(name, found.res, model)
    if fmt == "json":
        data = found.res.to_dict(found.fields)
        data["framework"] = framework
        write_json(data, out)
        code = EXIT_ERROR if found.res.errors else EXIT_OK
    else:
        code = explain(found, fmt, out, err)
        _for.write(framework, out, err)
    return EXIT_ERROR if _for.refused(framework, via) else code


def shown(
    line: CommandLine,
    show: Callable[[Resolved, str, TextIO, TextIO], int],
    out: TextIO,
    err: TextIO,
) -> int:
    """The command line resolved and given to ``show`` in its format; explain and check share
    this, so a preset file that cannot be read fails both the same way."""
    try:
        found = resolve(line)
    except PresetFailed as exc:
        return preset_failed(exc, line.ns.format, out, err)
    return show(found, line.ns.format, out, err)


def explain(found: Resolved, fmt: str, out: TextIO, err: TextIO) -> int:
    """Show the resolution in ``fmt``, its errors (and, but in the table, warnings) on ``err``."""
    res, preset, fields = found.res, found.preset, found.fields
    if fmt == "json":
        document(res, fields, out)
    elif fmt == "toml":
        problems(res, err, warnings=True)
        out.write(_toml(res, fields))
    else:
        problems(res, err, warnings=False)  # the table shows the warnings itself
        from budgetconf.cli._table import render

        render(res, preset, fields, out)
    return EXIT_ERROR if res.errors else EXIT_OK


def _toml(res: Resolution, fields: list[str]) -> str:
    """The resolved values as a project file: a table per section, unset fields left out,
    and a table field's keys under its own header (``[tools.max_calls]``).

    A value taken from another field is left out too: written down, it would
    stop following that field. So is every value the file cannot hold as it
    is, with a comment that says why and how to set it: a secret field's, and
    a text whose rendering hides part of it (a URL's password, masked). Written
    as shown, the mask would read back as the value.
    """
    import tomli_w

    from budgetconf.cli._output import comment, toml_text

    kinds = {report.source for report in res.sources}
    sections: dict[str, dict[str, Any]] = {}
    left_out: list[str] = []
    for field, traces in chosen_traces(res, fields):
        for trace in traces:  # a table's keys, each set on its own
            f, value = trace.field, trace.value
            if value is None or trace.winner.derived_from:
                continue  # unset, or standing in for another field: left to follow that field
            if f.secret:
                left_out.append(f"{f.path} is secret and left out; {_how_to_set(field, kinds)}.")
            elif conceal(value) != value:
                left_out.append(
                    f"{f.path} is left out: its password would be written as {MASK}, not as"
                    f" itself; {_how_to_set(field, kinds)}."
                )
            elif f.key is not None:  # under [section.table]
                sections.setdefault(field.section, {}).setdefault(field.name, {})[f.key] = value
            else:
                sections.setdefault(f.section, {})[f.name] = value
    header = [f"Resolved by budgetconf explain, preset {res.preset}.", *left_out]
    return toml_text("\n".join(map(comment, header)) + "\n\n" + tomli_w.dumps(sections))


def _how_to_set(f: Field, kinds: set[str]) -> str:
    """How to set a field the file leaves out: its variable, else its flag, else by hand (a
    table's key under the table's own header)."""
    if f.env and "env" in kinds:
        return f"set it with {f.env[0]}"
    if f.flags and "cli" in kinds:
        return f"set it with {f.flags[0]}"
    header = f.path if f.kind is Kind.TABLE else f.section
    return f"write it here under [{header}] in full"


def preset_failed(exc: PresetFailed, fmt: str, out: TextIO, err: TextIO) -> int:
    """A preset file that cannot be loaded: a one-line error, and an empty document in JSON."""
    if fmt == "json":
        write_json(explain_document(exc.preset, {}, [], [], [str(exc)]), out)
    else:
        say(err, f"budgetconf: error: {exc}")
    return EXIT_ERROR
