"""The HTML report of an events file: read (``_read``), charted (``_series``, ``_charts``),
tabled (``_tables``) and written as one page (``_page``), with the standard library alone."""
