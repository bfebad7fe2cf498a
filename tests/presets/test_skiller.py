"""The skiller preset, sentence by sentence from its seed, through resolve() and explain.

Tests that take ``explained`` run twice, once through ``budgetconf.resolve`` and
once through ``budgetconf explain --format json``, and check the same document.

The seed's layout, rebuilt in each test's home folder:

    ~/.skiller/settings/agent.json              the global agent configuration
    ~/.skiller/profiles/agent.reviewer.json     the reviewer's profile
    ./workflow.yaml                             - agent: reviewer / config: {file: ...}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.cli import main

from conftest import Explain, Place
from helpers.seeds import SKILLER_OVERRIDES, SKILLER_WORKFLOW


def _json(loop: Mapping[str, object] | None, **other: object) -> str:
    """A settings file as people write them: the loop section, and the agent's other keys."""
    body = dict(other)
    if loop is not None:
        body["loop"] = loop
    return json.dumps(body, indent=2) + "\n"


def global_file(place: Place, loop: Mapping[str, object] | None, **other: object) -> Path:
    return place.write(".skiller/settings/agent.json", _json(loop, **other), base=place.home)


def profile_file(place: Place, loop: Mapping[str, object] | None, **other: object) -> Path:
    return place.write(
        ".skiller/profiles/agent.reviewer.json", _json(loop, **other), base=place.home
    )


def reviewer(explained: Explain, place: Place, workflow: str = SKILLER_WORKFLOW) -> dict[str, Any]:
    """The explain document for `--step reviewer`, from resolve() and from the command."""
    path = place.write("workflow.yaml", workflow)
    document = explained("skiller", workflow=path, step="reviewer")
    assert document["warnings"] == []  # the agent's own keys are Skiller's, not reported
    return document


def statuses(document: dict[str, Any], path: str) -> list[tuple[str, str]]:
    return [(c["source"], c["status"]) for c in document["fields"][path]["candidates"]]


def explain(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["explain", "--preset", "skiller", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- Configure loop limits --------------------------------------------------------------


def test_the_profile_s_loop_section_is_used_first(explained: Explain, place: Place) -> None:
    """Seed: "Skiller uses the loop section from the agent profile first.\""""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile = profile_file(place, {"max_turns": 12, "max_tool_calls": 4}, model="big")

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 12, "loop.max_tool_calls": 4}
    assert document["fields"]["loop.max_turns"]["locator"] == f"{profile}:4"


def test_the_workflow_step_selects_the_profile(explained: Explain, place: Place) -> None:
    """Seed: "Select the profile in the workflow YAML: - agent: reviewer / config: file: ..."."""
    profile = profile_file(place, {"max_turns": 12})

    document = reviewer(explained, place)

    sources = {s["source"]: (s["status"], s["locator"]) for s in document["sources"]}
    assert sources["profile"] == ("loaded", str(profile))
    assert sources["step"] == ("loaded", f"step:reviewer ({place.work / 'workflow.yaml'}:1)")


def test_a_profile_without_loop_leaves_the_global_settings_in_force(
    explained: Explain, place: Place
) -> None:
    """Seed: "If the profile has no loop section, Skiller uses the settings in
    ~/.skiller/settings/agent.json, the global agent configuration.\""""
    settings = global_file(place, {"max_turns": 50, "max_tool_calls": 20}, model="small")
    profile_file(place, None, model="big", tools=["grep"])

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 50, "loop.max_tool_calls": 20}
    turns = document["fields"]["loop.max_turns"]
    assert (turns["locator"], turns["merge"]) == (f"{settings}:4", "field")
    assert statuses(document, "loop.max_turns") == [("default", "shadowed"), ("global", "won")]


def test_without_either_section_the_defaults_apply(explained: Explain, place: Place) -> None:
    """Seed: "If neither defines it, Skiller uses the defaults below." (30 and 10)"""
    global_file(place, None, model="small")
    profile_file(place, None, model="big")

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 30, "loop.max_tool_calls": 10}
    assert {f["source"] for f in document["fields"].values()} == {"default"}


