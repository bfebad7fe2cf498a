"""The examples in docs/ run, and say what the code does."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from budgetconf.cli import main

from conftest import Place

DOCS = Path(__file__).parent.parent / "docs"


def _blocks(page: str, language: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_the_loop_pages_python_examples_run_in_order() -> None:
    """docs/loop.md's Python blocks run one after the other, and their assertions hold."""
    namespace: dict[str, object] = {}
    for number, block in enumerate(_blocks("loop.md", "python")):
        exec(compile(block, f"docs/loop.md python block {number}", "exec"), namespace)


def test_the_run_example_prints_what_the_page_shows(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `budgetconf run` console example: the script, the warning line and exit 2."""
    (example,) = _blocks("loop.md", "console")
    lines = example.splitlines()
    write, run, status, code = lines[0], lines[1], lines[3], lines[4]
    script = shlex.split(write.removeprefix("$ "))
    (place.work / script[-1]).write_text(script[1] + "\n")
    assignment, *command = shlex.split(run.removeprefix("$ "))
    name, _, value = assignment.partition("=")
    monkeypatch.setenv(name, value)
    assert command[0] == "budgetconf"
    assert status == "$ echo $?"
    assert main(command[1:]) == int(code)
    assert capsys.readouterr().err.splitlines() == [lines[2]]
