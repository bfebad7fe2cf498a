"""The policy source: an administrator's ceilings, floors, locked values and defaults.

The default preset's policy file is ``place.policy`` here (conftest moves it
from /etc/budgetconf/policy.json in Python, since no variable can).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.loop import Budget, LoopExecutor, ScriptedModel, current_run

from conftest import Place
from helpers.presetfiles import preset_file
from helpers.resolving import quiet, statuses

STEPS_AT_200 = """{
  "loop": {
    "max_steps": {"max": 200}
  }
}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def policy(place: Place, document: dict[str, Any]) -> str:
    """The installed policy, written as ``document`` with one key a line; its path."""
    write(place.policy, json.dumps(document, indent=2))
    return str(place.policy)


# --- clamp, reject, locked, default --------------------------------------------------------


def test_a_value_above_the_ceiling_is_clamped_to_it_and_kept_in_the_trace(place: Place) -> None:
    """env 500 over a ceiling of 200: the value is 200 from the rule, the env value clamped."""
    write(place.policy, STEPS_AT_200)
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"})
    rule = f"{place.policy}:3"
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (200, "policy")
    entry = res.to_dict()["fields"]["loop.max_steps"]
    assert entry["locator"] == rule
    assert entry["candidates"] == [
        {"source": "default", "locator": "built-in default", "value": 40, "status": "shadowed"},
        {
            "source": "env",
            "locator": "env:BUDGETCONF_MAX_STEPS",
            "value": 500,
            "raw": "500",
            "status": "clamped",
            "reason": f"above the policy ceiling 200 ({rule})",
        },
        {"source": "policy", "locator": rule, "value": 200, "status": "won"},
    ]
    assert entry["policy"] == {"max": 200, "locator": rule}
    assert (res.errors, res.warnings) == ((), ())


def test_a_value_below_the_floor_is_clamped_up_to_it(place: Place) -> None:
    """A floor of 5 lifts a project file's 2 to 5, the file's value clamped."""
    path = policy(place, {"loop": {"max_steps": {"min": 5}}})
    place.write("settings.toml", "[loop]\nmax_steps = 2\n")
    res = quiet()
    assert res["loop.max_steps"] == 5
    clamped = res.trace("loop.max_steps").candidates[-2]
    assert (clamped.source, clamped.status, clamped.reason) == (
        "project",
        "clamped",
        f"below the policy floor 5 ({path}:3)",
    )


def test_a_value_inside_the_bounds_stands_and_the_policy_adds_no_candidate(place: Place) -> None:
    """The policy decides nothing, so it adds no candidate; the field still shows its bounds."""
    write(place.policy, STEPS_AT_200)
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "150"})
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (150, "env")
    assert statuses(res, "loop.max_steps") == [("default", "shadowed"), ("env", "won")]
    assert res.to_dict()["fields"]["loop.max_steps"]["policy"]["max"] == 200


def test_reject_drops_every_value_past_the_bound_and_the_next_one_competes(place: Place) -> None:
    """With on_exceed reject, env 500 and the project's 300 are rejected; the default 40 wins."""
    path = policy(place, {"on_exceed": "reject", "loop": {"max_steps": {"max": 200}}})
    place.write("settings.toml", "[loop]\nmax_steps = 300\n")
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"})
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (40, "default")
    assert statuses(res, "loop.max_steps") == [
        ("default", "won"),
        ("project", "rejected"),
        ("env", "rejected"),
    ]
    reasons = {c.reason for c in res.trace("loop.max_steps").candidates[1:]}
    assert reasons == {f"above the policy ceiling 200 ({path}:4)"}
    assert (res.errors, res.warnings) == ((), ())


def test_reject_with_no_value_inside_the_bounds_gives_the_bound(place: Place) -> None:
    """A rejecting floor of 50 above every value there is: the floor itself wins."""
    path = policy(place, {"loop": {"max_steps": {"min": 50, "on_exceed": "reject"}}})
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "45"})
    assert res["loop.max_steps"] == 50
    assert statuses(res, "loop.max_steps") == [
        ("default", "rejected"),
        ("env", "rejected"),
        ("policy", "won"),
    ]
    assert res.trace("loop.max_steps").locator == f"{path}:3"


def test_a_rule_on_exceed_overrides_the_files(place: Place) -> None:
    """The top level says reject; a rule that says clamp clamps."""
    policy(place, {"on_exceed": "reject", "loop": {"max_steps": {"max": 9, "on_exceed": "clamp"}}})
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"})
    assert res["loop.max_steps"] == 9
    assert statuses(res, "loop.max_steps")[-2:] == [("env", "clamped"), ("policy", "won")]


