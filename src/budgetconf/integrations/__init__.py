"""Adapters to libraries an application already uses, each behind its own extra.

``budgetconf.integrations.openai`` (``pip install 'budgetconf[openai]'``)
makes an OpenAI-compatible server a model for the loop executor. Nothing here
is imported by ``import budgetconf``.
"""

__all__: list[str] = []
