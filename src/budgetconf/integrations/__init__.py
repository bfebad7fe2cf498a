"""Adapters to libraries an application already uses, each behind its own extra.

``budgetconf.integrations.openai`` (``pip install 'budgetconf[openai]'``)
makes an OpenAI-compatible server a model for the loop executor. Nothing here
is imported by ``import budgetconf``.
"""


def shown_url(url: object) -> str:
    """``url`` as a message may show it: without a user name or password, no final slash."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        scheme, rest = "", scheme
    # the authority runs to the first of / ? #; credentials end at its last @
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    return (scheme + sep + rest[:end].rpartition("@")[2] + rest[end:]).rstrip("/")
