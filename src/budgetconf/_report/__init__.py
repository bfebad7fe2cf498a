"""The HTML report of an events file: read (``_read``), charted (``_series``, ``_charts``),
tabled (``_tables``) and written as one page (``_page``), with the standard library alone."""

from budgetconf._report._page import render
from budgetconf._report._read import Bad, Events, parse_events, read_events

__all__ = ["Bad", "Events", "parse_events", "read_events", "render"]
