"""The ledger's fields: LEDGER.md's table, the ``text`` kind, a URL shown without its password,
and an invalid ``ledger.url`` an error under every invalid policy."""

from __future__ import annotations

import json
import tomllib
import warnings
from pathlib import Path
from typing import Any, Final

import pytest

import budgetconf
from budgetconf import BudgetConfWarning, ConfigError
from budgetconf._engine import load_preset
from budgetconf._text_formats import text_problem
from budgetconf.cli import main
from budgetconf.errors import PresetError
from budgetconf.ledger import open_ledger
from budgetconf.ledger._address import parse_url
from budgetconf.loop import Budget, LoopExecutor, ScriptedModel

from conftest import Place
from helpers.presetfiles import preset_file

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
        "ledger.max_cost_usd": row("max_cost_usd", "number", None, True),
        "ledger.max_tokens": row("max_tokens", "int", None, True),
        "ledger.window": row("window", "enum", "day"),
        "ledger.reserve_tokens": row("reserve_tokens", "int", 4096),
        "ledger.reserve_cost_usd": row("reserve_cost_usd", "number", 0.05),
        "ledger.lease_seconds": row("lease_seconds", "number", 300.0),
        "ledger.on_unavailable": row("on_unavailable", "enum", "stop"),
    }
    assert schema.by_path["ledger.window"].choices == ("none", "hour", "day", "month")
    assert schema.by_path["ledger.on_unavailable"].choices == ("stop", "continue")


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
