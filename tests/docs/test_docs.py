"""The examples in docs/ run, and say what the code does."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

from conftest import Place
from helpers import DOCS, pages
from helpers.pages import Session

EXAMPLES = DOCS.parent / "examples"


def _blocks(page: str, language: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.parametrize("page", ["loop.md", "python-api.md"])
def test_a_pages_python_examples_run_in_order(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's Python blocks run one after the other, as one module, and their assertions hold."""
    module = types.ModuleType("docs_example")  # classes there are at module level, as cattrs needs
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for number, block in enumerate(_blocks(page, "python")):
        exec(compile(block, f"docs/{page} python block {number}", "exec"), module.__dict__)


CONTINUES = "# continues "  # the first line of a block that needs the blocks before it
ALONE = [
    (page, number, block)
    for page in ("loop.md", "python-api.md")
    for number, block in enumerate(_blocks(page, "python"))
]


@pytest.mark.parametrize(("page", "number", "block"), ALONE, ids=[f"{p}-{n}" for p, n, _ in ALONE])
def test_each_python_example_runs_alone_unless_marked_continuing(
    page: str, number: int, block: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block copied alone runs; one that needs an earlier block says so on its first line."""
    module = types.ModuleType("docs_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    code = compile(block, f"docs/{page} python block {number}", "exec")
    if block.startswith(CONTINUES):
        with pytest.raises(NameError):  # a stale mark would hide a block that runs alone
            exec(code, module.__dict__)
    else:
        exec(code, module.__dict__)


def test_the_run_example_prints_what_the_page_shows(session: Session) -> None:
    """docs/loop.md's `budgetconf run` session: the script, the warning line and exit 2."""
    session.run_page("loop.md")


def test_the_tutorial_runs_as_written(place: Place, session: Session) -> None:
    """Every command of docs/tutorial.md gives the output the page shows, in a folder under home."""
    project = place.home / "report-agent"
    project.mkdir()
    os.chdir(project)
    session.run_page("tutorial.md")
    shown = (project / "agent.py").read_text()
    assert shown == (EXAMPLES / "agent.py").read_text()  # the page shows the example as it is


def test_the_explain_page_shows_what_explain_prints(session: Session) -> None:
    """docs/explain.md's diff and table are what is printed; piped, a long warning is one line."""
    session.run_page("explain.md")


def test_a_page_session_fails_on_output_it_does_not_show(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner is not a rubber stamp: a wrong line, or a failure left unshown, fails it."""
    monkeypatch.setattr(pages, "DOCS", tmp_path)  # the folder the session reads pages from
    (tmp_path / "wrong.md").write_text("```console\n$ budgetconf presets\nnope\n```\n")
    with pytest.raises(AssertionError):
        session.run_page("wrong.md")
    (tmp_path / "failed.md").write_text("```console\n$ budgetconf explain --nope\n...\n```\n")
    with pytest.raises(AssertionError):
        session.run_page("failed.md")
