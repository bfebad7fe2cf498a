"""The ledger's fields: LEDGER.md's table, the ``text`` kind, a URL shown without its password,
and an invalid ``ledger.url`` an error under every invalid policy."""

from __future__ import annotations

import json
import re
import tomllib
import warnings
from pathlib import Path
from typing import Any, Final

import pytest

import budgetconf
from budgetconf import BudgetConfWarning, ConfigError
from budgetconf._engine import load_preset
from budgetconf._field import Kind
from budgetconf._text_formats import text_problem
from budgetconf.cli import main
from budgetconf.cli._schema import pattern
from budgetconf.errors import PresetError
from budgetconf.ledger import open_ledger
from budgetconf.ledger._address import parse_url
from budgetconf.loop import Budget, LedgerSettings, LoopExecutor, ScopeBudget, ScriptedModel

from conftest import Place
from helpers.presetfiles import preset_file
from helpers.resolving import quiet

SECRET: Final = "hunter2-LEDGER-pw"
URL: Final = f"redis://agent:{SECRET}@127.0.0.1:9/0"
SHOWN: Final = "redis://agent:***@127.0.0.1:9/0"
#: what a password may hold that a text does not: each once stopped the mask where it began
ODD: Final = [" ", "\t", "'", '"', "`", "<", ">", "\n", "/", "?", "#", "@", ":"]


def odd_url(odd: str) -> str:
    """`URL` with ``odd`` in its password, before `SECRET`: shown, it is `SHOWN` all the same."""
    return URL.replace(SECRET, f"pw{odd}{SECRET}")


def row(name: str, kind: str, default: object, optional: bool = False) -> tuple[object, ...]:
    """A line of LEDGER.md's table: the type, default, optional, variable and flag."""
    env = (f"BUDGETCONF_LEDGER_{name.upper()}",)
    return kind, default, optional, env, (f"--ledger-{name.replace('_', '-')}",)


def test_the_default_preset_has_the_ledger_fields_of_the_contract() -> None:
    schema = load_preset("budgetconf").schema
    table = {
        f.path: (f.kind.value, f.default, f.optional, f.env, f.flags)
        for f in schema
        if f.section == "ledger"
    }
    assert table == {
        "ledger.url": row("url", "text", None, True),
        "ledger.scope": row("scope", "text", "default"),
        "ledger.parents": row("parents", "text", None, True),
        "ledger.max_cost_usd": row("max_cost_usd", "number", None, True),
        "ledger.max_tokens": row("max_tokens", "int", None, True),
        "ledger.window": row("window", "enum", "day"),
        "ledger.max_cost_usd_by_scope": row("max_cost_usd_by_scope", "table", {}),
        "ledger.max_tokens_by_scope": row("max_tokens_by_scope", "table", {}),
        "ledger.window_by_scope": row("window_by_scope", "table", {}),
        "ledger.reserve_tokens": row("reserve_tokens", "int", 4096),
        "ledger.reserve_cost_usd": row("reserve_cost_usd", "number", 0.05),
        "ledger.lease_seconds": row("lease_seconds", "number", 300.0),
        "ledger.on_unavailable": row("on_unavailable", "enum", "stop"),
    }
    assert list(table) == [  # the own scope, its parents, the maxima, then each scope's
        "ledger.url",
        "ledger.scope",
        "ledger.parents",
        "ledger.max_cost_usd",
        "ledger.max_tokens",
        "ledger.window",
        "ledger.max_cost_usd_by_scope",
        "ledger.max_tokens_by_scope",
        "ledger.window_by_scope",
        "ledger.reserve_tokens",
        "ledger.reserve_cost_usd",
        "ledger.lease_seconds",
        "ledger.on_unavailable",
    ]
    assert schema.by_path["ledger.window"].choices == ("none", "hour", "day", "week", "month")
    assert schema.by_path["ledger.on_unavailable"].choices == ("stop", "continue")
    assert schema.by_path["ledger.parents"].format == "ledger-scopes"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://h/x", "is not a ledger URL"),
        ("redis://:6379/0", "names no host"),
        (f"redis://agent:{SECRET}@h:99999/0", "has a bad port"),
        (f"redis://agent:{SECRET}@h:x/0", "has a bad port"),
        ("sqlite://", "names no database file"),
        ("sqlite:///", "names no database file"),
    ],
)
def test_an_invalid_url_is_an_error_under_the_fallback_policy_too(url: str, why: str) -> None:
    """The environment falls back for every other field: a broken ledger address does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no fallback warning besides the error
        with pytest.raises(ConfigError) as caught:
            budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url})
    message = str(caught.value)
    assert message.startswith("ledger.url from env:BUDGETCONF_LEDGER_URL: the ledger URL ")
    assert why in message
    assert "\n" not in message
    assert SECRET not in message
    assert SECRET not in repr(caught.value.raw)
    assert (caught.value.field, caught.value.locator) == ("ledger.url", "env:BUDGETCONF_LEDGER_URL")


def test_explain_exits_1_for_an_invalid_url_from_a_flag_naming_field_and_locator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The cli source falls back too: not for ledger.url."""
    code = main(["explain", "ledger.url", "--", "--ledger-url", f"redis://u:{SECRET}@h:0/0"])
    captured = capsys.readouterr()
    assert code == 1
    assert "ledger.url from --ledger-url (cli): the ledger URL has a bad port" in captured.err
    assert SECRET not in captured.out + captured.err