def test_a_profile_loop_section_replaces_the_global_one_whole(
    explained: Explain, place: Place
) -> None:
    """Seed: "A profile's loop section replaces the entire global section. Omitted fields use
    their defaults, not the corresponding global values.\""""
    settings = global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile = profile_file(place, {"max_turns": 12})

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 12, "loop.max_tool_calls": 10}
    calls = document["fields"]["loop.max_tool_calls"]
    assert (calls["source"], calls["locator"]) == ("default", "built-in default")
    assert [c for c in calls["candidates"] if c["source"] == "global"] == [
        {
            "source": "global",
            "locator": f"{settings}:4",
            "value": 20,
            "status": "replaced",
            "reason": f"section loop replaced whole by profile {profile}:2",
        }
    ]
    assert document["fields"]["loop.max_turns"]["merge"] == "replace"


def test_an_empty_profile_loop_section_still_replaces(explained: Explain, place: Place) -> None:
    """A profile with `"loop": {}` has a loop section: every field goes back to its default."""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile_file(place, {})

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 30, "loop.max_tool_calls": 10}
    assert statuses(document, "loop.max_turns") == [("default", "won"), ("global", "replaced")]


def test_both_files_use_the_same_structure(explained: Explain, place: Place) -> None:
    """Seed: "Both files use the same structure": a loop section of max_turns, max_tool_calls."""
    seed = {"max_turns": 30, "max_tool_calls": 10}
    global_file(place, seed)
    profile_file(place, {**seed, "max_turns": 31})

    document = reviewer(explained, place)

    assert document["values"] == {"loop.max_turns": 31, "loop.max_tool_calls": 10}
    assert document["fields"]["loop.max_tool_calls"]["source"] == "profile"


# --- Fields -----------------------------------------------------------------------------


def test_the_fields_and_their_defaults() -> None:
    """Seed: "max_turns ... Default 30" and "max_tool_calls ... Default 10", positive integers."""
    schema = load_preset("skiller").schema
    table = {f.path: (f.kind.value, f.ge, f.default, f.env, f.flags) for f in schema}
    assert table == {
        "loop.max_turns": ("int", 1, 30, (), ()),
        "loop.max_tool_calls": ("int", 1, 10, (), ()),
    }


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (0, "must be >= 1, got 0"),
        (-3, "must be >= 1, got -3"),
        ("7", 'not an integer: "7" (a string)'),
        (2.5, "not an integer: 2.5 (a float)"),
        (True, "not an integer: true (a boolean)"),
        (None, "null is not allowed: loop.max_turns must be an integer"),
    ],
)
def test_both_values_must_be_positive_integers_in_the_profile(
    place: Place, raw: object, reason: str
) -> None:
    """Seed: "Both values must be positive integers." A bad profile value is an error."""
    profile = profile_file(place, {"max_turns": raw})
    path = place.write("workflow.yaml", SKILLER_WORKFLOW)

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve("skiller", workflow=path, step="reviewer")

    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.field, error.source, error.locator, error.raw, error.reason) == (
        "loop.max_turns",
        "profile",
        f"{profile}:3",
        raw,
        reason,
    )
    assert str(error) == f"loop.max_turns from {profile}:3 (profile): {reason}"


def test_both_values_must_be_positive_integers_in_the_global_file(place: Place) -> None:
    """Seed: "Both values must be positive integers." The global file is checked too."""
    settings = global_file(place, {"max_tool_calls": 0})

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve("skiller")

    assert str(caught.value) == (
        f"loop.max_tool_calls from {settings}:3 (global): must be >= 1, got 0"
    )


def test_both_values_must_be_positive_integers_on_the_step(place: Place) -> None:
    """Seed: "Both values must be positive integers." A step override is checked too."""
    path = place.write("workflow.yaml", "- agent: reviewer\n  max_tool_calls: -1\n")

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve("skiller", workflow=path, step="reviewer")

    assert (caught.value.source, caught.value.locator, caught.value.raw) == (
        "step",
        f"step:reviewer ({path}:2)",
        -1,
    )


