"""Golden explain documents: each folder of tests/data/golden is one command and its output.

A case folder holds ``case.toml`` (the arguments, environment and exit code),
optional ``home/`` and ``work/`` trees copied into the test's home and working
directory, and the expected output (``explain.json`` unless ``output`` says
otherwise) with those two paths written as ``<HOME>`` and ``<WORK>``. Run pytest
with ``--update-golden`` to rewrite the outputs after a deliberate change.
"""

from __future__ import annotations

import shutil
import tomllib

import pytest

from budgetconf.cli import main

from conftest import Place
from helpers import DATA

GOLDEN = DATA / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "case.toml").is_file())


@pytest.mark.parametrize("name", CASES)
def test_golden_case(
    name: str,
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    """The command of the case prints exactly the stored output and exits as recorded."""
    folder = GOLDEN / name
    case = tomllib.loads((folder / "case.toml").read_text())
    for tree, target in (("home", place.home), ("work", place.work)):
        if (folder / tree).is_dir():
            shutil.copytree(folder / tree, target, dirs_exist_ok=True)
    for key, value in case.get("env", {}).items():
        monkeypatch.setenv(key, value)

    code = main(case["args"])

    printed = capsys.readouterr().out
    printed = printed.replace(str(place.work), "<WORK>").replace(str(place.home), "<HOME>")
    printed = printed.replace(str(place.policy), "<POLICY>")
    expected = folder / case.get("output", "explain.json")
    if request.config.getoption("--update-golden"):
        expected.write_text(printed)
    assert printed == expected.read_text()
    assert code == case["exit"]


def test_every_case_has_its_expected_output() -> None:
    """No golden case folder is left without the output it is checked against."""
    for name in CASES:
        case = tomllib.loads((GOLDEN / name / "case.toml").read_text())
        assert (GOLDEN / name / case.get("output", "explain.json")).is_file(), name