def test_a_scope_out_of_its_characters_falls_back_in_the_environment_and_fails_in_a_file(
    tmp_path: Path,
) -> None:
    with pytest.warns(budgetconf.BudgetConfWarning, match="not a ledger scope"):
        res = budgetconf.resolve(env={"BUDGETCONF_LEDGER_SCOPE": "team a"})
    assert res["ledger.scope"] == "default"
    project = tmp_path / "elsewhere.toml"  # not found from the working directory
    project.write_text(f'[ledger]\nscope = "{"x" * 129}"\n')
    with pytest.raises(
        ConfigError, match=r"ledger.scope from .*elsewhere.toml:2 \(project\): not a ledger"
    ):
        budgetconf.resolve(env={}, project_file=str(project))
    assert budgetconf.resolve(env={"BUDGETCONF_LEDGER_SCOPE": "team-a:eu/1.x_y"}).values[
        "ledger.scope"
    ] == ("team-a:eu/1.x_y")


def test_a_text_field_takes_text_only(tmp_path: Path) -> None:
    project = tmp_path / "settings.toml"
    project.write_text("[ledger]\nurl = 7\n")
    with pytest.raises(
        ConfigError, match=r"ledger.url from .*:2 \(project\): not text: 7 \(an integer\)"
    ):
        budgetconf.resolve(env={}, project_file=str(project))


def _seen(res: budgetconf.Resolution) -> str:
    return "\n".join(
        [
            repr(res),
            json.dumps(res.to_dict()),
            repr(res.trace("ledger.url")),
            repr(res.trace("ledger.url").candidates),
            repr(Budget.from_resolution(res)),
            *res.warnings,
        ]
    )


@pytest.mark.parametrize(
    "given",
    [
        {"env": {"BUDGETCONF_LEDGER_URL": URL}},
        {"env": {}, "argv": ["--ledger-url", URL]},
        {"env": {}, "explicit": {"ledger.url": URL}},
    ],
    ids=["env", "flag", "code"],
)
def test_a_url_s_password_is_shown_nowhere_the_api_renders_it(given: dict[str, Any]) -> None:
    res = budgetconf.resolve(**given)
    assert res["ledger.url"] == URL  # the value itself, for the executor to connect with
    seen = _seen(res)
    assert SECRET not in seen
    assert SHOWN in seen


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_a_password_holding_what_ends_a_url_in_a_text_is_still_hidden(odd: str) -> None:
    """The mask is the parser's own cut, not a scan for where a URL ends in a text."""
    res = budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": odd_url(odd)})
    assert parse_url(odd_url(odd)).password == f"pw{odd}{SECRET}"
    seen = _seen(res)
    assert SECRET not in seen
    assert SHOWN in seen
    bad = odd_url(odd).replace(":9/", ":x/")  # refused, and quoted by the error: masked too
    with pytest.raises(ConfigError) as caught:
        budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": bad})
    assert SECRET not in str(caught.value)
    assert SHOWN.replace(":9/", ":x/") in str(caught.value)


@pytest.mark.parametrize("odd", ["", *ODD], ids=repr)
def test_a_url_s_password_is_shown_nowhere_the_command_line_renders_it(
    odd: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """explain (table, JSON, TOML, --for, --diff), check, a failed run and the ledger's errors
    show the address with only its password hidden, whatever the password holds."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", odd_url(odd))
    model = tmp_path / "m.json"
    model.write_text('{"responses": [{"content": "x"}]}')
    outputs = []
    for args in (
        ["explain"],
        ["explain", "--format", "json"],
        ["explain", "--format", "toml"],
        ["explain", "--for", "smolagents"],
        ["check", "--format", "json"],
        ["explain", "--diff", "--set", "ledger.scope=b"],
        ["run", "--model", str(model), "--output", "json", "go"],
        ["ledger", "status"],
        ["ledger", "runs", "--format", "json"],
    ):
        main(args)
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
    seen = "\n".join(outputs)
    assert SECRET not in seen
    assert SHOWN in seen


def test_a_url_the_policy_locks_is_shown_without_its_password(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bounds a policed field shows (table, document, check --policy) mask it too."""
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text(json.dumps({"ledger": {"url": {"value": URL}}}))
    outputs = []
    for args in (
        ["explain", "ledger.url"],
        ["explain", "ledger.url", "--format", "json"],
        ["check", "--policy", str(place.policy)],
        ["check", "--policy", str(place.policy), "--format", "json"],
    ):
        main(args)
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
    seen = "\n".join(outputs)
    assert SECRET not in seen
    assert SHOWN in seen


@pytest.mark.parametrize("secret", ["pa/ss", "pa?ss", "pa#ss", "p@ss"])
def test_a_password_with_a_slash_question_mark_hash_or_at_is_read_and_masked(
    secret: str,
) -> None:
    url = f"redis://agent:{secret}-{SECRET}@127.0.0.1:9/0"
    address = parse_url(url)
    assert (address.password, address.host, address.port) == (f"{secret}-{SECRET}", "127.0.0.1", 9)
    assert address.shown == SHOWN
    with pytest.raises(ConfigError) as caught:  # a bad port: the error quotes the URL, masked
        budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url.replace(":9/", ":x/")})
    assert SECRET not in str(caught.value)
    assert "redis://agent:***@127.0.0.1:x/0" in str(caught.value)


