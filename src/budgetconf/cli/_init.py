"""``budgetconf init``: a settings file that explains every field and sets none.

A TOML file carries each field as a commented line with its default, so it
changes nothing until a line is uncommented; a table field, as a commented
table of its own (``# [tools.max_calls]`` / ``# web_search = 100``), after the
section's other fields, which the table's header would otherwise take in.
JSON has no comments: the file holds only a ``$comment`` list (budgetconf
skips keys that begin with ``$``) that says the same, and ``budgetconf
schema`` gives an editor the rest.

The file is written whole or not at all: a temporary file in the same folder,
flushed to disk, then linked into place (which fails if the file exists) or,
with ``--force``, renamed over it. The temporary file never outlives the call.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
import textwrap
from collections.abc import Mapping
from typing import Final, TextIO

from budgetconf._description import SourceSpec
from budgetconf._engine import Preset
from budgetconf._field import Field, Invalid, Kind
from budgetconf._schema import Schema
from budgetconf._text_formats import FORMATS
from budgetconf._values import Value
from budgetconf.cli._output import EXIT_ERROR, EXIT_OK, comment, json_text, say, toml_text
from budgetconf.cli._parser import FILE_KINDS, CommandLine, Usage
from budgetconf.cli._resolution import chosen_preset
from budgetconf.cli._schema import describe, file_sections
from budgetconf.errors import UsageError
from budgetconf.sources import KINDS, Request
from budgetconf.sources.profile import is_path
from budgetconf.sources.project import ProjectSource

_TITLE: Final = {kind: KINDS[kind].KIND.title for kind in FILE_KINDS}


def target(preset: Preset, kind: str, path: str | None) -> str:
    """The file to write: ``path``, else where the preset's ``kind`` source looks for it.

    A profile given by name goes to the preset's profiles folder, as ``--profile NAME`` reads it.
    """
    spec = _spec(preset, kind)
    ctx = preset.context(Request(os.environ))
    if kind == "profile":
        if path is None:
            raise UsageError("init --kind profile needs a NAME or PATH")
        if not is_path(path):
            folder = spec.options.get("folder", "{home}/profiles")
            return ctx.preset_path(os.path.join(folder, path + ".json"))
    if path is None:
        if "path" not in spec.options:
            raise UsageError(f"preset {preset.name!r} names no {kind} file: give a PATH")
        return ctx.preset_path(spec.options["path"])
    return ctx.user_path(path)


def _spec(preset: Preset, kind: str) -> SourceSpec:
    """The preset's ``kind`` source. Raises `UsageError` when it has none."""
    spec = next((s for s in preset.description.stack if s.kind == kind), None)
    if spec is None:
        raise UsageError(f"preset {preset.name!r} has no {kind} source")
    return spec


#: the examples tried first for a number with no default, then its bounds
_ROUND: Final[dict[Kind, Value]] = {Kind.INT: 100, Kind.NUMBER: 10.0}


def example(f: Field, schema: Schema) -> Value:
    """A value ``f`` takes, to show where it has no default: uncommented, it passes ``check``.

    A field whose default is another's shows that one's default; a number, a round
    value within its bounds, else a bound; text, its format's example.
    """
    tries: list[Value] = []
    if f.default_from is not None:
        tries.append(schema.by_path[f.default_from].default)
    if f.kind in _ROUND:
        tries += _numbers(f)
    elif f.kind is Kind.ENUM:
        tries += f.choices[:1]
    elif f.kind is Kind.BOOL:
        tries.append(False)
    else:
        tries.append(FORMATS[f.format].example if f.format is not None else "")
    for value in tries:
        try:
            return f.check_value(value)
        except Invalid:
            continue
    raise AssertionError(f"no example for {f.path}")  # pragma: no cover - bounds leave none


def shown(f: Field, schema: Schema) -> Value | dict[str, Value]:
    """The value a settings file shows for ``f``: its default, else an example (`example`).

    A default that shows only in part (a secret, a URL's password) is no value to
    write: it has an example too. A table with no key set shows one key, its key
    rule's example (``web_search``), with an example value.
    """
    if f.kind is Kind.TABLE:
        keys: object = f.default  # a mapping, though a field's default is typed as one value
        if isinstance(keys, Mapping) and keys and all(f.public(v) == v for v in keys.values()):
            return dict(keys)
        assert f.keys is not None, "a table has a rule for its keys"
        return {FORMATS[f.keys].example: example(f.entry(), schema)}
    if f.default is None or f.public(f.default) != f.default:
        return example(f, schema)
    return f.default


