"""The ``profile`` source: a named or given JSON profile."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar

from budgetconf.schema import Schema
from budgetconf.sources._base import Context, SourceSpec
from budgetconf.sources._file import FileSource


def is_path(profile: str) -> bool:
    """A profile given as a path rather than a name: a separator, a leading ``~``, ``.json``."""
    return (
        os.sep in profile
        or (os.altsep is not None and os.altsep in profile)
        or profile.startswith("~")
        or profile.endswith(".json")
    )


class ProfileSource(FileSource):
    """``profile=``: a path, or a name looked up as ``<folder>/<name>.json``.

    Either way the caller named it, so a profile that does not exist is an error.
    """

    KIND = "profile"
    FORMAT = "json"
    OPTIONS: ClassVar[Mapping[str, type]] = {"folder": str}

    def __init__(self, spec: SourceSpec, schema: Schema) -> None:
        super().__init__(spec, schema)
        self._folder: str = spec.options.get("folder", "{home}/profiles")

    def path(self, ctx: Context) -> tuple[str | None, bool]:
        profile = ctx.request.profile
        if profile is None:
            return None, False
        if is_path(profile):
            return ctx.user_path(profile), True
        return os.path.join(ctx.preset_path(self._folder), profile + ".json"), True