def test_a_rejected_url_shows_no_password_in_the_trace_under_fallback(tmp_path: Path) -> None:
    """A preset whose env source falls back: the URL there is wrong, and rejected, not shown."""
    fields = {
        "loop.max_steps": {"type": "int", "default": 3, "ge": 1},
        "ledger.url": {"type": "text", "optional": True, "env": ["APP_LEDGER"]},
    }
    stack = [{"kind": "default"}, {"kind": "env", "invalid": "fallback"}]
    path = preset_file(tmp_path, fields=fields, sources=stack, loop={"max_steps": "loop.max_steps"})
    with pytest.raises(ConfigError) as caught:
        budgetconf.resolve(str(path), env={"APP_LEDGER": f"redis://u:{SECRET}@h:0"})
    assert SECRET not in str(caught.value)
    assert "APP_LEDGER" in str(caught.value)


def test_a_preset_file_may_declare_the_ledger_and_the_executor_draws_on_it(
    tmp_path: Path,
) -> None:
    fields = {
        "loop.max_steps": {"type": "int", "default": 5, "ge": 1},
        "ledger.url": {"type": "text", "optional": True, "env": ["APP_LEDGER"]},
        "ledger.max_tokens": {"type": "int", "ge": 1, "default": 150},
        "ledger.reserve_tokens": {"type": "int", "ge": 0, "default": 50},
    }
    stack = [{"kind": "default"}, {"kind": "env"}]
    path = preset_file(tmp_path, fields=fields, sources=stack, loop={"max_steps": "loop.max_steps"})
    url = f"sqlite:///{tmp_path / 'app.db'}"
    res = budgetconf.resolve(str(path), env={"APP_LEDGER": url})
    answer = {"content": "", "tool_calls": [{"id": "c", "name": "t", "arguments": "{}"}]}
    model = ScriptedModel([{**answer, "usage": {"total_tokens": 50}}])
    result = LoopExecutor(model, {"t": lambda: "ok"}, res).run("hi")
    assert (result.stop_reason, model.calls) == ("max_tokens", 3)
    assert result.message.startswith("stopped: hit max_tokens (150): ledger.max_tokens = 150")


def test_a_text_field_s_default_is_checked_when_the_preset_is_read(tmp_path: Path) -> None:
    fields: dict[str, dict[str, object]] = {
        "loop.max_steps": {"type": "int", "default": 3, "ge": 1},
        "ledger.url": {"type": "text", "default": "mysql://h/x"},
    }
    path = preset_file(tmp_path, fields=fields, sources=[{"kind": "default"}])
    with pytest.raises(PresetError, match=r'fields."ledger.url".default: the ledger URL is not'):
        budgetconf.resolve(str(path))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://h:1/0?db=2", "takes no query or fragment"),
        ("redis://h:1/x", "has a bad database number"),
        ("redis://[::1:1/0", "has a malformed host (an IPv6 address without its closing ])"),
        ("redis://[::1]x/0", "has a malformed host"),
        ("redis://[::1]:0/0", "has a bad port"),
    ],
)
def test_every_fault_of_an_address_is_named(url: str, why: str) -> None:
    problem = text_problem("ledger-url", url)
    assert problem is not None
    assert problem.startswith(f"the ledger URL {why}")


def test_a_good_address_reads_as_its_parts() -> None:
    parsed = parse_url("rediss://agent:pw@[::1]:6380/3")
    assert (parsed.host, parsed.port, parsed.db, parsed.tls) == ("::1", 6380, 3, True)
    assert parsed.shown == "rediss://agent:***@[::1]:6380/3"
    assert text_problem("ledger-url", "redis://h") is None
    assert text_problem(None, "x" * 4097) == "longer than 4096 characters"


