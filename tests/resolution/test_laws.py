"""Laws of resolution, checked over generated stacks (hypothesis)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetconf

from helpers import DATA
from helpers.layers import KINDS, Layers

LAYERED = str(DATA / "presets" / "layered.toml")
FIELDS = ("loop.max_steps", "loop.max_tool_calls_per_turn")
SETTABLE = KINDS[1:]
# the autouse fixture only isolates HOME and the cwd; every example works in its own folder
LAWS = settings(
    max_examples=500,
    deadline=None,
    derandomize=True,  # the same examples on every CI run, and no example database
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

values = st.integers(min_value=1, max_value=10_000)
stacks = st.dictionaries(
    st.sampled_from(SETTABLE), st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, values))
)


@contextmanager
def fresh_layers() -> Iterator[Layers]:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir()
        yield Layers(Path(folder), home)


def _fill(layers: Layers, stack: dict[str, dict[str, int]]) -> None:
    for kind, fields in stack.items():
        for path, value in fields.items():
            layers.set(kind, path, value)


@LAWS
@given(stacks)
def test_the_highest_ranked_source_that_sets_a_field_wins(stack: dict[str, dict[str, int]]) -> None:
    """Whatever the sources set, each field's value comes from the highest one that set it."""
    with fresh_layers() as layers:
        _fill(layers, stack)
        res = layers.resolve()
    for path in FIELDS:
        setters = [kind for kind in SETTABLE if path in stack.get(kind, {})]
        if setters:
            top = max(setters, key=KINDS.index)
            assert (res.trace(path).source, res[path]) == (top, stack[top][path])
        else:
            assert res.trace(path).source == "default"


@LAWS
@given(stacks, st.sets(st.sampled_from(("global", "project", "profile", "yaml"))))
def test_an_empty_source_changes_nothing(
    stack: dict[str, dict[str, int]], empties: set[str]
) -> None:
    """Adding files that set nothing leaves every value and every winner as it was."""
    with fresh_layers() as layers:
        _fill(layers, stack)
        kwargs = layers.write()
        before = budgetconf.resolve(**kwargs)
        for kind in empties:
            _write_empty(layers, kind, kwargs)
        after = budgetconf.resolve(**kwargs)
    assert after.values == before.values
    assert [t.source for t in after.traces()] == [t.source for t in before.traces()]


def _write_empty(layers: Layers, kind: str, kwargs: dict[str, object]) -> None:
    """An empty file for ``kind`` unless the stack already wrote one."""
    if layers.files[kind]:
        return
    if kind == "global":
        (layers.home / ".budgetconf").mkdir(exist_ok=True)
        (layers.home / ".budgetconf" / "settings.json").write_text("{}")
    elif kind == "project":
        (layers.work / "settings.toml").write_text("# nothing\n")
        kwargs["project_file"] = str(layers.work / "settings.toml")
    elif kind == "profile":
        (layers.work / "empty.json").write_text("{}")
        kwargs["profile"] = str(layers.work / "empty.json")
    elif "workflow" not in kwargs:
        (layers.work / "workflow.yaml").write_text("other: 1\n")
        kwargs["workflow"] = str(layers.work / "workflow.yaml")


@LAWS
@given(stacks)
def test_resolving_twice_gives_the_same_result(stack: dict[str, dict[str, int]]) -> None:
    """Resolution is a function of its inputs: two runs give the same explain document."""
    with fresh_layers() as layers:
        _fill(layers, stack)
        kwargs = layers.write()
        first = budgetconf.resolve(**kwargs).to_dict()
        second = budgetconf.resolve(**kwargs).to_dict()
    assert first == second


@LAWS
@given(
    stacks,
    st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, values)),
)
def test_replace_never_lets_a_lower_value_through(
    stack: dict[str, dict[str, int]], profile_loop: dict[str, int]
) -> None:
    """When a replacing profile defines loop, no loop value from a source below it survives."""
    stack = {**stack, "profile": {}}
    with fresh_layers() as layers:
        _fill(layers, stack)
        for path, value in profile_loop.items():
            layers.set("profile", path, value)
        layers.define("profile", "loop")
        res = layers.resolve(LAYERED)
    below = set(KINDS[1 : KINDS.index("profile")])
    for path in FIELDS:
        trace = res.trace(path)
        assert trace.source not in below
        for candidate in trace.candidates:
            if candidate.source in below:
                assert candidate.status == "replaced"
        if trace.source == "default":
            assert trace.value == {"loop.max_steps": 40, "loop.max_tool_calls_per_turn": 10}[path]
