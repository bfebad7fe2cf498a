"""The package's layout, as docs/architecture.md gives it: public names, one-way imports."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf import errors, loop, sources
from budgetconf.ledger._address import SCHEMES
from budgetconf.loop import LoopExecutor

SRC = Path(budgetconf.__file__).parent
PUBLIC = (
    "budgetconf",
    "budgetconf.loop",
    "budgetconf.sources",
    "budgetconf.errors",
    "budgetconf.ledger",
    "budgetconf.events",
    "budgetconf.telemetry",
    "budgetconf.testing",
)
INTEGRATIONS = (  # the package and each integration: every public module in it
    "budgetconf.integrations",
    *(f"budgetconf.integrations.{p.stem}" for p in sorted((SRC / "integrations").glob("[!_]*.py"))),
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The package's modules that ``name`` imports anywhere: at the top, in functions, or for
    the type checker only."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != name}


def _edges(name: str) -> set[str]:
    """What importing ``name`` runs: each module it imports and the packages above that one
    (not its own packages, which are already being imported)."""
    edges = set()
    for imported in _imports(name):
        edges.add(imported)
        parts = imported.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if not name.startswith(parent + ".") and parent != name:
                edges.add(parent)
    return edges


def _reached(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for module in _edges(todo.pop()) - seen:
            seen.add(module)
            todo.append(module)
    return seen


def test_no_module_imports_itself_through_others() -> None:
    """There is no import circle in src/, typing-only and function-level imports included."""
    circles = sorted(name for name in MODULES if name in _reached(name))
    assert circles == []


def test_the_loop_imports_nothing_of_the_sources() -> None:
    """loop/ reads a resolution (its sources' reports carry how a limit is raised), never the
    source kinds themselves."""
    found = {
        (name, imported)
        for name in MODULES
        if name.startswith("budgetconf.loop")
        for imported in _imports(name)
        if imported.startswith("budgetconf.sources")
    }
    assert found == set()


def test_the_events_are_upstream_of_the_loop_the_bridges_and_the_report() -> None:
    """budgetconf.events imports none of the rooms that record or read events."""
    rooms = ("budgetconf.loop", "budgetconf.integrations", "budgetconf._report", "budgetconf.cli")
    assert {m for m in _reached("budgetconf.events") if m.startswith(rooms)} == set()


def test_the_bridges_use_only_the_public_faces_of_the_loop_and_the_ledger() -> None:
    """integrations/ reaches the loop and the ledger by budgetconf.loop and budgetconf.ledger:
    what their private modules hold may change without a bridge noticing."""
    private = ("budgetconf.loop._", "budgetconf.ledger._")
    found = {
        (name, imported)
        for name in MODULES
        if name.startswith("budgetconf.integrations")
        for imported in _imports(name)
        if imported.startswith(private)
    }
    assert found == set()


def test_the_preset_reader_builds_no_source_and_resolves_nothing() -> None:
    """_presets reaches neither sources/ nor the engine, the merge or the resolver."""
    reached = _reached("budgetconf._presets")
    forbidden = {m for m in reached if m.startswith("budgetconf.sources")}
    forbidden |= reached & {"budgetconf._engine", "budgetconf._merge", "budgetconf._resolve"}
    assert forbidden == set()


@pytest.mark.parametrize("half", ["budgetconf._description", "budgetconf._loop_table"])
def test_the_description_imports_only_the_schema(half: str) -> None:
    """Both halves of the description are leaves: records on the schema and the record base,
    and the rules a field's text follows (the ledger's address among them)."""
    leaves = {
        "budgetconf._field",
        "budgetconf._schema",
        "budgetconf._values",
        "budgetconf._text_formats",
        "budgetconf.ledger._address",  # how a ledger URL is read and shown
        "budgetconf.ledger",  # the package of the address: its records load when asked for
        "budgetconf.ledger._base",
        "budgetconf.ledger._records",
        "budgetconf.errors",
        "budgetconf._record",
        "budgetconf._loop_table",
        "budgetconf._text",
        "budgetconf._spelling",
    }
    assert _reached(half) <= leaves


def test_import_budgetconf_reads_addresses_without_the_ledger() -> None:
    """The schema checks a ledger URL with the address rules alone: `import budgetconf` and a
    resolution that reads an address load neither the ledger's records nor a backend."""
    probe = (
        "import sys, budgetconf\n"
        "budgetconf.resolve(env={'BUDGETCONF_LEDGER_URL': 'redis://h:1/0'})\n"
        "print(sorted(m for m in sys.modules if m.startswith('budgetconf.ledger')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['budgetconf.ledger', 'budgetconf.ledger._address']"


def test_only_the_ledger_imports_a_backend() -> None:
    """A backend (a module `SCHEMES` names) is opened through `open_ledger`, never imported from
    outside ledger/, so adding one is its module and its line in the table."""
    backends = {f"budgetconf.ledger._{row.backend}" for row in SCHEMES.values()}
    assert backends <= set(MODULES)
    found = {
        (name, imported)
        for name in MODULES
        if not name.startswith("budgetconf.ledger")
        for imported in _imports(name)
        if imported in backends
    }
    assert found == set()


@pytest.mark.parametrize("leaf", ["budgetconf._text", "budgetconf._spelling"])
def test_the_text_rules_import_nothing_from_the_package(leaf: str) -> None:
    """_text, which escapes and bounds what is shown, and _spelling, which finds a near miss,
    are leaves every room may use."""
    assert _reached(leaf) == set()


def test_no_module_is_longer_than_the_layout_allows() -> None:
    """No module is over 500 lines, and the command line's __init__ is under 150."""
    lengths = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in lengths.items() if n > 500} == {}
    assert lengths["budgetconf.cli"] < 150


