"""Presets are data: the built-in files, and an application's own file, checked strictly."""

from __future__ import annotations

import os
import re
import textwrap
import warnings
from pathlib import Path

import pytest

import budgetconf
from budgetconf._engine import load_preset
from budgetconf._field import Kind
from budgetconf._presets import preset_names

from conftest import Place

MINIMAL = """\
format = 1
name = "app"

[[sources]]
kind = "default"

[[sources]]
kind = "env"
invalid = "fallback"

[fields."agent.max_steps"]
type = "int"
ge = 1
default = 5
env = ["APP_MAX_STEPS"]
"""


def _preset(place: Place, text: str, name: str = "app.toml") -> Path:
    return place.write(name, textwrap.dedent(text))


def test_built_in_presets_are_listed_by_name() -> None:
    """The package ships the default preset and one per seed contract, as TOML files."""
    assert preset_names() == ["budgetconf", "opendot", "praisonai", "praisonai-code", "skiller"]


def test_no_preset_is_named_in_the_code() -> None:
    """Presets are data: no module of the package spells a seed preset's name as a string.

    The framework bridges are the exception: a bridge is named after its framework
    (``praisonai``), and the PraisonAI bridge resolves that system's preset by contract.
    """
    names = "|".join(re.escape(n) for n in preset_names() if n != "budgetconf")
    quoted = re.compile(f"""["']({names})["']""", re.IGNORECASE)
    package = Path(budgetconf.__file__).parent
    for module in package.rglob("*.py"):
        if module.parent == package / "integrations":
            continue
        assert not quoted.findall(module.read_text(encoding="utf-8")), module


def test_the_default_preset_matches_its_documented_table() -> None:
    """The budgetconf preset has the fields, defaults, variables and flags of PRESETS.md."""
    schema = load_preset("budgetconf").schema
    table = {
        f.path: (f.kind.value, f.default, f.env, f.flags, f.aliases)
        for f in schema
        # LEDGER.md's, PRICES.md's and TELEMETRY.md's tables: tests/ledger/test_ledger_fields.py,
        # tests/prices/test_price_fields.py and tests/telemetry/test_telemetry_field.py
        if f.section not in ("ledger", "prices", "telemetry")
    }
    assert table == {
        "loop.max_steps": ("int", 40, ("BUDGETCONF_MAX_STEPS",), ("--max-steps",), ("max_turns",)),
        "loop.max_tool_calls_per_turn": (
            "int",
            10,
            ("BUDGETCONF_MAX_TOOL_CALLS_PER_TURN",),
            ("--max-tool-calls-per-turn",),
            ("max_tool_calls",),
        ),
        "loop.last_turn": ("enum", "wrap_up", ("BUDGETCONF_LAST_TURN",), ("--last-turn",), ()),
        "loop.over_cap": ("enum", "reject", ("BUDGETCONF_OVER_CAP",), ("--over-cap",), ()),
        "limits.max_tool_calls": (
            "int",
            None,
            ("BUDGETCONF_MAX_TOOL_CALLS",),
            ("--max-tool-calls",),
            (),
        ),
        "limits.max_tokens": ("int", None, ("BUDGETCONF_MAX_TOKENS",), ("--max-tokens",), ()),
        "limits.max_cost_usd": (
            "number",
            None,
            ("BUDGETCONF_MAX_COST_USD",),
            ("--max-cost-usd",),
            (),
        ),
        "limits.timeout_seconds": (
            "number",
            None,
            ("BUDGETCONF_TIMEOUT_SECONDS",),
            ("--timeout-seconds",),
            (),
        ),
        "limits.warn_at": ("number", None, ("BUDGETCONF_WARN_AT",), ("--warn-at",), ()),
        "tools.max_calls": (
            "table",
            {},
            ("BUDGETCONF_TOOLS_MAX_CALLS",),
            ("--tools-max-calls",),
            (),
        ),
        "loop.warn_model": ("bool", False, ("BUDGETCONF_WARN_MODEL",), ("--warn-model",), ()),
        "loop.max_repeats": ("int", None, ("BUDGETCONF_MAX_REPEATS",), ("--max-repeats",), ()),
    }
    policies = {s.kind: s.invalid.value for s in load_preset("budgetconf").description.stack}
    assert policies == {
        "default": "error",
        "global": "error",
        "project": "error",
        "profile": "error",
        "env": "fallback",
        "yaml": "error",
        "cli": "fallback",
        "step": "error",
        "explicit": "error",
        "policy": "error",  # fails closed, whatever the others do
    }


