"""URLs as a message may show them: the credentials in one never reach a person."""

__all__ = ["shown_url"]


def shown_url(url: object) -> str:
    """``url`` as a message may show it: without a user name or password, no final slash."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        scheme, rest = "", scheme
    # the authority runs to the first of / ? #; credentials end at its last @
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    return (scheme + sep + rest[:end].rpartition("@")[2] + rest[end:]).rstrip("/")