def test_a_locked_value_wins_and_shadows_every_other(place: Place) -> None:
    """value locks the field: the explicit argument, the env and the default are shadowed."""
    path = policy(place, {"loop": {"last_turn": {"value": "warn"}}})
    res = quiet(env={"BUDGETCONF_LAST_TURN": "none"}, explicit={"loop.last_turn": "wrap_up"})
    assert res["loop.last_turn"] == "warn"
    assert statuses(res, "loop.last_turn") == [
        ("default", "shadowed"),
        ("env", "shadowed"),
        ("explicit", "shadowed"),
        ("policy", "won"),
    ]
    assert res.to_dict()["fields"]["loop.last_turn"]["policy"] == {
        "value": "warn",
        "locator": f"{path}:3",
    }


def test_a_policy_default_replaces_the_built_in_one_when_nothing_else_is_set(
    place: Place,
) -> None:
    """default 25 wins over the built-in 40, and gives way to any source that sets the field."""
    policy(place, {"loop": {"max_steps": {"default": 25}}})
    res = quiet()
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (25, "policy")
    assert statuses(res, "loop.max_steps") == [("default", "shadowed"), ("policy", "won")]
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "30"})
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (30, "env")


def test_an_unset_optional_field_with_a_ceiling_takes_the_ceiling(place: Place) -> None:
    """A ceiling means there is a limit: an unset cost limit becomes the policy's max."""
    path = policy(place, {"limits": {"max_cost_usd": {"max": 5}}})
    res = quiet()
    assert (res["limits.max_cost_usd"], res.trace("limits.max_cost_usd").source) == (
        5.0,
        "policy",
    )
    unset = res.trace("limits.max_cost_usd").candidates[0]
    assert (unset.status, unset.reason) == (
        "shadowed",
        f"unset, so it takes the policy ceiling 5.0 ({path}:3)",
    )


def test_an_alias_names_a_field_in_a_policy_as_it_does_elsewhere(place: Place) -> None:
    """max_turns is loop.max_steps's alias: a rule by that name bounds max_steps."""
    policy(place, {"loop": {"max_turns": {"max": 12}}})
    assert quiet(env={"BUDGETCONF_MAX_STEPS": "99"})["loop.max_steps"] == 12


def test_a_policy_decision_is_no_problem_for_check(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """check passes when the policy clamps or rejects: an administrator's rule is no error."""
    policy(place, {"on_exceed": "reject", "loop": {"max_steps": {"max": 200}}})
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "500")
    assert main(["check"]) == 0
    assert re.match(r"ok: \d+ fields resolved, no warnings", capsys.readouterr().out)


def test_a_policy_file_that_changes_is_read_again(place: Place) -> None:
    """The memo's key holds the policy file's version: a new ceiling applies at once."""
    env = {"BUDGETCONF_MAX_STEPS": "500"}
    assert quiet(env=env)["loop.max_steps"] == 500
    policy(place, {"loop": {"max_steps": {"max": 200}}})
    assert quiet(env=env)["loop.max_steps"] == 200


# --- where the policy is, and who can move it -----------------------------------------------


def test_a_missing_installed_policy_means_no_policy(place: Place) -> None:
    """No file at the preset's path: the source is missing and changes nothing."""
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"})
    report = res.sources[-1]
    assert (report.source, report.status, report.locator) == (
        "policy",
        "missing",
        str(place.policy),
    )
    assert res["loop.max_steps"] == 500


def test_the_default_preset_installs_its_policy_under_etc() -> None:
    """The built-in preset's policy path is /etc/budgetconf/policy.json, above every source."""
    from budgetconf._presets import builtin_path, read_preset
    from budgetconf.sources import KINDS

    kinds = {name: source.KIND for name, source in KINDS.items()}
    stack = read_preset(builtin_path("budgetconf"), origin="built-in", kinds=kinds).stack
    assert stack[-1].kind == "policy"
    assert stack[-1].options == {"path": "/etc/budgetconf/policy.json"}


