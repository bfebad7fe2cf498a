"""Application preset files for tests: real TOML, written with tomli_w from Python values.

A test that needs an application's preset says what is in it (its fields, its
stack of sources, its loop table) and gets the path of the file. Tests of how
the preset reader copes with the text itself (broken TOML, a wrong type spelled
in TOML, a file edited line by line) keep their TOML inline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

import tomli_w

#: a source of the stack: its kind alone, or its kind and its options
SourceEntry: TypeAlias = str | Mapping[str, object]


def preset_file(
    folder: Path,
    *,
    fields: Mapping[str, Mapping[str, object]],
    sources: Sequence[SourceEntry] = ("default",),
    loop: Mapping[str, object] | None = None,
    name: str | None = None,
    file: str = "app.toml",
    **top: object,
) -> Path:
    """Write a preset of format 1 to ``folder / file`` and return its path.

    ``fields`` maps each field's path to its table (``{"type": "int", "default": 5}``).
    ``sources`` is the whole stack, lowest rank first; each entry is a kind
    (``"env"``) or a kind with its options (``{"kind": "env", "invalid": "fallback"}``);
    without it the stack is the default source alone. ``loop`` is the ``[loop]``
    table. ``name`` and the other top-level keys in ``top`` (``home``,
    ``home_env``, ``max_file_bytes``, ``summary``) are written only when given:
    without a name, the reader names the preset after its file.
    """
    document: dict[str, object] = {"format": 1}
    if name is not None:
        document["name"] = name
    document.update(top)
    document["sources"] = [{"kind": s} if isinstance(s, str) else dict(s) for s in sources]
    document["fields"] = {path: dict(table) for path, table in fields.items()}
    if loop is not None:
        document["loop"] = dict(loop)
    path = folder / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(document), encoding="utf-8")
    return path
