"""The address of a shared ledger: read strictly, shown without its password, and opened.

`SCHEMES` is the table of backends: each scheme a ledger lives at, how its
address reads and the backend that opens it, so a new backend is its module
and a line here. A leaf: the ``ledger-url`` text format checks an address
with `parse_url`, the settings of a run read it once, and `open_ledger`
opens what it returns, so every reader goes by the same rules. Nothing here
connects to anything, and no backend is imported until one is opened.

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
    from collections.abc import Callable
    from typing import Final, TypeGuard


class LedgerURL(Record):
    """A ledger's address, read: ``scheme`` is its row of `SCHEMES`, in lower case.

    An address of a file (``sqlite:///PATH``) has ``path``, relative to the
    working directory when the URL has three slashes; an address of a server
    (``redis://HOST:PORT/DB``) has ``host``, ``port``, ``db``, ``username``,
    ``password`` and ``tls``.
    ``shown`` is the address as every message shows it, its password `MASK`.
    """

    __module__ = "budgetconf.ledger"
    __slots__ = ("db", "host", "password", "path", "port", "scheme", "shown", "tls", "username")
    unshown = ("password",)

    scheme: str
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
        scheme: str,
        shown: str,
        path: str | None = None,
        host: str | None = None,
        port: int | None = None,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        tls: bool = False,
    ) -> None:
        set_field(self, "scheme", scheme)
        set_field(self, "shown", shown)
        set_field(self, "path", path)
        set_field(self, "host", host)
        set_field(self, "port", port)
        set_field(self, "db", db)
        set_field(self, "username", username)
        set_field(self, "password", password)
        set_field(self, "tls", tls)

    @property
    def backend(self) -> str:
        """The backend that opens the address: ``sqlite``, ``redis``."""
        return SCHEMES[self.scheme].backend

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


def has_masked_password(value: object) -> bool:
    """Whether ``value`` is a text whose password, read as `conceal` reads it, is `MASK`: what a
    rendering shows in a password's place, so a value copied from one, not a password.

    A file's address (``sqlite:///a:***@b.db``) has no password, and a user's
    name is never masked: neither is the mask.
    """
    if not isinstance(value, str) or "@" not in value:
        return False
    try:
        return parse_url(value).password == MASK
    except ValueError:
        credentials = _credentials(value)[1]
    _, colon, password = (credentials or "").partition(":")
    return bool(colon) and password == MASK


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


#: what a ledger scope is written with
_SCOPE_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/"
)


def is_scope(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a ledger scope: 1 to 128 ASCII letters, digits and ``-_.:/``."""
    return isinstance(value, str) and 1 <= len(value) <= 128 and _SCOPE_CHARACTERS.issuperset(value)


class Scheme(Record):
    """A row of `SCHEMES`: how an address of the scheme reads, and the backend that opens it.

    ``backend`` is the backend's module in this package without its underscore
    (``sqlite`` is ``budgetconf.ledger._sqlite``), ``ledger`` the name of its
    `Ledger` class there, called with the address read.
    """

    __slots__ = ("backend", "ledger", "read")

    backend: str
    ledger: str
    read: Callable[[str, str], LedgerURL]

    def __init__(self, backend: str, ledger: str, read: Callable[[str, str], LedgerURL]) -> None:
        set_field(self, "backend", backend)
        set_field(self, "ledger", ledger)
        set_field(self, "read", read)


def parse_url(text: str) -> LedgerURL:
    """The ledger address ``text`` names; `ValueError` saying what is wrong with it.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
    ``redis://[user:password@]host:port/db`` and ``rediss://…`` (TLS). The
    error's message never holds the password.
    """
    scheme, sep, _ = text.partition("://")
    row = SCHEMES.get(scheme.lower()) if sep else None
    if row is None:
        raise ValueError("is not a ledger URL (use sqlite:///PATH or redis://HOST:PORT/DB)")
    return row.read(text, scheme.lower())


def file_address(text: str, scheme: str) -> LedgerURL:
    """``scheme:///relative/path`` or ``scheme:////absolute/path``: an @ or a : in it is the
    file's name, not credentials."""
    rest = text.partition("://")[2]
    if not rest.startswith("/") or len(rest) < 2 or rest.endswith("/"):
        raise ValueError(
            f"names no database file (use {scheme}:///relative.db or {scheme}:////abs.db)"
        )
    return LedgerURL(scheme=scheme, shown=text, path=rest[1:])


def server_address(text: str, scheme: str, *, tls: bool = False, port: int = 6379) -> LedgerURL:
    """``scheme://[user[:password]@]host[:port][/db]``; ``port`` when it names none (Redis's,
    where every server that speaks its protocol listens)."""
    head, credentials, tail = _credentials(text)
    hostport, _, path = tail.partition("/")
    if "?" in tail or "#" in tail:
        raise ValueError("takes no query or fragment")
    username = password = None
    if credentials is not None:
        user, colon, secret = credentials.partition(":")
        username, password = user or None, secret if colon else None
    host, port = _host_port(hostport, port)
    db = 0
    if path:
        if not (path.isascii() and path.isdigit()) or len(path) > 5:
            raise ValueError("has a bad database number (a whole number after the last /)")
        db = int(path)
    return LedgerURL(
        scheme=scheme,
        shown=_masked(head, credentials, tail),
        host=host,
        port=port,
        db=db,
        username=username,
        password=password,
        tls=tls,
    )


def _tls_server_address(text: str, scheme: str) -> LedgerURL:
    return server_address(text, scheme, tls=True)


#: each scheme a ledger lives at -> how its address reads and the backend that opens it
SCHEMES: Final = {
    "sqlite": Scheme("sqlite", "SQLiteLedger", file_address),
    "redis": Scheme("redis", "RedisLedger", server_address),
    "rediss": Scheme("redis", "RedisLedger", _tls_server_address),
}


def _host_port(hostport: str, default: int) -> tuple[str, int]:
    """The host and port of ``host:port``, ``[::1]:port`` or a host alone (port ``default``)."""
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
        return host, default
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise ValueError("has a bad port (a number from 1 to 65535)")
    return host, int(port_text)