def _numbers(f: Field) -> list[Value]:
    """The examples of a number field, best first: round, each bound, a narrow range's middle."""
    kind: type[int] | type[float] = int if f.kind is Kind.INT else float
    tries: list[Value] = [_ROUND[f.kind]]
    tries += [
        kind(b + step) for b, step in ((f.ge, 0), (f.gt, 1), (f.le, 0), (f.lt, -1)) if b is not None
    ]
    low = f.ge if f.ge is not None else f.gt
    high = f.le if f.le is not None else f.lt
    if low is not None and high is not None:
        tries.append(kind((low + high) / 2))
    return tries


def _about(f: Field) -> str:
    return " ".join(describe(f, with_rule=True).splitlines())


def toml_file(preset: Preset, kind: str) -> str:
    """Every field as a commented line with its default: the file sets nothing as written.

    Each comment is made one line by `comment`, whatever a preset's name or
    help holds, so no text of the preset can start a line that sets a value.
    """
    import tomli_w

    lines: list[str | None] = [  # each a comment line; None, a blank line
        f"{_TITLE[kind]} for preset {preset.name}, written by `budgetconf init`.",
        "",
        "Nothing is set: every value below is commented out and shows the built-in",
        "default, or an example where there is none (Default: unset). To set one,",
        "uncomment its section header and its line, then run `budgetconf explain`",
        'to see it win. Values must have their type: 40, not "40". `budgetconf',
        "schema` gives editors these rules as a JSON Schema.",
    ]
    for section, fields in file_sections(preset, kind).items():
        # a table's header takes in the lines under it: the tables come last, each under its
        # own ([tools.max_calls]), and a section of tables alone needs no header of its own
        ordered = sorted(fields, key=lambda f: f.kind is Kind.TABLE)
        lines.append(None)
        if ordered[0].kind is not Kind.TABLE:
            lines.append(f"[{section}]")
        for f in ordered:
            # a name longer than the line stays whole: a variable or flag cut in two is no name
            lines += textwrap.wrap(_about(f), 76, break_long_words=False, break_on_hyphens=False)
            # uncommented, every line is TOML that check passes: a field with no default
            # (or one that shows only in part, a secret or a URL's password) has an example
            value = shown(f, preset.schema)
            setting = {section: {f.name: value}} if f.kind is Kind.TABLE else {f.name: value}
            lines += tomli_w.dumps(setting).strip().splitlines()
            lines.append("")
        lines.pop()
    text = "\n".join("" if line is None else comment(line) for line in lines)
    return toml_text(text + "\n")


def json_file(preset: Preset, kind: str) -> str:
    """A document that sets nothing and, in ``$comment``, says what each field takes."""
    notes = [
        f"{_TITLE[kind]} for preset {preset.name}, written by `budgetconf init`.",
        'Nothing is set. Add a section to set a value: "loop": {"max_steps": 60}.',
        "`budgetconf schema` gives editors the rules as a JSON Schema.",
    ]
    for section, fields in file_sections(preset, kind).items():
        for f in fields:
            note = f"{f.path}: {_about(f)}"
            if f.kind is Kind.TABLE:  # its shape is no setting's: an example says it
                setting = {section: {f.name: shown(f, preset.schema)}}
                note += f" Set as {json.dumps(setting, ensure_ascii=False)[1:-1]}."
            notes.append(note)
    return json_text({"$comment": notes})


class WriteError(Exception):
    """A settings file that was not written: the one line that says why."""


