"""The ``dynaconf`` source, with real dynaconf settings built over real files and variables."""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import dynaconf
import pytest

import budgetconf
from budgetconf._engine import load_preset
from budgetconf.cli._table import render

from conftest import Place
from helpers.presetfiles import preset_file

SETTINGS = """\
[default]
name = "review-bot"

[default.agent]
model = "small"
max_turns = 12
max_tool_call_per_turn = 2

[default.budgets.loop]
max_steps = 30

[default.budgets.limits]
max_tokens = 5000
"""

FIELDS: Final = {
    "loop.max_steps": {
        "type": "int",
        "default": 40,
        "ge": 1,
        "aliases": ["max_turns"],
        "env": ["APP_MAX_STEPS"],
    },
    "loop.max_tool_calls_per_turn": {"type": "int", "default": 10, "ge": 1},
    "limits.max_tokens": {"type": "int", "ge": 1, "optional": True},
}


def _preset(place: Place, options: Mapping[str, object], *, below: str = "project") -> Path:
    """An application's preset: default, project, the dynaconf source, env, explicit."""
    stack = ["default", "project", "env", "explicit"]
    stack.insert(stack.index(below) + 1, "dynaconf")
    options_of = {"project": {"path": "settings.toml"}, "dynaconf": options}
    sources = [{"kind": kind, **options_of.get(kind, {})} for kind in stack]
    return preset_file(place.work, name="app", sources=sources, fields=FIELDS)


def _settings(place: Place, text: str = SETTINGS, **options: object) -> dynaconf.Dynaconf:
    path = place.write("config/settings.toml", text)
    return dynaconf.Dynaconf(
        settings_files=[str(path)], environments=True, envvar_prefix="APP", **options
    )


def test_a_key_of_sections_is_one_layer_with_dynaconf_locators(place: Place) -> None:
    """``key = "budgets"`` reads budgets.loop and budgets.limits; each value names its key."""
    preset = _preset(place, {"key": "budgets"})

    res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    assert res.values == {
        "loop.max_steps": 30,
        "loop.max_tool_calls_per_turn": 10,
        "limits.max_tokens": 5000,
    }
    trace = res.trace("limits.max_tokens")
    assert (trace.source, trace.locator) == ("dynaconf", "dynaconf:budgets.limits.max_tokens")
    (report,) = [s for s in res.sources if s.source == "dynaconf"]
    assert (report.status, report.locator, report.offered) == ("loaded", "dynaconf:budgets", 2)


def test_a_section_written_among_the_applications_keys(place: Place) -> None:
    """``section = "loop"`` reads agent.max_turns; agent.model is the app's, a near miss is told."""
    preset = _preset(place, {"key": "agent", "section": "loop"})

    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    assert res["loop.max_steps"] == 12
    trace = res.trace("loop.max_steps")
    assert (trace.locator, trace.winner.alias) == ("dynaconf:agent.max_turns", "max_turns")
    assert [str(w.message) for w in caught] == [
        "max_tool_call_per_turn in dynaconf:agent.max_tool_call_per_turn is not a known key;"
        " did you mean loop.max_tool_calls_per_turn?"
    ]


def test_the_top_level_sections_without_a_key(place: Place) -> None:
    """Without ``key``, the preset's sections are read at the top; other keys are the app's."""
    preset = _preset(place, {})
    settings = _settings(place, '[default.loop]\nmax_steps = 8\n[default.database]\nurl = "x"\n')

    res = budgetconf.resolve(preset, env={}, dynaconf=settings)

    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (
        8,
        "dynaconf:loop.max_steps",
    )
    assert res.warnings == ()


