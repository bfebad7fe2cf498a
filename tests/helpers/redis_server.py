"""A real redis-server for the tests: on a free loopback port, in a folder, stopped by its pid.

The server keeps nothing on disk (``--save ''``, ``--appendonly no``). `start`
waits, for a bounded time, until it answers PING; `stop` asks it to end
(SIGTERM) and kills it if it has not within a few seconds. A stopped server
can be started again on the same port, which is how a test takes Redis away
from a run and gives it back.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["EXECUTABLE", "RedisServer", "free_port"]

#: the server, from the Debian package redis-server; None where it is not installed
EXECUTABLE = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if os.access("/usr/bin/redis-server", os.X_OK) else None
)
MISSING = "redis-server is not installed (the Debian package redis-server)"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process, on ``port`` of 127.0.0.1, its files in ``folder``."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        if EXECUTABLE is None:
            raise RuntimeError(MISSING)
        self.folder = folder
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING; RuntimeError past ``timeout``."""
        assert EXECUTABLE is not None
        assert not self.running, "the server is running already"
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "redis.log"
        argv = [EXECUTABLE, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", str(self.folder), "--logfile", str(log)]
        self.process = subprocess.Popen(
            argv, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.ping():
                return self
            time.sleep(0.02)
        self.stop()
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"redis-server on port {self.port} did not start: {tail}")

    def ping(self) -> bool:
        """Whether the server answers PING now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, timeout: float = 5.0) -> None:
        """End the server by its pid: SIGTERM, then SIGKILL if it is there after ``timeout``."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout)

    def command(self, *words: str) -> bytes:
        """Send one command (no password) and return the server's first reply, as sent."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as conn:
            conn.sendall(request.encode())
            return conn.recv(65536)

    def flush(self) -> None:
        """Empty every database of the server."""
        assert self.command("FLUSHALL").startswith(b"+OK")
