"""URLs as a message may show them: the credentials in one never reach a person."""


def shown_url(url: object) -> str:
    """``url`` as a message may show it: without a user name or password, no final slash."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        scheme, rest = "", scheme
    # credentials end at the URL's last @, not its authority's: a password may hold / ? or #,
    # and hiding a path's @ too is safe where showing part of a password is not
    return (scheme + sep + rest.rpartition("@")[2]).rstrip("/")