def test_each_field_of_the_default_preset_is_a_row_of_its_table_in_the_docs() -> None:
    """docs/presets.md lists the fields above in the preset's order, each with its variable,
    its flag, its type and its default as the preset file has them."""
    schema = load_preset("budgetconf").schema
    documented = _documented_rows("budgetconf")
    shown = [f.path for f in schema if f.section not in ("ledger", "prices", "telemetry")]
    assert [row[0] for row in documented] == shown
    for path, kind, default, env, flags in documented:
        field = schema.by_path[path]
        assert env.startswith(f"`{field.env[0]}`"), path
        assert flags.startswith(f"`{field.flags[0]}"), path
        words = {"{}": "no keys", "None": "unset"}
        assert default == words.get(repr(field.default), str(field.default).lower()), path
        if field.kind is Kind.ENUM:
            assert set(re.findall(r"\w+", kind)) == set(field.choices), path
        else:
            assert kind.startswith("a table" if field.kind is Kind.TABLE else field.kind), path
    table = schema.by_path["tools.max_calls"]
    assert (table.item, table.keys, table.ge) == ("int", "tool-name", 0)


def _documented_rows(preset: str) -> list[tuple[str, ...]]:
    """The rows of docs/presets.md's table of ``preset``'s fields: path, type, default, env,
    flag, each cell as written (the path without its backquotes and alias note)."""
    page = (Path(__file__).parents[2] / "docs" / "presets.md").read_text(encoding="utf-8")
    section = page.split(f"## `{preset}`", 1)[1].split("\n\n| |", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 5:
            path = cells[0].split("`")[1]
            rows.append((path, *(cell.strip("`") for cell in cells[1:3]), *cells[3:]))
    return rows


def test_an_application_preset_is_loaded_by_path(place: Place) -> None:
    """resolve(preset=PATH) uses the application's own schema and stack."""
    path = _preset(place, MINIMAL)
    res = budgetconf.resolve(path, env={"APP_MAX_STEPS": "8"})
    assert res.preset == "app"
    assert res["agent.max_steps"] == 8
    assert [s.source for s in res.sources] == ["default", "env"]


def test_a_changed_preset_file_is_loaded_again(place: Place) -> None:
    """The preset cache follows the file: an edit takes effect on the next resolution."""
    path = _preset(place, MINIMAL)
    assert budgetconf.resolve(str(path), env={})["agent.max_steps"] == 5
    path.write_text(MINIMAL.replace("default = 5", "default = 6"))
    os.utime(path, ns=(1, 1))
    assert budgetconf.resolve(str(path), env={})["agent.max_steps"] == 6


def test_an_unknown_built_in_name_suggests_the_nearest() -> None:
    """A misspelt preset name is a PresetError that lists what exists."""
    with pytest.raises(
        budgetconf.PresetError, match=r"unknown preset 'opendots'; did you mean 'opendot'"
    ):
        load_preset("opendots")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("format = 1", "format = 2"), "format: expected 1, got 2"),
        (("format = 1", "format = true"), "format: expected an integer, got true"),
        (('name = "app"', 'name = "app"\nsurprise = 1'), "unknown key 'surprise'"),
        (
            ("ge = 1", "ge = true"),
            'fields."agent.max_steps".ge: expected an integer or a number, got true',
        ),
        (("default = 5", "default = 0"), 'fields."agent.max_steps".default: must be >= 1, got 0'),
        (("default = 5", "default = true"), "default: not an integer: true (a boolean)"),
        (("default = 5", "default = 5.0"), "default: not an integer: 5.0 (a float)"),
        (("default = 5\n", ""), "default: required unless the field is optional"),
        (('type = "int"', 'type = "integer"'), "type: expected one of int, number, bool, enum"),
        (('type = "int"', 'type = "int"\nchoices = ["a"]'), "choices: enum fields need choices"),
        (('type = "int"', 'type = "int"\nflags = ["-m"]'), "is not a long flag"),
        (
            ('env = ["APP_MAX_STEPS"]', 'env = "APP_MAX_STEPS"'),
            'env: expected a list, got "APP_MAX_STEPS"',
        ),
        (('env = ["APP_MAX_STEPS"]', "env = [1]"), "env: expected a list of strings, got 1"),
        (('invalid = "fallback"', 'invalid = "lenient"'), "invalid: expected error or fallback"),
        (('invalid = "fallback"', 'invalid = "fallback"\npath = "x"'), "unknown key 'path'"),
        (('kind = "env"', 'kind = "environment"'), "kind: expected one of default, global"),
        (('kind = "env"', 'kind = "default"'), "each source kind may appear only once"),
        (
            ('[[sources]]\nkind = "default"\n\n', ""),
            "the stack starts with the default source",
        ),
        (
            ('invalid = "fallback"', 'invalid = "fallback"\nmerge = {loop = "replace"}'),
            "merge: the env source reads no sections, so it has nothing to merge",
        ),
        (
            (
                '[[sources]]\nkind = "env"',
                '[[sources]]\nkind = "profile"\nmerge = {loop = "replace"}\n\n'
                '[[sources]]\nkind = "env"',
            ),
            "merge: no section 'loop'",
        ),
        (('fields."agent.max_steps"', 'fields."max_steps"'), "a field path is section.name"),
        (
            ('name = "app"', 'name = "app"\nmax_file_bytes = 0'),
            "max_file_bytes: expected a positive integer, got 0",
        ),
        (
            (
                '[[sources]]\nkind = "env"',
                '[[sources]]\nkind = "profile"\nmerge = {agent = "append"}\n\n'
                '[[sources]]\nkind = "env"',
            ),
            "merge.agent: expected field or replace, got 'append'",
        ),
        (
            (
                'env = ["APP_MAX_STEPS"]\n',
                'env = ["APP_MAX_STEPS"]\n\n[fields]\n"agent.other" = 1\n',
            ),
            'fields."agent.other": expected a table, got 1',
        ),
        (
            (
                'env = ["APP_MAX_STEPS"]\n',
                'env = ["APP_MAX_STEPS"]\n\n[fields."agent.quiet"]\ntype = "bool"\n'
                "default = false\nge = 0\n",
            ),
            "ge/gt/le/lt: bounds apply to int and number fields only",
        ),
        (('type = "int"', 'type = "int"\nmystery = 1'), "unknown key 'mystery'"),
        (
            ('type = "int"', 'type = "int"\nalias = ["x"]'),
            "unknown key 'alias' (did you mean 'aliases'?)",
        ),
    ],
)
def test_a_bad_preset_file_is_refused(place: Place, change: tuple[str, str], message: str) -> None:
    """Unknown keys, wrong types (bool is not int) and self-contradicting defaults are errors."""
    old, new = change
    assert old in MINIMAL
    path = _preset(place, MINIMAL.replace(old, new, 1))
    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"preset {path}: ")