def test_a_bad_value_is_never_replaced_away(place: Place) -> None:
    """Policy error everywhere: a bad global value fails even when a profile replaces it."""
    global_file(place, {"max_turns": "lots"})
    profile_file(place, {"max_turns": 12})
    path = place.write("workflow.yaml", SKILLER_WORKFLOW)

    with pytest.raises(budgetconf.ConfigError, match=r"\(global\): not an integer: \"lots\""):
        budgetconf.resolve("skiller", workflow=path, step="reviewer")


# --- Step overrides ---------------------------------------------------------------------


def test_a_step_overrides_either_limit_directly(explained: Explain, place: Place) -> None:
    """Seed: "An agent step can override either limit directly: ... max_turns: 15 /
    max_tool_calls: 3\""""
    profile_file(place, {"max_turns": 12, "max_tool_calls": 4})

    document = reviewer(explained, place, SKILLER_WORKFLOW + "  max_tool_calls: 3\n")

    assert document["values"] == {"loop.max_turns": 12, "loop.max_tool_calls": 3}
    workflow = place.work / "workflow.yaml"
    calls = document["fields"]["loop.max_tool_calls"]
    assert (calls["source"], calls["locator"]) == ("step", f"step:reviewer ({workflow}:4)")


def test_step_values_take_precedence_over_the_resolved_configuration(
    explained: Explain, place: Place
) -> None:
    """Seed: "These step values take precedence over the resolved configuration.\""""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile_file(place, {"max_turns": 12, "max_tool_calls": 4})

    document = reviewer(explained, place, SKILLER_OVERRIDES)

    assert document["values"] == {"loop.max_turns": 15, "loop.max_tool_calls": 3}
    assert statuses(document, "loop.max_turns") == [
        ("default", "shadowed"),
        ("global", "replaced"),
        ("profile", "shadowed"),
        ("step", "won"),
    ]


def test_a_profile_path_given_by_the_caller_beats_the_step_s(
    explained: Explain, place: Place
) -> None:
    """--profile PATH is the caller's choice: it wins over the step's config.file."""
    profile_file(place, {"max_turns": 12})
    other = place.write("fast.json", _json({"max_turns": 5}))
    path = place.write("workflow.yaml", SKILLER_WORKFLOW)

    document = explained("skiller", workflow=path, step="reviewer", profile=other)

    turns = document["fields"]["loop.max_turns"]
    assert (turns["value"], turns["locator"]) == (5, f"{other}:3")


def test_a_relative_profile_is_read_from_the_workflow_folder(
    explained: Explain, place: Place
) -> None:
    """config.file written relative to the workflow means beside the workflow, not the cwd."""
    profile = place.write("flows/profiles/reviewer.json", _json({"max_turns": 8}))
    path = place.write(
        "flows/workflow.yaml", "- agent: reviewer\n  config:\n    file: profiles/reviewer.json\n"
    )

    document = explained("skiller", workflow=path, step="reviewer")

    assert document["fields"]["loop.max_turns"]["locator"] == f"{profile}:3"


# --- Defaults ---------------------------------------------------------------------------


def test_the_defaults_are_applied_in_memory(explained: Explain, place: Place) -> None:
    """Seed: "When neither configuration defines a loop section, Skiller applies the following
    values in memory; it does not create a file with this JSON\""""
    path = place.write("workflow.yaml", "- agent: reviewer\n")
    before = sorted(_files_under(place.home)), sorted(_files_under(place.work))

    document = explained("skiller", workflow=path, step="reviewer")

    assert document["values"] == {"loop.max_turns": 30, "loop.max_tool_calls": 10}
    assert (sorted(_files_under(place.home)), sorted(_files_under(place.work))) == before
    assert not (place.home / ".skiller").exists()
    sources = {s["source"]: s["status"] for s in document["sources"]}
    assert sources == {
        "default": "loaded",
        "global": "missing",
        "profile": "not configured",
        "step": "loaded",
    }


def _files_under(root: Path) -> list[str]:
    return [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names]


