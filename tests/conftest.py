"""Every test runs in an empty working directory with an empty home and no budget variables.

Both are folders of the test's own folder, which holds a ``.git``: the search for
the project file, which stops at a repository's root, never leaves it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import pytest

import budgetconf
from budgetconf import _files
from budgetconf.cli import main
from budgetconf.loop import ScriptedModel

from helpers.loops import Driver
from helpers.pages import Session
from helpers.redis_server import EXECUTABLE, MISSING, RedisServer


@dataclass
class Place:
    """Where a test runs: ``work`` is the cwd, ``home`` is $HOME, and ``policy`` the default
    preset's policy file (in place of /etc/budgetconf/policy.json; absent until written)."""

    work: Path
    home: Path
    policy: Path

    @property
    def budgetconf_home(self) -> Path:
        return self.home / ".budgetconf"

    def write(self, relative: str, text: str, *, base: Path | None = None) -> Path:
        """Write ``text`` to ``relative`` under ``base`` (the cwd by default)."""
        path = (base or self.work) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def source_statuses(res: budgetconf.Resolution) -> dict[str, str]:
    """Each source of a resolution by kind, with how it fared."""
    return {s.source: s.status.value for s in res.sources}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the expected outputs under tests/data/golden from the current code",
    )


@pytest.fixture(autouse=True)
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (tmp_path / ".git").mkdir()  # a repository's root: the project file is never looked for above
    for name in list(os.environ):
        if name.startswith(("BUDGETCONF_", "OPENDOT_", "PRAISONAI_", "NO_COLOR", "COLUMNS")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    policy = tmp_path / "etc" / "budgetconf" / "policy.json"
    _move_installed_policy(monkeypatch, policy)
    yield Place(work, home, policy)
    _files._cache.clear()


def _move_installed_policy(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Point the default preset's policy at ``path``, so no test reads /etc/budgetconf.

    No variable can move the installed policy, by design: the test moves it in
    Python, on the default preset's built source, for this test only. (A
    command run in a subprocess reads the real path; tests of the policy there
    use a preset file of their own, with ``policy = "<tmp>/policy.json"``.)
    """
    from budgetconf._engine import load_preset

    source = load_preset("budgetconf").by_kind["policy"]
    monkeypatch.setattr(source, "_path", str(path))


@pytest.fixture
def session(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Session:
    """A page of docs/ to run as a reader would, in the test's place."""
    return Session(place, monkeypatch, capsys)


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest) -> Driver:
    """Runs a test's loop both ways: ``run`` with its callables, ``arun`` with async ones."""
    return Driver(request.param)


class Explain(Protocol):
    def __call__(
        self,
        preset: str,
        *,
        env: Mapping[str, str] | None = None,
        argv: list[str] | None = None,
        explicit: Mapping[str, object] | None = None,
        global_file: str | Path | None = None,
        project_file: str | Path | None = None,
        profile: str | Path | None = None,
        workflow: str | Path | None = None,
        step: str | None = None,
    ) -> dict[str, Any]: ...


_OPTIONS: Final = {
    "global_file": "--global",
    "project_file": "--project",
    "profile": "--profile",
    "workflow": "--workflow",
    "step": "--step",
}