def test_a_preset_file_that_is_not_toml_is_refused(place: Place) -> None:
    """Broken TOML in a preset file is a PresetError naming the file."""
    path = _preset(place, "format = \n")
    with pytest.raises(budgetconf.PresetError, match="invalid TOML"):
        load_preset(path)


def test_a_missing_preset_file_is_refused(place: Place) -> None:
    """A preset path that does not exist is a PresetError, not a built-in lookup."""
    with pytest.raises(budgetconf.PresetError, match="No such file"):
        load_preset(str(place.work / "nope.toml"))


def test_aliases_may_not_collide_with_other_names(place: Place) -> None:
    """Two fields that answer to the same key in a section are refused."""
    text = (
        MINIMAL + '\n[fields."agent.turns"]\ntype = "int"\ndefault = 1\naliases = ["max_steps"]\n'
    )
    with pytest.raises(
        budgetconf.PresetError, match=r"'max_steps' is already a name of agent\.max_steps"
    ):
        load_preset(_preset(place, text))


def test_an_optional_field_without_default_is_unset(place: Place) -> None:
    """optional = true with no default resolves to None from the default source."""
    text = MINIMAL + '\n[fields."agent.budget"]\ntype = "number"\ngt = 0\noptional = true\n'
    res = budgetconf.resolve(_preset(place, text), env={})
    assert res["agent.budget"] is None
    assert res.trace("agent.budget").source == "default"


