"""A secret's value reaches no output, through any source, in any shape, by any path.

The preset has two secret fields, and each case feeds a distinctive secret
value through one source in one shape: a valid value, a wrong type, out of
range, an unknown choice, a section that is no table, a step that is a
scalar, a file that does not parse. Every output a person or a log could see
is gathered — the exception's text, repr and ``raw``, every warning, the
resolution's repr, its document and traces, each source's layer, the budget
and its limits, and the command line's every format — and none may hold the
secret. A property test then writes documents of random shape with the secret
wherever a value of unknown secrecy may stand.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import pytest
import tomli_w
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetconf
from budgetconf._engine import load_preset, resolve_request
from budgetconf.cli import main
from budgetconf.loop import Budget
from budgetconf.sources import Request

from conftest import Place
from helpers.presetfiles import preset_file

TEXT: Final = "sk-zq-SWEEP-xj7"  # the secret as text: an API key put where a number goes
NUMBER: Final = 3817.6529  # the secret as a value the field takes
#: what may not appear: each secret, and pieces of it a cut or a rounding would leave, and the
#: secret number as YAML's ambiguous ``3_817_6529`` and as an integer too long to read
FORMS: Final = ("zq-SWEEP", "SWEEP-xj7", "3817.6", "17.6529", "817_6529", "8176529", "38170000")

FIELDS: Final = {
    "loop.max_steps": {
        "type": "int",
        "default": 3,
        "ge": 1,
        "aliases": ["max_turns"],
        "env": ["SWEEP_MAX_STEPS"],
        "flags": ["--max-steps"],
    },
    "limits.vault": {
        "type": "number",
        "default": 1.5,
        "gt": 0,
        "lt": 10000,
        "aliases": ["vault_usd"],
        "secret": True,
        "env": ["SWEEP_VAULT"],
        "flags": ["--vault"],
    },
    "limits.mode": {
        "type": "enum",
        "choices": ["alpha", "beta"],
        "default": "alpha",
        "secret": True,
        "env": ["SWEEP_MODE"],
        "flags": ["--mode"],
    },
}
KINDS: Final = ("default", "global", "project", "profile", "env", "yaml", "cli", "step")


def sweep_preset(
    folder: Path, invalid: str, *, dynaconf: Mapping[str, object] | None = None
) -> Path:
    """Every source kind, each under the ``invalid`` policy; the secret number caps the cost."""
    sources: list[dict[str, object]] = [{"kind": "default"}]
    sources += [{"kind": kind, "invalid": invalid} for kind in KINDS[1:]]
    sources[2]["path"] = "settings.toml"  # the project file, found where it is looked for
    sources[4]["prefix"] = "SWEEP_"  # a variable that maps to nothing is reported
    if dynaconf is not None:
        sources.insert(5, {"kind": "dynaconf", "invalid": invalid, **dynaconf})
    sources.append({"kind": "explicit", "invalid": invalid})
    return preset_file(
        folder,
        name="sweep",
        file=f"sweep-{invalid}{'-dynaconf' if dynaconf is not None else ''}.toml",
        sources=sources,
        fields=FIELDS,
        loop={"max_steps": "loop.max_steps", "max_cost_usd": "limits.vault"},
    )


def assert_hidden(*shown: str) -> None:
    """No text shown holds the secret, whole or in part."""
    for text in shown:
        for form in FORMS:
            assert form not in text, text


# --- what each path shows ----------------------------------------------------------------


def _error_texts(error: BaseException) -> Iterator[str]:
    yield str(error)
    yield repr(error)
    for one in getattr(error, "errors", ()):
        yield str(one)
        yield repr(one)
        yield repr(one.raw)
        yield repr(one.reason)


def _resolution_texts(res: budgetconf.Resolution) -> Iterator[str]:
    yield repr(res)
    yield str(res)
    yield json.dumps(res.to_dict(), ensure_ascii=False)
    yield repr(res.traces())
    yield from (repr(e) for e in res.errors)
    yield from res.warnings
    for trace in res.traces():
        yield from (repr(c) + repr(c.to_dict()) for c in trace.candidates)
    if not res.errors:
        budget = Budget.from_resolution(res)
        yield repr(budget)
        yield str(budget)
        for limit in budget.limits.values():
            yield repr(limit)
            yield str(limit)
            yield limit.explain()
            yield repr(limit.to_dict())


def seen_by_the_api(preset: Path, **request: Any) -> list[str]:
    """Everything a resolution lets a program see: raised, warned, kept and each layer."""
    shown: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            budgetconf.resolve(preset, **request)
        except budgetconf.BudgetConfError as exc:
            shown += _error_texts(exc)
    shown += [str(w.message) for w in caught]
    loaded = load_preset(preset)
    env = request.pop("env", {})
    built = Request(env, **request)
    shown += _resolution_texts(resolve_request(loaded, built))
    ctx = loaded.context(built)
    for source in loaded.sources:
        shown.append(repr(source.load(ctx)))
    shown.append(repr(built))
    return shown


def seen_on_the_command_line(
    args: list[str], place: Place, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """explain in each format, check, --diff against the defaults, and a run with its events."""
    options, app = (
        (args, []) if "--" not in args else (args[: args.index("--")], args[args.index("--") :])
    )
    model = place.write(
        "model.json", json.dumps({"responses": [{"tool_calls": [{"name": "echo"}], "cost_usd": 1}]})
    )
    events = place.work / "events.jsonl"
    run = ["run", *options, "--model", str(model), "--events", str(events)]
    runs = [
        ["explain", *args],
        ["explain", "--format", "json", *args],
        ["explain", "--format", "toml", *args],
        ["check", *args],
        ["explain", "--preset", args[1], "--diff", *args[2:]],
        ["explain", "--format", "json", "--preset", args[1], "--diff", *args[2:]],
        [*run, "go", *app],
        [*run, "--output", "json", "go", *app],
    ]
    shown = []
    for command in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a command reports; it warns through no other path
            main(command)
        captured = capsys.readouterr()
        shown += [captured.out, captured.err]
    if events.exists():
        shown.append(events.read_text(encoding="utf-8"))
    return shown


# --- the cases ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One way in: files to write (by source kind), variables, flags, --set, code."""

    id: str
    files: Mapping[str, str] = field(default_factory=dict)  # a kind -> its file's text
    env: Mapping[str, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()  # --set pairs
    explicit: Mapping[str, object] | None = None  # code only: typed values
    step: str | None = None
    around: Mapping[str, str] = field(default_factory=dict)  # files found, not named

    def request(self, place: Place) -> dict[str, Any]:
        """The `budgetconf.resolve` keywords of the case, its files written."""
        for name, text in self.around.items():
            place.write(name, text)
        request: dict[str, Any] = {"env": dict(self.env)}
        for kind, text in self.files.items():
            path = place.write(_FILE_OF[kind], text)
            request[_ARGUMENT_OF[kind]] = str(path)
        if self.argv:
            request["argv"] = list(self.argv)
        explicit = dict(self.explicit or {})
        for pair in self.sets:
            name, _, value = pair.partition("=")
            explicit[name] = value
        if explicit:
            request["explicit"] = explicit
        if self.step is not None:
            request["step"] = self.step
        return request

    def command_line(self, place: Place, preset: Path) -> list[str] | None:
        """The same case as options of explain and check, or None when code alone can say it."""
        if self.explicit is not None:
            return None
        for name, text in self.around.items():
            place.write(name, text)
        args = ["--preset", str(preset)]
        for kind, text in self.files.items():
            args += [_OPTION_OF[kind], str(place.write(_FILE_OF[kind], text))]
        if self.step is not None:
            args += ["--step", self.step]
        for pair in self.sets:
            args += ["--set", pair]
        if self.argv:
            args += ["--", *self.argv]
        return args


_FILE_OF: Final = {
    "global": "home/settings.json",
    "project": "settings.toml",
    "profile": "fast.json",
    "yaml": "wf.yaml",
}
_ARGUMENT_OF: Final = {
    "global": "global_file",
    "project": "project_file",
    "profile": "profile",
    "yaml": "workflow",
}
_OPTION_OF: Final = {
    "global": "--global",
    "project": "--project",
    "profile": "--profile",
    "yaml": "--workflow",
}


def _in_each_file(id: str, limits: object) -> list[Case]:
    """``limits`` as the body of the section in each settings file, and in a workflow step."""
    step = yaml.safe_dump({"steps": [{"name": "s", "limits": limits}]})
    cases = [
        Case(f"{id}-json-global", files={"global": json.dumps({"limits": limits})}),
        Case(f"{id}-json-profile", files={"profile": json.dumps({"limits": limits})}),
        Case(f"{id}-yaml", files={"yaml": yaml.safe_dump({"limits": limits})}),
        Case(f"{id}-step", files={"yaml": step}, step="s"),
    ]
    with suppress(TypeError):  # TOML has no null
        cases.append(Case(f"{id}-toml", files={"project": tomli_w.dumps({"limits": limits})}))
    return cases


CASES: Final = [
    # the value the field takes, from every source
    *_in_each_file("valid", {"vault": NUMBER, "mode": "beta"}),
    Case("valid-env", env={"SWEEP_VAULT": str(NUMBER)}),
    Case("valid-flag", argv=("--vault", str(NUMBER))),
    Case("valid-set", sets=(f"limits.vault={NUMBER}",)),
    Case("valid-code", explicit={"limits.vault": NUMBER}),
    Case("valid-alias", files={"project": f"[limits]\nvault_usd = {NUMBER}\n"}),
    # a section that is no table: text, a list, a number
    *_in_each_file("section-text", TEXT),
    *_in_each_file("section-list", [TEXT, NUMBER]),
    *_in_each_file("section-number", NUMBER),
    # a value of the wrong type, out of range, or no choice of the field
    *_in_each_file("wrong-type", {"vault": TEXT}),
    *_in_each_file("wrong-shape", {"vault": [TEXT], "mode": {"k": TEXT}}),
    *_in_each_file("out-of-range", {"vault": -NUMBER}),
    *_in_each_file("unknown-choice", {"mode": TEXT}),
    *_in_each_file("unknown-key", {"vaultt": TEXT}),
    Case("wrong-type-env", env={"SWEEP_VAULT": TEXT, "SWEEP_MODE": TEXT}),
    Case("out-of-range-env", env={"SWEEP_VAULT": str(-NUMBER)}),
    Case("line-ends-env", env={"SWEEP_VAULT": f"{NUMBER}\r\n", "SWEEP_MODE": f"{TEXT}\r"}),
    Case("wrong-type-flag", argv=("--vault", TEXT, f"--mode={TEXT}")),
    Case("misspelt-flag", argv=(f"--vaul={TEXT}", "--mod", TEXT)),
    Case("wrong-type-set", sets=(f"limits.vault={TEXT}", f"limits.mode={TEXT}")),
    Case("unknown-field-set", sets=(f"limits.vaultt={TEXT}",)),
    Case("no-field-set", sets=(f"={TEXT}",)),
    Case("wrong-type-code", explicit={"limits.vault": TEXT, "limits.mode": [TEXT]}),
    Case("out-of-range-code", explicit={"limits.vault": -NUMBER}),
    Case("huge-code", explicit={"limits.vault": 3817 * 10**5000}),
    Case("unknown-field-code", explicit={"limits.vaultt": TEXT}),
    # a name and its alias in one section, each way round
    Case("name-and-alias", files={"project": f"[limits]\nvault = {NUMBER}\nvault_usd = 2.5\n"}),
    Case("alias-and-name", files={"project": f"[limits]\nvault_usd = {NUMBER}\nvault = 2.5\n"}),
    # an empty variable; files found where they are looked for, not named
    Case("empty-env", env={"SWEEP_VAULT": "", "SWEEP_MODE": ""}),
    Case("stray-env", env={"SWEEP_VAULTT": TEXT, "sweep_vault": TEXT}),
    Case("found-project", around={"settings.toml": f'[limits]\nvault = "{TEXT}"\n'}),
    Case("near-section", around={"settings.toml": f'[limts]\nvault = "{TEXT}"\n'}),
    Case("other-table", around={"settings.toml": f'[database]\npassword = "{TEXT}"\n'}),
    Case("pyproject-text", around={"pyproject.toml": f'[tool.budgetconf]\nlimits = "{TEXT}"\n'}),
    Case(
        "pyproject-value",
        around={"pyproject.toml": f'[tool.budgetconf.limits]\nvault = "{TEXT}"\n'},
    ),
    # a YAML scalar that YAML 1.1 and 1.2 read differently
    Case("ambiguous-yaml", files={"yaml": "limits:\n  vault: 3_817_6529\n"}),
    # files that do not parse, the secret on the line that breaks them
    Case("broken-toml", files={"project": f'[limits]\nvault = "{TEXT}\n'}),
    Case("broken-json", files={"global": f'{{"limits": {{"vault": "{TEXT}}}}}'}),
    Case("broken-yaml", files={"yaml": f'limits: {{vault: "{TEXT}}}\n'}),
    Case("tab-yaml", files={"yaml": f"limits:\n\tvault: {TEXT}\n"}),
    # steps: a scalar step, a list of scalars, a mapping where the list goes
    Case("scalar-step", files={"yaml": f"steps:\n  - {TEXT}\n  - name: s\n"}, step="s"),
    Case("steps-mapping", files={"yaml": f"steps:\n  s:\n    limits: {TEXT}\n"}, step="s"),
    Case("steps-text", files={"yaml": f"steps: {TEXT}\n"}, step="s"),
]


@pytest.fixture(params=["error", "fallback"])
def policy(request: pytest.FixtureRequest) -> str:
    """Each case runs under each invalid policy: raised, or warned and traced."""
    return str(request.param)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_no_path_of_the_api_shows_a_secret(place: Place, policy: str, case: Case) -> None:
    """Raised, warned, traced, documented, each layer's repr, the budget: never the secret."""
    preset = sweep_preset(place.work, policy)
    assert_hidden(*seen_by_the_api(preset, **case.request(place)))


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.explicit is None],
    ids=[c.id for c in CASES if c.explicit is None],
)
def test_no_command_shows_a_secret(
    place: Place,
    policy: str,
    case: Case,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """explain in every format, check, --diff and run, its output and events: never the secret."""
    preset = sweep_preset(place.work, policy)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    args = case.command_line(place, preset)
    assert args is not None
    assert_hidden(*seen_on_the_command_line(args, place, capsys))


@pytest.mark.parametrize(
    "args",
    [
        [f"--vaultt={TEXT}"],
        ["--vaultt", TEXT],
        [f"--vault={TEXT}"],
        ["--vault", TEXT, "--mode", TEXT],
        ["--set", f"={TEXT}"],
        ["--set", TEXT],
    ],
    ids=["unknown=", "unknown", "flag=", "flags", "set-no-field", "set-no-equals"],
)
@pytest.mark.parametrize("command", ["explain", "check", "run"])
def test_an_option_a_command_refuses_is_named_not_quoted(
    place: Place, capsys: pytest.CaptureFixture[str], command: str, args: list[str]
) -> None:
    """An option the command does not know, or a --set it cannot read, is named by its name."""
    preset = str(sweep_preset(place.work, "error"))
    model = ["--model", str(place.write("m.json", '{"responses": [{"content": "x"}]}'))]
    tail = [*model, "go"] if command == "run" else []
    main([command, "--preset", preset, *args, *tail])
    captured = capsys.readouterr()
    assert_hidden(captured.out, captured.err)


# --- dynaconf: an application's settings object ---------------------------------------


class _Raising(dict[str, Any]):
    """A settings object whose value fails to evaluate, quoting the value as it does."""

    def get(self, key: str, default: Any = None) -> Any:
        raise ValueError(f"invalid literal for float(): {TEXT!r}")


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ({}, {"limits": TEXT}),
        ({}, {"limits": [TEXT]}),
        ({}, {"limits": {"vault": TEXT, "mode": TEXT}}),
        ({"key": "budgets"}, {"budgets": TEXT}),
        ({"key": "budgets"}, {"budgets": {"limits": [NUMBER]}}),
        ({"key": "agent", "section": "limits"}, {"agent": [TEXT]}),
        ({"key": "agent", "section": "limits"}, {"agent": {"vault": TEXT, "model": TEXT}}),
        ({}, _Raising()),
    ],
    ids=["text", "list", "values", "key-text", "key-list", "fields-list", "fields", "raises"],
)
def test_no_shape_of_a_dynaconf_object_shows_a_secret(
    place: Place, policy: str, options: dict[str, str], settings: Mapping[str, Any]
) -> None:
    """The dynaconf source names what is wrong with a settings object, never what it holds."""
    preset = sweep_preset(place.work, policy, dynaconf=options)
    assert_hidden(*seen_by_the_api(preset, env={}, dynaconf=settings))


