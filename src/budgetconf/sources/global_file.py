"""The ``global`` source: user-wide JSON settings (``~/.budgetconf/settings.json``)."""

from __future__ import annotations

from budgetconf.sources._base import Request
from budgetconf.sources._file import FileSource


class GlobalSource(FileSource):
    """The file named by ``global_file=``, else the preset's ``path`` (``{home}`` expands)."""

    KIND = "global"
    FORMAT = "json"

    def named(self, request: Request) -> str | None:
        return request.global_file
