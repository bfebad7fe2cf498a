"""What the bridges' tests share: a budget from its variables, a stream's result held to its
run's, and no socket to anything but 127.0.0.1."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import budgetconf


def env(**values: str) -> budgetconf.Resolution:
    """The budget the ``BUDGETCONF_*`` variables give: ``env(max_steps="3")``."""
    return budgetconf.resolve(env={f"BUDGETCONF_{k.upper()}": v for k, v in values.items()})


def same_run(streamed: Any, ran: Any) -> None:
    """The stream's result is the run's: its end, its turns, its usage, its events' kinds."""
    fields = ("status", "stop_reason", "message", "output", "turns", "limit", "usage")
    assert [getattr(streamed, f) for f in fields] == [getattr(ran, f) for f in fields]
    assert [e["type"] for e in streamed.events] == [e["type"] for e in ran.events]
    assert streamed.tool_calls_executed == ran.tool_calls_executed


def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """From now on in the test, a socket to anything but 127.0.0.1 is refused; the addresses
    it was refused for (the caller asserts there are none)."""
    dialled: list[object] = []
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] != "127.0.0.1":
            dialled.append(address)
            raise OSError(f"test is offline: refused {address!r}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return dialled