def write_new(path: str, text: str, *, force: bool, make_folder: bool = False) -> None:
    """Write ``text`` to ``path`` whole or not at all. Raises `WriteError`.

    A symbolic link is written through: its target gets the text, the link stays.
    A missing folder is refused, by name, unless ``make_folder`` (the preset's own
    folder, such as ``~/.budgetconf/profiles``): a mistyped folder must not be made.
    """
    if os.path.isdir(path):
        raise WriteError(f"{path} is a directory")
    folder = os.path.dirname(path)
    if not make_folder and not os.path.lexists(folder):
        raise WriteError(f"cannot write {path}: no folder {folder}")
    try:
        _write(os.path.realpath(path), text, force=force)
    except FileExistsError:
        raise WriteError(f"{path} exists; pass --force to overwrite it") from None
    except OSError as exc:  # name the file asked for, never the temporary one
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write(path: str, text: str, *, force: bool) -> None:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:  # a file where the folder should be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder) from None
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as an ordinary file would be, not mkstemp's 0600
        if force:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # atomic, and refuses an existing path
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links
                create_new(path, text)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def create_new(path: str, text: str) -> None:
    """Write ``text`` to a file made for it: `FileExistsError` if ``path`` exists.

    Where a file cannot be linked into place, an exclusive create still never
    overwrites; a write that fails removes the file it made.
    """
    with open(path, "x", encoding="utf-8") as stream:
        try:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        except BaseException:
            os.unlink(path)
            raise


_EXTENSIONS: Final = {".toml": "toml", ".json": "json"}


def _format(kind: str | None, fmt: str | None, path: str | None) -> tuple[str, str]:
    """The kind of file and its format, from the options and the file's extension."""
    named = None
    if path is not None and (kind != "profile" or is_path(path)):
        named = _EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if fmt is not None and named is not None and fmt != named:
        raise UsageError(f"--format {fmt}, but {path} is a {named.upper()} file name")
    fmt = fmt or named
    if kind is None:
        kind = "global" if fmt == "json" else "project"
    if fmt is not None and FILE_KINDS[kind] != fmt:
        given = path if named is not None else f"--format {fmt}"
        raise UsageError(
            f"the {kind} file is {FILE_KINDS[kind].upper()}, not {fmt.upper()}: {given}"
        )
    return kind, FILE_KINDS[kind]


def init(
    preset: Preset, path: str | None, kind: str | None, fmt: str | None, force: bool, out: TextIO
) -> None:
    """Write the settings file and say where. Raises `UsageError`, `WriteError`.

    Without ``fmt``, a PATH ending in ``.toml`` or ``.json`` gives the format; a PATH of
    ``-`` is standard output, as for ``report -o -``.
    """
    stdout = path == "-"
    kind, fmt = _format(kind, fmt, None if stdout else path)
    if stdout:
        _spec(preset, kind)
    else:
        where = target(preset, kind, path)
    text = toml_file(preset, kind) if fmt == "toml" else json_file(preset, kind)
    if stdout:
        out.write(text)
        return
    if kind == "project":
        _refuse_hiding(preset, where)
    # a folder the preset names is its own to make (~/.budgetconf), never one a PATH names
    own = path is None or (kind == "profile" and not is_path(path))
    write_new(where, text, force=force, make_folder=own)
    say(out, f"wrote {where}: {kind} settings for preset {preset.name}, nothing set yet")


def _refuse_hiding(preset: Preset, where: str) -> None:
    """Raise `WriteError` when a project file at ``where`` would hide the project's own file
    from the working directory, or be hidden by it: either way a value set in it would not
    be the one read here, and no word of it."""
    source = preset.by_kind["project"]
    assert isinstance(source, ProjectSource)
    clash = source.hidden(preset.context(Request(os.environ)), where)
    if clash is None:
        return
    found, hides = clash
    if hides:
        raise WriteError(
            f"{where} would hide {found}, the project file read here; set values there,"
            " or write another file and name it with --project"
        )
    raise WriteError(
        f"{where} would not be read here: {found} is the project file found first;"
        " write it there, or name it with --project"
    )


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``init``: a file that cannot be written fails it, with one line on ``err``."""
    line.no_app_args()
    preset = chosen_preset(line.ns)
    ns = line.ns
    try:
        init(preset, ns.path, ns.kind, ns.file_format, ns.force, out)
    except UsageError as exc:
        raise Usage(str(exc)) from None
    except WriteError as exc:
        say(err, f"budgetconf: error: {exc}")
        return EXIT_ERROR
    return EXIT_OK
