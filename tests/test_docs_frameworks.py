"""Each example of docs/frameworks.md runs as written, offline, against the real framework."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

PAGE = Path(__file__).parent.parent / "docs" / "frameworks.md"
SECTIONS = re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", PAGE.read_text(), flags=re.M | re.S)
EXAMPLES = [
    (title, block)
    for title, body in SECTIONS
    for block in re.findall(r"^```python\n(.*?)^```", body, flags=re.M | re.S)
]


def test_every_framework_has_an_example() -> None:
    titled = " ".join(title.lower() for title, _ in EXAMPLES)
    for name in ("openai-agents", "langgraph", "smolagents", "pydantic-ai", "praisonai"):
        assert name in titled, name


@pytest.mark.parametrize(("title", "example"), EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_the_example_runs(title: str, example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block is one module of its own: the page's reader can copy any one of them."""
    module = types.ModuleType("frameworks_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(example, f"docs/frameworks.md: {title}", "exec"), module.__dict__)
