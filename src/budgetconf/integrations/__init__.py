"""Adapters to libraries an application already uses, each behind its own extra.

``budgetconf.integrations.openai`` (``pip install 'budgetconf[openai]'``, or
from a checkout ``pip install -e '.[openai]'``) makes an OpenAI-compatible
server a model for the loop executor. The framework bridges
(``openai_agents``, ``langgraph``, ``smolagents``, ``pydantic_ai``,
``praisonai``, each behind the extra of that name) run a framework's agent
within a budget and return a `BridgeResult`; their ``stream()`` a
`BridgeStream`. Nothing here is imported by ``import budgetconf``. An
integration whose package is missing raises the ImportError of
``_install.missing``, which gives both ways to install its extra.
"""

from budgetconf.integrations._bridge import BridgeResult
from budgetconf.integrations._stream import BridgeStream

__all__ = ["BridgeResult", "BridgeStream"]
