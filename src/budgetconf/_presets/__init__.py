"""The preset reader: a preset file, checked strictly, as a `Description`.

Built-in presets are the TOML files beside this module; an application passes
the path of its own file in the same format (see ``docs/presets-format.md``).
Files are checked strictly when read: an unknown key, a value of the wrong
type (``true`` is not a number) or a default that breaks its own field's rules
is a `PresetError`. The reader knows the source kinds only as the
`SourceKind` records it is given: it builds no source and resolves nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from budgetconf._description import Description, MergeMode, Policy, SourceKind, SourceSpec
from budgetconf._files import DEFAULT_MAX_FILE_BYTES, FileProblem, read_limited
from budgetconf._presets._fields import read_fields
from budgetconf._presets._loop import read_loop
from budgetconf._presets._tables import Bad, check_keys, strings, take
from budgetconf._schema import Schema
from budgetconf._spelling import did_you_mean
from budgetconf._values import show_text
from budgetconf.errors import PresetError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

FORMAT_VERSION: Final = 1
_HERE: Final = os.path.dirname(__file__)
_TOP_KEYS: Final = frozenset(
    {
        "format",
        "name",
        "summary",
        "home",
        "home_env",
        "max_file_bytes",
        "policy",
        "sources",
        "fields",
        "loop",
    }
)
_SOURCE_KEYS: Final = frozenset({"kind", "invalid", "merge"})


def preset_names() -> list[str]:
    """The names of the built-in presets."""
    return sorted(n[: -len(".toml")] for n in os.listdir(_HERE) if n.endswith(".toml"))


def builtin_path(name: str) -> str:
    """The file of the built-in preset ``name``. Raises `PresetError` for an unknown name."""
    path = os.path.join(_HERE, f"{name}.toml")
    if not os.path.isfile(path):
        hint = did_you_mean(name, preset_names())
        tail = f"; did you mean {hint!r}?" if hint else ""
        known = ", ".join(preset_names())
        raise PresetError(f"unknown preset {show_text(name)}{tail} (built-in presets: {known})")
    return path


def read_preset(path: str, *, origin: str, kinds: Mapping[str, SourceKind]) -> Description:
    """The preset in the file at ``path``, whose stack may name the source ``kinds``.

    Raises `PresetError` naming the file and the key that breaks the format.
    """
    import tomllib

    try:
        # bounded: a preset path may name a FIFO or /dev/zero
        data = tomllib.loads(read_limited(path, DEFAULT_MAX_FILE_BYTES)[0].decode("utf-8"))
    except FileProblem as exc:
        raise PresetError(f"preset {path}: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise PresetError(f"preset {path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"preset {path}: invalid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a huge integer, deep nesting
        raise PresetError(f"preset {path}: invalid TOML: {exc or 'nested too deeply'}") from None
    try:
        stem = os.path.splitext(os.path.basename(path))[0]
        return _build(data, origin=origin, path=path, stem=stem, kinds=kinds)
    except Bad as exc:
        raise PresetError(f"preset {path}: {exc}") from None


def _build(
    data: Mapping[str, Any], *, origin: str, path: str, stem: str, kinds: Mapping[str, SourceKind]
) -> Description:
    check_keys(data, _TOP_KEYS, "")
    version = take(data, "format", int, "")
    if version != FORMAT_VERSION:
        raise Bad(f"format: expected {FORMAT_VERSION}, got {version!r}")
    name = take(data, "name", str, "") or stem
    schema = read_fields(data)
    stack = _stack(data, schema, kinds) + _policy(data, kinds)
    max_bytes = take(data, "max_file_bytes", int, "")
    if max_bytes is not None and max_bytes < 1:
        raise Bad(f"max_file_bytes: expected a positive integer, got {max_bytes}")
    return Description(
        name=name,
        summary=take(data, "summary", str, "") or "",
        schema=schema,
        stack=stack,
        home=take(data, "home", str, "") or "~/.budgetconf",
        home_env=take(data, "home_env", str, ""),
        max_file_bytes=max_bytes or DEFAULT_MAX_FILE_BYTES,
        origin=origin,
        path=path,
        loop=read_loop(take(data, "loop", dict, ""), schema),
    )


def _stack(
    data: Mapping[str, Any], schema: Schema, kinds: Mapping[str, SourceKind]
) -> tuple[SourceSpec, ...]:
    entries = take(data, "sources", list, "")
    if not entries:
        raise Bad("sources: a preset needs at least one source")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise Bad(f"sources[{i}]: expected a table, got {entry!r}")
    stack = tuple(_source(i, entry, schema, kinds) for i, entry in enumerate(entries))
    names = [spec.kind for spec in stack]
    if names[0] != "default":
        raise Bad("sources: the stack starts with the default source, the floor of every field")
    if len(set(names)) != len(names):
        raise Bad("sources: each source kind may appear only once")
    for i, spec in enumerate(stack):
        for option, needed in kinds[spec.kind].needs.items():
            if option in spec.options and needed not in names:
                raise Bad(f"sources[{i}] ({spec.kind}).{option}: needs a {needed} source")
    return stack


def _policy(data: Mapping[str, Any], kinds: Mapping[str, SourceKind]) -> tuple[SourceSpec, ...]:
    """The policy source, above every other, when the top level names its file.

    The path is written as it is read: absolute, with no ``~`` or ``{home}``,
    so that nothing a user sets can move it.
    """
    path = take(data, "policy", str, "")
    if path is None:
        return ()
    if "policy" not in kinds:
        raise Bad("policy: no policy source kind is known to read it")
    if not os.path.isabs(path) or "{" in path:
        raise Bad(f"policy: expected an absolute path, got {show_text(path)}")
    return (SourceSpec("policy", Policy.ERROR, options={"path": os.path.normpath(path)}),)


def _source(
    index: int, entry: Mapping[str, Any], schema: Schema, kinds: Mapping[str, SourceKind]
) -> SourceSpec:
    where = f"sources[{index}]."
    name = take(entry, "kind", str, where)
    if name == "policy":
        raise Bad(f'{where}kind: the policy source is placed by the top level\'s policy = "PATH"')
    if name not in kinds:
        raise Bad(f"{where}kind: expected one of {', '.join(kinds)}, got {name!r}")
    kind = kinds[name]
    where = f"sources[{index}] ({name})."
    check_keys(entry, _SOURCE_KEYS | set(kind.options), where)
    invalid = take(entry, "invalid", str, where) or Policy.ERROR.value
    if invalid not in Policy.__members__.values():
        raise Bad(f"{where}invalid: expected error or fallback, got {invalid!r}")
    if "merge" in entry and not kind.defines_sections:
        raise Bad(f"{where}merge: the {name} source reads no sections, so it has nothing to merge")
    merge = _merge_modes(take(entry, "merge", dict, where) or {}, schema, where)
    values = {
        key: strings(entry, key, where) if kind_of is list else take(entry, key, kind_of, where)
        for key, kind_of in kind.options.items()
        if key in entry
    }
    return SourceSpec(name, Policy(invalid), merge, values)


def _merge_modes(table: Mapping[str, Any], schema: Schema, where: str) -> dict[str, MergeMode]:
    merge: dict[str, MergeMode] = {}
    for section, mode in table.items():
        if section not in schema.sections:
            raise Bad(f"{where}merge: no section {section!r} in the fields")
        if mode not in MergeMode.__members__.values():
            raise Bad(f"{where}merge.{section}: expected field or replace, got {mode!r}")
        merge[section] = MergeMode(mode)
    return merge
