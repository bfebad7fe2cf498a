"""docs/presets.md runs as written: its files, its commands, and each Python block alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Place
from helpers.pages import Session

# Each Python block is a script a reader copied, run in the page's folder with no arguments,
# in a fresh interpreter: praisonaiagents patches warnings.warn for the whole process and
# warns of ExecutionConfig's future default once per process, so a block run in this one
# would depend on the tests before it. After the block, the expressions are evaluated in
# its namespace: the values the page's files and outputs lead the reader to expect.
_RUN = """\
import json, runpy, sys
script = sys.argv.pop()
checks = json.load(sys.stdin)
names = runpy.run_path(script, run_name="__main__")
print(json.dumps({check: eval(check, names) for check in checks}))
"""
EXPECTED = [
    {"max_steps": 12},  # the review step of the default preset's workflow.yaml
    {"AgentConfig().max_steps": 40, "AgentConfig(max_steps=3).max_steps": 3},
    {"max_turns": 12, "max_tool_calls": 3},  # as the skiller explain shows
    {"config.max_steps": 50, "config.max_tool_calls_per_turn": 10},
    {"steps": 200},  # no flag given and no variable exported
]


class PythonSession(Session):
    """A page session that also runs each Python block, alone, where the page puts it."""

    def __init__(
        self, place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        super().__init__(place, monkeypatch, capsys)
        self.ran: list[dict[str, object]] = []

    def python(self, block: str) -> None:
        script = self.place.work.parent / f"block{len(self.ran)}.py"
        script.write_text(block, encoding="utf-8")
        checks = EXPECTED[len(self.ran)] if len(self.ran) < len(EXPECTED) else {}
        done = subprocess.run(
            [sys.executable, "-c", _RUN, str(script)],
            input=json.dumps(list(checks)),
            capture_output=True,
            text=True,
            cwd=Path.cwd(),
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, ""), f"{block}\n{done.stderr}"
        self.ran.append(json.loads(done.stdout.splitlines()[-1]))


def test_the_presets_page_runs_as_written(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command prints what the page shows; every Python block runs alone, as copied."""
    folder = place.home / "agents"
    folder.mkdir()
    monkeypatch.chdir(folder)
    session = PythonSession(place, monkeypatch, capsys)

    session.run_page("presets.md")

    assert session.ran == EXPECTED
