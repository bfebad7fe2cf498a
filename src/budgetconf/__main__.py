"""``python -m budgetconf``: the command line."""

from budgetconf.cli import main

raise SystemExit(main())
