"""A table field on the command line: each key a row of its own, the table one field."""

from __future__ import annotations

import json
import tomllib

import pytest

import budgetconf
from budgetconf.cli import main

from conftest import Place
from helpers.presetfiles import preset_file

#: a project file that sets two keys, the second at line 4
PROJECT = "[tools.max_calls]\nweb_search = 5\n# the next line is line 4\nfetch = 2\n"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(out: str) -> list[str]:
    """The table's field rows: the lines between the header and the sources."""
    return out.split("\n\n")[1].splitlines()


def test_the_section_and_the_table_show_a_row_for_each_key(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``explain tools`` and ``explain tools.max_calls``: every key, with its candidates, in
    the order of the keys; ``check`` counts the table as one field."""
    place.write("settings.toml", PROJECT)
    monkeypatch.setenv("BUDGETCONF_TOOLS_MAX_CALLS", "fetch=6")
    code, out, err = run(["explain", "tools", "--tools-max-calls", "read_file=1"], capsys)
    assert (code, err) == (0, "")
    assert rows(out) == [
        "tools.max_calls.fetch      6 env:BUDGETCONF_TOOLS_MAX_CALLS",
        "  shadowed                 2 ./settings.toml:4",
        "tools.max_calls.read_file  1 --tools-max-calls",
        "tools.max_calls.web_search 5 ./settings.toml:2",
    ]
    assert run(["explain", "tools.max_calls", "--tools-max-calls", "read_file=1"], capsys) == (
        code,
        out,
        err,
    )
    assert run(["check", "tools"], capsys)[1] == (
        "ok: 1 field resolved, no warnings (preset budgetconf)\n"
    )
    assert run(["check"], capsys)[1] == "ok: 31 fields resolved, no warnings (preset budgetconf)\n"


def test_a_table_with_no_key_set_says_so_in_one_row(capsys: pytest.CaptureFixture[str]) -> None:
    """No source sets a key: the table's row says it has none, where its default {} is from;
    the document has no key to show."""
    code, out, _ = run(["explain", "tools"], capsys)
    assert code == 0
    assert rows(out) == ["tools.max_calls no keys built-in default"]
    assert (
        "tools.max_calls                   no keys built-in default" in run(["explain"], capsys)[1]
    )
    document = json.loads(run(["explain", "tools", "--format", "json"], capsys)[1])
    assert (document["values"], document["fields"]) == ({}, {})


def test_a_key_asked_for_by_name_is_shown_unset_when_no_source_sets_it(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """One key, by its path, beside the table's others: a key no source set is unset."""
    place.write("settings.toml", PROJECT)
    code, out, _ = run(["explain", "tools.max_calls.zip", "tools.max_calls.fetch"], capsys)
    assert code == 0
    assert rows(out) == [
        "tools.max_calls.fetch     2 ./settings.toml:4",
        "tools.max_calls.zip   unset built-in default",
    ]
    code, out, _ = run(["explain", "tools", "tools.max_calls.zip"], capsys)
    assert rows(out)[-1] == "tools.max_calls.zip        unset built-in default"
    document = json.loads(run(["explain", "tools.max_calls.zip", "--format", "json"], capsys)[1])
    assert document["values"] == {"tools.max_calls.zip": None}  # the document says the same
    assert document["fields"]["tools.max_calls.zip"]["locator"] == "built-in default"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "tools.max_calls.bad key",
            "tools.max_calls: not a tool name (1 to 64 ASCII letters, digits and _.-): 'bad key'",
        ),
        ("tools.max_call", "unknown field 'tools.max_call'; did you mean 'tools.max_calls'?"),
        (
            "tool",
            "unknown field or section 'tool'; did you mean 'tools'?"
            " (sections: loop, limits, tools, ledger, prices, telemetry)",
        ),
    ],
)
def test_a_key_the_tables_rule_refuses_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    """A key no source could set is refused by the rule it breaks, not as an unknown field."""
    assert run(["explain", name], capsys)[0::2] == (64, f"budgetconf: usage error: {message}\n")


