"""The ``project`` source: project TOML settings (``./settings.toml``)."""

from __future__ import annotations

from budgetconf.sources._base import Request
from budgetconf.sources._file import FileSource


class ProjectSource(FileSource):
    """The file named by ``project_file=``, else the preset's ``path``, relative to the cwd."""

    KIND = "project"
    FORMAT = "toml"

    def named(self, request: Request) -> str | None:
        return request.project_file
