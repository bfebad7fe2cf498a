"""Shell completion run in real shells, the help texts' examples, and --version."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import budgetconf
from budgetconf._presets import preset_names
from budgetconf.cli import main

from conftest import Place

PRESETS = preset_names()
COMMANDS = [
    "explain",
    "check",
    "run",
    "presets",
    "schema",
    "init",
    "report",
    "completion",
    "ledger",
    "prices",
]


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
    ("budgetconf check --format ", ["table", "json"]),
    ("budgetconf run --output j", ["json"]),
    ("budgetconf run --rep", ["--report"]),
    ("budgetconf report --o", ["--output"]),
    ("budgetconf init --kind ", ["project", "global", "profile"]),
    ("budgetconf init --f", ["--format", "--force"]),
    ("budgetconf completion ", ["bash", "zsh"]),
    ("budgetconf explain loop.max_s", ["loop.max_steps"]),
    ("budgetconf explain --di", ["--diff"]),
    ("budgetconf explain --global ", []),  # a path: the shell's own completion
    ("budgetconf explain -- --max", []),  # the application's arguments
    # the default preset's budget flags, on the commands that resolve, with an enum's choices
    ("budgetconf run --max-s", ["--max-steps"]),
    ("budgetconf check --max-tok", ["--max-tokens"]),
    ("budgetconf explain --last-turn ", ["warn", "wrap_up", "none"]),
    ("budgetconf explain --max-steps ", []),  # a number: nothing to offer
    ("budgetconf init --max", []),  # init writes a file and takes no budget flag
    # --set: a field's name and its `=`; a table's name and its `.`, before one of its keys
    ("budgetconf explain --set loop.max_s", ["loop.max_steps="]),
    ("budgetconf check --set tools.m", ["tools.max_calls."]),
    ("budgetconf explain --set loop.last_turn = ", []),  # bash splits at `=`: a value
    ("budgetconf explain tools.m", ["tools.max_calls"]),  # a table names all its keys
    ("budgetconf explain --tools-max-calls ", []),  # KEY=INT: nothing to offer
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


@pytest.mark.parametrize(
    ("line", "nospace"),
    [
        ("budgetconf explain --set tools.m", True),
        ("budgetconf explain --set loop.max_s", True),
        ("budgetconf explain --set loop.max", False),  # several: bash adds no space anyway
        ("budgetconf explain loop.max_s", False),
    ],
)
def test_bash_adds_no_space_after_a_word_that_goes_on(
    place: Place, capsys: pytest.CaptureFixture[str], line: str, nospace: bool
) -> None:
    """``--set loop.max_steps=`` and ``--set tools.max_calls.`` are completed without the
    space after them, since the value or the key is typed there."""
    path = place.write("budgetconf.bash", script("bash", capsys))
    words = " ".join(shlex.quote(w) for w in _words(line))
    probe = (
        f"source {shlex.quote(str(path))}\n"
        'compopt() { echo "compopt $*"; }\n'  # bash's own works only inside a completion
        f"COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
        "_budgetconf"
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout == ("compopt -o nospace\n" if nospace else "")


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


# An interactive zsh on a pseudo-terminal, with compinit and the script loaded: each line
# is typed, then Tab twice, and what zsh lists is read back until the awaited word shows.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z 'TERM=dumb zsh -f -i'
zpty -w z "PS1='%% '; autoload -Uz compinit; compinit -u -D; source ${(q)1}; setopt no_beep"
read_until() {
    local chunk i
    REPLY=''
    for i in {1..600}; do
        while zpty -r -t z chunk; do REPLY+=$chunk; done
        [[ $REPLY == *$1* ]] && return 0
        sleep 0.05
    done
    return 1
}
zpty -w z 'print -r -- RE""ADY'
read_until READY
shift
while (( $# )); do
    zpty -wn z $'\C-u'"$1"$'\t\t'
    read_until "$2" && print -r -- "<<<$REPLY>>>" || print -r -- '<<<>>>'
    shift 2
done
zpty -d z
"""

LISTED = [
    ("budgetconf ", ["completion", "explain", "init", "presets", "run", "schema", "check"]),
    ("budgetconf completion ", ["bash", "zsh"]),
    ("budgetconf explain --format ", ["table", "json", "toml"]),
    ("budgetconf explain --preset pr", ["praisonai", "praisonai-code"]),
    ("budgetconf init --f", ["--format", "--force"]),
]


@needs_zsh
def test_zsh_lists_the_words_at_a_real_prompt(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Typed at an interactive zsh with compinit, each line's Tab lists the expected words."""
    path = place.write("_budgetconf.zsh", script("zsh", capsys))
    driver = place.write("driver.zsh", ZSH_DRIVER)
    args = [item for line, words in LISTED for item in (line, words[-1])]
    done = subprocess.run(
        ["zsh", "-f", str(driver), str(path), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=place.work,
    )
    listings = done.stdout.split("<<<")[1:]
    assert len(listings) == len(LISTED)
    for (line, words), listing in zip(LISTED, listings, strict=True):
        shown = set(listing.split())
        assert set(words) <= shown, (line, listing)


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


def test_run_help_shows_a_server_example(capsys: pytest.CaptureFixture[str]) -> None:
    """`budgetconf run --help` shows --base-url with --model-name among its examples."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    examples = capsys.readouterr().out.split("examples:\n", 1)[1]
    assert "  budgetconf run --base-url http://127.0.0.1:8000/v1 --model-name NAME " in examples


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
