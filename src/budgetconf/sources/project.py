"""The ``project`` source: project TOML settings (``./settings.toml``)."""

from __future__ import annotations

from budgetconf._description import Argument, SourceKind
from budgetconf.sources._settings_file import FILE_OPTIONS, FileSource

__all__ = ["ProjectSource"]


class ProjectSource(FileSource):
    """The file named by ``project_file=``, else the preset's ``path``, relative to the cwd."""

    __module__ = "budgetconf.sources"

    KIND = SourceKind(
        "project",
        options=FILE_OPTIONS,
        defines_sections=True,
        argument=Argument(
            "project_file",
            option="--project",
            metavar="PATH",
            help="the project settings file (TOML) instead of ./settings.toml",
            text=True,
        ),
        label="the project file",
        names_file=True,
        format="toml",
        title="Project settings",
    )
