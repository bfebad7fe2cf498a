"""How to install an integration's extra, said the same way by every integration.

budgetconf may be installed from an index or from a checkout of its source;
``pip install 'budgetconf[openai]'`` only works in the first case, so the
hint gives both forms.
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """``pip install 'budgetconf[EXTRA]' (from a checkout: pip install -e '.[EXTRA]')``."""
    return f"pip install 'budgetconf[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def missing(module: str, package: str, extra: str) -> ImportError:
    """The ImportError of an integration whose package is not installed, saying how to get it."""
    return ImportError(
        f"budgetconf.integrations.{module} needs the {package} package: {install_hint(extra)}",
        name=package,
    )