def test_secret_fields_are_masked_everywhere(place: Place) -> None:
    """A secret value is usable in code but shows as *** in explain, errors and warnings."""
    text = MINIMAL + textwrap.dedent(
        """
        [fields."agent.token_budget"]
        type = "int"
        ge = 1
        default = 1
        secret = true
        env = ["APP_TOKEN_BUDGET", "APP_TOKENS"]
        """
    )
    path = _preset(place, text)
    res = budgetconf.resolve(path, env={"APP_TOKEN_BUDGET": "1234"})
    assert res["agent.token_budget"] == 1234
    document = res.to_dict()
    assert document["values"]["agent.token_budget"] == "***"
    assert "1234" not in repr(document)
    assert "1234" not in repr(res)

    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"APP_TOKEN_BUDGET": "s3cret", "APP_TOKENS": "77"})
    assert res["agent.token_budget"] == 77  # the second variable applies
    assert all("s3cret" not in str(w.message) and "77" not in str(w.message) for w in caught)
    assert "s3cret" not in repr(res.to_dict())


def test_a_secret_text_read_back_as_the_mask_is_warned_of(place: Place) -> None:
    """``***`` is what every rendering shows of a secret: read as its value, it was copied."""
    text = MINIMAL + textwrap.dedent(
        """
        [fields."agent.api_key"]
        type = "text"
        optional = true
        secret = true
        env = ["APP_API_KEY"]
        """
    )
    path = _preset(place, text)
    with pytest.warns(budgetconf.BudgetConfWarning) as caught:
        res = budgetconf.resolve(path, env={"APP_API_KEY": "***"})
    assert [str(w.message) for w in caught] == [
        "agent.api_key from env:APP_API_KEY: the value is ***, the mask shown in place of a"
        " secret field's value, not the value (copied from explain's output?)"
    ]
    assert res["agent.api_key"] == "***"  # a warning: the value is still the one given
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert budgetconf.resolve(path, env={"APP_API_KEY": "k-1***"})["agent.api_key"] == "k-1***"


def test_the_first_listed_variable_of_a_field_wins(place: Place) -> None:
    """With two variables for one field, the one listed first takes precedence."""
    text = MINIMAL.replace('env = ["APP_MAX_STEPS"]', 'env = ["APP_MAX_STEPS", "LEGACY_STEPS"]')
    res = budgetconf.resolve(_preset(place, text), env={"APP_MAX_STEPS": "8", "LEGACY_STEPS": "9"})
    assert res["agent.max_steps"] == 8
    assert [c.status for c in res.trace("agent.max_steps").candidates] == [
        "shadowed",
        "shadowed",
        "won",
    ]


def test_a_preset_path_with_a_nul_byte_is_a_preset_error() -> None:
    """A path the system cannot take is a PresetError, not a bare ValueError."""
    with pytest.raises(budgetconf.PresetError, match="embedded null byte"):
        load_preset("app\x00.toml")


LOOPED = (
    MINIMAL
    + """
[fields."agent.mode"]
type = "enum"
choices = ["warn", "wrap_up"]
default = "warn"

[fields."agent.label"]
type = "bool"
default = false

[fields."agent.cost"]
type = "number"
default = 1.5

[loop]
max_steps = "agent.max_steps"
last_turn = "agent.mode"
"""
)


def test_a_loop_table_names_the_fields_that_hold_each_budget(place: Place) -> None:
    """[loop] maps budgets to fields and behaviours to fields or fixed words."""
    text = LOOPED + 'over_cap = "truncate"\nstop_reasons = {max_steps = "out_of_turns"}\n'
    loop = load_preset(_preset(place, text)).description.loop
    assert loop is not None
    assert loop.budgets == {"max_steps": "agent.max_steps"}
    assert loop.behaviours == {"last_turn": "agent.mode", "over_cap": "truncate"}
    assert loop.stop_reasons == {"max_steps": "out_of_turns"}


def test_a_preset_without_a_loop_table_bounds_no_loop(place: Place) -> None:
    """The loop table is optional: such a preset resolves but cannot drive the executor."""
    assert load_preset(_preset(place, MINIMAL)).description.loop is None


