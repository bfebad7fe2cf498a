"""The address of a shared ledger: read strictly, and shown without its password.

A leaf: the schema checks ``ledger.url`` with `parse_url`, and
`budgetconf.ledger.open_ledger` opens what it returns, so both read an
address by the same rules. Nothing here connects to anything.

The parser and the mask are one rule: a URL is shown as it is read, its
credentials running from its ``://`` to its last ``@``, so that whatever a
password holds (a space, a quote, ``<``, ``/``, ``@``) it is never shown. A
text is never scanned for where a URL ends; a message made from outside text
(a backend's error) hides the password it knows (`LedgerURL.conceal`).
"""

from __future__ import annotations

from budgetconf._record import MASK, Record, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, TypeGuard

__all__ = [
    "LedgerURL",
    "conceal",
    "conceal_in",
    "is_scope",
    "parse_url",
    "shown_url",
    "text_problem",
]

#: the schemes a ledger can live at, and the backend each one opens
SCHEMES: Final = {"sqlite": "sqlite", "redis": "redis", "rediss": "redis"}
#: the longest value a ``text`` field takes
MAX_TEXT: Final = 4096
#: the text fields whose invalid value is an error under every invalid policy: a broken
#: ledger address must not silently turn the fleet's budget off
STRICT: Final = frozenset({"ledger.url"})


class LedgerURL(Record):
    """A ledger's address, read: ``backend`` is ``sqlite`` or ``redis``.

    For SQLite, ``path`` is the database file (relative to the working
    directory when the URL has three slashes); for Redis, ``host``, ``port``,
    ``db``, ``username``, ``password`` and ``tls`` say where to connect.
    ``shown`` is the address as every message shows it, its password `MASK`.
    """

    __slots__ = ("backend", "db", "host", "password", "path", "port", "shown", "tls", "username")
    unshown = ("password",)

    backend: str
    shown: str
    path: str | None
    host: str | None
    port: int | None
    db: int
    username: str | None
    password: str | None
    tls: bool

    def __init__(
        self,
        *,
        backend: str,
        shown: str,
        path: str | None = None,
        host: str | None = None,
        port: int | None = None,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        tls: bool = False,
    ) -> None:
        set_field(self, "backend", backend)
        set_field(self, "shown", shown)
        set_field(self, "path", path)
        set_field(self, "host", host)
        set_field(self, "port", port)
        set_field(self, "db", db)
        set_field(self, "username", username)
        set_field(self, "password", password)
        set_field(self, "tls", tls)

    def conceal(self, text: str) -> str:
        """``text`` (a backend's error, say) with this address's password replaced by `MASK`
        wherever it appears: the password is known, so no URL in the text need be found."""
        password = self.password
        return text.replace(password, MASK) if password else text


def shown_url(text: str) -> str:
    """The URL ``text`` as every message shows it: its password replaced by `MASK`.

    An address `parse_url` reads is shown from what it read; one it refuses
    is cut the same way (credentials from ``://`` to the last ``@``, the
    password after their first ``:``), so a refused address hides its
    password too.
    """
    try:
        return parse_url(text).shown
    except ValueError:
        return _masked(*_credentials(text))


def conceal_in(url: str, text: str) -> str:
    """``text`` with the password of the address ``url`` hidden wherever it appears
    (`LedgerURL.conceal`); an address that cannot be read was never used, so no text from
    outside holds its password."""
    try:
        return parse_url(url).conceal(text)
    except ValueError:
        return text


def conceal(value: object) -> object:
    """``value`` as it may be shown: a text that is a URL with its password replaced by `MASK`.

    Every rendering of a value a field may hold goes through it, so a
    ``text`` field's URL is shown everywhere with only its password hidden.
    """
    return shown_url(value) if isinstance(value, str) and "@" in value else value


def _credentials(text: str) -> tuple[str, str | None, str]:
    """``text`` cut where a URL's credentials are: what comes before them (the scheme and its
    ``://``), the credentials (None when there are none) and what comes after their ``@``.

    An address that lost its ``//`` (``user:pw@host``, ``redis:/user:pw@host``) is cut the
    same way from its start: its password is hidden as any other's.
    """
    scheme, sep, rest = text.partition("://")
    head = scheme + sep if sep else ""
    credentials, at, tail = (rest if sep else text).rpartition("@")  # a password may hold @
    return head, credentials if at else None, tail if at else (rest if sep else text)