def test_values_from_dynaconfs_own_variables_keep_dynaconfs_types(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """APP_BUDGETS__LOOP__MAX_STEPS=7 reaches budgetconf as dynaconf parsed it: the integer 7."""
    monkeypatch.setenv("APP_BUDGETS__LOOP__MAX_STEPS", "7")
    preset = _preset(place, {"key": "budgets"})

    res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    assert res["loop.max_steps"] == 7  # dynaconf merged it into the file's max_steps
    assert res.trace("loop.max_steps").locator == "dynaconf:budgets.loop.max_steps"


def test_a_bad_value_is_rejected_with_its_dynaconf_key(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value dynaconf read as text is judged as typed: ``"ten"`` is no integer, named by key."""
    monkeypatch.setenv("APP_BUDGETS__LOOP__MAX_STEPS", "ten")
    preset = _preset(place, {"key": "budgets"})

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    error = caught.value
    assert (error.field, error.source, error.locator, error.raw) == (
        "loop.max_steps",
        "dynaconf",
        "dynaconf:budgets.loop.max_steps",
        "ten",
    )
    assert str(error).startswith("loop.max_steps from dynaconf:budgets.loop.max_steps: ")


def test_text_in_a_settings_file_is_not_a_number(place: Place) -> None:
    """``max_steps = "7"`` in the TOML dynaconf read stays text, so it is rejected."""
    preset = _preset(place, {"key": "budgets"})
    settings = _settings(place, '[default.budgets.loop]\nmax_steps = "7"\n')

    with pytest.raises(budgetconf.ConfigError, match=r'dynaconf:budgets\.loop\.max_steps: .*"7"'):
        budgetconf.resolve(preset, env={}, dynaconf=settings)


def test_under_fallback_a_bad_value_is_ignored_with_a_warning(place: Place) -> None:
    """``invalid = "fallback"``: the rejected value stays in the trace and the default wins."""
    preset = _preset(place, {"key": "budgets", "invalid": "fallback"})
    settings = _settings(place, "[default.budgets.loop]\nmax_steps = 0\n")

    with pytest.warns(budgetconf.BudgetConfWarning, match=r"dynaconf:budgets\.loop\.max_steps"):
        res = budgetconf.resolve(preset, env={}, dynaconf=settings)

    assert res["loop.max_steps"] == 40
    rejected = res.trace("loop.max_steps").candidates[-1]
    assert (rejected.status, rejected.raw) == ("rejected", 0)


def test_a_lazy_value_is_read_as_the_application_sees_it(place: Place) -> None:
    """dynaconf's ``@int`` and ``@format`` are evaluated before budgetconf judges the value."""
    preset = _preset(place, {"key": "budgets"})
    settings = _settings(
        place,
        '[default]\nsteps = 9\n[default.budgets.loop]\nmax_steps = "@int @format {this.STEPS}"\n',
    )

    assert budgetconf.resolve(preset, env={}, dynaconf=settings)["loop.max_steps"] == 9


def test_a_value_the_settings_cannot_evaluate_is_a_source_error(place: Place) -> None:
    """A lazy value that fails in dynaconf makes the source an error at its key, by type only.

    The exception's text is not shown: it may quote the value, and the value may be a secret.
    """
    preset = _preset(place, {"key": "budgets"})
    settings = _settings(place, '[default.budgets.loop]\nmax_steps = "@format {this.NOPE}"\n')

    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(preset, env={}, dynaconf=settings)
    assert str(caught.value) == (
        "dynaconf:budgets.loop.max_steps: cannot read the settings: DynaconfFormatError"
    )
    assert caught.value.locator == "dynaconf:budgets.loop.max_steps"


def test_a_key_that_is_not_a_table_is_a_problem_of_the_source(place: Place) -> None:
    """``budgets = 5`` cannot hold sections: an error under the ``error`` policy, at its key."""
    preset = _preset(place, {"key": "budgets"})
    settings = _settings(place, "[default]\nbudgets = 5\n")

    with pytest.raises(budgetconf.ConfigError, match=r"^dynaconf:budgets \(dynaconf\): must be a"):
        budgetconf.resolve(preset, env={}, dynaconf=settings)


@pytest.mark.parametrize("key", ["budgets.agent", "name.budgets"])
def test_a_missing_key_is_a_missing_layer(place: Place, key: str) -> None:
    """Settings without the key (or with text on its way) give nothing, and say it is missing."""
    preset = _preset(place, {"key": key})

    res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    assert res.trace("loop.max_steps").source == "default"
    (report,) = [s for s in res.sources if s.source == "dynaconf"]
    assert (report.status, report.locator) == ("missing", f"dynaconf:{key}")


def test_without_settings_the_source_is_not_configured(place: Place) -> None:
    """No ``dynaconf=`` argument: the layer is reported ``not configured`` and gives nothing."""
    preset = _preset(place, {"key": "budgets"})

    document = budgetconf.resolve(preset, env={}).to_dict()

    assert {"source": "dynaconf", "locator": None, "status": "not configured", "offered": 0} in (
        document["sources"]
    )


def test_explain_shows_the_layer(place: Place) -> None:
    """The explain table names the dynaconf key that set a value and what it shadowed."""
    preset = _preset(place, {"key": "budgets"})
    place.write("settings.toml", "[loop]\nmax_steps = 20\n")
    res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))
    out = io.StringIO()

    render(res, load_preset(preset), ["loop.max_steps"], out)

    lines = out.getvalue().splitlines()
    assert lines[2].split() == ["loop.max_steps", "30", "dynaconf:budgets.loop.max_steps"]
    assert lines[3].split() == ["shadowed", "20", "./settings.toml:2"]
    assert ["dynaconf", "loaded", "dynaconf:budgets,", "2", "values"] in [x.split() for x in lines]


