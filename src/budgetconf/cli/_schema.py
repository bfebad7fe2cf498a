"""``budgetconf schema``: the JSON Schema of a preset's settings files, for editors.

The schema is as strict as ``budgetconf check``: an unknown section or key is
a warning to budgetconf and an error to the editor, so a typo is caught as it
is typed. When a file source of the preset reads only some ``sections``, the
rest of its file belongs to the application and other top-level keys are
allowed. budgetconf skips top-level keys that begin with ``$``, and so does
the schema; it describes ``$schema`` (which names it to editors) and
``$comment`` (notes, which ``budgetconf init`` writes in JSON files). A table
field is an object whose keys follow its key rule (its `pattern`) and
whose values each have the field's type and bounds.
"""

from __future__ import annotations

from typing import Any, Final, TextIO

from budgetconf._description import SourceSpec
from budgetconf._engine import Preset
from budgetconf._field import Field, Kind, shown_default
from budgetconf._text_formats import FORMATS
from budgetconf._values import plain_number
from budgetconf.cli._output import EXIT_OK, write_json
from budgetconf.cli._parser import FILE_KINDS, CommandLine, Usage
from budgetconf.cli._resolution import chosen_preset

DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"
#: the sources that read a settings file of sections, with the format of that file

_TYPES: Final = {
    Kind.INT: "integer",
    Kind.NUMBER: "number",
    Kind.BOOL: "boolean",
    Kind.TEXT: "string",
}
# keys budgetconf skips (any that begins with `$`); these two are the ones in use
_EDITOR_KEYS: Final = {
    "$schema": {"type": "string", "description": "The JSON Schema of this file, for editors."},
    "$comment": {"description": "Notes for people; budgetconf skips this key."},
}
_OPS: Final = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
_BOUNDS: Final = {
    "ge": "minimum",
    "gt": "exclusiveMinimum",
    "le": "maximum",
    "lt": "exclusiveMaximum",
}


def pattern(name: str | None) -> str | None:
    """The rule of `FORMATS` named ``name`` as the JSON Schema ``pattern`` (ECMA-262) of the
    text it takes, for a rule one expression states (a ledger URL is judged by parsing it)."""
    found = None if name is None else FORMATS[name].pattern
    return None if found is None else f"^{found}$"


def rule(f: Field) -> str:
    """What the field takes, in words: ``an integer >= 1``; a table, its keys and values
    (``a table of tool-name keys, each an integer >= 0``)."""
    if f.kind is Kind.TABLE:
        return f"{f.noun}, each {rule(f.entry())}"
    bounds = [
        f"{op} {plain_number(getattr(f, bound))}"
        for bound, op in _OPS.items()
        if getattr(f, bound) is not None
    ]
    return f.noun + (" " + ", ".join(bounds) if bounds else "")


def describe(f: Field, *, with_rule: bool = False) -> str:
    """The field's help, then its default, variables and flags: what an editor shows on hover."""
    # a help text without a final full stop would run into the next sentence
    about = f.help if not f.help or f.help.endswith((".", "!", "?", ":")) else f.help + "."
    lines = [about, f"Takes {rule(f)}." if with_rule else "", f"Default: {shown_default(f)}."]
    table = f.kind is Kind.TABLE  # as text, a table is KEY=VALUE pairs
    if f.env:
        pairs = ", KEY=VALUE pairs between commas" if table else ""
        lines.append("Environment: " + ", ".join(f.env) + pairs + ".")
    if f.flags:
        lines.append(
            "Flags: " + ", ".join(f.flags) + (" KEY=VALUE, repeatable" if table else "") + "."
        )
    return "\n".join(line for line in lines if line)


def field_schema(f: Field) -> dict[str, Any]:
    """The schema of one field's value: its type, bounds or choices, default and description."""
    spec: dict[str, Any] = {"description": describe(f)}
    if f.kind is Kind.TABLE:
        # a table's keys are free, but each follows its rule; a value judged as the field's
        spec["type"] = "object"
        keys = pattern(f.keys)
        if keys is not None:
            spec["propertyNames"] = {"pattern": keys}
        spec["additionalProperties"] = value_schema(f.entry())
    else:
        spec.update(value_schema(f))
    if f.default is not None and f.public(f.default) == f.default:  # not a secret, nor one's
        spec["default"] = f.default  # part: an editor would write it in for the value
    return spec


def value_schema(f: Field) -> dict[str, Any]:
    """A value's type, bounds or choices, and its format's pattern: a field's, or a table's
    values' (its `entry`)."""
    spec: dict[str, Any] = {}
    if f.kind is Kind.ENUM:
        spec["enum"] = [*f.choices, *([None] if f.optional else [])]
    else:
        kind = _TYPES[f.kind]
        spec["type"] = [kind, "null"] if f.optional else kind
    for bound, keyword in _BOUNDS.items():
        limit = getattr(f, bound)
        if limit is not None:
            spec[keyword] = int(limit) if float(limit).is_integer() else limit
    text = pattern(f.format) if f.kind is Kind.TEXT else None
    if text is not None:
        spec["pattern"] = text
    return spec


def _file_specs(preset: Preset, kind: str | None) -> list[SourceSpec]:
    stack = preset.description.stack
    return [s for s in stack if s.kind in FILE_KINDS and kind in (None, s.kind)]


def file_sections(preset: Preset, kind: str | None = None) -> dict[str, tuple[Field, ...]]:
    """The sections that the ``kind`` file (any file, without ``kind``) of ``preset`` may set.

    A source with the ``sections`` option reads only those; one without reads them all.
    """
    specs = _file_specs(preset, kind)
    if not specs or any("sections" not in s.options for s in specs):
        return dict(preset.schema.sections)
    names = {name for s in specs for name in s.options["sections"]}
    return {name: fs for name, fs in preset.schema.sections.items() if name in names}


def json_schema(preset: Preset, kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the settings files of ``preset``.

    ``kind`` (``project``, ``global``, ``profile``) describes that source's
    file; without it, the files of all the preset's file sources.
    """
    sections = {}
    for section, fields in file_sections(preset, kind).items():
        properties: dict[str, Any] = {}
        for f in fields:
            properties[f.name] = field_schema(f)
            for alias in f.aliases:
                spec = field_schema(f)
                spec["description"] = f"Another name for {f.path}.\n" + spec["description"]
                properties[alias] = spec
        sections[section] = {
            "type": "object",
            "description": f"The {section} section of preset {preset.name}.",
            "properties": properties,
            "additionalProperties": False,
        }
    where = f"{kind} file" if kind else "settings files"
    return {
        "$schema": DRAFT,
        "title": f"budgetconf {where} (preset {preset.name})",
        "description": 'Sections of fields; values must have their type (40, not "40").',
        "type": "object",
        "properties": {**_EDITOR_KEYS, **sections},
        "patternProperties": {"^\\$": {}},  # any top-level `$` key, as the readers skip them
        # a source that reads some sections leaves the rest of its file to the application
        "additionalProperties": any("sections" in s.options for s in _file_specs(preset, kind)),
    }


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``schema``: a preset without the file asked for is a usage error."""
    line.no_app_args()
    preset = chosen_preset(line.ns)
    kind = line.ns.kind
    if kind is not None and not preset.has_source(kind):
        raise Usage(f"preset {preset.name!r} has no {kind} source")
    if not any(preset.has_source(k) for k in FILE_KINDS):
        raise Usage(f"preset {preset.name!r} reads no settings files")
    write_json(json_schema(preset, kind), out)
    return EXIT_OK
