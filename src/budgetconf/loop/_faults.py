"""What a call can do instead of returning, in the three shapes a run is told of it.

A model, a tool or the caller's ``on_event`` may raise anything, BaseException
subclasses included (``asyncio.CancelledError``, ``GeneratorExit``, a class
of the caller's own). The drivers hand the run one of three exceptions:
`Deadline` (the call was abandoned at the run's deadline), `Interrupted`
(KeyboardInterrupt, or the awaiting task was cancelled) or `Raised` (the call
raised, and ``exc`` is what). Only ``SystemExit`` goes past the run: a
program that asks to exit is not a fault of its model.
"""

from __future__ import annotations

from typing import Final

#: what is never a call's fault: an interrupt ends the run cancelled, an exit goes past it
PASSING: Final = (KeyboardInterrupt, SystemExit)


class Deadline(Exception):
    """The run's deadline passed while a call was running; the call was abandoned."""


class Interrupted(Exception):
    """The run was interrupted (KeyboardInterrupt, or its task was cancelled) during a call."""


class Raised(Exception):
    """A call raised ``exc``: carried as an Exception, whatever its type.

    A worker thread hands its call's exception over in one too, so that a
    ``StopIteration`` can cross an asyncio future (which refuses one) and a
    ``KeyboardInterrupt`` is still known for one on the other side.
    """

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc


def received(exc: BaseException) -> Deadline | Interrupted | Raised:
    """What the run is told of a call that raised ``exc``; a ``SystemExit`` is raised again."""
    if isinstance(exc, Raised):
        exc = exc.exc
    if isinstance(exc, Deadline | Interrupted):
        return exc
    if isinstance(exc, KeyboardInterrupt):
        return Interrupted()
    if isinstance(exc, SystemExit):
        raise exc
    return Raised(exc)


_LONGEST: Final = 300


def describe(exc: BaseException, *, named: bool = True) -> str:
    """``Type: message`` on one line, at most 300 characters; without ``named``, the message.

    An exception whose message cannot be read (its ``__str__`` raises, or
    gives no text) is described by its type.
    """
    if isinstance(exc, Raised):
        exc = exc.exc
    name = type(exc).__name__
    try:
        text = str(exc)
    except PASSING:
        raise
    except BaseException as problem:  # whatever __str__ raises, the type is shown
        text = f"(its message cannot be read: {type(problem).__name__})"
    if type(text) is not str:  # a str subclass's methods are its own: take the text out of it
        text = str.__str__(text)
    text = " ".join(text[: _LONGEST * 4].split())
    if len(text) > _LONGEST:
        text = text[: _LONGEST - 1] + "…"
    if not named and text:
        return text
    return f"{name}: {text}" if text else name