@pytest.fixture(params=["resolve", "explain"])
def explained(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Explain:
    """The explain document of a resolution that succeeds, by resolve() or by the command.

    A test that uses it runs twice: once through ``budgetconf.resolve(...).to_dict()``
    and once through ``budgetconf explain --format json``, with the same arguments
    (``env`` set in the process, ``explicit`` as ``--set``, ``argv`` after ``--``).
    Warnings are left to the document's ``warnings``.
    """

    def through_resolve(
        preset: str,
        *,
        env: Mapping[str, str] | None = None,
        argv: list[str] | None = None,
        explicit: Mapping[str, object] | None = None,
        global_file: str | Path | None = None,
        project_file: str | Path | None = None,
        profile: str | Path | None = None,
        workflow: str | Path | None = None,
        step: str | None = None,
    ) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
            res = budgetconf.resolve(
                preset,
                env=env,
                argv=argv,
                explicit=explicit,
                global_file=global_file,
                project_file=project_file,
                profile=profile,
                workflow=workflow,
                step=step,
            )
        return res.to_dict()

    def through_explain(
        preset: str,
        *,
        env: Mapping[str, str] | None = None,
        argv: list[str] | None = None,
        explicit: Mapping[str, object] | None = None,
        global_file: str | Path | None = None,
        project_file: str | Path | None = None,
        profile: str | Path | None = None,
        workflow: str | Path | None = None,
        step: str | None = None,
    ) -> dict[str, Any]:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        args = ["explain", "--preset", preset, "--format", "json"]
        named = {
            "global_file": global_file,
            "project_file": project_file,
            "profile": profile,
            "workflow": workflow,
            "step": step,
        }
        for name, path in named.items():
            if path is not None:
                args += [_OPTIONS[name], str(path)]
        for field, given in (explicit or {}).items():
            args += ["--set", f"{field}={given}"]
        if argv is not None:
            args += ["--", *argv]
        code = main(args)
        out = capsys.readouterr().out
        assert code == 0, out
        document: dict[str, Any] = json.loads(out)
        return document

    return through_resolve if request.param == "resolve" else through_explain


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedModel]:
    """The scripted models that `budgetconf run` builds, recording what they were sent."""
    from budgetconf.cli import _run

    built: list[ScriptedModel] = []

    class Recorded(ScriptedModel):
        @classmethod
        def from_file(cls, path: str | os.PathLike[str], *, record: bool = True) -> ScriptedModel:
            model = super().from_file(path, record=True)
            built.append(model)
            return model

    monkeypatch.setattr(_run, "ScriptedModel", Recorded)
    return built


#: how close before a whole hour (UTC) a test waits for it to pass
WINDOW_EDGE_SECONDS: Final = 5.0


@pytest.fixture(autouse=True)
def _clear_of_a_window_edge() -> None:
    """Start no test in the last seconds before a whole hour, where every ledger window
    (hour, day, week, month) may end: a test that reads now's window twice, in the ledger
    and in its assertion, would otherwise see two windows once an hour."""
    left = 3600 - time.time() % 3600
    if left < WINDOW_EDGE_SECONDS:
        time.sleep(left + 0.05)


@pytest.fixture(autouse=True, scope="module")
def _a_loop_of_their_own(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give a framework bridge's tests a current event loop of their own, closed after them.

    The frameworks' sync run calls (openai-agents' and pydantic-ai's run_sync) reuse the
    thread's current loop, or make one and leave it open and current for later runs; one
    left behind is collected unclosed in some later test (a ResourceWarning), and one that
    another framework shut down cannot finalize this one's async generators.
    """
    if not request.module.__name__.startswith("test_bridge_"):
        yield
        return
    previous = _current_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    left = _current_loop()  # a framework may have set one of its own
    for each in {loop, left} - {None, previous}:
        assert each is not None
        if not each.is_closed():
            each.run_until_complete(each.shutdown_asyncgens())
            each.close()
    asyncio.set_event_loop(previous)


def _current_loop() -> asyncio.AbstractEventLoop | None:
    """The thread's current event loop, or None: read, never made (``get_event_loop()``
    would make one where none is set, and a loop made here and given back after the module
    is left for nobody to close)."""
    policy: Any = asyncio.get_event_loop_policy()
    loop: asyncio.AbstractEventLoop | None = policy._local._loop
    return loop


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port for the whole session, stopped by its pid.

    The tests that use it are skipped where redis-server is not installed.
    """
    if EXECUTABLE is None:
        pytest.skip(MISSING)
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's redis-server, emptied for this test: ``redis://127.0.0.1:PORT/0``."""
    if not redis_server.running:  # a test stopped it
        redis_server.start()
    redis_server.flush()
    return redis_server.url


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The address of an empty ledger of each backend: a SQLite file of the test's own, and
    the session's redis-server, emptied (a module may define ``url`` otherwise)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    address: str = request.getfixturevalue("redis_url")
    return address


@pytest.fixture
def restartable_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, which it may `stop()` and `start()` again on its port."""
    if EXECUTABLE is None:
        pytest.skip(MISSING)
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()
