"""The test suite's environments: the README's test command runs ``nox``, which runs them all.

- ``tests``: the whole suite, in the environment nox runs in (the README's
  ``.venv``, with the dev extras: every framework but CrewAI);
- ``crewai``: CrewAI pins versions of pydantic and openai below the other
  frameworks', so its bridge is tested in an environment of its own, made here
  with the test extras and CrewAI: the conformance suite, the bridges' spans
  and `explain --for` against each bridge's `limits()` (the executor and the
  CrewAI bridge), docs/frameworks.md's CrewAI examples and every test module
  named for CrewAI;
- ``coverage``: both runs' coverage, combined, held to the floor.

Each session takes pytest's arguments after ``--`` (``nox -s crewai -- -x``).
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "crewai", "coverage"]

#: the combined coverage below which the suite fails; it only rises
FLOOR = "99.12"
#: each session's coverage data, combined by the coverage session (under .nox: a plain pytest
#: run's own .coverage is left alone)
DATA = {"tests": ".nox/coverage.tests", "crewai": ".nox/coverage.crewai"}
#: pytest's options in a session: its coverage is combined and judged once, after both
PYTEST = ("--cov-report=", "--cov-fail-under=0")
#: the framework's own telemetry, off in its tests (budgetconf's spans stay on)
QUIET = {"CREWAI_DISABLE_TELEMETRY": "true"}


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The whole suite where nox runs, CrewAI's modules skipping: it is not installed here."""
    session.run("pytest", *PYTEST, *session.posargs, env={"COVERAGE_FILE": DATA["tests"]})


@nox.session(venv_backend="venv")
def crewai(session: nox.Session) -> None:
    """The CrewAI bridge's tests and the conformance suite, beside CrewAI's own pins."""
    session.install("-q", "-e", ".[test,crewai]")
    modules = sorted(str(p) for p in Path("tests").rglob("test_*crewai*.py"))
    session.run(
        "pytest",
        *PYTEST,
        "tests/integrations/test_conformance.py",
        "tests/docs/test_docs_frameworks.py",
        "tests/telemetry/test_bridge_spans.py",
        "tests/cli/test_cli_for.py",
        *modules,
        *session.posargs,
        env={"COVERAGE_FILE": DATA["crewai"], **QUIET},
    )


@nox.session(venv_backend="none")
def coverage(session: nox.Session) -> None:
    """Both sessions' coverage as one report, failing below `FLOOR`."""
    session.run("coverage", "combine", "--keep", *DATA.values())
    session.run("coverage", "report", "--skip-covered", "--show-missing", f"--fail-under={FLOOR}")
