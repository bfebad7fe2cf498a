"""A page of docs/ run as a reader at a shell would run it (the ``session`` fixture)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from budgetconf.cli import main

from helpers import DOCS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Place

# A page is a session: its fenced blocks run in order. A block whose info string names a
# file after the language (```toml settings.toml) is written there, `~/` being the home.
# In a console block each `$ ` line is a command and the lines under it its output (stdout,
# then stderr), where `...` stands for any number of lines and the home reads /home/ada.
# The commands are `budgetconf` (run in this process), `python` (a process), `echo $?`,
# `echo TEXT > FILE`, and `mkdir DIR`, `cd DIR` and `rm FILE`, with `NAME=value` prefixes.
# A command that fails must be followed by `echo $?`, which shows its exit code. A Python
# block is handed to `python()`, in its place among the others: a page's test may run it.
# The installed policy, /etc/budgetconf/policy.json, is the test's own (`Place.policy`),
# written, read and shown by the real path; a page writes no other absolute path.
INSTALLED = "/etc/budgetconf/policy.json"
_FENCE = re.compile(r"^```(\w*)(?: (\S+))?\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
HOME_SHOWN = "/home/ada"
_FOLDER_COMMANDS: dict[str, Callable[[str], None]] = {
    "mkdir": os.mkdir,
    "cd": os.chdir,
    "rm": os.remove,
}


def _commands(block: str) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            found[-1][1].append(line.rstrip())
    return found


def _matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[at:]) for at in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and _matches(expected[1:], actual[1:])


class Session:
    """Runs the blocks of one page, as a reader at a shell would."""

    def __init__(
        self, place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.place = place
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        self.code = 0

    def run_page(self, page: str) -> None:
        for language, name, body in _FENCE.findall((DOCS / page).read_text()):
            if name:
                self.write(name, body)
            elif language == "console":
                commands = _commands(body)
                for at, (command, expected) in enumerate(commands):
                    shown = self.execute(command)
                    actual = [line.rstrip() for line in shown.splitlines()]
                    assert _matches(expected, actual), f"$ {command}\n{shown}"
                    following = commands[at + 1][0] if at + 1 < len(commands) else ""
                    assert self.code == 0 or following == "echo $?", f"$ {command}\n{shown}"
            elif language == "python":
                self.python(body)

    def python(self, block: str) -> None:
        """A Python block of the page, after the files and commands above it: left alone here."""

    def write(self, name: str, text: str) -> None:
        if name == INSTALLED:
            self.place.policy.parent.mkdir(parents=True, exist_ok=True)
            self.place.policy.write_text(text, encoding="utf-8")
            return
        assert not os.path.isabs(name), f"a page writes under its place, not at {name}"
        home = name.startswith("~/")
        self.place.write(
            name.removeprefix("~/"), text, base=self.place.home if home else Path.cwd()
        )

    def execute(self, command: str) -> str:
        shown = self._execute(command.replace(INSTALLED, str(self.place.policy)))
        return shown.replace(str(self.place.policy), INSTALLED)

    def _execute(self, command: str) -> str:
        words = shlex.split(command)
        env = {}
        while re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if words == ["echo", "$?"]:
            shown, self.code = f"{self.code}\n", 0
            return shown
        if words[0] == "echo" and words[-2] == ">":
            self.write(words[-1], " ".join(words[1:-2]) + "\n")
            self.code = 0
            return ""
        if words[0] in _FOLDER_COMMANDS:
            assert len(words) == 2, command
            _FOLDER_COMMANDS[words[0]](words[1])
            self.code = 0
            return ""
        if words[0] == "budgetconf":
            with self.monkeypatch.context() as patch:
                for name, value in env.items():
                    patch.setenv(name, value)
                self.code = main(words[1:])
            captured = self.capsys.readouterr()
            shown = captured.out + captured.err
        else:
            assert words[0] == "python", command
            done = subprocess.run(
                [sys.executable, *words[1:]],
                env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            self.code, shown = done.returncode, done.stdout
        return shown.replace(str(self.place.home), HOME_SHOWN)
