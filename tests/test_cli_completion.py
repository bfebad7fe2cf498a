"""Shell completion run in real shells, the help texts' examples, and --version."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.presets import preset_names

from conftest import Place

PRESETS = preset_names()
COMMANDS = ["explain", "check", "run", "presets", "schema", "init", "completion"]


def script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


# the words on the command line, the last one being completed; what the shell offers
CASES = [
    ("budgetconf ", COMMANDS),
    ("budgetconf ex", ["explain"]),
    ("budgetconf explain --pre", ["--preset"]),
    ("budgetconf explain --preset ", PRESETS),
    ("budgetconf explain --preset praisonai", ["praisonai", "praisonai-code"]),
    ("budgetconf check --format ", ["table", "json", "toml"]),
    ("budgetconf run --output j", ["json"]),
    ("budgetconf init --kind ", ["project", "global", "profile"]),
    ("budgetconf init --f", ["--format", "--force"]),
    ("budgetconf completion ", ["bash", "zsh"]),
    ("budgetconf explain loop.max_s", ["loop.max_steps"]),
    ("budgetconf explain --di", ["--diff"]),
    ("budgetconf explain --global ", []),  # a path: the shell's own completion
    ("budgetconf explain -- --max", []),  # the application's arguments
]


def _words(line: str) -> list[str]:
    words = line.split()
    return [*words, ""] if line.endswith(" ") else words


def bash_offers(path: Path, line: str) -> list[str]:
    words = " ".join(shlex.quote(w) for w in _words(line))
    probe = (
        f"source {shlex.quote(str(path))}\n"
        f"COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
        '_budgetconf; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stderr == ""
    return done.stdout.split()


@pytest.mark.parametrize(("line", "offered"), CASES)
def test_bash_offers_the_parsers_words(
    place: Place, capsys: pytest.CaptureFixture[str], line: str, offered: list[str]
) -> None:
    """bash, given the line, offers the commands, options, presets and choices of the parser."""
    path = place.write("budgetconf.bash", script("bash", capsys))
    assert bash_offers(path, line) == offered


def test_bash_registers_the_function_with_path_completion_as_fallback(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """`complete -p` shows the function, with the default (paths) when it offers nothing."""
    path = place.write("budgetconf.bash", script("bash", capsys))
    done = subprocess.run(
        ["bash", "--norc", "-c", f"source {path}; complete -p budgetconf"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "complete -o default -F _budgetconf budgetconf\n"


needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")


@needs_zsh
def test_the_zsh_script_parses_and_registers_with_compinit(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """`zsh -n` accepts it; after compinit, sourcing it binds _budgetconf to budgetconf."""
    path = place.write("_budgetconf.zsh", script("zsh", capsys))
    subprocess.run(["zsh", "-n", str(path)], check=True)
    done = subprocess.run(
        [
            "zsh",
            "-f",
            "-c",
            f"autoload -Uz compinit && compinit -u -D; source {path}; "
            "print -r -- ${_comps[budgetconf]}",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=place.work,
    )
    assert done.stdout == "_budgetconf\n"


@needs_zsh
@pytest.mark.parametrize(("line", "offered"), CASES)
def test_zsh_computes_the_same_words(
    place: Place, capsys: pytest.CaptureFixture[str], line: str, offered: list[str]
) -> None:
    """zsh's candidates, before zsh's own prefix matching, include what bash offers."""
    path = place.write("_budgetconf.zsh", script("zsh", capsys))
    *before, current = _words(line)
    args = " ".join(shlex.quote(w) for w in [current, before[-1], *before[1:]])
    done = subprocess.run(
        [
            "zsh",
            "-f",
            "-c",
            f'source {path}; _budgetconf_candidates {args}; print -l -- "${{reply[@]}}"',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    words = done.stdout.split()
    assert [w for w in words if w.startswith(current)] == offered


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_ends_with_examples(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`budgetconf COMMAND --help` exits 0, wraps its text, and ends with examples as written."""
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    text, examples_text = out.split("examples:\n", 1)
    assert max(len(line) for line in text.splitlines()) <= 80  # the rest is wrapped
    examples = examples_text.splitlines()
    assert examples
    assert all(" budgetconf " in line or "(budgetconf " in line for line in examples)


def test_the_top_level_help_lists_every_command_and_examples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`budgetconf --help`: the commands, then examples."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"    {command}" in out
    assert "examples:\n  budgetconf explain " in out


def test_version_prints_the_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`budgetconf --version` prints `budgetconf X.Y.Z` and exits 0."""
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"budgetconf {budgetconf.__version__}\n"


def test_the_console_script_answers_version() -> None:
    """The installed `budgetconf` program says the same."""
    import sys

    program = Path(sys.executable).with_name("budgetconf")
    done = subprocess.run([str(program), "--version"], capture_output=True, text=True, check=True)
    assert done.stdout == f"budgetconf {budgetconf.__version__}\n"


def test_completion_takes_a_known_shell(capsys: pytest.CaptureFixture[str]) -> None:
    """Another shell is a usage error (64), in one line."""
    assert main(["completion", "fish"]) == 64
    assert capsys.readouterr().err.startswith("budgetconf: usage error: argument shell:")
