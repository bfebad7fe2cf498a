"""``budgetconf ledger status|runs``: the ledger ``ledger.url`` resolves to, in a table or JSON,
and one line with exit 1 when it is not set or cannot be reached. Run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf.cli import main
from budgetconf.ledger import open_ledger
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


def as_a_user(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """The command in a process of its own, as a user runs it."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-m", "budgetconf", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**environment, "HOME": str(cwd), **env},
        cwd=cwd,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def spend(url: str, scope: str, runs: int = 2) -> None:
    """``runs`` runs of one turn each, 50 tokens and 0.25 USD apiece, in ``scope``."""
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_SCOPE": scope}
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
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_MAX_TOKENS": "1000"}
    code, out, err = cli(
        "ledger", "status", "--scope", "team-a", "--format", "json", env=env, cwd=tmp_path / "work"
    )
    assert (code, err) == (0, "")
    doc = json.loads(out)
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
        "max",
    ]
    assert (doc["spent"], doc["runs"]) == ({"tokens": 100, "cost_usd": 0.5}, 2)


def test_status_as_a_table_reads_as_lines_of_name_and_value(
    url: str, tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    spend(url, "default", runs=1)
    env = {"BUDGETCONF_LEDGER_URL": url, "BUDGETCONF_LEDGER_MAX_COST_USD": "5"}
    code, out, err = cli("ledger", "status", env=env, cwd=tmp_path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["ledger", url]
    assert lines[1].split() == ["scope", "default"]
    assert lines[3].split() == ["spent", "50", "tokens,", "0.25", "USD"]
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
    assert "    status    a scope's spent, reserved and left\n" in out
    assert "    runs      a scope's latest runs\n" in out
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
