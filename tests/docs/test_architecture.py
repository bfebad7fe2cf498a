"""docs/architecture.md's worked examples: a source kind, a ledger backend, a bridge or a command
is its module and its line in its table."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import budgetconf

from helpers import DOCS

PAGE = DOCS / "architecture.md"
SRC = Path(budgetconf.__file__).parent


def _block(info: str) -> str:
    """The page's fenced block whose info string is ``info``."""
    found = re.findall(rf"^```{re.escape(info)}\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    assert len(found) == 1, info
    return str(found[0])


def _with_the_example(root: Path) -> Path:
    """A copy of the package with the page's kind added as the page says, and nothing else."""
    package = root / "src" / "budgetconf"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    module = _block("python src/budgetconf/sources/ini.py")
    (package / "sources" / "ini.py").write_text(module)
    registration = [line for line in _block("python").splitlines() if line.strip() != "..."]
    init = package / "sources" / "__init__.py"
    text = init.read_text()
    anchor = "            DynaconfSource,  # in no built-in stack: an application places it\n"
    assert registration[1] + "\n" == anchor
    assert anchor in text
    text = text.replace(anchor, anchor + registration[2] + "\n")
    imports = "from budgetconf.sources.workflow import WorkflowSource\n"
    text = text.replace(imports, imports + registration[0] + "\n")
    init.write_text(text)
    return root / "src"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process that imports the copy, in a home with the INI file."""
    root = tmp_path_factory.mktemp("architecture")
    src = _with_the_example(root)
    home = root / "home"
    (home / ".budgetconf").mkdir(parents=True)
    (root / "app.toml").write_text(_block("toml app.toml"))
    return {
        **os.environ,
        "PYTHONPATH": str(src),
        "HOME": str(home),
        "ROOT": str(root),
        "BUDGETCONF_PRESET": "",
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=env["ROOT"],
        timeout=60,
    )


def _ini(env: dict[str, str], text: str) -> str:
    path = Path(env["HOME"]) / ".budgetconf" / "legacy.ini"
    path.write_text(text)
    os.utime(path, (1_000_000_000, 1_000_000_000))  # settled: its signature is trusted
    return str(path)


def test_the_new_kind_resolves_and_explains_where_its_value_came_from(
    example: dict[str, str],
) -> None:
    """A value in the INI file wins over the default, located at the file; other sections stay
    the older tool's."""
    path = _ini(example, "[loop]\nmax_steps = 12\n\n[window]\nwidth = 80\n")
    done = _run(example, "-m", "budgetconf", "explain", "--preset", "app.toml", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["fields"]["loop.max_steps"]["value"] == 12
    assert document["fields"]["loop.max_steps"]["locator"] == path
    assert [s["source"] for s in document["sources"]] == ["default", "ini"]
    assert document["warnings"] == []


def test_the_new_kind_s_text_is_judged_like_a_flag_s(example: dict[str, str]) -> None:
    """A value that is not an integer is rejected under the error policy, naming the file."""
    path = _ini(example, "[loop]\nmax_steps = twelve\n")
    code = "import budgetconf\ntry:\n    budgetconf.resolve('app.toml', env={})\n"
    code += "except budgetconf.ConfigError as exc:\n    print(exc)\n"
    done = _run(example, "-c", code)
    assert done.stdout.strip() == f"loop.max_steps from {path} (ini): not an integer: 'twelve'"


def test_a_preset_s_options_for_the_new_kind_are_checked_strictly(
    example: dict[str, str],
) -> None:
    """The reader knows the kind's options from its declaration: a misspelt one is refused."""
    preset = Path(example["ROOT"]) / "typo.toml"
    preset.write_text(_block("toml app.toml").replace("path = ", "paht = "))
    done = _run(example, "-m", "budgetconf", "check", "--preset", str(preset))
    assert done.returncode == 1
    assert "sources[1] (ini).unknown key 'paht' (did you mean 'path'?)" in done.stderr


def _with_the_bridge(root: Path) -> Path:
    """A copy of the package with the page's toy bridge added as the page says."""
    package = root / "src" / "budgetconf"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "integrations" / "toy.py").write_text(
        _block("python src/budgetconf/integrations/toy.py")
    )
    table = package / "integrations" / "_frameworks.py"
    text = table.read_text()
    end = "        ),\n    )\n}\n"
    assert text.count(end) == 1
    entry = textwrap.indent(_block("python src/budgetconf/integrations/_frameworks.py"), " " * 8)
    table.write_text(text.replace(end, "        ),\n" + entry.rstrip("\n") + ",\n    )\n}\n"))
    return root / "src"


def test_a_bridge_is_its_module_and_its_entry_in_the_frameworks_table(tmp_path: Path) -> None:
    """The page's toy bridge, added to a copy of the package, stops where the executor would."""
    src = _with_the_bridge(tmp_path)
    (tmp_path / "toy_run.py").write_text(_block("python toy_run.py"))
    env = {**os.environ, "PYTHONPATH": str(src), "ROOT": str(tmp_path)}
    done = _run(env, "toy_run.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("stopped: hit max_steps (3): loop.max_steps = 3 from env:")
    explained = _run(env, "-m", "budgetconf", "explain", "--for", "toy")
    assert explained.returncode == 0, explained.stderr
    assert "max_steps" in explained.stdout


def _with_the_backend(root: Path) -> Path:
    """A copy of the package with the page's Valkey backend added as the page says."""
    package = root / "src" / "budgetconf"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "ledger" / "_valkey.py").write_text(
        _block("python src/budgetconf/ledger/_valkey.py")
    )
    row = _block("python src/budgetconf/ledger/_address.py").splitlines()[2]
    table = package / "ledger" / "_address.py"
    text = table.read_text()
    anchor = '    "rediss": Scheme("redis", "RedisLedger", _tls_server_address),\n'
    assert text.count(anchor) == 1
    table.write_text(text.replace(anchor, anchor + row + "\n"))
    return root / "src"


def test_a_ledger_backend_is_its_module_and_its_row_in_the_table(
    tmp_path: Path, redis_url: str
) -> None:
    """The page's backend, added to a copy of the package: a run draws on the ledger at a
    valkey:// address (a real redis-server, which speaks the protocol), and `budgetconf ledger
    status` reads back what it spent."""
    src = _with_the_backend(tmp_path)
    url = redis_url.replace("redis://", "valkey://", 1)
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "ROOT": str(tmp_path),
        "BUDGETCONF_LEDGER_URL": url,
        "BUDGETCONF_LEDGER_SCOPE": "example",
    }
    code = (
        "from budgetconf.loop import LoopExecutor\n"
        "model = lambda messages, tools: {'content': 'done', 'usage': {'total_tokens': 7}}\n"
        "result = LoopExecutor(model).run('go')\n"
        "print(result.status.value, result.usage.total_tokens)\n"
    )
    done = _run(env, "-c", code)
    assert (done.returncode, done.stdout.split()) == (0, ["ok", "7"]), done.stderr
    status = _run(env, "-m", "budgetconf", "ledger", "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    (document,) = json.loads(status.stdout)["scopes"]
    assert (document["scope"], document["spent"]["tokens"], document["runs"]) == ("example", 7, 1)
    refused = _run({**env, "BUDGETCONF_LEDGER_URL": "valkey://"}, "-m", "budgetconf", "check")
    assert refused.returncode == 1
    assert "ledger.url" in refused.stderr
    assert "the ledger URL names no host: 'valkey://'" in refused.stderr


def _with_the_command(root: Path) -> Path:
    """A copy of the package with the page's command added as the page says."""
    package = root / "src" / "budgetconf"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "cli" / "_commands" / "fields.py").write_text(
        _block("python src/budgetconf/cli/_commands/fields.py")
    )
    before, added, after = _block("diff src/budgetconf/cli/__init__.py").splitlines(True)
    assert (before[0], added[0], after[0]) == (" ", "+", " ")  # one line, between two
    init = package / "cli" / "__init__.py"
    text = init.read_text()
    lines = before[1:] + after[1:]
    assert text.count(lines) == 1
    init.write_text(text.replace(lines, before[1:] + added[1:] + after[1:]))
    return root / "src"


def test_a_command_is_its_module_and_its_line_in_the_list(tmp_path: Path) -> None:
    """The page's command, added to a copy of the package, runs as the page shows; help lists
    it, completion offers it and its grammar refuses what it does not take."""
    env = {**os.environ, "PYTHONPATH": str(_with_the_command(tmp_path)), "ROOT": str(tmp_path)}
    shown = _block("console").splitlines()
    command = shlex.split(shown[0].removeprefix("$ "))
    assert command[0] == "budgetconf"
    done = _run(env, "-m", "budgetconf", *command[1:])
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown[1:]
    listed = _run(env, "-m", "budgetconf", "--help").stdout
    assert "    fields    list the preset's fields and what each takes\n" in listed
    assert " fields " in _run(env, "-m", "budgetconf", "completion", "bash").stdout
    refused = _run(env, "-m", "budgetconf", "fields", "--step", "review")
    assert refused.returncode == 64
    assert refused.stderr == "budgetconf: usage error: unrecognized arguments: --step\n"
