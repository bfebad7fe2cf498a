"""budgetconf explain --diff: two resolutions, field by field, with the source of each value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def profiles(place: Place) -> Place:
    place.write(".budgetconf/profiles/fast.json", '{"loop": {"max_steps": 12}}\n', base=place.home)
    place.write(
        ".budgetconf/profiles/slow.json",
        '{"loop": {"max_steps": 60,\n "last_turn": "warn"}}\n',
        base=place.home,
    )
    return place


def test_two_profiles_differ_in_the_fields_each_sets(
    profiles: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the differing fields, each with both values and the source and locator of each."""
    code, out, err = run(["explain", "--profile", "fast", "--diff", "--profile", "slow"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "preset budgetconf: 2 fields differ",
        "",
        "loop.max_steps",
        "  before 12  profile  ~/.budgetconf/profiles/fast.json:1",
        "  after  60  profile  ~/.budgetconf/profiles/slow.json:1",
        "",
        "loop.last_turn",
        "  before wrap_up  default  built-in default",
        "  after     warn  profile  ~/.budgetconf/profiles/slow.json:2",
    ]


def test_the_json_form_gives_tools_the_same_evidence(
    profiles: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json after --diff: a document with both sides' presets, errors and fields."""
    args = ["explain", "--profile", "fast", "--diff", "--profile", "slow", "--format", "json"]
    code, out, _ = run(args, capsys)
    assert code == 0
    document: dict[str, Any] = json.loads(out)
    slow = str(profiles.home / ".budgetconf/profiles/slow.json")
    assert document["version"] == 1
    assert document["before"] == {"preset": "budgetconf", "warnings": [], "errors": []}
    assert document["fields"]["loop.last_turn"] == {
        "before": {"value": "wrap_up", "source": "default", "locator": "built-in default"},
        "after": {"value": "warn", "source": "profile", "locator": f"{slow}:2"},
    }
    assert list(document["fields"]) == ["loop.max_steps", "loop.last_turn"]


def test_a_workflow_step_is_compared_with_the_workflow_alone(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """--workflow w.yaml --diff --step review: the step's override and its locator."""
    place.write(
        "w.yaml",
        "loop:\n  max_steps: 30\nsteps:\n  - name: review\n    loop:\n      max_steps: 5\n",
    )
    args = ["explain", "loop.max_steps", "--workflow", "w.yaml", "--diff", "--step", "review"]
    code, out, _ = run(args, capsys)
    assert code == 0
    assert out.splitlines()[3:] == [
        "  before 30  yaml     ./w.yaml:2",
        "  after   5  step     step:review (./w.yaml:6)",
    ]


def test_application_flags_after_diff_are_the_second_resolutions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--diff -- --max-steps 20`: the flag wins only on the second side."""
    code, out, _ = run(["explain", "--diff", "--", "--max-steps", "20"], capsys)
    assert code == 0
    assert out.splitlines()[2:] == [
        "loop.max_steps",
        "  before 40  default  built-in default",
        "  after  20  cli      --max-steps",
    ]


def test_two_resolutions_alike_say_nothing_differs(
    profiles: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """No difference is said in one line, and in JSON as an empty `fields`."""
    args = ["explain", "--diff", "--preset", "budgetconf"]  # the default preset, named
    assert run(args, capsys)[1] == "preset budgetconf: no field differs\n"
    code, out, _ = run([*args, "--format", "json"], capsys)
    assert (code, json.loads(out)["fields"]) == (0, {})


NEEDS = (
    "budgetconf: usage error: --diff needs what the second resolution changes after it,"
    " such as --profile NAME, --set FIELD=VALUE or -- --max-steps 20\n"
)


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "--diff"],
        ["explain", "--diff", "--format", "json"],
        ["explain", "--profile", "fast", "--diff", "loop.max_steps"],
        ["explain", "--profile", "fast", "--diff", "--profile", "fast"],
    ],
)
def test_diff_with_nothing_to_change_is_a_usage_error(
    profiles: Place, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--diff with nothing after it compared a resolution with itself: it says what it needs."""
    assert run(args, capsys) == (64, "", NEEDS)


def test_another_preset_shows_the_fields_each_side_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--diff --preset opendot: budgetconf's fields and opendot's are on one side only."""
    code, out, _ = run(["explain", "--diff", "--preset", "opendot"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "preset budgetconf → opendot: 28 fields differ"
    assert lines[2:5] == [
        "loop.max_steps",
        "  before 40  default  built-in default",
        "  after   –           no such field",
    ]
    assert lines[-3:] == [
        "agent.max_steps",
        "  before  –           no such field",
        "  after  40  default  built-in default",
    ]
    code, out, _ = run(["explain", "--diff", "--preset", "opendot", "--format", "json"], capsys)
    assert json.loads(out)["fields"]["agent.max_steps"]["before"] is None


def test_a_secret_is_masked_on_both_sides(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A secret field's values are `***`, while its sources still show."""
    preset_file(
        place.work,
        name="app",
        sources=["default", "explicit"],
        fields={"auth.pin": {"type": "int", "default": 1234, "secret": True}},
    )
    code, out, _ = run(
        ["explain", "--preset", "app.toml", "--diff", "--set", "auth.pin=9999"], capsys
    )
    assert code == 0
    assert "9999" not in out
    assert "1234" not in out
    assert out.splitlines()[3:] == [
        "  before ***  default  built-in default",
        "  after  ***  explicit explicit",
    ]


def test_an_error_on_either_side_exits_1_and_is_said_once(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """As explain: errors go to stderr, one line each, and the comparison is still shown."""
    place.write("settings.toml", "[loop]\nmax_steps = 0\n")
    code, out, err = run(["explain", "--diff", "--set", "loop.max_steps=3"], capsys)
    assert code == 1
    assert err.splitlines() == [
        f"budgetconf: error: loop.max_steps from {place.work / 'settings.toml'}:2 (project):"
        " must be >= 1, got 0"
    ]
    assert out.splitlines()[0] == "preset budgetconf: 1 field differs"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--diff"], "--diff is an option of explain"),
        (["explain", "--diff", "--format", "toml"], "explain --diff shows a table or json"),
        (["explain", "--diff", "--nope"], "unrecognized arguments: --nope"),
    ],
)
def test_usage_errors_exit_64(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """A comparison that cannot be made as stated is a usage error, in one line."""
    code, out, err = run(args, capsys)
    assert (code, out) == (64, "")
    assert err == f"budgetconf: usage error: {message}\n"


@pytest.mark.parametrize(
    "side", [["--preset", "gone.toml", "--diff"], ["--diff", "--preset", "gone.toml"]]
)
def test_a_preset_file_that_cannot_be_loaded_on_either_side_exits_1(
    capsys: pytest.CaptureFixture[str], side: list[str]
) -> None:
    """As explain with that preset: one error line, exit 1, no comparison."""
    code, out, err = run(["explain", *side], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: ")
    assert "gone.toml" in err


def test_both_sides_warnings_go_to_stderr_once(
    profiles: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A warning of either side is printed on stderr, one line, as ``--format toml`` does."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPZ", "3")
    profiles.write(".budgetconf/profiles/odd.json", '{"lop": {}}\n', base=profiles.home)
    code, _, err = run(["explain", "--profile", "fast", "--diff", "--profile", "odd"], capsys)

    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("budgetconf: warning: BUDGETCONF_MAX_STEPZ ")
    assert lines[1].startswith("budgetconf: warning: ")
    assert "lop" in lines[1]


def test_the_json_form_lists_each_sides_warnings(
    profiles: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document's ``before`` and ``after`` each carry their resolution's warnings."""
    profiles.write(".budgetconf/profiles/odd.json", '{"lop": {}}\n', base=profiles.home)
    args = ["explain", "--profile", "fast", "--diff", "--profile", "odd", "--format", "json"]
    code, out, err = run(args, capsys)

    document: dict[str, Any] = json.loads(out)
    assert code == 0
    assert document["before"]["warnings"] == []
    (warning,) = document["after"]["warnings"]
    assert "lop" in warning
    assert err == f"budgetconf: warning: {warning}\n"


@pytest.mark.parametrize(
    "args",
    [
        ["loop.max_steps", "--diff", "loop.last_turn", "--profile", "slow"],
        ["--profile", "fast", "loop.max_steps", "--diff", "--profile", "slow", "loop.last_turn"],
    ],
    ids=["fields-together", "fields-after-options"],
)
def test_fields_after_diff_join_those_before_it(
    profiles: Place, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """A field named after ``--diff`` is compared too, with those named before it."""
    code, out, err = run(["explain", *args], capsys)

    assert (code, err) == (0, "")
    assert [line for line in out.splitlines() if line.startswith("loop.")] == [
        "loop.max_steps",
        "loop.last_turn",
    ]


def test_fields_may_follow_options_without_diff(
    profiles: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``explain --profile fast loop.max_steps`` and a field after an option: both shown."""
    args = ["explain", "loop.max_steps", "--profile", "fast", "loop.last_turn", "--format", "json"]
    code, out, _ = run(args, capsys)

    assert code == 0
    assert list(json.loads(out)["fields"]) == ["loop.max_steps", "loop.last_turn"]


def test_an_unknown_option_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Arguments argparse does not know, other than field names, exit 64 as before.

    The option is named; what follows it may be its value, a secret, so it is not shown.
    """
    code, out, err = run(["explain", "loop.max_steps", "--bogus", "x"], capsys)

    assert (code, out) == (64, "")
    assert err == "budgetconf: usage error: unrecognized arguments: --bogus\n"