# --- When a limit is reached: what the preset declares for the loop ----------------------


def test_the_loop_table_declares_the_seed_s_behaviour() -> None:
    """Seed: "the harness warns the model before its last allowed turn", "stops with the reason
    max_turns_exhausted", "a response containing 11 calls is rejected as a whole"."""
    loop = load_preset("skiller").description.loop
    assert loop is not None
    assert loop.budgets == {
        "max_steps": "loop.max_turns",
        "max_tool_calls_per_turn": "loop.max_tool_calls",
    }
    assert loop.behaviours == {"last_turn": "warn", "over_cap": "reject"}
    assert loop.stop_reasons == {"max_steps": "max_turns_exhausted"}


# --- budgetconf explain -----------------------------------------------------------------


def test_explain_shows_the_global_values_replaced_by_the_profile(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table: the profile's value, and the global one marked replaced by the profile's line."""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile_file(place, {"max_turns": 12}, model="big")
    place.write("workflow.yaml", SKILLER_WORKFLOW)

    code, out, err = explain(["--workflow", "workflow.yaml", "--step", "reviewer"], capsys)

    assert (code, err) == (0, "")
    lines = [line.split() for line in out.splitlines()]
    start = lines.index(["loop.max_turns", "12", "~/.skiller/profiles/agent.reviewer.json:4"])
    replaced = ["section", "loop", "replaced", "whole", "by", "profile"]
    assert lines[start : start + 8] == [
        ["loop.max_turns", "12", "~/.skiller/profiles/agent.reviewer.json:4"],
        ["replaced", "50", "~/.skiller/settings/agent.json:3"],
        [*replaced, "~/.skiller/profiles/agent.reviewer.json:3"],
        ["shadowed", "30", "built-in", "default"],
        ["loop.max_tool_calls", "10", "built-in", "default"],
        ["replaced", "20", "~/.skiller/settings/agent.json:4"],
        [*replaced, "~/.skiller/profiles/agent.reviewer.json:3"],
        [],
    ]
    assert "warning" not in out


def test_explain_json_names_the_profile_by_its_absolute_path_and_line(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document keeps absolute paths: the replacing profile is located at path:line."""
    global_file(place, {"max_turns": 50, "max_tool_calls": 20})
    profile = profile_file(place, {"max_turns": 12})
    workflow = place.write("workflow.yaml", SKILLER_OVERRIDES.replace("  max_turns: 15\n", ""))

    code, out, _ = explain(
        ["--workflow", str(workflow), "--step", "reviewer", "--format", "json"], capsys
    )

    document = json.loads(out)
    assert code == 0
    assert document["values"] == {"loop.max_turns": 12, "loop.max_tool_calls": 3}
    turns = document["fields"]["loop.max_turns"]
    assert (turns["source"], turns["locator"], turns["merge"]) == (
        "profile",
        f"{profile}:3",
        "replace",
    )
    assert turns["candidates"][1] == {
        "source": "global",
        "locator": f"{place.home}/.skiller/settings/agent.json:3",
        "value": 50,
        "status": "replaced",
        "reason": f"section loop replaced whole by profile {profile}:2",
    }
    calls = document["fields"]["loop.max_tool_calls"]
    assert (calls["source"], calls["locator"]) == ("step", f"step:reviewer ({workflow}:4)")


def test_explain_reports_a_bad_value_and_exits_1(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both values must be positive integers: explain says which, where, and exits 1."""
    profile = profile_file(place, {"max_turns": 0})
    place.write("workflow.yaml", SKILLER_WORKFLOW)

    code, _, err = explain(["--workflow", "workflow.yaml", "--step", "reviewer"], capsys)

    assert code == 1
    assert err == (
        f"budgetconf: error: loop.max_turns from {profile}:3 (profile): must be >= 1, got 0\n"
    )


def test_explain_refuses_sources_skiller_does_not_have(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Skiller has no environment variables or flags for these limits: -- args are refused."""
    code, _, err = explain(["--", "--max-turns", "5"], capsys)
    assert code == 64
    assert "has no cli source" in err