def test_explain_toml_writes_the_table_under_its_header_and_reads_back(
    place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[tools.max_calls]`` with each key that is set (a dotted key quoted): saved as
    settings.toml, it resolves to the same keys, each from the project file at its line."""
    monkeypatch.setenv("BUDGETCONF_TOOLS_MAX_CALLS", "fetch=6,web_search=2")
    args = ["explain", "--format", "toml", "--tools-max-calls", "files.read=0", "--max-steps", "9"]
    code, out, err = run(args, capsys)
    assert (code, err) == (0, "")
    assert '\n[tools.max_calls]\nfetch = 6\n"files.read" = 0\nweb_search = 2\n' in out
    document = tomllib.loads(out)
    assert document["tools"] == {"max_calls": {"fetch": 6, "files.read": 0, "web_search": 2}}
    before = budgetconf.resolve(argv=["--tools-max-calls=files.read=0", "--max-steps=9"])
    monkeypatch.delenv("BUDGETCONF_TOOLS_MAX_CALLS")
    path = place.write("settings.toml", out)
    res = budgetconf.resolve(env={})
    assert res.values == before.values
    line = out.splitlines().index('"files.read" = 0') + 1
    assert res.trace("tools.max_calls.files.read").locator == f"{path}:{line}"
    assert run(["explain", "--format", "toml", "tools"], capsys)[1].endswith(
        '[tools.max_calls]\nfetch = 6\n"files.read" = 0\nweb_search = 2\n'
    )


def test_explain_toml_leaves_out_a_secret_tables_keys_and_says_where_to_write_them(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each key of a secret table is left out, with the table's own header to write it under."""
    preset = preset_file(
        place.work,
        sources=["default", {"kind": "project", "path": "settings.toml"}],
        fields={
            "agent.keys": {"type": "table", "values": "text", "keys": "tool-name", "secret": True},
            "agent.turns": {"type": "int", "default": 3},
        },
    )
    place.write("settings.toml", '[agent.keys]\nsearch = "s3cret"\n')
    code, out, _ = run(["explain", "--preset", str(preset), "--format", "toml"], capsys)
    assert code == 0
    assert "s3cret" not in out
    assert (
        "# agent.keys.search is secret and left out; write it here under [agent.keys] in full."
        in out.splitlines()
    )
    assert tomllib.loads(out) == {"agent": {"turns": 3}}


def test_diff_compares_each_key_and_counts_the_table_once(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two keys differ (one set on the second side only, unset on the first): one field
    differs, each key shown in its order; the JSON names each key by its path."""
    place.write("settings.toml", PROJECT)
    args = ["explain", "--diff", "--set", "tools.max_calls.web_search=1", "--set"]
    code, out, _ = run([*args, "tools.max_calls.add=3"], capsys)
    assert code == 0
    assert out.splitlines() == [
        "preset budgetconf: 1 field differs",
        "",
        "tools.max_calls.add",
        "  before unset  default  built-in default",
        "  after      3  explicit explicit",
        "",
        "tools.max_calls.web_search",
        "  before 5  project  ./settings.toml:2",
        "  after  1  explicit explicit",
    ]
    code, out, _ = run(
        [*args, "tools.max_calls.add=3", "--max-steps", "3", "--format", "json"], capsys
    )
    fields = json.loads(out)["fields"]
    assert list(fields) == ["loop.max_steps", "tools.max_calls.add", "tools.max_calls.web_search"]
    assert fields["tools.max_calls.add"]["before"] == {
        "value": None,
        "source": "default",
        "locator": "built-in default",
    }
    code, out, _ = run(
        ["explain", "tools.max_calls.fetch", "--diff", "--set", "tools.max_calls.web_search=1"],
        capsys,
    )
    assert (code, out) == (0, "preset budgetconf: no field differs\n")
    code, out, _ = run(
        [
            "explain",
            "tools.max_calls.web_search",
            "--diff",
            "--set",
            "tools.max_calls.web_search=1",
        ],
        capsys,
    )
    assert out.splitlines()[0] == "preset budgetconf: 1 field differs"


def test_check_policy_judges_a_rule_for_one_key(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --policy`` with a rule for the table and one for a key: both in the document."""
    policy = {"tools": {"max_calls": {"max": 10, "keys": {"web_search": {"max": 2}}}}}
    path = place.write("policy.json", json.dumps(policy))
    code, out, _ = run(["check", "--policy", str(path), "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["rules"] == {
        "tools.max_calls": {"max": 10, "locator": f"{path}:1"},
        "tools.max_calls.web_search": {"max": 2, "locator": f"{path}:1"},
    }
    code, out, _ = run(["check", "--policy", str(path)], capsys)
    assert (code, out) == (0, f"ok: policy {path}, 2 rules (preset budgetconf)\n")