def test_open_ledger_refuses_what_is_no_address() -> None:
    with pytest.raises(budgetconf.UsageError, match="takes a URL string, not int"):
        open_ledger(5)  # type: ignore[arg-type]
    with pytest.raises(budgetconf.UsageError) as caught:
        open_ledger(f"ftp://u:{SECRET}@h/x")
    assert str(caught.value).startswith("ledger URL 'ftp://u:***@h/x' is not a ledger URL")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("BUDGETCONF_LEDGER_RESERVE_TOKENS", str(2**40 + 1)),
        ("BUDGETCONF_LEDGER_RESERVE_COST_USD", "1000000.5"),
        ("BUDGETCONF_LEDGER_MAX_COST_USD", "9000001"),
    ],
)
def test_the_ledgers_amounts_are_bounded_where_it_counts_them_exactly(
    variable: str, value: str
) -> None:
    """A reservation past what one response may report, or a cost maximum past what the ledger
    counts exactly, is refused by the field, not by the ledger in the middle of a run."""
    field = f"ledger.{variable.removeprefix('BUDGETCONF_LEDGER_').lower()}"
    with pytest.warns(BudgetConfWarning, match=f"^{field} from env:{variable}: must be"):
        res = budgetconf.resolve(env={variable: value})
    assert res.trace(field).source == "default"


@pytest.mark.parametrize(
    "url", [f"agent:{SECRET}@127.0.0.1:9/0", f"redis:/agent:{SECRET}@127.0.0.1:9/0"]
)
def test_an_address_that_lost_its_slashes_hides_its_password_in_the_error(url: str) -> None:
    """No ``://``, yet user:password@: refused, and quoted with the password hidden."""
    with pytest.raises(ConfigError) as caught:
        budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url})
    assert SECRET not in str(caught.value)
    assert ":***@127.0.0.1:9/0" in str(caught.value)


#: the comment explain's TOML leaves in place of a URL it would write with its password masked
LEFT_OUT: Final = (
    "# ledger.url is left out: its password would be written as ***, not as itself;"
    " set it with BUDGETCONF_LEDGER_URL."
)