def test_behaviours_default_to_no_notice_and_rejection(place: Place) -> None:
    """Without last_turn and over_cap, the loop says nothing before the end and rejects."""
    text = MINIMAL + '\n[loop]\nmax_steps = "agent.max_steps"\n'
    loop = load_preset(_preset(place, text)).description.loop
    assert loop is not None
    assert loop.behaviours == {"last_turn": "none", "over_cap": "reject"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('max_steps = "agent.max_steps"\n', ""), "loop.max_steps: a loop needs a step budget"),
        (
            ('max_steps = "agent.max_steps"', 'max_steps = "agent.max_step"'),
            "loop.max_steps: unknown field 'agent.max_step'; did you mean 'agent.max_steps'?",
        ),
        (
            ('max_steps = "agent.max_steps"', 'max_steps = "agent.label"'),
            "loop.max_steps: agent.label is a boolean, not an integer",
        ),
        (
            ('last_turn = "agent.mode"', 'last_turn = "shout"'),
            "loop.last_turn: expected a field or one of none, warn, wrap_up",
        ),
        (
            ('last_turn = "agent.mode"', 'last_turn = "agent.max_steps"'),
            "loop.last_turn: agent.max_steps must be an enum of none, warn, wrap_up",
        ),
        (
            ('last_turn = "agent.mode"', 'stop_reasons = {completed = "done"}'),
            "loop.stop_reasons: 'completed' is not a budget stop",
        ),
        (
            ('last_turn = "agent.mode"', "stop_reasons = {max_steps = 3}"),
            "loop.stop_reasons.max_steps: expected a name, got 3",
        ),
        (('last_turn = "agent.mode"', "max_turns = 3"), "loop.unknown key 'max_turns'"),
        (
            ('last_turn = "agent.mode"', 'stop_reasons = {max_steps = "completed"}'),
            "loop.stop_reasons.max_steps: 'completed' already names another stop",
        ),
        (
            ('last_turn = "agent.mode"', 'stop_reasons = {max_steps = "out", timeout = "out"}'),
            "loop.stop_reasons.max_steps: 'out' already names another stop",
        ),
        (
            ('type = "int"\nge = 1\ndefault = 5', 'type = "int"\nge = 1\noptional = true'),
            "loop.max_steps: agent.max_steps may be unset, and a loop needs a step budget",
        ),
        (
            (
                'choices = ["warn", "wrap_up"]\ndefault = "warn"',
                'choices = ["warn"]\noptional = true',
            ),
            "loop.last_turn: agent.mode may be unset; it needs a default",
        ),
        (
            (
                'max_steps = "agent.max_steps"',
                'max_steps = "agent.max_steps"\nmax_tokens = "agent.cost"',
            ),
            "loop.max_tokens: agent.cost is a number, not an integer",
        ),
    ],
)
def test_a_bad_loop_table_is_refused(place: Place, change: tuple[str, str], message: str) -> None:
    """A loop table must name existing fields of the right kind, and known stops."""
    old, new = change
    assert old in LOOPED
    path = _preset(place, LOOPED.replace(old, new, 1))
    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)
    assert message in str(caught.value)


# --- default_from ---------------------------------------------------------------------

DEFAULTS_FROM = (
    MINIMAL
    + """
[fields."agent.max_iter"]
type = "int"
ge = 1
default = 20
aliases = ["iterations"]

[fields."agent.steps"]
type = "int"
ge = 1
optional = true
default_from = "agent.max_iter"
"""
)


def test_default_from_names_the_other_field_by_its_path(place: Place) -> None:
    """An alias names the other field too; the loaded field holds its path."""
    text = DEFAULTS_FROM.replace('"agent.max_iter"\n', '"agent.iterations"\n', 1)
    assert 'default_from = "agent.iterations"' in text
    field = load_preset(_preset(place, text)).schema.lookup("agent.steps")
    assert field.default_from == "agent.max_iter"


