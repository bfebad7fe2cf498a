"""The HTML report of an events file: checked line by line (``_checks``), read into runs
(``_read``, ``_runs``), charted (``_series``, ``_charts``), tabled (``_tables``) and written
as one page (``_page``), with the standard library alone."""