@pytest.mark.parametrize("url", [URL, "redis://:pw@h:6379/0", "rediss://agent:@h/1"])
def test_explain_toml_leaves_out_a_url_it_would_write_with_its_password_masked(
    url: str, place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A masked password is not the password: the URL is left out with a comment that says how
    to set it, and the rest reads back as a project file that check passes."""
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", url)
    monkeypatch.setenv("BUDGETCONF_LEDGER_SCOPE", "team-a")
    assert main(["explain", "--format", "toml"]) == 0
    out = capsys.readouterr().out
    assert "***@" not in out.replace(LEFT_OUT, "")
    assert LEFT_OUT in out.splitlines()
    assert "url" not in tomllib.loads(out)["ledger"]
    monkeypatch.delenv("BUDGETCONF_LEDGER_URL")
    monkeypatch.delenv("BUDGETCONF_LEDGER_SCOPE")
    place.write("settings.toml", out)
    assert main(["check"]) == 0
    assert capsys.readouterr().err == ""
    res = budgetconf.resolve()
    assert res["ledger.url"] is None
    assert (res["ledger.scope"], res.trace("ledger.scope").source) == ("team-a", "project")


@pytest.mark.parametrize(
    "url", ["redis://agent@127.0.0.1:9/0", "redis://127.0.0.1:9/0", "sqlite:///a:***@b.db"]
)
def test_explain_toml_writes_a_url_that_hides_nothing_and_it_reads_back(
    url: str, place: Place, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No password, nothing masked: the URL is written as it is, a file name that holds ``:***@``
    included, and read back without a warning."""
    monkeypatch.setenv("BUDGETCONF_LEDGER_URL", url)
    assert main(["explain", "--format", "toml"]) == 0
    out = capsys.readouterr().out
    assert tomllib.loads(out)["ledger"]["url"] == url
    assert "left out" not in out
    monkeypatch.delenv("BUDGETCONF_LEDGER_URL")
    place.write("settings.toml", out)
    assert main(["check"]) == 0
    assert capsys.readouterr().err == ""
    assert budgetconf.resolve()["ledger.url"] == url


MASKED: Final = "redis://agent:***@127.0.0.1:9/0"
#: what a warning says of a URL read back with the mask for its password, after its locator
MASK_READ: Final = (
    "the URL's password is ***, the mask shown in place of a password, not a password"
    " (copied from explain's output?)"
)


def _masked_way_in(way: str, place: Place) -> tuple[dict[str, Any], str]:
    """The keywords of resolve() that bring a masked URL in ``way``, and the locator warned of."""
    if way == "project":
        project = place.write("settings.toml", f'[ledger]\nurl = "{MASKED}"\n')
        return {"env": {}}, f"{project}:2 (project)"
    if way == "profile":
        profile = place.write("fast.json", json.dumps({"ledger": {"url": MASKED}}))
        return {"env": {}, "profile": str(profile)}, f"{profile}:1 (profile)"
    ways: dict[str, tuple[dict[str, Any], str]] = {
        "env": ({"env": {"BUDGETCONF_LEDGER_URL": MASKED}}, "env:BUDGETCONF_LEDGER_URL"),
        "flag": ({"env": {}, "argv": ["--ledger-url", MASKED]}, "--ledger-url (cli)"),
        "code": ({"env": {}, "explicit": {"ledger.url": MASKED}}, "explicit"),
    }
    return ways[way]


@pytest.mark.parametrize("way", ["project", "profile", "env", "flag", "code"])
def test_a_url_read_back_with_the_mask_for_its_password_is_a_warning(
    way: str, place: Place
) -> None:
    """``***`` is what every rendering shows for a password, so a URL whose password is ``***``
    was most likely copied from one: one line names the field and where it was read."""
    given, where = _masked_way_in(way, place)
    with pytest.warns(BudgetConfWarning) as caught:
        res = budgetconf.resolve(**given)
    assert [str(w.message) for w in caught] == [f"ledger.url from {where}: {MASK_READ}"]
    assert res["ledger.url"] == MASKED  # an address all the same: what it says is a warning


def test_check_fails_on_a_file_that_holds_the_mask_for_a_password(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    path = place.write("settings.toml", f'[ledger]\nurl = "{MASKED}"\n')
    assert main(["check"]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"budgetconf: warning: ledger.url from {path}:2 (project): {MASK_READ}\n"
    assert "check failed: 0 errors, 1 warning" in captured.out


def test_a_policy_that_locks_a_url_with_the_mask_for_its_password_is_warned_of(
    place: Place,
) -> None:
    place.policy.parent.mkdir(parents=True)
    place.policy.write_text(json.dumps({"ledger": {"url": {"value": MASKED}}}))
    with pytest.warns(BudgetConfWarning) as caught:
        budgetconf.resolve(env={})
    assert [str(w.message) for w in caught] == [
        f"ledger.url from {place.policy}:1 (policy): {MASK_READ}"
    ]


@pytest.mark.parametrize(
    "url",
    [
        "redis://agent:pw***@127.0.0.1:9/0",  # a password that holds the mask is a password
        "redis://***@127.0.0.1:9/0",  # a user's name is never masked
        "redis://agent:****@127.0.0.1:9/0",
        "sqlite:///a:***@b.db",  # a file's name: nothing in it is a password
    ],
)
def test_a_url_whose_password_is_not_the_mask_is_not_warned_of(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert budgetconf.resolve(env={"BUDGETCONF_LEDGER_URL": url})["ledger.url"] == url


# Fleet budgets: the run's own scope, the scopes it also draws on, and a cap for each scope.

FLEET_URL: Final = "sqlite:///fleet.db"
#: a user's run that also draws on its team's and its organisation's budgets
FLEET: Final = {
    "BUDGETCONF_LEDGER_URL": FLEET_URL,
    "BUDGETCONF_LEDGER_SCOPE": "user:u-1042",
    "BUDGETCONF_LEDGER_PARENTS": "team:research,org:acme",
}


def fleet(env: dict[str, str] | None = None, **kwargs: Any) -> LedgerSettings:
    """The ledger settings of a resolution of `FLEET` and ``env``, which must warn of nothing."""
    res = quiet(env={**FLEET, **(env or {})}, **kwargs)
    settings = Budget.from_resolution(res).ledger
    assert settings is not None
    return settings


def test_the_scope_tables_are_keyed_by_scope_and_bounded_as_the_plain_maxima() -> None:
    schema = load_preset("budgetconf").schema
    cost, tokens, windows = (
        schema.by_path[f"ledger.{name}_by_scope"]
        for name in ("max_cost_usd", "max_tokens", "window")
    )
    assert {cost.keys, tokens.keys, windows.keys} == {"ledger-scope"}
    assert (cost.item, cost.gt, cost.le) == (Kind.NUMBER, 0, 9000000)
    assert (tokens.item, tokens.ge) == (Kind.INT, 1)
    assert (windows.item, windows.choices) == (Kind.ENUM, ("none", "hour", "day", "week", "month"))


def test_a_window_may_be_an_iso_week_for_the_own_scope_and_for_a_parent() -> None:
    res = quiet(
        env={"BUDGETCONF_LEDGER_WINDOW": "week", "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "org:a=week"}
    )
    assert (res["ledger.window"], res["ledger.window_by_scope"]) == ("week", {"org:a": "week"})


def test_parents_are_read_in_order_with_the_spaces_around_commas_stripped() -> None:
    settings = fleet({"BUDGETCONF_LEDGER_PARENTS": "team:research , org:acme,  a.b/c_d-9"})
    assert settings.parents == ("team:research", "org:acme", "a.b/c_d-9")
    assert "parents=('team:research', 'org:acme', 'a.b/c_d-9')" in repr(settings)
    unset = Budget.from_resolution(quiet(env={"BUDGETCONF_LEDGER_URL": FLEET_URL})).ledger
    assert unset is not None
    assert unset.parents == ()
    assert fleet(argv=["--ledger-parents", "org:acme"]).parents == ("org:acme",)


@pytest.mark.parametrize(
    ("parents", "why"),
    [
        ("team research,org:acme", "'team research' is not a ledger scope"),
        ("team:research,,org:acme", "item 2 is empty"),
        ("team:research,", "item 2 is empty"),
        (" ,team:research", "item 1 is empty"),
        ("team:research, org:acme,team:research", "'team:research' is given twice"),
        (f"team:research,{'x' * 129}", "is not a ledger scope (1 to 128 ASCII letters"),
    ],
)
def test_parents_refuse_a_bad_scope_an_empty_item_and_a_scope_given_twice(
    parents: str, why: str, tmp_path: Path
) -> None:
    """The variable falls back to no parents with a warning naming the field; a file fails."""
    prefix = "ledger.parents from env:BUDGETCONF_LEDGER_PARENTS: not comma-separated ledger scopes"
    with pytest.warns(BudgetConfWarning) as caught:
        res = budgetconf.resolve(env={"BUDGETCONF_LEDGER_PARENTS": parents})
    [message] = [str(w.message) for w in caught]
    assert message.startswith(f"{prefix}: ")
    assert why in message
    assert res["ledger.parents"] is None
    project = tmp_path / "elsewhere.toml"
    project.write_text(f"[ledger]\nparents = {json.dumps(parents)}\n")
    with pytest.raises(ConfigError) as failed:
        budgetconf.resolve(env={}, project_file=str(project))
    assert (failed.value.field, failed.value.locator) == ("ledger.parents", f"{project}:2")
    assert why in str(failed.value)


@pytest.mark.parametrize(
    "text",
    [
        "team:research,org:acme",
        " team:research ,  org:acme ",
        "a,b,a",
        "a, a",
        "a,ab",
        "ab,a",
        "a,,b",
        "a,",
        ",a",
        "a, b ,c",
        "a,b,c,b",
        "a b,c",
        "a,\tb",
        "x" * 128 + ",y",
        "x" * 129 + ",y",
    ],
)
def test_the_schema_s_pattern_of_scopes_takes_what_the_rule_takes(text: str) -> None:
    """A scope given twice is refused by the pattern too, which editors check as you type."""
    expression = pattern("ledger-scopes")
    assert expression is not None
    matches = re.fullmatch(expression.removeprefix("^").removesuffix("$"), text) is not None
    assert matches is (text_problem("ledger-scopes", text) is None), text


def test_the_scope_tables_parse_from_the_environment_s_text_and_from_flags() -> None:
    res = quiet(
        env={
            "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:research=500,org:acme=5000",
            "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE": "team:research=2000000",
        },
        argv=["--ledger-window-by-scope", "org:acme=month"],
    )
    assert res["ledger.max_cost_usd_by_scope"] == {"team:research": 500, "org:acme": 5000}
    assert res["ledger.max_tokens_by_scope"] == {"team:research": 2000000}
    assert res["ledger.window_by_scope"] == {"org:acme": "month"}
    trace = res.trace("ledger.window_by_scope.org:acme")
    assert (trace.source, trace.locator) == ("cli", "--ledger-window-by-scope")


def test_the_scope_tables_read_from_a_toml_file_with_quoted_keys(tmp_path: Path) -> None:
    project = tmp_path / "settings.toml"
    project.write_text(
        '[ledger.max_cost_usd_by_scope]\n"team:research" = 500\n"org:acme" = 5000\n'
        '[ledger.window_by_scope]\n"org:acme" = "week"\n'
    )
    res = quiet(env={}, project_file=str(project))
    assert res["ledger.max_cost_usd_by_scope"] == {"team:research": 500, "org:acme": 5000}
    assert res.trace("ledger.max_cost_usd_by_scope.org:acme").locator == f"{project}:3"
    assert res["ledger.window_by_scope"] == {"org:acme": "week"}


def test_a_table_key_that_is_not_a_scope_is_refused(tmp_path: Path) -> None:
    variable = "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE"
    with pytest.warns(BudgetConfWarning) as caught:
        res = budgetconf.resolve(env={variable: "team research=500,org:acme=5000"})
    assert [str(w.message) for w in caught] == [
        f"ledger.max_cost_usd_by_scope from env:{variable}: not a ledger scope (1 to 128 ASCII"
        " letters, digits and -_.:/): 'team research'; ignored"
    ]
    assert res["ledger.max_cost_usd_by_scope"] == {"org:acme": 5000}
    project = tmp_path / "settings.toml"
    project.write_text('[ledger.max_tokens_by_scope]\n"team research" = 5\n')
    with pytest.raises(ConfigError, match=r"ledger.max_tokens_by_scope from .*:2 \(project\): not"):
        budgetconf.resolve(env={}, project_file=str(project))


@pytest.mark.parametrize(
    ("variable", "text"),
    [
        ("BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE", "team:a=0"),
        ("BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE", "team:a=9000001"),
        ("BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE", "team:a=0"),
        ("BUDGETCONF_LEDGER_WINDOW_BY_SCOPE", "team:a=year"),
    ],
)
def test_a_scope_s_value_is_held_to_the_plain_field_s_rule(variable: str, text: str) -> None:
    table = "ledger." + variable.removeprefix("BUDGETCONF_LEDGER_").lower()
    with pytest.warns(BudgetConfWarning, match=f"^{table}.team:a from env:{variable}: "):
        res = budgetconf.resolve(env={variable: text})
    assert res[table] == {}


def test_the_policy_bounds_a_team_s_cap_so_a_user_s_variable_cannot_raise_it(
    place: Place,
) -> None:
    """A ceiling under ``keys`` clamps the user's 9000 to 500, and a locked key is a cap no
    source named: each is the policy's, raised only by its administrator."""
    place.policy.parent.mkdir(parents=True)
    rules = {"keys": {"team:research": {"max": 500}, "org:acme": {"value": 5000}}}
    place.policy.write_text(json.dumps({"ledger": {"max_cost_usd_by_scope": rules}}, indent=1))
    variable = "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE"
    res = quiet(env={**FLEET, variable: "team:research=9000,org:acme=90000"})
    assert res["ledger.max_cost_usd_by_scope"] == {"team:research": 500, "org:acme": 5000}
    settings = Budget.from_resolution(res).ledger
    assert settings is not None
    _, team, org = settings.scopes()
    assert team.max_cost_usd is not None
    assert org.max_cost_usd is not None
    assert (team.max_cost_usd.source, team.max_cost_usd.raise_with) == ("policy", ())
    assert team.max_cost_usd.explain().startswith(
        "ledger.max_cost_usd_by_scope.team:research = 500.0 from the policy"
        f" {place.policy}:5 (ceiling; env:{variable} asked for 9000.0)"
    )
    assert team.max_cost_usd.explain().endswith("only the policy's administrator can raise it")
    assert (org.max_cost_usd.value, org.max_cost_usd.policed) == (5000, "locked")
    unnamed = fleet()  # the locked key binds though no source names it
    assert {s.scope: s.max_cost_usd for s in unnamed.scopes()}["org:acme"] is not None


def test_scopes_are_the_own_scope_then_each_parent_with_its_window_and_caps() -> None:
    settings = fleet(
        {
            "BUDGETCONF_LEDGER_WINDOW": "hour",
            "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:research=500,org:acme=5000",
            "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE": "org:acme=9000000",
            "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "org:acme=month",
        }
    )
    shown = [
        (
            s.scope,
            s.window,
            None if s.max_tokens is None else s.max_tokens.value,
            None if s.max_cost_usd is None else s.max_cost_usd.value,
        )
        for s in settings.scopes()
    ]
    assert shown == [
        ("user:u-1042", "hour", None, None),
        ("team:research", "hour", None, 500),  # no window of its own: the run's
        ("org:acme", "month", 9000000, 5000),
    ]
    assert all(isinstance(s, ScopeBudget) for s in settings.scopes())


@pytest.mark.parametrize(
    ("plain", "by_scope", "winner"),
    [
        ("20", "10", "ledger.max_cost_usd_by_scope.user:u-1042"),
        ("10", "20", "ledger.max_cost_usd"),
        ("10", "10", "ledger.max_cost_usd"),  # a tie: the plain field's
        ("10", None, "ledger.max_cost_usd"),
        (None, "10", "ledger.max_cost_usd_by_scope.user:u-1042"),
    ],
)
def test_the_own_scope_s_cap_is_the_tighter_of_its_field_and_its_table_entry(
    plain: str | None, by_scope: str | None, winner: str
) -> None:
    env = {}
    if plain is not None:
        env["BUDGETCONF_LEDGER_MAX_COST_USD"] = env["BUDGETCONF_LEDGER_MAX_TOKENS"] = plain
    if by_scope is not None:
        env["BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE"] = f"user:u-1042={by_scope}"
        env["BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE"] = f"user:u-1042={by_scope}"
    own = fleet(env).scopes()[0]
    assert own.max_cost_usd is not None
    assert own.max_tokens is not None
    assert (own.max_cost_usd.field, own.max_cost_usd.value) == (winner, 10)
    assert own.max_tokens.field == winner.replace("max_cost_usd", "max_tokens")
    assert own.max_cost_usd.amount(10) == "$10"
    assert own.max_tokens.amount(10) == "10"


def test_a_parent_that_is_the_own_scope_is_drawn_on_once() -> None:
    """The same counter: the own scope, first, with its own window and the tighter cap."""
    settings = fleet(
        {
            "BUDGETCONF_LEDGER_PARENTS": "team:research,user:u-1042,org:acme",
            "BUDGETCONF_LEDGER_MAX_COST_USD": "30",
            "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "user:u-1042=40",
            "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "user:u-1042=month",
        }
    )
    scopes = settings.scopes()
    assert [s.scope for s in scopes] == ["user:u-1042", "team:research", "org:acme"]
    assert scopes[0].window == "day"
    assert scopes[0].max_cost_usd is not None
    assert scopes[0].max_cost_usd.value == 30
    made = LedgerSettings(FLEET_URL, scope="a", parents=("b", "a", "b"))  # in code: once each
    assert [s.scope for s in made.scopes()] == ["a", "b"]


def test_a_cap_for_a_scope_the_run_does_not_draw_on_binds_nothing() -> None:
    settings = fleet({"BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:other=1,org:acme=5000"})
    assert [s.scope for s in settings.scopes()] == ["user:u-1042", "team:research", "org:acme"]
    assert [s.max_cost_usd is None for s in settings.scopes()] == [True, True, False]
    assert "team:other" in settings.max_cost_usd_by_scope  # read, and shown by explain


def test_a_scope_s_limit_names_its_key_s_field_where_it_was_set_and_the_table_s_names(
    tmp_path: Path,
) -> None:
    settings = fleet({"BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:research=500"})
    limit = settings.max_cost_usd_by_scope["team:research"]
    assert limit.to_dict() == {
        "field": "ledger.max_cost_usd_by_scope.team:research",
        "value": 500,
        "source": "env",
        "locator": "env:BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE",
        "raise_with": ["BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE", "--ledger-max-cost-usd-by-scope"],
    }
    assert limit.budget == "max_cost_usd"
    assert limit.amount(499.5) == "$499.5"
    project = tmp_path / "settings.toml"
    project.write_text('[ledger.max_tokens_by_scope]\n"org:acme" = 1000\n')
    from_file = fleet(project_file=str(project)).max_tokens_by_scope["org:acme"]
    assert (from_file.field, from_file.source, from_file.locator) == (
        "ledger.max_tokens_by_scope.org:acme",
        "project",
        f"{project}:2",
    )
    assert from_file.raise_with == (
        "BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE",
        "--ledger-max-tokens-by-scope",
    )
    assert from_file.explain() == (
        f"ledger.max_tokens_by_scope.org:acme = 1000 from {project}:2; raise it with"
        " BUDGETCONF_LEDGER_MAX_TOKENS_BY_SCOPE or --ledger-max-tokens-by-scope"
    )


def test_a_preset_without_the_fleet_fields_draws_on_its_one_scope(tmp_path: Path) -> None:
    fields = {
        "loop.max_steps": {"type": "int", "default": 5, "ge": 1},
        "ledger.url": {"type": "text", "optional": True, "env": ["APP_LEDGER"]},
        "ledger.max_tokens": {"type": "int", "ge": 1, "default": 150},
    }
    stack = [{"kind": "default"}, {"kind": "env"}]
    path = preset_file(tmp_path, fields=fields, sources=stack, loop={"max_steps": "loop.max_steps"})
    settings = Budget.from_resolution(quiet(str(path), env={"APP_LEDGER": FLEET_URL})).ledger
    assert settings is not None
    assert (settings.parents, settings.window_by_scope) == ((), {})
    assert (settings.max_tokens_by_scope, settings.max_cost_usd_by_scope) == ({}, {})
    [own] = settings.scopes()
    assert (own.scope, own.window, own.max_cost_usd) == ("default", "day", None)
    assert own.max_tokens is not None
    assert own.max_tokens.value == 150


def test_a_preset_s_parents_field_follows_the_scopes_rule_when_it_names_no_format(
    tmp_path: Path,
) -> None:
    fields: dict[str, dict[str, object]] = {
        "loop.max_steps": {"type": "int", "default": 5, "ge": 1},
        "ledger.url": {"type": "text", "default": FLEET_URL},
        "ledger.parents": {"type": "text", "optional": True, "env": ["APP_PARENTS"]},
    }
    stack = [{"kind": "default"}, {"kind": "env"}]
    path = preset_file(tmp_path, fields=fields, sources=stack, loop={"max_steps": "loop.max_steps"})
    with pytest.raises(ConfigError, match="APP_PARENTS: not comma-separated ledger scopes"):
        budgetconf.resolve(str(path), env={"APP_PARENTS": "a,a"})
    settings = Budget.from_resolution(quiet(str(path), env={"APP_PARENTS": "b, c"})).ledger
    assert settings is not None
    assert [s.scope for s in settings.scopes()] == ["default", "b", "c"]


def test_explain_shows_each_scope_s_cap_as_a_field_of_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {
        **FLEET,
        "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:research=500,org:acme=5000",
        "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "org:acme=week",
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["explain", "ledger"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(
        line.split()
        == ["ledger.parents", "team:research,org:acme", "env:BUDGETCONF_LEDGER_PARENTS"]
        for line in lines
    )
    assert any(
        line.split()
        == [
            "ledger.max_cost_usd_by_scope.team:research",
            "500.0",
            "env:BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE",
        ]
        for line in lines
    )
    assert main(["explain", "ledger", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)["fields"]
    assert document["ledger.window_by_scope.org:acme"]["value"] == "week"
    assert document["ledger.max_cost_usd_by_scope.org:acme"]["source"] == "env"