@pytest.mark.parametrize("seed", ["opendot", "skiller", "praisonai", "praisonai-code"])
def test_the_seed_presets_have_no_policy_and_refuse_a_policy_file(
    seed: str, place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seed preset reproduces another system's contract: no policy, and policy_file= is
    a usage error (exit 64 on the command line)."""
    path = write(place.work / "p.json", STEPS_AT_200)
    from budgetconf._engine import load_preset

    assert not load_preset(seed).has_source("policy")
    with pytest.raises(budgetconf.UsageError, match=f"preset '{seed}' has no policy source"):
        budgetconf.resolve(seed, policy_file=path)
    assert main(["explain", "--preset", seed, "--policy", str(path)]) == 64
    assert "has no policy source for --policy" in capsys.readouterr().err


def test_no_variable_moves_or_switches_off_the_installed_policy(
    place: Place, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """HOME, XDG_* and BUDGETCONF_* pointed elsewhere, at a lenient policy: the installed one
    still applies."""
    write(place.policy, STEPS_AT_200)
    elsewhere = tmp_path / "elsewhere"
    lenient = write(
        elsewhere / "budgetconf" / "policy.json", '{"loop": {"max_steps": {"max": 900}}}'
    )
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "BUDGETCONF_HOME"):
        monkeypatch.setenv(name, str(elsewhere))
    for name in ("BUDGETCONF_POLICY", "BUDGETCONF_POLICY_FILE", "BUDGETCONF_POLICY_PATH"):
        monkeypatch.setenv(name, str(lenient))
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "500")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", budgetconf.BudgetConfWarning)
        res = budgetconf.resolve()
    assert (res["loop.max_steps"], res.sources[-1].locator) == (200, str(place.policy))
    assert "BUDGETCONF_POLICY is not a known variable" in res.warnings


def test_a_preset_file_has_a_policy_exactly_when_its_top_level_names_one(place: Place) -> None:
    """policy = "/absolute/path" places the source above the whole stack; without it, none."""
    rules = write(place.work / "rules.json", '{"app": {"steps": {"max": 3}}}')
    fields = {"app.steps": {"type": "int", "default": 10, "env": ["APP_STEPS"]}}
    with_policy = preset_file(
        place.work, fields=fields, sources=["default", "env"], policy=str(rules)
    )
    res = budgetconf.resolve(with_policy, env={"APP_STEPS": "8"})
    assert (res["app.steps"], [s.source for s in res.sources]) == (3, ["default", "env", "policy"])
    without = preset_file(place.work, fields=fields, sources=["default", "env"], file="plain.toml")
    assert [s.source for s in budgetconf.resolve(without).sources] == ["default", "env"]
    with pytest.raises(budgetconf.UsageError, match="has no policy source for policy_file="):
        budgetconf.resolve(without, policy_file=rules)


@pytest.mark.parametrize("path", ["rules.json", "~/rules.json", "{home}/rules.json", "./x.json"])
def test_a_preset_files_policy_path_must_be_absolute(place: Place, path: str) -> None:
    """No ~, no {home}, nothing relative: nothing a user sets can move the policy."""
    fields = {"app.steps": {"type": "int", "default": 10}}
    preset = preset_file(place.work, fields=fields, policy=path)
    with pytest.raises(budgetconf.PresetError, match="policy: expected an absolute path"):
        budgetconf.resolve(preset)


def test_a_preset_cannot_place_the_policy_in_its_stack(place: Place) -> None:
    """kind = "policy" in [[sources]] is refused: the top level's policy key places it."""
    fields = {"app.steps": {"type": "int", "default": 10}}
    preset = preset_file(place.work, fields=fields, sources=["default", "policy"])
    with pytest.raises(budgetconf.PresetError, match="placed by the top level's policy"):
        budgetconf.resolve(preset)


# --- a policy file added: both apply ---------------------------------------------------------


def test_an_added_policy_file_applies_with_the_installed_one_the_stricter_bound_winning(
    place: Place,
) -> None:
    """installed max 200, added max 100 and min 3: max 100 (added) and min 3 apply; an added
    max of 300 leaves the installed 200."""
    write(place.policy, STEPS_AT_200)
    stricter = write(place.work / "try.json", '{"loop": {"max_steps": {"max": 100, "min": 3}}}')
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"}, policy_file=stricter)
    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (100, f"{stricter}:1")
    assert res.to_dict()["fields"]["loop.max_steps"]["policy"] == {
        "max": 100,
        "min": 3,
        "locator": f"{stricter}:1",
    }
    looser = write(place.work / "loose.json", '{"loop": {"max_steps": {"max": 300}}}')
    res = quiet(env={"BUDGETCONF_MAX_STEPS": "500"}, policy_file=looser)
    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (
        200,
        f"{place.policy}:3",
    )
    assert res.sources[-1].locator == f"{place.policy}, {looser}"


def test_two_different_locked_values_for_one_field_are_an_error(place: Place) -> None:
    """The installed file locks last_turn to warn, the added one to none: a SourceError."""
    policy(place, {"loop": {"last_turn": {"value": "warn"}}})
    added = write(place.work / "try.json", '{\n"loop": {\n"last_turn": {"value": "none"}}}')
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(policy_file=added)
    assert str(caught.value) == (
        f'policy {added}:3: loop.last_turn: locked to "none" here and to "warn" by {place.policy}:3'
    )
    same = write(place.work / "same.json", '{"loop": {"last_turn": {"value": "warn"}}}')
    assert budgetconf.resolve(policy_file=same)["loop.last_turn"] == "warn"


def test_an_added_bound_that_makes_the_installed_rule_impossible_is_an_error(
    place: Place,
) -> None:
    """An added floor above the installed ceiling: both cannot hold, and the error names both."""
    write(place.policy, STEPS_AT_200)
    added = write(place.work / "try.json", '{"loop": {"max_steps": {"min": 300}}}')
    with pytest.raises(budgetconf.SourceError, match=r"min 300 \(.*try.json:1\) is above max 200"):
        budgetconf.resolve(policy_file=added)


def test_a_named_policy_file_must_exist(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """policy_file= and --policy name a file: a missing one fails, exit 1 on the command line."""
    missing = place.work / "nope.json"
    with pytest.raises(budgetconf.SourceError, match=f"policy {missing}: no such file"):
        budgetconf.resolve(policy_file=missing)
    assert main(["explain", "--policy", str(missing)]) == 1
    assert capsys.readouterr().err == f"budgetconf: error: policy {missing}: no such file\n"


# --- fail closed: every bad policy file fails every resolution ---------------------------------


def _fails(place: Place, capsys: pytest.CaptureFixture[str], message: str) -> None:
    """resolve() raises SourceError with ``message``, and explain exits 1 saying it in one line."""
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "5"})
    assert str(caught.value) == message
    assert main(["explain", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["errors"] == [message]
    assert document["sources"][-1]["status"] == "error"
    assert main(["explain"]) == 1
    err = capsys.readouterr().err
    assert err == f"budgetconf: error: {message}\n"


def test_a_policy_path_that_is_a_directory_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    place.policy.mkdir(parents=True)
    _fails(place, capsys, f"policy {place.policy}: is a directory, not a file")


def test_a_policy_path_that_links_to_nothing_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link is there even when its file is not: it is no missing policy."""
    place.policy.parent.mkdir(parents=True)
    place.policy.symlink_to(place.policy.parent / "gone.json")
    _fails(place, capsys, f"policy {place.policy}: a link to a file that does not exist")


def test_a_link_to_nothing_that_appears_after_a_resolution_still_fails_closed(
    place: Place,
) -> None:
    """The memo kept a resolution made with no policy file; a link to nothing put there
    later is not the same version of "no file", so the next resolution fails."""
    assert budgetconf.resolve(env={})["loop.max_steps"] == 40
    place.policy.parent.mkdir(parents=True)
    place.policy.symlink_to(place.policy.parent / "gone.json")
    with pytest.raises(budgetconf.SourceError, match="a link to a file that does not exist"):
        budgetconf.resolve(env={})


def test_a_huge_policy_file_fails_closed(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    write(place.policy, '{"loop": {}}' + " " * (1 << 20))
    _fails(place, capsys, f"policy {place.policy}: larger than the limit of 1048576 bytes")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_policy_file_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    write(place.policy, STEPS_AT_200).chmod(0)
    _fails(place, capsys, f"policy {place.policy}: cannot read: Permission denied")


def test_a_policy_file_that_is_not_json_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    write(place.policy, '{\n  "loop": {max_steps: 3}\n}\n')
    _fails(
        place,
        capsys,
        f"policy {place.policy}:2: invalid JSON: Expecting property name enclosed in double"
        " quotes (column 12)",
    )


def test_a_policy_file_with_duplicate_keys_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        place.policy,
        '{\n  "loop": {\n    "max_steps": {"max": 9},\n    "max_steps": {"max": 900}\n  }\n}\n',
    )
    _fails(place, capsys, f"policy {place.policy}:4: duplicate key 'max_steps'")


def test_a_rule_of_the_wrong_type_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    write(place.policy, '{\n  "loop": {\n    "max_steps": 200\n  }\n}\n')
    _fails(
        place,
        capsys,
        f"policy {place.policy}:3: loop.max_steps: a rule is an object of max, min, value,"
        " default and on_exceed, got an integer",
    )


def test_a_bound_of_the_wrong_type_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    write(place.policy, '{\n  "loop": {\n    "max_steps": {\n      "max": "200"\n    }\n  }\n}\n')
    _fails(
        place,
        capsys,
        f'policy {place.policy}:4: loop.max_steps: max: not an integer: "200" (a string)',
    )


def test_a_min_above_the_max_fails_closed(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    policy(place, {"loop": {"max_steps": {"min": 50, "max": 20}}})
    _fails(place, capsys, f"policy {place.policy}:3: loop.max_steps: min 50 is above max 20")


def test_a_locked_value_outside_the_bounds_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"max_steps": {"max": 20, "value": 30}}})
    _fails(place, capsys, f"policy {place.policy}:3: loop.max_steps: value 30 is above max 20")


def test_a_default_outside_the_bounds_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"max_steps": {"min": 10, "default": 3}}})
    _fails(place, capsys, f"policy {place.policy}:3: loop.max_steps: default 3 is below min 10")


def test_a_max_on_a_field_that_is_not_a_number_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"last_turn": {"max": 3}}})
    _fails(
        place,
        capsys,
        f"policy {place.policy}:4: loop.last_turn: max: loop.last_turn is one of warn, wrap_up,"
        " none; max and min bound numbers",
    )


def test_a_locked_value_of_the_wrong_type_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"last_turn": {"value": "stop"}}})
    _fails(
        place,
        capsys,
        f'policy {place.policy}:4: loop.last_turn: value: not one of warn, wrap_up, none: "stop"',
    )


def test_an_unknown_field_fails_closed(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    policy(place, {"loop": {"max_step": {"max": 3}}})
    _fails(
        place,
        capsys,
        f"policy {place.policy}:3: unknown field 'loop.max_step'; did you mean loop.max_steps?",
    )


def test_an_unknown_key_in_a_rule_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"max_steps": {"maxx": 3}}})
    _fails(
        place,
        capsys,
        f"policy {place.policy}:4: loop.max_steps: unknown key 'maxx' (did you mean 'max'?)",
    )


def test_an_unknown_section_fails_closed(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    policy(place, {"loops": {"max_steps": {"max": 3}}})
    _fails(place, capsys, f"policy {place.policy}:2: unknown section 'loops'; did you mean loop?")


def test_a_bad_on_exceed_fails_closed(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    policy(place, {"on_exceed": "truncate", "loop": {"max_steps": {"max": 3}}})
    _fails(
        place,
        capsys,
        f"policy {place.policy}:2: on_exceed: expected clamp or reject, got 'truncate'",
    )


def test_a_rule_that_bounds_nothing_fails_closed(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    policy(place, {"loop": {"max_steps": {"on_exceed": "reject"}}})
    _fails(
        place,
        capsys,
        f"policy {place.policy}:3: loop.max_steps: a rule needs max, min, value or default",
    )


def test_a_bad_policy_fails_a_preset_whose_sources_all_fall_back(place: Place) -> None:
    """Fail closed whatever the preset's invalid policy: a stack of fallback sources still
    raises on a broken policy file."""
    rules = write(place.work / "rules.json", "{not json")
    fields = {"app.steps": {"type": "int", "default": 10, "env": ["APP_STEPS"]}}
    preset = preset_file(
        place.work,
        fields=fields,
        sources=[{"kind": "default"}, {"kind": "env", "invalid": "fallback"}],
        policy=str(rules),
    )
    with pytest.raises(budgetconf.SourceError, match=f"policy {rules}:1: invalid JSON"):
        budgetconf.resolve(preset)


# --- check --policy ----------------------------------------------------------------------------


def test_check_policy_judges_a_good_file_alone(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """exit 0 and one line, whatever the user's own sources say (a broken project file)."""
    place.write("settings.toml", "not toml [")
    path = write(place.work / "p.json", STEPS_AT_200)
    assert main(["check", "--policy", str(path)]) == 0
    assert capsys.readouterr().out == f"ok: policy {path}, 1 rule (preset budgetconf)\n"
    assert main(["check", "--policy", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rules"] == {
        "loop.max_steps": {"max": 200, "locator": f"{path}:3"}
    }


def test_check_policy_fails_a_bad_file_with_one_line(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(place.work / "p.json", '{"loop": {"max_steps": {"min": 9, "max": 3}}}')
    assert main(["check", "--policy", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"budgetconf: error: policy {path}:1: loop.max_steps: min 9 is above max 3\n"
    )
    assert captured.out == f"check failed: 1 error (policy {path}, preset budgetconf)\n"
    missing = place.work / "nope.json"
    assert main(["check", "--policy", str(missing)]) == 1
    assert f"policy {missing}: no such file" in capsys.readouterr().err


def test_check_policy_fails_on_what_a_resolution_would_warn_of(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A default that holds the mask for a URL's password warns in explain: so it fails check."""
    masked = "redis://agent:***@127.0.0.1:9/0"
    path = write(place.work / "p.json", json.dumps({"ledger": {"url": {"default": masked}}}))
    warning = (
        f"ledger.url from {path}:1 (policy): the URL's password is ***, the mask shown in place"
        " of a password, not a password (copied from explain's output?)"
    )
    assert main(["check", "--policy", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"budgetconf: warning: {warning}\n"
    assert captured.out == f"check failed: 0 errors, 1 warning (policy {path}, preset budgetconf)\n"
    assert main(["check", "--policy", str(path), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["warnings"] == [warning]
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        budgetconf.resolve(env={}, policy_file=path)
    assert [str(w.message) for w in caught] == [warning]  # the same words a resolution warns in


def test_check_policy_takes_no_other_source(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """It judges the file alone: another resolution option is a usage error, as is a seed."""
    path = write(place.work / "p.json", STEPS_AT_200)
    assert main(["check", "--policy", str(path), "--set", "loop.max_steps=3"]) == 64
    assert (
        "check --policy judges the policy file alone; it takes no --set" in capsys.readouterr().err
    )
    assert main(["check", "--preset", "opendot", "--policy", str(path)]) == 64


# --- what users see: the table and the stop --------------------------------------------------


def test_the_table_shows_a_clamp_at_a_glance_and_the_bounds(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The winner names the policy's rule; the clamped row has its reason beneath; the bounds
    row names where they are written."""
    write(place.policy, STEPS_AT_200)
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "500")
    assert main(["explain", "loop.max_steps"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:7]]
    rule = f"{place.policy}:3"
    assert rows == [
        ["loop.max_steps", "200", rule, "(policy", "ceiling)"],
        ["clamped", "500", "env:BUDGETCONF_MAX_STEPS"],
        ["above", "the", "policy", "ceiling", "200", f"({rule})"],
        ["shadowed", "40", "built-in", "default"],
        ["policy", "max", "200", rule],
    ]


def _stopped(budget: budgetconf.Resolution) -> tuple[str, dict[str, Any]]:
    model = ScriptedModel([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}])
    result = LoopExecutor(model, tools={"echo": lambda text: text}, budget=budget).run("go")
    assert result.limit is not None
    return result.message, result.limit


def test_a_resume_takes_no_more_steps_than_the_policy_s_ceiling(place: Place) -> None:
    """extra_steps past the ceiling is lowered to it, and the stop says the policy did it;
    fewer steps than the ceiling stand as asked."""
    path = policy(place, {"loop": {"max_steps": {"max": 3}}})
    model = ScriptedModel([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}])
    executor = LoopExecutor(model, {"echo": lambda text: text}, budgetconf.resolve(env={}))
    first = executor.run("go")
    assert (first.stop_reason, first.turns) == ("max_steps", 3)
    more = executor.resume(first, extra_steps=50)
    assert (more.stop_reason, more.turns) == ("max_steps", 6)  # three more, not fifty
    assert more.message == (
        f"stopped: hit max_steps (3): loop.max_steps = 3 from the policy {path}:3"
        " (ceiling; resume(extra_steps=50) asked for 50); only the policy's administrator"
        " can raise it"
    )
    assert more.limit is not None
    assert more.limit["raise_with"] == []
    fewer = executor.resume(more, extra_steps=2)
    assert fewer.turns == 8
    assert fewer.limit is not None
    assert fewer.limit["locator"] == "resume(extra_steps=2)"


def test_a_resume_past_a_rejecting_ceiling_is_refused_and_a_locked_step_budget_stays(
    place: Place,
) -> None:
    """A ceiling that rejects refuses extra_steps past it, naming the rule; a locked value is
    the resumed run's budget whatever extra_steps asks for."""
    path = policy(place, {"loop": {"max_steps": {"max": 3, "on_exceed": "reject"}}})
    model = ScriptedModel([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}])
    executor = LoopExecutor(model, {"echo": lambda text: text}, budgetconf.resolve(env={}))
    first = executor.run("go")
    with pytest.raises(budgetconf.UsageError) as caught:
        executor.resume(first, extra_steps=50)
    assert str(caught.value) == (
        f"resume(extra_steps=50): loop.max_steps may not be above the policy ceiling 3 ({path}:3)"
    )
    policy(place, {"loop": {"max_steps": {"value": 2}}})
    executor = LoopExecutor(model, {"echo": lambda text: text}, budgetconf.resolve(env={}))
    more = executor.resume(executor.run("go"), extra_steps=1)
    assert (more.stop_reason, more.turns) == ("max_steps", 4)
    assert more.limit is not None
    assert (more.limit["source"], more.limit["locator"]) == ("policy", f"{path}:3")
    assert "(locked; resume(extra_steps=1) asked for 1)" in more.message


def _carving(res: budgetconf.Resolution, **caps: int) -> Any:
    """What a tool of a run of ``res`` carves with ``caps``: the child's budget, or the error."""
    found: list[Any] = []

    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        try:
            found.append(handle.carve(**caps))
        except budgetconf.UsageError as exc:
            found.append(exc)
        return "spawned"

    model = ScriptedModel([{"tool_calls": [{"name": "spawn", "arguments": {}}]}, {"content": "ok"}])
    LoopExecutor(model, {"spawn": spawn}, res).run("go")
    (carved,) = found
    return carved


def test_a_carved_cap_is_held_to_the_policy_of_the_run_it_comes_from(place: Place) -> None:
    """A tool in a 3-step run cannot start a 50-turn child past the policy's ceiling of 10: its
    cap is lowered to it, naming the rule; a locked field keeps its value in the child."""
    path = policy(
        place, {"loop": {"max_steps": {"max": 10}}, "limits": {"max_tokens": {"value": 900}}}
    )
    res = budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "3"})
    child = _carving(res, max_steps=50, max_tokens=100)
    steps, tokens = child.limits["max_steps"], child.limits["max_tokens"]
    assert (steps.value, steps.source, steps.locator) == (10, "policy", f"{path}:3")
    assert steps.explain() == (
        f"loop.max_steps = 10 from the policy {path}:3 (ceiling; carve(max_steps=50) asked"
        " for 50); only the policy's administrator can raise it"
    )
    assert (tokens.value, tokens.source, tokens.locator) == (900, "policy", f"{path}:8")
    assert tokens.policed == "locked; carve(max_tokens=100) asked for 100"
    below = _carving(res, max_steps=4).limits["max_steps"]
    assert (below.value, below.source, below.locator) == (4, "carve", "carve(max_steps=4)")


def test_a_carved_cap_past_a_rejecting_ceiling_is_a_usage_error_naming_the_rule(
    place: Place,
) -> None:
    path = policy(place, {"loop": {"max_steps": {"max": 10, "on_exceed": "reject"}}})
    error = _carving(budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "3"}), max_steps=50)
    assert isinstance(error, budgetconf.UsageError)
    assert str(error) == (
        f"carve(max_steps=50): loop.max_steps may not be above the policy ceiling 10 ({path}:3)"
    )


def test_a_stop_at_a_ceiling_names_the_policy_and_offers_no_way_to_raise_it(place: Place) -> None:
    """env asked for 500, the policy's ceiling is 3: the message says so, raise_with is []."""
    path = policy(place, {"loop": {"max_steps": {"max": 3}}})
    message, limit = _stopped(budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "500"}))
    assert message == (
        f"stopped: hit max_steps (3): loop.max_steps = 3 from the policy {path}:3"
        " (ceiling; env:BUDGETCONF_MAX_STEPS asked for 500); only the policy's administrator"
        " can raise it"
    )
    assert limit == {
        "field": "loop.max_steps",
        "value": 3,
        "source": "policy",
        "locator": f"{path}:3",
        "raise_with": [],
    }


@pytest.mark.parametrize(
    ("rule", "env", "said"),
    [
        ({"min": 3}, "2", "floor; env:BUDGETCONF_MAX_STEPS asked for 2"),
        ({"value": 3}, "9", "locked"),
        ({"default": 3}, None, "default"),
        ({"max": 3, "on_exceed": "reject"}, "9", "ceiling; env:BUDGETCONF_MAX_STEPS asked for 9"),
    ],
)
def test_a_stop_says_which_rule_of_the_policy_set_the_limit(
    place: Place, rule: dict[str, Any], env: str | None, said: str
) -> None:
    path = policy(place, {"loop": {"max_steps": rule}})
    given = {} if env is None else {"BUDGETCONF_MAX_STEPS": env}
    message, limit = _stopped(budgetconf.resolve(env=given))
    assert message.endswith(
        f"loop.max_steps = 3 from the policy {path}:3 ({said}); only the policy's administrator"
        " can raise it"
    )
    assert limit["raise_with"] == []


def test_a_stop_at_a_ceiling_on_an_unset_limit_says_ceiling(place: Place) -> None:
    """limits.max_tool_calls was unset; the policy's max 1 is the limit that stops the run."""
    path = policy(place, {"limits": {"max_tool_calls": {"max": 1}}})
    message, _ = _stopped(budgetconf.resolve())
    assert message == (
        f"stopped: hit max_tool_calls (1): limits.max_tool_calls = 1 from the policy {path}:3"
        " (ceiling); only the policy's administrator can raise it"
    )


def test_a_limit_the_policy_left_alone_is_raised_as_before(place: Place) -> None:
    """A value inside the bounds is the env's, and the env still raises it."""
    policy(place, {"loop": {"max_steps": {"max": 300}}})
    budget = Budget.from_resolution(budgetconf.resolve(env={"BUDGETCONF_MAX_STEPS": "2"}))
    assert budget.limits["max_steps"].raise_with == ("BUDGETCONF_MAX_STEPS", "--max-steps")


def test_run_takes_policy_as_explain_does(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """budgetconf run --policy: the added file's ceiling stops the run, and says so."""
    path = write(place.work / "p.json", '{"loop": {"max_steps": {"max": 2}}}')
    script = write(
        place.work / "s.json",
        '{"responses": [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}]}',
    )
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "50")
    assert (
        main(["run", "--model", str(script), "--policy", str(path), "--output", "json", "go"]) == 2
    )
    document = json.loads(capsys.readouterr().out)
    assert document["limit"] == {
        "field": "loop.max_steps",
        "value": 2,
        "source": "policy",
        "locator": f"{path}:1",
        "raise_with": [],
    }


def test_the_command_line_in_a_process_of_its_own_applies_a_presets_policy(
    place: Place, tmp_path: Path
) -> None:
    """The real command, with a preset file whose policy is a temporary file: the clamp is in
    the document, and a broken policy exits 1 with one line."""
    rules = write(tmp_path / "etc" / "rules.json", '{"app": {"steps": {"max": 3}}}')
    fields = {"app.steps": {"type": "int", "default": 10, "env": ["APP_STEPS"]}}
    preset = preset_file(place.work, fields=fields, sources=["default", "env"], policy=str(rules))
    command = [sys.executable, "-m", "budgetconf", "explain", "--preset", str(preset)]
    env = {**os.environ, "APP_STEPS": "8"}
    done = subprocess.run(
        [*command, "--format", "json"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fields"]["app.steps"]["value"] == 3
    rules.write_text('{"app": {"steps": {"max": "3"}}}', encoding="utf-8")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert (done.returncode, done.stderr) == (
        1,
        f'budgetconf: error: policy {rules}:1: app.steps: max: not an integer: "3" (a string)\n',
    )


# --- the rest of a rule's shape --------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"loop": [1]}, ":2: section loop must be an object of fields, got a list"),
        (
            {"loop": {"max_steps": {"max": 9}, "max_turns": {"max": 8}}},
            ":6: loop.max_steps: a second rule, by another of its names",
        ),
        (
            {"loop": {"max_steps": {"max": None}}},
            ":4: loop.max_steps: max: expected an integer, got null",
        ),
        (
            {"loop": {"max_steps": {"value": 5, "default": 6}}},
            ":3: loop.max_steps: value 5 locks the field; default 6 would never be used",
        ),
        (
            {"loop": {"max_steps": {"max": 0}}},
            ":4: loop.max_steps: max: must be >= 1, got 0",
        ),
    ],
)
def test_a_rule_of_the_wrong_shape_is_a_source_error(
    place: Place, document: dict[str, Any], problem: str
) -> None:
    """Each names the file, the line and the field; a bound is judged by the field's own rules."""
    policy(place, document)
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve()
    assert str(caught.value) == f"policy {place.policy}{problem}"


def test_a_policy_path_that_cannot_even_be_looked_at_fails(place: Place) -> None:
    """A NUL byte in a named path: no resolution is kept for it, and it fails."""
    with pytest.raises(budgetconf.SourceError, match="cannot read"):
        budgetconf.resolve(policy_file="bad\0name.json")


def test_bounds_from_two_files_say_where_each_is_written(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """max from the installed file, min (rejecting) from the added one: locators by bound, and
    a row for each place in the table."""
    write(place.policy, STEPS_AT_200)
    added = write(
        place.work / "try.json",
        '{"loop": {"max_steps": {"min": 5, "max": 200, "on_exceed": "reject"}}}',
    )
    res = quiet(policy_file=added)
    assert res.to_dict()["fields"]["loop.max_steps"]["policy"] == {
        "max": 200,
        "min": 5,
        "locator": f"{place.policy}:3",
        "locators": {"max": f"{place.policy}:3", "min": f"{added}:1"},
        "on_exceed": "reject",
    }
    assert main(["explain", "loop.max_steps", "--policy", str(added)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:5]]
    assert rows == [
        ["loop.max_steps", "40", "built-in", "default"],
        ["policy", "max", "200", f"{place.policy}:3"],
        ["policy", "min", "5", "(reject)", "./try.json:1"],
    ]


def test_a_field_that_takes_another_fields_value_takes_it_as_policed(place: Place) -> None:
    """max_steps unset takes max_iter's value, which the policy has clamped to 10."""
    rules = write(place.work / "rules.json", '{"exec": {"max_iter": {"max": 10}}}')
    fields = {
        "exec.max_iter": {"type": "int", "default": 20, "env": ["APP_ITER"]},
        "exec.max_steps": {"type": "int", "optional": True, "default_from": "exec.max_iter"},
    }
    preset = preset_file(place.work, fields=fields, sources=["default", "env"], policy=str(rules))
    res = budgetconf.resolve(preset, env={"APP_ITER": "30"})
    assert (res["exec.max_iter"], res["exec.max_steps"]) == (10, 10)
    assert res.trace("exec.max_steps").source == "policy"


def test_a_secret_fields_bounds_are_masked(place: Place) -> None:
    """The explain document shows a secret field's policy values as ***, as its value."""
    rules = write(place.work / "rules.json", '{"app": {"pin": {"max": 9999}}}')
    fields = {"app.pin": {"type": "int", "default": 1234, "secret": True, "env": ["APP_PIN"]}}
    preset = preset_file(place.work, fields=fields, sources=["default", "env"], policy=str(rules))
    res = budgetconf.resolve(preset, env={"APP_PIN": "123456"})
    assert res["app.pin"] == 9999
    entry = res.to_dict()["fields"]["app.pin"]
    assert entry["policy"] == {"max": "***", "locator": f"{rules}:1"}
    assert entry["candidates"][1]["reason"] == f"above the policy ceiling ({rules}:1)"
    assert "9999" not in json.dumps(entry)


def test_two_files_with_the_same_bound_keep_the_installed_ones_place(place: Place) -> None:
    """An equal ceiling in the added file: the installed file's line is the locator."""
    write(place.policy, STEPS_AT_200)
    added = write(place.work / "try.json", '{"loop": {"max_steps": {"max": 200, "default": 50}}}')
    res = quiet(policy_file=added)
    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (50, f"{added}:1")
    assert res.trace("loop.max_steps").policy is not None
    assert res.to_dict()["fields"]["loop.max_steps"]["policy"]["locators"]["max"] == (
        f"{place.policy}:3"
    )