@pytest.mark.parametrize(
    ("lower", "higher", "winner"),
    [
        ("project", "dynaconf", "dynaconf"),
        ("dynaconf", "env", "env"),
        ("dynaconf", "explicit", "explicit"),
    ],
)
def test_precedence_against_the_neighbouring_sources(
    place: Place, lower: str, higher: str, winner: str
) -> None:
    """The dynaconf layer beats the sources below it in the stack and loses to those above."""
    preset = _preset(place, {"key": "budgets"})
    place.write("settings.toml", "[loop]\nmax_steps = 20\n")
    env = {"APP_MAX_STEPS": "50"} if "env" in (lower, higher) else {}
    explicit = {"loop.max_steps": 60} if "explicit" in (lower, higher) else None

    res = budgetconf.resolve(preset, env=env, explicit=explicit, dynaconf=_settings(place))

    expected = {"project": 20, "dynaconf": 30, "env": 50, "explicit": 60}
    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (
        expected[winner],
        winner,
    )
    statuses = {c.source: c.status for c in res.trace("loop.max_steps").candidates}
    assert statuses[lower] == "shadowed"


def test_the_place_in_the_stack_is_the_presets_choice(place: Place) -> None:
    """Placed above env, the dynaconf layer wins over the variable."""
    preset = _preset(place, {"key": "budgets"}, below="env")

    res = budgetconf.resolve(preset, env={"APP_MAX_STEPS": "50"}, dynaconf=_settings(place))

    assert (res["loop.max_steps"], res.trace("loop.max_steps").source) == (30, "dynaconf")


def test_replace_merge_discards_the_lower_sections_values(place: Place) -> None:
    """``merge = { loop = "replace" }``: the project's loop values are replaced, not kept."""
    preset = _preset(place, {"key": "budgets", "merge": {"loop": "replace"}})
    place.write("settings.toml", "[loop]\nmax_steps = 20\nmax_tool_calls_per_turn = 3\n")

    res = budgetconf.resolve(preset, env={}, dynaconf=_settings(place))

    trace = res.trace("loop.max_tool_calls_per_turn")
    assert (trace.value, trace.source) == (10, "default")
    assert trace.candidates[-1].status == "replaced"


def test_settings_for_a_preset_without_the_source_are_a_usage_error() -> None:
    """``dynaconf=`` with a preset that has no dynaconf source is refused, never dropped."""
    with pytest.raises(budgetconf.UsageError, match="has no dynaconf source for dynaconf="):
        budgetconf.resolve(env={}, dynaconf=dynaconf.Dynaconf())


