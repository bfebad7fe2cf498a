"""`import budgetconf` stays light: heavy dependencies load only on the paths that use them."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = frozenset({"rich", "cattrs", "yaml", "tomli_w", "tomllib", "jsonschema"})


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return {name.split(".")[0] for name in out.split()}


def test_import_budgetconf_loads_no_heavy_dependency() -> None:
    """rich, cattrs, PyYAML and the TOML modules are not imported by `import budgetconf`."""
    assert _modules_after("import budgetconf").isdisjoint(HEAVY)


def test_import_budgetconf_defines_its_records_without_the_costly_standard_modules() -> None:
    """typing, re, json and dataclasses (with inspect) wait for the code that needs them."""
    loaded = _modules_after("import budgetconf")
    assert loaded.isdisjoint({"typing", "re", "json", "dataclasses", "inspect"})


def test_resolving_without_files_loads_no_heavy_dependency() -> None:
    """The factory path (opendot) and a default resolution need none of them."""
    loaded = _modules_after(
        "import budgetconf\n"
        "budgetconf.factory('agent.max_steps', preset='opendot')()\n"
        "budgetconf.resolve(env={})"
    )
    assert loaded.isdisjoint(HEAVY - {"tomllib"})  # tomllib reads the preset file


@pytest.mark.parametrize(
    ("code", "needed"),
    [
        ("budgetconf.resolve(env={}).structure(dict)", "cattrs"),
        ("from budgetconf.cli import main; main(['explain'])", "rich"),
    ],
)
def test_heavy_dependencies_load_when_needed(code: str, needed: str) -> None:
    """cattrs arrives with structure(), rich with the explain table."""
    assert needed in _modules_after(f"import budgetconf\n{code}")


def test_explain_json_needs_neither_rich_nor_cattrs() -> None:
    """The JSON document is written without rich and without cattrs."""
    loaded = _modules_after(
        "import io, contextlib\nfrom budgetconf.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['explain', '--format', 'json'])"
    )
    assert loaded.isdisjoint({"rich", "cattrs", "yaml"})


def test_no_adapter_dependency_loads_without_its_adapter() -> None:
    """The package, its CLI and its loop load neither openai nor dynaconf."""
    loaded = _modules_after(
        "import budgetconf, budgetconf.cli, budgetconf.loop, budgetconf.integrations\n"
        "budgetconf.resolve(env={})"
    )
    assert loaded.isdisjoint({"dynaconf", "openai", "httpx", "httpx2", "pydantic"})