# --- structure(), and the run ----------------------------------------------------------


@dataclass
class _Limits:
    vault: int
    mode: Literal["gamma"]


@dataclass
class _Typed:
    limits: _Limits


def test_a_value_that_does_not_fit_structure_is_named_not_quoted(place: Place) -> None:
    """structure()'s error names each path and the type it expected, and quotes no value."""
    res = budgetconf.resolve(
        sweep_preset(place.work, "error"), env={}, explicit={"limits.vault": NUMBER}
    )
    with pytest.raises(budgetconf.ConfigError) as caught:
        res.structure(_Typed)
    assert str(caught.value) == (
        "resolved values do not fit _Typed: expected an integer, got a float @ $.limits.vault; "
        "invalid value for type, expected typing.Literal['gamma'] @ $.limits.mode"
    )
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_run_under_a_secret_budget_shows_it_nowhere(
    place: Place, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    """The result, the message, the events file and stderr: the secret cap is never shown."""
    model = place.write(
        "model.json",
        json.dumps({"responses": [{"tool_calls": [{"name": "echo"}], "cost_usd": 4000}]}),
    )
    events = place.work / "events.jsonl"
    code = main(
        [
            "run",
            "--preset",
            str(sweep_preset(place.work, "error")),
            "--set",
            f"limits.vault={NUMBER}",
            "--model",
            str(model),
            "--output",
            output,
            "--events",
            str(events),
            "go",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert_hidden(captured.out, captured.err, events.read_text())
    assert "***" in captured.out + captured.err


# --- a property: any document, the secret wherever its field is unknown or secret -------

_SECRETS: Final = st.sampled_from([TEXT, NUMBER, -NUMBER, f"{TEXT}\r", f"x\n{TEXT}"])
_PLAIN: Final = st.one_of(st.integers(-5, 50), st.booleans(), st.sampled_from(["alpha", "x"]))
_ANY: Final = st.recursive(
    st.one_of(_SECRETS, _PLAIN),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["vault", "mode", "k", "max_steps"]), inner, max_size=3),
    ),
    max_leaves=6,
)
#: the body of [limits]: its fields may hold anything; a body that is no table, anything
_LIMITS: Final = st.one_of(
    st.dictionaries(st.sampled_from(["vault", "vault_usd", "mode", "vaultt", "other"]), _ANY),
    _ANY,
)
#: the body of [loop]: its field is not secret, so it holds no secret; other keys may
_LOOP: Final = st.one_of(
    st.fixed_dictionaries({"max_steps": _PLAIN}, optional={"extra": _ANY, "max_turn": _ANY}),
    st.lists(_ANY, min_size=1, max_size=2),
    _SECRETS,
)
_DOCUMENTS: Final = st.fixed_dictionaries(
    {}, optional={"limits": _LIMITS, "loop": _LOOP, "other": _ANY, "limit": _ANY}
)


def _write(kind: str, document: dict[str, Any], folder: Path) -> str | None:
    """The document in the kind's format; None when the format cannot hold it (TOML: null)."""
    path = folder / _FILE_OF[kind]
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "project":
        try:
            path.write_text(tomli_w.dumps(document), encoding="utf-8")
        except TypeError:
            return None
    elif kind == "yaml":
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
    else:
        path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,  # the same examples on every run, and no example database
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(["global", "project", "profile", "yaml"]),
    document=_DOCUMENTS,
    as_step=st.booleans(),
    invalid=st.sampled_from(["error", "fallback"]),
)
def test_any_document_keeps_the_secret(
    place: Place, kind: str, document: dict[str, Any], as_step: bool, invalid: str
) -> None:
    """Whatever the shape around it, a value that is secret or of no known field is not shown."""
    preset = sweep_preset(place.work, invalid)
    request: dict[str, Any] = {"env": {}}
    if as_step:
        kind, document = "yaml", {"steps": [{"name": "s", **document}]}
        request["step"] = "s"
    path = _write(kind, document, place.work)
    if path is None:
        return
    request[_ARGUMENT_OF[kind]] = path
    assert_hidden(*seen_by_the_api(preset, **request))
