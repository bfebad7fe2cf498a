"""The ``global`` source: user-wide JSON settings (``~/.budgetconf/settings.json``)."""

from __future__ import annotations

from budgetconf._description import Argument, SourceKind
from budgetconf.sources._settings_file import FILE_OPTIONS, FileSource

__all__ = ["GlobalSource"]


class GlobalSource(FileSource):
    """The file named by ``global_file=``, else the preset's ``path`` (``{home}`` expands)."""

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "global",
        options=FILE_OPTIONS,
        defines_sections=True,
        argument=Argument(
            "global_file",
            option="--global",
            metavar="PATH",
            help="the global settings file (JSON) instead of the default location",
            text=True,
        ),
        label="the global file",
        names_file=True,
        format="json",
        title="User-wide settings",
    )
