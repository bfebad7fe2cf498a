"""The README's commands and examples are true."""

from __future__ import annotations

import re
import shutil

import pytest

from budgetconf.cli import main

from conftest import Place
from helpers import ROOT

README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_there_are_exactly_two_set_up_commands() -> None:
    """The Set up section holds one command to run explain and one to run the tests."""
    run, test = _blocks("sh")
    assert run.strip().endswith("budgetconf explain")
    assert test.strip().endswith("nox")


def test_ci_installs_the_readme_s_packages_then_runs_its_test_command() -> None:
    """.ci/run installs the Debian packages the README names, then runs the README's test
    command and nothing else."""
    test = _blocks("sh")[1].strip()
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in script if line and not line.startswith("#")]
    assert commands[:2] == ["set -euo pipefail", 'cd "$(dirname "$0")/.."']
    assert commands[-1] == test
    setup = "\n".join(commands[2:-1])
    packages = re.findall(r"package\s+`([\w.-]+)`", README)
    assert {"zsh", "redis-server", "chromium"} <= set(packages), "the README names them"
    assert 'apt-get install -y -qq "${need[@]}"' in setup
    for package in packages:  # each one that is missing is installed
        assert f"command -v {package} >/dev/null || need+=({package})" in setup


@pytest.mark.parametrize("number", range(len(_blocks("python"))))
def test_python_examples_run(number: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Python example of the README runs, and its assertions hold."""
    monkeypatch.delenv("OPENDOT_MAX_STEPS", raising=False)
    exec(compile(_blocks("python")[number], f"README.md python block {number}", "exec"), {})


def test_the_explain_example_is_what_explain_prints(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line of the console example (but the elided ones) is printed, in order."""
    (example,) = _blocks("console")
    command, *shown = example.splitlines()
    place.write(
        ".budgetconf/settings.json",
        '{\n  "loop": {\n    "max_steps": 12\n  }\n}\n',
        base=place.home,
    )
    shutil.copy(ROOT / "settings.toml", place.work / "settings.toml")
    for assignment in command.removeprefix("$ ").split()[:-2]:
        name, _, value = assignment.partition("=")
        monkeypatch.setenv(name, value)
    assert main(command.split()[-1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    position = 0
    for line in shown:
        if line.strip() == "...":
            continue
        position = printed.index(line, position) + 1


def test_the_example_settings_file_is_the_project_source(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repository's settings.toml is read as the project source and sets nothing."""
    shutil.copy(ROOT / "settings.toml", place.work / "settings.toml")
    assert main(["check"]) == 0
    assert capsys.readouterr().out.startswith("ok: 31 fields resolved")
    setting = re.compile(r"# ([a-z_]+ = .*|\[[a-z]+\])")
    uncommented = "\n".join(
        line[2:] if setting.fullmatch(line) else line
        for line in (ROOT / "settings.toml").read_text().splitlines()
    )
    assert uncommented.count("\n[") == 2
    (place.work / "settings.toml").write_text(uncommented)
    assert main(["check"]) == 0, "every commented example value is valid when uncommented"
