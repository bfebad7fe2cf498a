"""``budgetconf ledger status|runs|reset|prune``: the ledger ``ledger.url`` resolves to, in a
table or JSON, and one line with exit 1 when it is not set or cannot be reached. Run as a user
runs it: a real SQLite file (a real redis-server where the backend matters), and a real
pseudo-terminal where a person answers."""

from __future__ import annotations

import io
import json
import os
import pty
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.cli._commands import ledger as ledger_command
from budgetconf.ledger import WINDOWS, iso, open_ledger, window_bounds
from budgetconf.loop import LoopExecutor

from conftest import Place
from helpers.presetfiles import preset_file

SRC = str(Path(budgetconf.__file__).parent.parent)


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """The command, run in this process from ``cwd`` with ``env`` set, and what it printed."""

    def command(
        *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> tuple[int, str, str]:
        with monkeypatch.context() as patch:
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            if cwd is not None:
                patch.chdir(cwd)
            code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return command


def as_a_user(
    *args: str, env: dict[str, str], cwd: Path, stdin: int = subprocess.DEVNULL
) -> tuple[int, str, str]:
    """The command in a process of its own, as a user runs it (standard input ``stdin``: by
    default not a terminal, whatever ran the tests)."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-m", "budgetconf", *args],
        capture_output=True,
        stdin=stdin,
        text=True,
        timeout=60,
        env={**environment, "HOME": str(cwd), **env},
        cwd=cwd,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def spend(url: str, scope: str, runs: int = 2, env: dict[str, str] | None = None) -> None:
    """``runs`` runs of one turn each, 50 tokens and 0.25 USD apiece, in ``scope`` (and the
    parents ``env`` names)."""
    env = {**(env or {}), "BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_SCOPE": scope}
    for _ in range(runs):
        model = lambda m, t: {"content": "x", "usage": {"total_tokens": 50}, "cost_usd": 0.25}  # noqa: E731
        LoopExecutor(model, budget=budgetconf.resolve(env=env)).run("go")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def test_status_as_json_is_the_pinned_document(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "team-a")
    project = tmp_path / "work" / "settings.toml"
    project.write_text("[ledger]\nmax_cost_usd = 2\n")
    env = {
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": "team-a",
        "BUDGETCONF_LEDGER_MAX_TOKENS": "1000",
    }
    code, out, err = cli(
        "ledger", "status", "--scope", "team-a", "--format", "json", env=env, cwd=tmp_path / "work"
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert list(document) == ["scopes"]
    [doc] = document["scopes"]  # one scope asked: one entry
    with open_ledger(url) as led:
        status = led.status("team-a", window="day").to_dict()
    assert doc == {
        **status,
        "max": {
            "tokens": {
                "value": 1000,
                "source": "env",
                "locator": "env:BUDGETCONF_LEDGER_MAX_TOKENS",
                "left": 900,
            },
            "cost_usd": {"value": 2.0, "source": "project", "locator": f"{project}:2", "left": 1.5},
        },
    }
    assert list(doc) == [
        "scope",
        "window",
        "window_start",
        "window_ends",
        "spent",
        "reserved",
        "runs",
        "reset",
        "max",
    ]
    assert (doc["spent"], doc["runs"], doc["reset"]) == ({"tokens": 100, "cost_usd": 0.5}, 2, None)


def test_status_as_a_table_reads_as_lines_of_name_and_value(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "default", runs=1)
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_MAX_COST_USD": "5"}
    code, out, err = cli("ledger", "status", env=env, cwd=tmp_path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["ledger", url]
    assert lines[1] == ""
    assert lines[2].split() == ["scope", "default"]
    assert lines[4].split() == ["spent", "50", "tokens,", "0.25", "USD"]
    assert "max_cost_usd  5, 4.75 left (from env:BUDGETCONF_LEDGER_MAX_COST_USD)" in out
    assert lines[-1].split() == ["max_tokens", "unset"]


def test_runs_lists_the_latest_records_newest_first(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "team-b", runs=3)
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli(
        "ledger",
        "runs",
        "--scope",
        "team-b",
        "--limit",
        "2",
        "--format",
        "json",
        env=env,
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    records: list[dict[str, Any]] = json.loads(out)
    with open_ledger(url) as led:
        assert records == led.runs("team-b", limit=2)
    assert [r["stop_reason"] for r in records] == ["completed", "completed"]
    code, out, _ = cli("ledger", "runs", "--scope", "team-b", env=env, cwd=tmp_path)
    header, *rows = out.splitlines()
    assert header.split() == [
        "ended",
        "run_id",
        "host",
        "pid",
        "turns",
        "tokens",
        "cost_usd",
        "stop_reason",
    ]
    assert len(rows) == 3
    assert rows[0].split()[-4:] == ["1", "50", "0.25", "completed"]
    code, out, _ = cli("ledger", "runs", "--scope", "nobody", env=env, cwd=tmp_path)
    assert (code, out) == (0, "no runs recorded in scope nobody\n")


def test_a_record_s_field_cannot_forge_a_row_of_the_table(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """A field's line break or tab is shown escaped, in its own cell; JSON keeps it as it is."""
    with open_ledger(url) as led:
        led.record_run({"run_id": "r-1", "scope": "team-c", "host": "box\nforged row\tend"})
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli("ledger", "runs", "--scope", "team-c", env=env, cwd=tmp_path)
    assert (code, err) == (0, "")
    _, *rows = out.splitlines()
    assert len(rows) == 1
    assert "box\\nforged row\\tend" in rows[0]
    code, out, _ = cli("ledger", "runs", "--scope", "team-c", "--format", "json", env=env)
    assert json.loads(out)[0]["host"] == "box\nforged row\tend"


def test_a_ledger_in_a_folder_that_does_not_exist_is_said_so(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """No run could create that database either: the message names the missing folder."""
    env = {"BUDGETCONF_LEDGER_URL": "sqlite:///nowhere/ledger.db"}
    code, out, err = cli("ledger", "status", env=env, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == (
        "budgetconf: error: ledger sqlite:///nowhere/ledger.db cannot be read: its folder"
        " 'nowhere' does not exist\n"
    )
    assert not (tmp_path / "nowhere").exists()


def test_each_view_and_option_of_ledger_says_what_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The views' help reads as English, and --format says what each choice gives."""
    with pytest.raises(SystemExit):
        main(["ledger", "--help"])
    out = capsys.readouterr().out
    assert "    status    each scope's spent, reserved and left\n" in out
    assert "    runs      a scope's latest runs\n" in out
    assert "    reset     set a scope's spend in its window to zero\n" in out
    assert "    prune     remove the run records that ended before a date\n" in out
    with pytest.raises(SystemExit):
        main(["ledger", "status", "--help"])
    assert "table: aligned lines for a person" in " ".join(capsys.readouterr().out.split())


def test_status_without_a_ledger_url_says_where_it_would_be_set(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    code, out, err = cli("ledger", "status", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == (
        "budgetconf: error: ledger.url is not set; set it with BUDGETCONF_LEDGER_URL,"
        " --set ledger.url=URL or url under [ledger] in a settings file\n"
    )


def test_a_sqlite_ledger_that_does_not_exist_yet_is_said_so_and_not_created(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """Reading would create an empty database: a mistyped path would show a spend of nothing."""
    env = {"BUDGETCONF_LEDGER_URL": "sqlite:///typo.db"}
    for view in ("status", "runs"):
        code, out, err = cli("ledger", view, env=env, cwd=tmp_path)
        assert (code, out) == (1, "")
        assert err == (
            "budgetconf: error: ledger sqlite:///typo.db does not exist yet"
            " (a run that draws on it creates it)\n"
        )
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize(
    "address",
    ["redis://agent:pw-SECRET@127.0.0.1:9/0", "sqlite:///{tmp}/not-a-db.db"],
    ids=["refused", "not-a-database"],
)
def test_an_unreachable_ledger_is_one_line_and_exit_1(
    address: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    (tmp_path / "not-a-db.db").write_text("plain text\n" * 50)
    given = address.replace("{tmp}", str(tmp_path))
    code, out, err = as_a_user(
        "ledger", "status", env={"BUDGETCONF_LEDGER_URL": given}, cwd=tmp_path
    )
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    code, out, err = cli("ledger", "status", env={"BUDGETCONF_LEDGER_URL": given}, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: ledger ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert "SECRET" not in err


def test_an_invalid_url_or_scope_is_named(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    code, _, err = cli("ledger", "status", "--set", "ledger.url=mysql://h/x", cwd=tmp_path)
    assert code == 1
    assert err.startswith("budgetconf: error: ledger.url from explicit: the ledger URL is not")
    env = {"BUDGETCONF_LEDGER_URL": f"sqlite:///{tmp_path / 'l.db'}"}
    code, _, err = cli("ledger", "status", "--scope", "a b", env=env, cwd=tmp_path)
    assert code == 64
    assert err == (
        "budgetconf: usage error: --scope: not a ledger scope (1 to 128 ASCII letters,"
        " digits and -_.:/): 'a b'\n"
    )
    code, _, err = cli("ledger", "runs", "--limit", "0", env=env, cwd=tmp_path)
    assert code == 64
    assert "--limit" in err
    code, _, err = cli("ledger", cwd=tmp_path)
    assert (code, err) == (
        64,
        "budgetconf: usage error: the following arguments are required: VIEW\n",
    )


@pytest.mark.parametrize("view", ["status", "runs"])
def test_a_preset_file_that_is_missing_is_one_error_line(
    view: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """budgetconf ledger with --preset naming no file says so on one line and exits 1."""
    assert main(["ledger", view, "--preset", "nope.toml"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err == f"budgetconf: error: preset {Path.cwd() / 'nope.toml'}: No such file or directory\n"
    )


def test_a_preset_without_a_ledger_url_field_says_so_rather_than_how_to_set_it(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """An application preset with no ledger.url field gives no variable or flag to set it."""
    preset = preset_file(
        place.work,
        name="app",
        sources=["default", "env"],
        fields={"agent.turns": {"type": "int", "default": 5}},
    )
    assert main(["ledger", "status", "--preset", str(preset)]) == 1
    assert capsys.readouterr().err == (
        "budgetconf: error: ledger.url is not set; preset 'app' has no ledger.url field\n"
    )


# ------------------------------------------------------------------ every scope a run draws on

#: a run of user:ada drawing on its team's and its organisation's budgets too
FLEET: Final = {
    "BUDGETCONF_LEDGER_PARENTS": "team:research,org:acme",
    "BUDGETCONF_LEDGER_WINDOW_BY_SCOPE": "org:acme=month",
    "BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE": "team:research=50,org:acme=500",
}


def fleet(url: str, **more: str) -> dict[str, str]:
    """The command's environment: ``FLEET`` for user:ada with a token maximum (below what a run
    reserves, so runs spend with ``FLEET`` alone), and ``more`` over it."""
    own = {"BUDGETCONF_LEDGER_SCOPE": "user:ada", "BUDGETCONF_LEDGER_MAX_TOKENS": "1000"}
    return {**FLEET, "BUDGETCONF_LEDGER_URL": url, **own, **more}


def bounds(window: str) -> str:
    """The ``window`` row's text for now's window: ``day, START to END``."""
    start, ends = window_bounds(window)
    return f"{window}, {iso(start)} to {iso(ends)}"


def test_status_shows_every_scope_the_run_draws_on_a_block_each(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """The own scope first, then each parent in order, each in its window with its maxima and
    the field that set each: the names aligned across the blocks, a blank line between."""
    spend(url, "user:ada", env=FLEET)
    code, out, err = cli("ledger", "status", env=fleet(url))
    assert (code, err) == (0, "")
    table = "env:BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE"
    team, org = (
        "ledger.max_cost_usd_by_scope.team:research",
        "ledger.max_cost_usd_by_scope.org:acme",
    )
    assert out == (
        f"ledger        {url}\n"
        "\n"
        "scope         user:ada\n"
        f"window        {bounds('day')}\n"
        "spent         100 tokens, 0.5 USD\n"
        "reserved      0 tokens, 0 USD\n"
        "runs          2\n"
        "max_cost_usd  unset\n"
        "max_tokens    1000, 900 left (from env:BUDGETCONF_LEDGER_MAX_TOKENS)\n"
        "\n"
        "scope         team:research\n"
        f"window        {bounds('day')}\n"
        "spent         100 tokens, 0.5 USD\n"
        "reserved      0 tokens, 0 USD\n"
        "runs          2\n"
        f"max_cost_usd  50, 49.5 left ({team} from {table})\n"
        "max_tokens    unset\n"
        "\n"
        "scope         org:acme\n"
        f"window        {bounds('month')}\n"
        "spent         100 tokens, 0.5 USD\n"
        "reserved      0 tokens, 0 USD\n"
        "runs          2\n"
        f"max_cost_usd  500, 499.5 left ({org} from {table})\n"
        "max_tokens    unset\n"
    )


def test_status_as_json_is_a_document_per_scope_in_the_run_s_order(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "user:ada", env=FLEET)
    code, out, err = cli("ledger", "status", "--format", "json", env=fleet(url))
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert list(document) == ["scopes"]
    docs = document["scopes"]
    assert [(d["scope"], d["window"]) for d in docs] == [
        ("user:ada", "day"),
        ("team:research", "day"),
        ("org:acme", "month"),
    ]
    with open_ledger(url) as led:
        for doc in docs:
            assert {k: v for k, v in doc.items() if k != "max"} == led.status(
                doc["scope"], window=doc["window"]
            ).to_dict()
    maxima = [(d["max"]["tokens"], d["max"]["cost_usd"]) for d in docs]
    assert [None if t is None else t["left"] for t, _ in maxima] == [900, None, None]
    assert [None if c is None else c["left"] for _, c in maxima] == [None, 49.5, 499.5]
    assert docs[2]["max"]["cost_usd"] == {
        "value": 500.0,
        "source": "env",
        "locator": "env:BUDGETCONF_LEDGER_MAX_COST_USD_BY_SCOPE",
        "left": 499.5,
    }


def test_status_of_one_scope_takes_its_window_and_maxima_from_the_run_if_it_is_one_of_its(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """A parent of the run's: its entry's window and maxima. Any other scope: the window the
    ledger recorded for it, and no maxima (no setting of this run binds it)."""
    spend(url, "user:ada", env=FLEET)
    spend(url, "team:other", runs=1, env={"BUDGETCONF_LEDGER_WINDOW": "week"})
    env = fleet(url)
    code, out, err = cli("ledger", "status", "--scope", "org:acme", "--format", "json", env=env)
    assert (code, err) == (0, "")
    [doc] = json.loads(out)["scopes"]
    assert (doc["scope"], doc["window"], doc["max"]["cost_usd"]["value"]) == (
        "org:acme",
        "month",
        500.0,
    )
    code, out, err = cli("ledger", "status", "--scope", "team:other", env=env)
    assert (code, err) == (0, "")
    assert out.splitlines()[2:] == [
        "scope         team:other",
        f"window        {bounds('week')}",
        "spent         50 tokens, 0.25 USD",
        "reserved      0 tokens, 0 USD",
        "runs          1",
        "max_cost_usd  unset",
        "max_tokens    unset",
    ]


def test_a_scope_counted_in_another_window_is_a_line_naming_the_field_to_set(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """The ledger's window wins (the first run recorded it): each scope configured for another
    is a line naming both windows and the field to set, the own scope's or its parent's."""
    spend(url, "user:ada", env=FLEET)
    code, out, err = cli("ledger", "status", env=fleet(url, BUDGETCONF_LEDGER_WINDOW="hour"))
    assert (code, out) == (1, "")
    recorded = "recorded by the first run that drew on it"
    assert err == (
        f"budgetconf: error: ledger scope user:ada counts in the window 'day', {recorded},"
        " not 'hour': a scope has one window; set ledger.window = 'day'\n"
        f"budgetconf: error: ledger scope team:research counts in the window 'day', {recorded},"
        " not 'hour': a scope has one window; set ledger.window_by_scope.team:research = 'day'\n"
    )
    env = fleet(url, BUDGETCONF_LEDGER_WINDOW_BY_SCOPE="org:acme=day")
    code, out, err = cli("ledger", "status", "--scope", "org:acme", "--format", "json", env=env)
    assert (code, out) == (1, "")
    assert err == (
        f"budgetconf: error: ledger scope org:acme counts in the window 'month', {recorded},"
        " not 'day': a scope has one window; set ledger.window_by_scope.org:acme = 'month'\n"
    )


# ------------------------------------------------------------------ reset


def test_reset_with_yes_zeroes_the_window_and_says_what_it_had_spent(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """The table says what was reset; status then shows the reset, and runs its record."""
    spend(url, "user:ada", env=FLEET)
    env = fleet(url)
    why = "refund:\tthe  runaway job"
    code, out, err = cli("ledger", "reset", "team:research", "--why", why, "--yes", env=env)
    assert (code, err) == (0, "")
    with open_ledger(url) as led:
        [record] = led.runs("team:research", limit=1)
        status = led.status("team:research")
    reset = record["reset"]
    assert (reset["why"], reset["window"]) == ("refund: the runaway job", "day")
    assert out == (
        "scope         team:research\n"
        f"window        {bounds('day')}\n"
        "spent before  100 tokens, 0.5 USD\n"
        f"reset by      {reset['by']}\n"
        "why           refund: the runaway job\n"
        f"at            {reset['at']}\n"
    )
    assert (status.spent_tokens, status.spent_cost_usd, status.reset) == (0, 0.0, reset)
    code, out, err = cli("ledger", "status", "--scope", "team:research", env=env)
    assert (code, err) == (0, "")
    assert "max_cost_usd  50, 50 left (ledger.max_cost_usd_by_scope.team:research" in out
    assert out.splitlines()[-1] == (
        f"reset         {reset['at']} by {reset['by']}: refund: the runaway job;"
        " it had spent 100 tokens, 0.5 USD"
    )
    code, out, _ = cli("ledger", "status", "--scope", "user:ada", env=env)
    assert "spent         100 tokens, 0.5 USD\n" in out  # its own counter is untouched
    assert "reset " not in out


def test_reset_as_json_prints_the_record_and_takes_the_recorded_window(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "team-a", env={"BUDGETCONF_LEDGER_WINDOW": "hour"})
    env = {"BUDGETCONF_LEDGER_URL": url}
    args = ("ledger", "reset", "team-a", "--why", "new quarter", "--yes", "--format", "json")
    code, out, err = cli(*args, env=env)
    assert (code, err) == (0, "")
    record = json.loads(out)
    with open_ledger(url) as led:
        assert led.runs("team-a", limit=1) == [record]
    assert (record["stop_reason"], record["run_id"], record["scope"]) == ("reset", None, "team-a")
    start, _ = window_bounds("hour")
    assert {k: record["reset"][k] for k in ("window", "window_start", "why", "spent")} == {
        "window": "hour",
        "window_start": iso(start),
        "why": "new quarter",
        "spent": {"tokens": 100, "cost_usd": 0.5},
    }
    code, out, err = cli(*args[:-2], "--window", "hour", env=env)  # named, as it is recorded
    assert (code, err) == (0, "")
    assert "spent before  0 tokens, 0 USD\n" in out


def test_reset_with_another_window_reaches_the_counter_kept_from_before(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """A ledger migrated from the previous version may keep a scope's counter of another
    window kind; ``--window`` reaches it, and the counter the scope counts in stays."""
    spend(url, "team-a")  # the scope counts by day
    start, _ = window_bounds("hour")
    key = f"hour:{start:%Y-%m-%dT%H:%M:%SZ}" if start else "none"
    with sqlite3.connect(tmp_path / "ledger.db") as conn:  # as the migration leaves one
        conn.execute(  # a run's record counts in every kind: the row is there
            "UPDATE ledger_windows SET spent_tokens = 30 WHERE scope = 'team-a' AND window = ?",
            (key,),
        )
    conn.close()
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli(
        "ledger", "reset", "team-a", "--window", "hour", "--why", "x", "--yes", env=env
    )
    assert (code, err) == (0, "")
    assert "spent before  30 tokens, 0 USD\n" in out
    with open_ledger(url) as led:
        assert led.status("team-a").spent_tokens == 100
        (reset, *_) = led.runs("team-a")
    assert (reset["stop_reason"], reset["reset"]["window"]) == ("reset", "hour")


def test_reset_off_a_terminal_without_yes_is_refused_and_changes_nothing(
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., tuple[int, str, str]],
) -> None:
    """A script that pipes in a yes has not said --yes: nothing is read, nothing is reset."""
    spend(url, "team-a")
    env = {"BUDGETCONF_LEDGER_URL": url}
    said = (
        "budgetconf: usage error: ledger reset asks before it changes the ledger, and"
        " standard input is not a terminal: pass --yes to reset without asking\n"
    )
    code, out, err = as_a_user("ledger", "reset", "team-a", "--why", "x", env=env, cwd=tmp_path)
    assert (code, out, err) == (64, "", said)
    piped = io.StringIO("y\n")
    monkeypatch.setattr(sys, "stdin", piped)
    code, out, err = cli("ledger", "reset", "team-a", "--why", "x", env=env)
    assert (code, out, err) == (64, "", said)
    assert piped.tell() == 0
    closed = io.StringIO()
    closed.close()
    for stdin in (None, closed):  # no standard input at all, or one closed
        monkeypatch.setattr(sys, "stdin", stdin)
        assert cli("ledger", "prune", "--before", "2026-01-01", env=env)[0] == 64
    with open_ledger(url) as led:
        assert led.status("team-a").spent_tokens == 100


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Standard input a real pseudo-terminal; the function types a line at it."""
    master, slave = pty.openpty()
    stdin = os.fdopen(slave, "r", encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)

    def type_in(typed: str) -> None:
        os.write(master, typed.encode())

    try:
        yield type_in
    finally:
        stdin.close()
        os.close(master)


@pytest.mark.parametrize(
    ("typed", "done"), [("y\n", True), ("YES\n", True), ("n\n", False), ("\n", False)]
)
def test_reset_at_a_terminal_asks_first(
    typed: str,
    done: bool,
    url: str,
    terminal: Callable[[str], None],
    cli: Callable[..., tuple[int, str, str]],
) -> None:
    """The question names the scope, its window and its spend; only a yes resets it, and any
    other answer is exit 1 with nothing changed."""
    spend(url, "team-a")
    terminal(typed)
    code, out, err = cli(
        "ledger", "reset", "team-a", "--why", "x", env={"BUDGETCONF_LEDGER_URL": url}
    )
    question = (
        f"Reset scope team-a's spend in its window {bounds('day')}"
        " (spent: 100 tokens, 0.5 USD)? [y/N] "
    )
    with open_ledger(url) as led:
        spent = led.status("team-a").spent_tokens
    if done:
        assert (code, err, spent) == (0, question, 0)
        assert out.startswith("scope         team-a\n")
    else:
        assert (code, out, spent) == (1, "", 100)
        assert err == question + "budgetconf: scope team-a was not reset\n"


def test_a_person_confirms_a_prune_at_a_terminal_as_a_user_runs_it(
    url: str, tmp_path: Path
) -> None:
    """In a process of its own, its standard input a pseudo-terminal that a yes is typed at."""
    with open_ledger(url) as led:
        led.record_run({"run_id": "r-1", "scope": "team-a", "ended": "2025-01-01T00:00:00Z"})
    master, slave = pty.openpty()
    try:
        os.write(master, b"y\n")
        code, out, err = as_a_user(
            "ledger",
            "prune",
            "--before",
            "2026-01-01",
            env={"BUDGETCONF_LEDGER_URL": url},
            cwd=tmp_path,
            stdin=slave,
        )
    finally:
        os.close(slave)
        os.close(master)
    assert (code, out) == (0, "removed 1 record that ended before 2026-01-01T00:00:00Z\n")
    assert err.endswith("(no spend is removed)? [y/N] ")


def test_the_end_of_input_at_a_terminal_is_a_no(
    url: str, terminal: Callable[[str], None], cli: Callable[..., tuple[int, str, str]]
) -> None:
    """Ctrl-D: the question's line is ended, and nothing is removed."""
    with open_ledger(url) as led:
        led.record_run({"run_id": "r-1", "scope": "team-a", "ended": "2025-01-01T00:00:00Z"})
    terminal("\x04")
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli("ledger", "prune", "--before", "2026-01-01", env=env)
    assert (code, out) == (1, "")
    assert err == (
        "Remove the run and reset records that ended before 2026-01-01T00:00:00Z, in every"
        " scope (no spend is removed)? [y/N] \nbudgetconf: no record was removed\n"
    )
    with open_ledger(url) as led:
        assert len(led.runs("team-a")) == 1


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--why", " \t"], "--why is empty: a reset says why it was made"),
        (["--why", ""], "--why is empty: a reset says why it was made"),
        ([], "the following arguments are required: --why"),
        (["--why", "x", "--window", "fortnight"], "argument --window: invalid choice: 'fortnight'"),
    ],
    ids=["blank", "empty", "missing", "window"],
)
def test_reset_says_why_or_is_a_usage_error(
    args: list[str], said: str, url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "team-a", runs=1)
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli("ledger", "reset", "team-a", *args, "--yes", env=env)
    assert (code, out) == (64, "")
    assert err.startswith(f"budgetconf: usage error: {said}")
    code, _, err = cli("ledger", "reset", "a b", "--why", "x", "--yes", env=env)
    assert code == 64
    assert err.startswith("budgetconf: usage error: SCOPE: not a ledger scope")


def test_the_windows_a_reset_takes_are_the_ledger_s() -> None:
    assert ledger_command.WINDOWS == WINDOWS


# ------------------------------------------------------------------ runs, with resets


def test_runs_shows_a_reset_by_who_and_why_and_json_as_it_is(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "team-a", runs=1)
    with open_ledger(url) as led:
        record = led.reset("team-a", why="runaway\njob", by="ada@box")
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli("ledger", "runs", "--scope", "team-a", env=env)
    assert (code, err) == (0, "")
    _, reset_row, run_row = out.splitlines()
    assert reset_row.startswith(f"{record['ended']}  ")
    assert reset_row.endswith(
        "  0      0       0         reset by ada@box: runaway job"
        " (it had spent 50 tokens, 0.25 USD)"
    )
    assert run_row.endswith("completed")
    code, out, _ = cli("ledger", "runs", "--scope", "team-a", "--format", "json", env=env)
    assert json.loads(out)[0] == record


# ------------------------------------------------------------------ prune


def test_prune_removes_the_records_that_ended_before_the_moment_never_spend(
    url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """A date is its 00:00 UTC, a time without an offset is UTC, one with an offset is that
    moment; "before" is strictly before; spend and what runs hold stay."""
    spend(url, "team-a", runs=1)
    with open_ledger(url) as led:
        led.record_run({"run_id": "old", "scope": "team-a", "ended": "2026-01-01T00:30:00Z"})
        led.record_run({"run_id": "new", "scope": "team-b", "ended": "2026-01-02T00:00:00Z"})
    env = {"BUDGETCONF_LEDGER_URL": url}

    def prune(before: str) -> dict[str, Any]:
        code, out, err = cli(
            "ledger", "prune", "--before", before, "--yes", "--format", "json", env=env
        )
        assert (code, err) == (0, "")
        found: dict[str, Any] = json.loads(out)
        return found

    assert prune("2026-01-01T01:00+02:00") == {"removed": 0, "before": "2025-12-31T23:00:00Z"}
    assert prune("2026-01-01T01:00") == {"removed": 1, "before": "2026-01-01T01:00:00Z"}
    assert prune("2026-01-02") == {"removed": 0, "before": "2026-01-02T00:00:00Z"}
    code, out, err = cli("ledger", "prune", "--before", "2026-01-03", "--yes", env=env)
    assert (code, out, err) == (
        0,
        "removed 1 record that ended before 2026-01-03T00:00:00Z\n",
        "",
    )
    with open_ledger(url) as led:
        assert [r["run_id"] for r in led.runs("team-a")] != []  # the run of now stays
        assert led.runs("team-b") == []
        assert led.status("team-a").spent_tokens == 50


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (
            "yesterday",
            "--before: expected an ISO 8601 date or time (2026-12-01, 2026-12-01T09:30:00Z),"
            " got 'yesterday'",
        ),
        ("2026-13-01", "--before: expected an ISO 8601 date or time"),
        ("2026-01-01T25:00", "--before: expected an ISO 8601 date or time"),
        ("1969-12-31", "--before: '1969-12-31' is before 1970, when no record ended"),
        (
            "",
            "--before: expected an ISO 8601 date or time (2026-12-01, 2026-12-01T09:30:00Z),"
            " got ''",
        ),
    ],
    ids=["word", "month", "hour", "early", "empty"],
)
def test_prune_s_date_is_iso_8601_or_a_usage_error(
    before: str, said: str, url: str, cli: Callable[..., tuple[int, str, str]]
) -> None:
    with open_ledger(url) as led:
        led.record_run({"run_id": "r-1", "scope": "team-a", "ended": "2025-01-01T00:00:00Z"})
    env = {"BUDGETCONF_LEDGER_URL": url}
    code, out, err = cli("ledger", "prune", "--before", before, "--yes", env=env)
    assert (code, out) == (64, "")
    assert err.startswith(f"budgetconf: usage error: {said}")
    assert err.count("\n") == 1
    code, _, err = cli("ledger", "prune", "--yes", env=env)
    assert (code, err) == (
        64,
        "budgetconf: usage error: the following arguments are required: --before\n",
    )


@pytest.mark.parametrize(
    "args",
    [["reset", "team-a", "--why", "x", "--yes"], ["prune", "--before", "2026-01-01", "--yes"]],
    ids=["reset", "prune"],
)
def test_a_change_to_a_ledger_not_set_or_not_there_is_one_line_and_exit_1(
    args: list[str], tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    code, out, err = cli("ledger", *args, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: ledger.url is not set; set it with ")
    code, out, err = cli("ledger", *args, env={"BUDGETCONF_LEDGER_URL": "sqlite:///typo.db"})
    assert (code, out) == (1, "")
    assert err == (
        "budgetconf: error: ledger sqlite:///typo.db does not exist yet"
        " (a run that draws on it creates it)\n"
    )
    assert not Path("typo.db").exists()
    address = "redis://agent:pw-SECRET@127.0.0.1:9/0"
    code, out, err = cli("ledger", *args, env={"BUDGETCONF_LEDGER_URL": address})
    assert (code, out) == (1, "")
    assert err.startswith("budgetconf: error: ledger redis://agent:***@127.0.0.1:9/0 ")
    assert err.count("\n") == 1
    assert "SECRET" not in err


def test_reset_and_prune_in_redis(redis_url: str, cli: Callable[..., tuple[int, str, str]]) -> None:
    """The same commands against a real redis-server: status of the fleet, a reset, prune."""
    spend(redis_url, "user:ada", env=FLEET)
    env = fleet(redis_url)
    code, out, err = cli("ledger", "reset", "org:acme", "--why", "budget moved", "--yes", env=env)
    assert (code, err) == (0, "")
    assert f"window        {bounds('month')}\n" in out
    assert "spent before  100 tokens, 0.5 USD\n" in out
    code, out, err = cli("ledger", "status", "--format", "json", env=env)
    assert (code, err) == (0, "")
    docs = json.loads(out)["scopes"]
    assert [(d["scope"], d["spent"]["tokens"]) for d in docs] == [
        ("user:ada", 100),
        ("team:research", 100),
        ("org:acme", 0),
    ]
    assert docs[2]["reset"]["why"] == "budget moved"
    code, out, _ = cli("ledger", "runs", "--scope", "org:acme", env=env)
    assert out.splitlines()[1].endswith(
        "reset by " + docs[2]["reset"]["by"] + ": budget moved (it had spent 100 tokens, 0.5 USD)"
    )
    code, out, err = cli(
        "ledger", "prune", "--before", "2100-01-01", "--yes", "--format", "json", env=env
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["removed"] >= 3
    with open_ledger(redis_url) as led:
        assert led.runs("org:acme") == []
        assert led.status("user:ada").spent_tokens == 100