def _masked(head: str, credentials: str | None, tail: str) -> str:
    """The URL cut by `_credentials`, with whatever follows the user's name hidden."""
    if credentials is None:
        return head + tail
    user, colon, _ = credentials.partition(":")
    return f"{head}{user}{':' + MASK if colon else ''}@{tail}"


def text_problem(path: str, value: str) -> str | None:
    """What is wrong with ``value`` for the ``text`` field at ``path``, or None.

    ``ledger.url`` must be a ledger's address (`parse_url`), ``ledger.scope``
    1 to 128 ASCII letters, digits and ``-_.:/``; any text at most `MAX_TEXT`
    characters.
    """
    if len(value) > MAX_TEXT:
        return f"longer than {MAX_TEXT} characters"
    if path == "ledger.url":
        try:
            parse_url(value)
        except ValueError as exc:
            return f"the ledger URL {exc}"
    elif path == "ledger.scope" and not is_scope(value):
        return "not a ledger scope (1 to 128 ASCII letters, digits and -_.:/)"
    return None


#: what a ledger scope is written with
_SCOPE_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/"
)


def is_scope(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a ledger scope: 1 to 128 ASCII letters, digits and ``-_.:/``."""
    return isinstance(value, str) and 1 <= len(value) <= 128 and _SCOPE_CHARACTERS.issuperset(value)


def parse_url(text: str) -> LedgerURL:
    """The ledger address ``text`` names; `ValueError` saying what is wrong with it.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
    ``redis://[user:password@]host:port/db`` and ``rediss://…`` (TLS). The
    error's message never holds the password.
    """
    scheme, sep, rest = text.partition("://")
    backend = SCHEMES.get(scheme.lower()) if sep else None
    if backend is None:
        raise ValueError("is not a ledger URL (use sqlite:///PATH or redis://HOST:PORT/DB)")
    if backend == "sqlite":  # a path: an @ or a : in it is the file's name, not credentials
        if not rest.startswith("/") or len(rest) < 2 or rest.endswith("/"):
            raise ValueError(
                "names no database file (use sqlite:///relative.db or sqlite:////abs.db)"
            )
        return LedgerURL(backend=backend, shown=text, path=rest[1:])
    return _redis(text, tls=scheme.lower() == "rediss")


def _redis(text: str, *, tls: bool) -> LedgerURL:
    head, credentials, tail = _credentials(text)
    hostport, _, path = tail.partition("/")
    if "?" in tail or "#" in tail:
        raise ValueError("takes no query or fragment")
    username = password = None
    if credentials is not None:
        user, colon, secret = credentials.partition(":")
        username, password = user or None, secret if colon else None
    host, port = _host_port(hostport)
    db = 0
    if path:
        if not (path.isascii() and path.isdigit()) or len(path) > 5:
            raise ValueError("has a bad database number (a whole number after the last /)")
        db = int(path)
    return LedgerURL(
        backend="redis",
        shown=_masked(head, credentials, tail),
        host=host,
        port=port,
        db=db,
        username=username,
        password=password,
        tls=tls,
    )


def _host_port(hostport: str) -> tuple[str, int]:
    """The host and port of ``host:port``, ``[::1]:port`` or a host alone (port 6379)."""
    host, colon, port_text = (
        hostport.rpartition(":") if hostport.count(":") == 1 else (hostport, "", "")
    )
    if hostport.startswith("["):  # an IPv6 address: [::1]:6379
        host, bracket, tail = hostport[1:].partition("]")
        if not bracket:
            raise ValueError("has a malformed host (an IPv6 address without its closing ])")
        colon, port_text = (":", tail[1:]) if tail.startswith(":") else ("", "")
        if tail and not tail.startswith(":"):
            raise ValueError("has a malformed host")
    if not host:
        raise ValueError("names no host")
    if not colon:
        return host, 6379
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise ValueError("has a bad port (a number from 1 to 65535)")
    return host, int(port_text)
