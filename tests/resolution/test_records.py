"""The resolver's records: equal by their fields, readable, and copied with changes."""

from __future__ import annotations

import pytest

import budgetconf
from budgetconf._field import Field, Kind
from budgetconf._record import Unusable
from budgetconf._trace import Candidate, Status
from budgetconf.sources import Offer, Problem


def test_records_are_equal_when_their_fields_are() -> None:
    offer = Offer("loop.max_steps", "7", "env:BUDGETCONF_MAX_STEPS", text=True)
    same = Offer("loop.max_steps", "7", "env:BUDGETCONF_MAX_STEPS", text=True)
    assert offer == same
    assert hash(offer) == hash(same)
    assert offer != Offer("loop.max_steps", "8", "env:BUDGETCONF_MAX_STEPS", text=True)


def test_records_of_two_types_are_never_equal() -> None:
    """A Problem and an Offer with the same values in order are not the same thing."""
    assert Offer("a", "b", "c", False, None) != Problem("a", "b", "c", False)


def test_a_record_shows_its_fields() -> None:
    problem = Problem("--max-steps needs a value", "--max-steps", "loop.max_steps")
    assert repr(problem) == (
        "Problem(field='loop.max_steps', locator='--max-steps', "
        "message='--max-steps needs a value', raw=None)"
    )


def test_replace_changes_the_named_fields_only() -> None:
    won = Candidate("env", "env:X", Status.WON, 7, "7", text=True)
    shadowed = won.replace(status=Status.SHADOWED, reason="why")
    assert (shadowed.status, shadowed.reason) == (Status.SHADOWED, "why")
    assert (shadowed.source, shadowed.value, shadowed.text) == ("env", 7, True)
    assert won.status is Status.WON  # the original is left as it was
    with pytest.raises(TypeError):
        won.replace(colour="red")


def test_a_field_knows_its_section_and_name_after_a_replace() -> None:
    field = Field("loop.max_steps", Kind.INT, default=40).replace(default=12)
    assert (field.section, field.name, field.default) == ("loop", "max_steps", 12)


def test_an_unusable_value_compares_by_its_text() -> None:
    octal = Unusable("010", "ambiguous", "8 in YAML 1.1, 10 in 1.2")
    assert octal == Unusable("010", "ambiguous", "8 in YAML 1.1, 10 in 1.2")
    assert octal != Unusable("011", "ambiguous", "8 in YAML 1.1, 10 in 1.2")
    assert octal != "010"
    assert len({octal, Unusable("010", "ambiguous", "8 in YAML 1.1, 10 in 1.2")}) == 1
    assert repr(octal) == (
        "Unusable(text='010', what='ambiguous', hint='8 in YAML 1.1, 10 in 1.2')"
    )


def test_membership_understands_aliases() -> None:
    """`in` agrees with []: an alias is in the resolution, a typo is not."""
    res = budgetconf.resolve(env={})
    assert "loop.max_turns" in res
    assert "loop.max_steps" in res
    assert "loop.max_step" not in res
    assert 5 not in res


def test_a_resolution_answers_to_an_alias_as_to_the_name() -> None:
    """`res["loop.max_turns"]` is the value of loop.max_steps, the field it names."""
    res = budgetconf.resolve(env={})
    assert res["loop.max_turns"] == res["loop.max_steps"] == 40


def test_a_preset_and_its_description_say_which_they_are() -> None:
    """The engine's preset and the reader's description show their name and origin."""
    from budgetconf._engine import load_preset

    preset = load_preset("opendot")
    assert repr(preset) == "Preset('opendot', origin='built-in')"
    assert repr(preset.description) == "Description('opendot', origin='built-in')"