def test_an_object_without_get_is_a_usage_error(place: Place) -> None:
    """Anything that cannot be asked for a key is refused with what was given."""
    preset = _preset(place, {"key": "budgets"})

    with pytest.raises(budgetconf.UsageError, match="got int"):
        budgetconf.resolve(preset, env={}, dynaconf=5)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"section": "loop"}, "section: needs a key"),
        ({"key": "agent", "section": "nope"}, "section: no section 'nope'"),
        ({"key": "a..b"}, "key: expected a dotted key"),
        ({"keys": "agent"}, "keys"),
    ],
)
def test_bad_options_are_preset_errors(
    place: Place, options: dict[str, object], problem: str
) -> None:
    """The source's options are checked when the preset loads."""
    with warnings.catch_warnings(), pytest.raises(budgetconf.PresetError, match=problem):
        budgetconf.resolve(_preset(place, options), env={})


def test_any_object_with_get_will_do(place: Place) -> None:
    """A plain dict of sections is read the same way: dynaconf is duck-typed, never imported."""
    preset = _preset(place, {"key": "budgets"})

    res = budgetconf.resolve(preset, env={}, dynaconf={"budgets": {"loop": {"max_steps": 3}}})

    assert (res["loop.max_steps"], res.trace("loop.max_steps").locator) == (
        3,
        "dynaconf:budgets.loop.max_steps",
    )


def test_a_factory_reads_the_settings_at_every_construction(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``factory(..., dynaconf=settings)`` follows a change dynaconf sees after it was made."""
    settings = _settings(place)
    make = budgetconf.factory(
        "loop.max_steps", _preset(place, {"key": "budgets"}), env={}, dynaconf=settings
    )
    first = make()
    settings.set("budgets.loop.max_steps", 31)

    assert (first, make()) == (30, 31)


def test_an_integer_past_pythons_digit_limit_is_out_of_range_not_a_crash(place: Place) -> None:
    """A settings file's 0x… of 5,000 digits reaches the source as an int; it is shown cut."""
    preset = _preset(place, {"key": "budgets"})
    settings = _settings(place, "[default.budgets.loop]\nmax_steps = 0x" + "f" * 5000 + "\n")

    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={}, dynaconf=settings)

    reason = (
        "out of range: 398027684033796659235430…"
        " (too many digits to read; must be between 1 and 9223372036854775807)"
    )
    assert str(caught.value) == f"loop.max_steps from dynaconf:budgets.loop.max_steps: {reason}"


def test_a_table_is_read_from_dynaconf_as_its_mapping(place: Place) -> None:
    """``[default.budgets.tools.max_calls]``: the table's mapping, each key located at the
    table's dynaconf key, judged like any typed value."""
    preset = preset_file(
        place.work,
        name="app",
        sources=["default", {"kind": "dynaconf", "key": "budgets"}, "explicit"],
        fields={
            "tools.max_calls": {"type": "table", "values": "int", "keys": "tool-name", "ge": 0}
        },
    )
    settings = _settings(place, "[default.budgets.tools.max_calls]\nweb_search = 3\nfetch = 10\n")

    res = budgetconf.resolve(
        preset, env={}, dynaconf=settings, explicit={"tools.max_calls.fetch": 1}
    )

    assert res["tools.max_calls"] == {"fetch": 1, "web_search": 3}
    trace = res.trace("tools.max_calls.web_search")
    assert (trace.source, trace.locator) == ("dynaconf", "dynaconf:budgets.tools.max_calls")
    bad = _settings(place, '[default.budgets.tools.max_calls]\nweb_search = "3"\n')
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(preset, env={}, dynaconf=bad)
    assert str(caught.value) == (
        'tools.max_calls.web_search from dynaconf:budgets.tools.max_calls: not an integer: "3"'
        " (a string)"
    )