def _functions(blocks: list[Any]) -> Iterator[Any]:
    """Every function among radon's blocks: methods, closures and inner classes' included."""
    from radon.visitors import Function

    for block in blocks:
        if isinstance(block, Function):
            yield block
            yield from _functions(block.closures)
        else:  # a class
            yield from _functions([*block.methods, *block.inner_classes])


def test_no_function_is_more_complex_than_the_layout_allows() -> None:
    """No function in src/ is over cyclomatic complexity 15 as radon counts it: one that
    answers more questions than that is split by them, so each part reads top to bottom."""
    from radon.complexity import cc_visit
    from radon.visitors import Class

    over = {}
    for name, path in MODULES.items():
        blocks = cc_visit(path.read_text())
        # cc_visit lists each method beside its class as well as in it: read it in its class
        tops = [b for b in blocks if isinstance(b, Class) or not b.is_method]
        for function in _functions(tops):
            if function.complexity > 15:
                over[f"{name}.{function.fullname}"] = function.complexity
    assert over == {}


def test_only_the_public_modules_say_what_they_export() -> None:
    """`__all__` is a public module's contract; a private module has none, so that no list of
    names promises what only the package's own modules use."""
    private = {
        name
        for name in MODULES
        if any(part.startswith("_") for part in name.split(".")[1:])
        and not name.endswith("__main__")
    }
    listing = {name for name in private if "\n__all__" in MODULES[name].read_text()}
    assert listing == set()


def test_only_the_public_modules_have_public_names() -> None:
    """Every module outside the public ones is private: its name, or a package's, starts with _.

    The source kinds are the exception the layout makes: one public module per kind, each
    exporting its one class.
    """
    public = {*PUBLIC, *INTEGRATIONS, "budgetconf.cli", "budgetconf.__main__"}
    kinds = {c.__module__ for c in sources.KINDS.values()} | {
        f"budgetconf.sources.{path.stem}"
        for path in (SRC / "sources").glob("*.py")
        if not path.stem.startswith("_")
    }
    loose = {
        name
        for name in MODULES
        if name not in public | kinds and not any(part.startswith("_") for part in name.split("."))
    }
    assert loose == set()


@pytest.mark.parametrize("name", [*PUBLIC, *INTEGRATIONS])
def test_every_public_name_is_there_and_says_where_it_lives(name: str) -> None:
    """Each name in a public module's __all__ exists; a class's __module__ is a public module
    that exports it under its own name."""
    if name == "budgetconf.integrations.openai":
        pytest.importorskip("openai")
    if name == "budgetconf.integrations.crewai":
        pytest.importorskip("crewai", reason="installed in nox's crewai session (noxfile.py)")
    module = importlib.import_module(name)
    for exported in module.__all__:
        if exported == "crewai_llm" and find_spec("crewai") is None:
            continue  # budgetconf.testing's CrewAI model: it imports CrewAI
        value = getattr(module, exported)
        if isinstance(value, type):
            home = importlib.import_module(value.__module__)
            assert value.__module__ in (*PUBLIC, *INTEGRATIONS), (exported, value.__module__)
            assert getattr(home, value.__name__) is value, exported
            assert value.__name__ in home.__all__, exported


def test_a_star_import_of_sources_gives_every_name() -> None:
    """`from budgetconf.sources import *` works, protocols included, loaded when asked for."""
    namespace: dict[str, object] = {}
    exec("from budgetconf.sources import *", namespace)
    assert set(sources.__all__) <= set(namespace)
    assert namespace["Source"] is sources.Source


def test_the_protocols_describe_every_built_in_source() -> None:
    """Every registered source, built for the default preset, is a `Source`."""
    from budgetconf._engine import load_preset

    for source in load_preset("budgetconf").sources:
        assert isinstance(source, sources.Source)
    with pytest.raises(AttributeError, match="no attribute 'Sauce'"):
        _ = sources.Sauce  # a name the module does not have


def test_the_protocols_wait_until_they_are_asked_for() -> None:
    """`import budgetconf` leaves the protocols, and typing with them, unloaded."""
    probe = "import budgetconf, sys; print('budgetconf.sources._protocols' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_usage_error_is_a_programming_error_not_a_configuration_one() -> None:
    """UsageError is a BudgetConfError and a ValueError, never a ConfigError."""
    assert issubclass(errors.UsageError, errors.BudgetConfError)
    assert issubclass(errors.UsageError, ValueError)
    assert not issubclass(errors.UsageError, errors.ConfigError)
    assert issubclass(errors.UsageTypeError, errors.UsageError)
    assert issubclass(errors.UsageTypeError, TypeError)


def test_a_value_of_the_wrong_type_is_a_usage_type_error() -> None:
    """A model that is not callable is refused with the TypeError kind of UsageError."""
    with pytest.raises(TypeError, match="model: expected a callable, got int") as caught:
        LoopExecutor(3, budget={"loop.max_steps": 3})  # type: ignore[arg-type]  # on purpose
    assert isinstance(caught.value, errors.UsageTypeError)


def test_except_config_error_lets_a_usage_error_through() -> None:
    """An argument for a source the preset lacks is not caught as a configuration problem."""

    def resolve_guarded() -> str:
        try:
            budgetconf.resolve("opendot", workflow="w.yaml")
        except errors.ConfigError:  # pragma: no cover - the point is that this does not run
            return "caught as a configuration problem"
        return "resolved"  # pragma: no cover

    with pytest.raises(errors.UsageError, match="has no yaml source"):
        resolve_guarded()


def test_the_loop_reports_its_public_names() -> None:
    """The loop's records and words are shown by their public path."""
    assert repr(loop.RunStatus.OK) == "<RunStatus.OK: 'ok'>"
    assert loop.RunResult.__module__ == loop.StopReason.__module__ == "budgetconf.loop"
