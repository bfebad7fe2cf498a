"""The ``yaml`` source: a workflow file's top-level sections, and its step beside them.

The yaml and step sources read one file: a step of it overrides its
sections, and the file's problem is reported once. How a step is found is in
test_steps.py.
"""

from __future__ import annotations

import pytest

import budgetconf

from conftest import Place

WORKFLOW = """\
agents:
  coder: {model: big}
loop:
  max_steps: 30
steps:
  - name: plan
    loop: {max_steps: 3}
  - name: review
    loop:
      max_steps: 5
    limits:
      max_tokens: 100
    other: ignored
"""


def test_workflow_sections_are_read_and_other_keys_ignored(place: Place) -> None:
    """Top-level sections are the yaml source; agents: and steps: are not reported."""
    path = place.write("wf.yaml", WORKFLOW)
    res = budgetconf.resolve(env={}, workflow=path)
    assert res["loop.max_steps"] == 30
    assert res.trace("loop.max_steps").locator == f"{path}:4"
    assert res.warnings == ()


def test_a_step_overrides_the_workflow_and_is_located_by_name_and_line(place: Place) -> None:
    """--step review makes that entry's sections the step source, at step:NAME (path:line)."""
    path = place.write("wf.yaml", WORKFLOW)
    res = budgetconf.resolve(env={}, workflow=path, step="review")
    assert (res["loop.max_steps"], res["limits.max_tokens"]) == (5, 100)
    assert res.trace("loop.max_steps").locator == f"step:review ({path}:10)"
    assert {s.source: s.locator for s in res.sources}["step"] == f"step:review ({path}:8)"


def test_an_unknown_step_is_an_error_with_a_suggestion(place: Place) -> None:
    """A step name that is not in the file is refused, naming the nearest one."""
    path = place.write("wf.yaml", WORKFLOW)
    with pytest.raises(
        budgetconf.SourceError, match="no step named 'reveiw'; did you mean 'review'"
    ):
        budgetconf.resolve(env={}, workflow=path, step="reveiw")


def test_a_broken_workflow_is_reported_once(place: Place) -> None:
    """The yaml and step sources read the same file: its problem is one error, not two."""
    path = place.write("wf.yaml", "loop: [\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(env={}, workflow=path, step="review")
    assert caught.value.errors == (caught.value,)
    assert str(caught.value).startswith(f"yaml {path}:")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("[5]", "a list"),
        ("five", "a string"),
        ("010", "a value that is ambiguous in YAML"),
        ("~", "null"),
    ],
)
def test_a_section_that_is_no_mapping_is_named_by_its_type(
    place: Place, body: str, named: str
) -> None:
    """`loop: [5]` is an error naming the section and what it is, never what it holds."""
    path = place.write("wf.yaml", f"loop: {body}\n")
    with pytest.raises(budgetconf.ConfigError) as caught:
        budgetconf.resolve(env={}, workflow=path)
    assert str(caught.value) == (
        f"{path}:1 (yaml): section loop must be a table of fields, got {named}"
    )


def test_a_workflow_that_does_not_exist_suggests_the_file_it_was_likely_meant_to_be(
    place: Place,
) -> None:
    """--workflow agnts.yaml beside agents.yaml: did you mean it? (as a profile's path is)."""
    place.write("agents.yaml", "loop:\n  max_steps: 3\n")
    with pytest.raises(budgetconf.SourceError) as caught:
        budgetconf.resolve(workflow="agnts.yaml", env={})
    wanted = place.work / "agnts.yaml"
    assert str(caught.value) == (
        f"yaml {wanted}: no such file; did you mean {str(place.work / 'agents.yaml')!r}?"
    )
    place.write("other.txt", "")
    with pytest.raises(budgetconf.SourceError, match=r"no such file$"):
        budgetconf.resolve(workflow="zzz.yaml", env={})


def test_a_named_settings_file_that_does_not_exist_suggests_its_neighbour(place: Place) -> None:
    """The same for every file a caller names: the project file given by path."""
    place.write("settings.toml", "[loop]\nmax_steps = 3\n")
    with pytest.raises(budgetconf.SourceError, match=r"did you mean '.*/settings\.toml'\?$"):
        budgetconf.resolve(project_file="setings.toml", env={})


TABLES = """\
tools:
  max_calls:
    web_search: 3
    fetch: 10
steps:
  - name: review
    tools:
      max_calls:
        web_search: 1
"""


def test_a_workflows_table_and_its_steps_each_set_keys_at_their_lines(place: Place) -> None:
    """The workflow's keys are the yaml source's; the step's key overrides its own key alone."""
    path = place.write("wf.yaml", TABLES)
    res = budgetconf.resolve(env={}, workflow=path, step="review")
    assert res["tools.max_calls"] == {"fetch": 10, "web_search": 1}
    web_search = res.trace("tools.max_calls.web_search")
    assert [(c.source, c.locator, c.status) for c in web_search.candidates] == [
        ("yaml", f"{path}:3", "shadowed"),
        ("step", f"step:review ({path}:9)", "won"),
    ]
    assert res.trace("tools.max_calls.fetch").locator == f"{path}:4"
