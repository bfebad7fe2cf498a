"""The command line's own options: what each refuses, and what it does when given nothing.

An option that names a path, a file, a preset, a profile, a step or a
variable never means "the default" when given empty: it is a usage error,
whichever option and whichever command.
"""

from __future__ import annotations

import pytest

from budgetconf.cli import main

from conftest import Place
from loops import ECHO, script


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


_RESOLUTION = ["--preset", "--global", "--project", "--profile", "--workflow", "--step"]


@pytest.mark.parametrize("command", ["explain", "check", "schema", "init"])
def test_an_empty_preset_is_a_usage_error_not_the_default(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--preset '' was the default preset in silence, while --global '' was refused."""
    code, out, err = run([command, "--preset", ""], capsys)
    assert (code, out, err) == (64, "", "budgetconf: usage error: --preset is empty\n")


@pytest.mark.parametrize("option", _RESOLUTION)
@pytest.mark.parametrize("command", ["explain", "check", "run"])
def test_every_empty_resolution_option_is_a_usage_error(
    place: Place, command: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each resolution option given empty, on each command that resolves, says so, exit 64."""
    rest = ["--model", script(place, ECHO), "go"] if command == "run" else []
    code, out, err = run([command, option, "", *rest], capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {option} is empty\n")


@pytest.mark.parametrize(
    "option",
    ["--events", "--model", "--base-url", "--model-name", "--api-key-env", "--set"],
)
def test_every_empty_option_of_run_is_a_usage_error(
    place: Place, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--events '' said 'No such file', --api-key-env '' looked in $: each is now 'is empty'."""
    model = script(place, ECHO)
    given = {"--model": [], "--base-url": [], "--model-name": ["--base-url", "http://h/v1"]}
    chosen = given.get(option, ["--model", model])
    if option == "--api-key-env":
        chosen = ["--base-url", "http://h/v1", "--model-name", "m"]
    code, out, err = run(["run", *chosen, option, "", "go"], capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {option} is empty\n")


def test_an_empty_option_after_diff_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    """The second side of --diff is parsed as the first: --profile '' there is as empty."""
    code, _, err = run(["explain", "--diff", "--profile", ""], capsys)
    assert (code, err) == (64, "budgetconf: usage error: --profile is empty\n")


def test_an_empty_preset_variable_is_unset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BUDGETCONF_PRESET= is an empty variable, which offers nothing: the default preset."""
    monkeypatch.setenv("BUDGETCONF_PRESET", "")
    code, out, _ = run(["check"], capsys)
    assert (code, out.endswith("(preset budgetconf)\n")) == (0, True)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["init", ""], "PATH"),
        (["init", "--kind", "profile", ""], "PATH"),  # wrote profiles/.json
        (["explain", ""], "FIELD"),
        (["explain", "loop.max_steps", ""], "FIELD"),
    ],
)
def test_an_empty_path_or_field_argument_is_a_usage_error(
    place: Place, args: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """init '' wrote a profile named '.json'; an empty PATH or FIELD is refused as empty."""
    code, out, err = run(args, capsys)
    assert (code, out, err) == (64, "", f"budgetconf: usage error: {named} is empty\n")
    assert not (place.budgetconf_home / "profiles" / ".json").exists()


def test_an_empty_prompt_is_a_prompt(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt is a message, not a name: run takes an empty one and the model answers it."""
    code, out, _ = run(["run", "--model", script(place, {"content": "hi"}), ""], capsys)
    assert (code, out) == (0, "hi\n")