@pytest.mark.parametrize(
    ("other", "own", "accepted"),
    [
        ("ge = 2", "ge = 1", True),  # tighter below
        ("gt = 1", "ge = 1", True),  # gt 1 is tighter than ge 1
        ("ge = 1\nlt = 50", "ge = 1\nle = 50", True),  # lt 50 is tighter than le 50
        ("ge = 1\nle = 50", "ge = 1\nlt = 50", False),
        ("ge = 1", "ge = 1\nle = 100", False),  # no upper bound at all
        ("gt = 0", "ge = 1", False),  # the same integers, but bounds are compared as written
        ("ge = 0", "ge = 1", False),
        ("ge = 1", "", True),
    ],
)
def test_the_other_field_s_bounds_must_lie_within(
    place: Place, other: str, own: str, accepted: bool
) -> None:
    """Every value the other field may take must be one this field takes too."""
    text = DEFAULTS_FROM.replace("ge = 1\ndefault = 20", f"{other}\ndefault = 20").replace(
        "ge = 1\noptional = true\ndefault_from", f"{own}\noptional = true\ndefault_from"
    )
    assert other in text
    assert own in text
    path = _preset(place, text)
    if accepted:
        assert load_preset(path).schema.lookup("agent.steps").default_from == "agent.max_iter"
        return
    with pytest.raises(budgetconf.PresetError, match=r"agent\.max_iter may take values"):
        load_preset(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("optional = true\ndefault_from", "default = 3\noptional = true\ndefault_from"),
            "default_from: a field has its own default or another's, not both",
        ),
        (
            ("optional = true\ndefault_from", "default_from"),
            "default_from: needs optional = true, as unset is what takes it",
        ),
        (
            ('default_from = "agent.max_iter"', 'default_from = "agent.max_itr"'),
            "unknown field 'agent.max_itr'; did you mean 'agent.max_iter'?",
        ),
        (
            ('default_from = "agent.max_iter"', 'default_from = "agent.steps"'),
            "a field cannot take its default from itself",
        ),
        (
            ('default_from = "agent.max_iter"', 'default_from = "agent.max_iter"\nsecret = true'),
            None,  # a secret field may copy a plain one
        ),
        (
            ('aliases = ["iterations"]', 'aliases = ["iterations"]\nsecret = true'),
            "agent.max_iter is secret, so this field must be secret too",
        ),
        (
            ('type = "int"\nge = 1\ndefault = 20', 'type = "number"\nge = 1\ndefault = 20'),
            "agent.max_iter is a number, and this field is an integer",
        ),
        (
            (
                '[fields."agent.steps"]',
                '[fields."agent.other"]\ntype = "int"\noptional = true\n'
                'default_from = "agent.steps"\n\n[fields."agent.steps"]',
            ),
            "agent.steps takes its own default from agent.max_iter",
        ),
    ],
)
def test_a_bad_default_from_is_refused(
    place: Place, change: tuple[str, str], message: str | None
) -> None:
    """default_from names another field with its own default, of a type and range that fit."""
    old, new = change
    assert old in DEFAULTS_FROM
    path = _preset(place, DEFAULTS_FROM.replace(old, new, 1))
    if message is None:
        load_preset(path)
        return
    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(path)
    assert message in str(caught.value)


def test_default_from_on_an_enum_needs_its_choices(place: Place) -> None:
    """An enum may copy another enum whose choices it has, and no other."""
    text = MINIMAL + textwrap.dedent(
        """
        [fields."agent.mode"]
        type = "enum"
        choices = ["fast", "slow"]
        default = "fast"

        [fields."agent.review_mode"]
        type = "enum"
        choices = ["fast", "slow", "off"]
        optional = true
        default_from = "agent.mode"

        [fields."agent.plan_mode"]
        type = "enum"
        choices = ["fast"]
        optional = true
        default_from = "agent.mode"
        """
    )
    with pytest.raises(budgetconf.PresetError) as caught:
        load_preset(_preset(place, text))
    assert str(caught.value).endswith(
        'fields."agent.plan_mode".default_from: agent.mode may take values this field refuses'
    )


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_preset_path_that_is_not_a_regular_file_is_refused_at_once(
    place: Place, make: str
) -> None:
    """A FIFO would block and /dev/zero never ends: both are refused before any read."""
    if make == "fifo":
        path = str(place.work / "app.toml")
        os.mkfifo(path)
    else:
        path = os.devnull
    with pytest.raises(budgetconf.PresetError) as caught:
        budgetconf.resolve(path, env={})
    assert str(caught.value) == f"preset {path}: not a regular file"


def test_a_preset_file_past_the_size_limit_is_refused(place: Place) -> None:
    """A preset file is read whole, so one larger than 1 MiB is refused."""
    path = place.write("app.toml", MINIMAL + "#" * (1 << 20))
    with pytest.raises(budgetconf.PresetError, match="larger than the limit of 1048576 bytes"):
        budgetconf.resolve(path, env={})
