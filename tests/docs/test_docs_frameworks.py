"""Each example of docs/frameworks.md runs as written, offline, against the real framework."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from helpers import DOCS

PAGE = DOCS / "frameworks.md"
SECTIONS = re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", PAGE.read_text(), flags=re.M | re.S)
EXAMPLES = [
    (title, block)
    for title, body in SECTIONS
    for block in re.findall(r"^```python\n(.*?)^```", body, flags=re.M | re.S)
]

#: the modules of the frameworks an example may import: an example that imports one not
#: installed here runs in the environment that has it (CrewAI's: nox's crewai session)
FRAMEWORKS = (
    "agents",
    "langchain",
    "smolagents",
    "pydantic_ai",
    "praisonaiagents",
    "crewai",
    "agno",
)


def absent(example: str) -> list[str]:
    """The frameworks ``example`` imports that this environment does not have."""
    imported = set(re.findall(r"^(?:from|import) (\w+)", example, flags=re.M))
    return sorted(m for m in imported.intersection(FRAMEWORKS) if find_spec(m) is None)


def test_every_framework_has_an_example() -> None:
    titled = " ".join(title.lower() for title, _ in EXAMPLES)
    names = (
        "openai-agents",
        "langgraph",
        "smolagents",
        "pydantic-ai",
        "praisonai",
        "crewai",
        "agno",
    )
    for name in names:
        assert name in titled, name


@pytest.mark.parametrize(("title", "example"), EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_the_example_runs(title: str, example: str, tmp_path: Path) -> None:
    """Each block is a script of its own, run as a reader who copied it would run it: in a
    fresh interpreter, from a file (smolagents reads its tools' source), warnings as errors."""
    missing = absent(example)
    if missing:
        pytest.skip(f"{missing[0]} is not installed here; noxfile.py runs this where it is")
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr  # a framework's own log lines may go to stderr
    if title.startswith("PraisonAI"):  # the page says what a reader sees: nothing at all
        shown = " ".join(PAGE.read_text().split())
        assert "the example prints nothing, on stdout or stderr" in shown
        assert (done.stdout, done.stderr) == ("", "")
