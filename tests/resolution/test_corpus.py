"""The bad-input corpus: every case through resolve() and through the command line.

The cases are data, in tests/data/bad/*.toml (the format is described in
tests/data/bad/README.md). Each case is run three ways: ``budgetconf.resolve``,
``budgetconf explain --format json`` and ``budgetconf check`` in-process; the cases marked
``console`` also through the installed console script. Whatever the case, no
file is written and the command answers in whole lines, never a traceback.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

import budgetconf
from budgetconf import _files
from budgetconf._engine import load_preset
from budgetconf.cli import main

from conftest import Place
from helpers import DATA, DOCS

BAD: Final = DATA / "bad"
DOC: Final = DOCS / "reliability.md"
KINDS: Final = (
    "env",
    "flag",
    "set",
    "explicit",
    "json",
    "toml",
    "yaml",
    "step",
    "profile",
    "preset",
    "filesystem",
    "hostile",
)
OUTCOMES: Final = ("error", "rejected", "warning", "ignored", "usage")
FILES: Final = {  # the files a case may give: where they go, and how they are named
    "global": ("settings.json", "--global", "global_file"),
    "project": ("settings.toml", "--project", "project_file"),
    "profile": ("profile.json", "--profile", "profile"),
    "workflow": ("workflow.yaml", "--workflow", "workflow"),
    "preset": ("app.toml", "--preset", "preset"),
    "decoy": ("decoy.toml", None, None),  # named only by a variable nobody should read
}
_REPEAT: Final = re.compile(r"⟨(.*?)\*(\d+)⟩", re.DOTALL)
_EXIT: Final = {"error": 1, "rejected": 0, "warning": 0, "ignored": 0, "usage": 64}


CASES: Final = [
    case
    for manifest in sorted(BAD.glob("*.toml"))
    for case in tomllib.loads(manifest.read_text(encoding="utf-8"))["case"]
]


def _expand(value: Any) -> Any:
    """``⟨TEXT*N⟩`` in any string of a case stands for TEXT repeated N times."""
    if isinstance(value, str):
        return _REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), value)
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    return value


@dataclass
class Arranged:
    """A case put in place: resolve() keywords, the command's options, and the paths used."""

    kwargs: dict[str, Any]
    options: list[str]
    app_args: list[str] | None
    env: dict[str, str]
    paths: dict[str, str]

    def fill(self, text: str) -> str:
        for name, path in self.paths.items():
            text = text.replace("{" + name + "}", path)
        return text


def _build(path: Path, how: str) -> None:
    """Make the file system object a case describes instead of a file's text."""
    if how == "directory":
        path.mkdir()
    elif how == "unreadable":
        path.write_text("[loop]\nmax_steps = 7\n")
        path.chmod(0)
    elif how == "symlink-loop":
        path.symlink_to(path.with_name("other-link"))
        path.with_name("other-link").symlink_to(path)
    elif how == "dangling-symlink":
        path.symlink_to(path.with_name("nowhere"))
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "50mb":
        with path.open("wb") as handle:  # real bytes, not a sparse file
            chunk = b"# padding " * 104_858  # 1 MiB and a bit
            for _ in range(50):
                handle.write(chunk)
    elif how == "missing":
        pass
    else:  # pragma: no cover - a typo in a manifest
        raise AssertionError(f"unknown build {how!r}")


def _arrange(case: dict[str, Any], work: Path) -> Arranged:
    paths = {"work": str(work), "home": os.environ["HOME"]}
    kwargs: dict[str, Any] = {}
    options: list[str] = []
    folder = work / "in"
    folder.mkdir(exist_ok=True)
    given = {
        **{k: ("text", v) for k, v in case.get("files", {}).items()},
        **{k: ("copy", v) for k, v in case.get("copy", {}).items()},
        **{k: ("build", v) for k, v in case.get("build", {}).items()},
    }
    for name, (how, what) in given.items():
        filename, option, keyword = FILES[name]
        path = folder / filename
        if how == "text":
            path.write_text(what, encoding="utf-8")
        elif how == "copy":
            shutil.copyfile(BAD / "files" / what, path)
        elif what == "not-a-directory":
            path.write_text("{}")
            path = path / "settings"
        else:
            _build(path, what)
        paths[name] = str(path)
        if keyword is not None and option is not None:
            kwargs[keyword] = str(path)
            options += [option, str(path)]
    if "step" in case:
        kwargs["step"] = case["step"]
        options += ["--step", case["step"]]
    sets = case.get("set", {})
    explicit = case.get("explicit", {})
    if sets or explicit:
        kwargs["explicit"] = {**sets, **{k: _literal(v) for k, v in explicit.items()}}
        for field, text in {**sets, **explicit}.items():
            options += ["--set", f"{field}={text}"]
    if "argv" in case:
        kwargs["argv"] = case["argv"]
    if "explicit_preset" in case:  # the CLI takes it from BUDGETCONF_PRESET
        kwargs["preset"] = case["explicit_preset"]
    at = Arranged(kwargs, options, case.get("argv"), {}, paths)
    at.env = {k: at.fill(v) for k, v in case.get("env", {}).items()}
    kwargs["env"] = at.env
    return at


def _literal(text: str) -> Any:
    """A Python literal, integers past the digit limit included."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return ast.literal_eval(text)
    finally:
        sys.set_int_max_str_digits(limit)


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``roots`` with its size and mtime, links not followed."""
    seen = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                st = os.lstat(path)
                seen[path] = (st.st_size, st.st_mtime_ns)
    return seen


def _params(*, console: bool = False) -> list[Any]:
    return [
        pytest.param(_expand(case), id=case["id"])
        for case in CASES
        if case.get("console") or not console
    ]


def _matching(case: dict[str, Any], errors: tuple[Any, ...], at: Arranged) -> Any:
    """The error that names the case's source and locator."""
    locator = at.fill(case["locator"])
    found = [e for e in errors if e.locator == locator and e.source == case.get("source")]
    assert found, [(e.source, e.locator, str(e)) for e in errors]
    return found[0]


def _check_api(case: dict[str, Any], at: Arranged) -> None:
    outcome = case["outcome"]
    if outcome == "usage":  # a preset file that cannot be read is one too, on the command line
        with pytest.raises((budgetconf.UsageError, budgetconf.PresetError)) as usage:
            budgetconf.resolve(**at.kwargs)
        _absent(case, str(usage.value), repr(getattr(usage.value, "raw", None)))
        assert case["reason"] in str(usage.value)
        return
    if outcome == "error":
        with pytest.raises(budgetconf.ConfigError) as caught:
            budgetconf.resolve(**at.kwargs)
        err = caught.value
        _absent(case, str(err), repr(err.raw))
        if case["source"] == "preset":
            assert isinstance(err, budgetconf.PresetError)
            assert at.fill(case["locator"]) in str(err)
        else:
            err = _matching(case, err.errors, at)
        assert "\n" not in str(err)
        if "field" in case:
            assert err.field == case["field"]
        assert at.fill(case["reason"]) in str(err)
        assert at.fill(case.get("shown_at", case["locator"])) in str(err)
        if "raw" in case:  # whole on the error; its text quotes at most the first 80 characters
            assert err.raw == case["raw"]
            assert case["raw"][:80] in str(err)
        return
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = budgetconf.resolve(**at.kwargs)
    shown = [str(w.message) for w in record]
    assert all(w.category is budgetconf.BudgetConfWarning for w in record)
    assert bool(shown) == (outcome != "ignored"), shown
    _absent(case, *shown, repr(res), json.dumps(res.to_dict(), ensure_ascii=False))
    if outcome == "rejected":
        trace = res.trace(case["field"])
        locator = at.fill(case["locator"])
        mine = [c for c in trace.candidates if c.locator == locator and c.status == "rejected"]
        assert [c.source for c in mine] == [case["source"]]
        assert case["reason"] in (mine[0].reason or "")
        if "raw" in case:
            assert mine[0].raw == case["raw"]
        assert any(locator in m and case["reason"] in m for m in shown), shown
    elif outcome == "warning":
        assert any(at.fill(case["warning"]) in m for m in shown), shown
    if "field" in case:
        assert res[case["field"]] == case["wins"]


def _check_cli(case: dict[str, Any], at: Arranged, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = case["outcome"]
    app = [] if at.app_args is None else ["--", *at.app_args]
    # check prints each error and warning on a line of its own, as explain's table does
    code = main(["check", *at.options, *app])
    out, err = capsys.readouterr()
    assert code == (_EXIT[outcome] if outcome in ("usage", "ignored") else 1), err
    _lines_only(err)
    if outcome == "usage":
        assert err.count("\n") == 1
        assert err.startswith("budgetconf: usage error: ")
        assert case["reason"] in err
        return
    if outcome == "error":  # --set gives text, so explicit values are quoted as text
        assert at.fill(case.get("shown_at", case["locator"])) in err
        assert at.fill(case.get("cli_reason", case["reason"])) in err
    elif outcome == "ignored":
        assert err == ""
    else:
        assert "budgetconf: warning: " in err
        assert out.startswith("check failed: ")
    _absent(case, out, err)
    code = main(["explain", "--format", "json", *at.options, *app])
    out, _ = capsys.readouterr()
    document = json.loads(out)
    assert code == _EXIT[outcome]
    if outcome == "error":
        assert any(at.fill(case.get("shown_at", case["locator"])) in e for e in document["errors"])
    _absent(case, out)
    if outcome == "rejected":
        trace = document["fields"][case["field"]]
        locator = at.fill(case["locator"])
        mine = [c for c in trace["candidates"] if c["locator"] == locator]
        assert [c["status"] for c in mine].count("rejected") == 1
    elif outcome == "warning":
        assert any(at.fill(case["warning"]) in w for w in document["warnings"])
    if "field" in case and outcome != "error":
        shown = "***" if "absent" in case else case["wins"]  # a secret is masked
        assert document["values"][case["field"]] == shown


def _absent(case: dict[str, Any], *shown: str) -> None:
    """A secret value appears in nothing budgetconf says."""
    for secret in case.get("absent", ()):
        for text in shown:
            assert secret not in text


def _lines_only(err: str) -> None:
    """What the command said to a person: whole lines of its own, never a traceback."""
    assert "Traceback" not in err
    for line in err.splitlines():
        assert line.startswith("budgetconf: "), line


@pytest.mark.parametrize("case", _params())
def test_every_case_has_its_outcome_through_resolve_and_the_cli(
    place: Place,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: dict[str, Any],
) -> None:
    """resolve() gives the stated error, rejection or warning; explain and check agree."""
    unreadable_as_root = "unreadable" in case.get("build", {}).values() and os.geteuid() == 0
    if unreadable_as_root:
        _as_another_user(case)
        return
    at = _arrange(case, place.work)
    before = _snapshot(place.work, place.home)
    _check_api(case, at)
    for name, value in at.env.items():
        monkeypatch.setenv(name, value)
    _check_cli(case, at, capsys)
    assert _snapshot(place.work, place.home) == before  # nothing was written
    if "sentinel" in case:
        assert not os.path.lexists(at.fill(case["sentinel"]))


def _as_another_user(case: dict[str, Any]) -> None:
    """Root reads any file, so the unreadable file is read by ``nobody``, in a forked child.

    The file sits in a folder of its own that ``nobody`` may enter; the child
    drops to that user, then runs resolve() and ``budgetconf explain`` and
    sends back what each said.
    """
    folder = Path(tempfile.mkdtemp(prefix="budgetconf-unreadable-"))
    try:
        folder.chmod(0o755)
        at = _arrange(case, folder)
        assert stat.S_IMODE(os.stat(at.paths["project"]).st_mode) == 0
        # as root first, which reads the file: every module the child needs gets imported,
        # since the unprivileged child may not read the interpreter's own library
        assert budgetconf.resolve(**at.kwargs)["loop.max_steps"] == 7
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["explain", *at.options]) == 0
        _files._cache.clear()  # and nothing root read may be served to the child
        load_preset("budgetconf").memo.clear()
        said = _in_child(lambda: _tell(at, folder))
        api_error, code, err = said
        locator = at.fill(case["locator"])
        assert api_error[:2] == [case["source"], locator]
        assert case["reason"] in api_error[2]
        assert code == 1
        _lines_only(err)
        assert locator in err
        assert case["reason"] in err
    finally:
        shutil.rmtree(folder)


def _tell(at: Arranged, folder: Path) -> list[Any]:
    """In the child, as ``nobody``: what resolve() raised, and what explain said."""
    # nobody may not look into the test's folder, where the installed policy is moved to,
    # and a policy it cannot look at fails closed: here it is where nobody may look
    installed: Any = load_preset("budgetconf").by_kind["policy"]
    installed._path = str(folder / "policy.json")
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    os.chdir(folder)
    os.environ["HOME"] = str(folder)
    try:
        budgetconf.resolve(**at.kwargs)
        api_error: list[Any] = []
    except budgetconf.ConfigError as exc:
        api_error = [exc.source, exc.locator, str(exc)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["explain", *at.options])
    return [api_error, code, err.getvalue()]


def _in_child(work: Callable[[], Any]) -> Any:
    """``work()`` run in a forked child; its JSON result, or its error as text."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads alive
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; coverage does not follow it
        try:
            os.write(write, json.dumps(work()).encode())
        except BaseException as exc:
            os.write(write, json.dumps({"child failed": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert not isinstance(result, dict), result
    return result


def _console() -> list[str]:
    script = Path(sys.executable).with_name("budgetconf")
    assert script.exists(), "the console script is installed with the package"
    return [str(script)]


@pytest.mark.parametrize("case", _params(console=True))
def test_the_console_script_answers_in_lines_without_a_traceback(
    place: Place, case: dict[str, Any]
) -> None:
    """The installed ``budgetconf`` command exits with the case's code and prints no traceback."""
    at = _arrange(case, place.work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETCONF_")}
    env.update(at.env)
    app = [] if at.app_args is None else ["--", *at.app_args]
    shown = subprocess.run(
        [*_console(), "explain", *at.options, *app],
        env=env,
        cwd=place.work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == _EXIT[case["outcome"]], shown.stderr
    _lines_only(shown.stderr)
    if case["outcome"] == "error":
        assert at.fill(case.get("shown_at", case["locator"])) in shown.stderr


def test_the_manifests_are_well_formed() -> None:
    """Each case has a unique id, a known kind and outcome, and what its outcome needs."""
    ids = collections.Counter(case["id"] for case in CASES)
    assert [i for i, n in ids.items() if n > 1] == []
    needs = {
        "error": {"source", "locator", "reason"},
        "rejected": {"source", "locator", "reason", "field", "wins"},
        "warning": {"warning"},
        "ignored": {"field", "wins"},
        "usage": {"reason"},
    }
    for case in CASES:
        assert case["kind"] in KINDS, case["id"]
        assert case["outcome"] in OUTCOMES, case["id"]
        assert needs[case["outcome"]] <= set(case), case["id"]
        assert ("field" in case) == ("wins" in case) or case["outcome"] == "error", case["id"]


def _counts() -> dict[str, collections.Counter[str]]:
    by_kind: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in KINDS}
    for case in CASES:
        by_kind[case["kind"]][case["outcome"]] += 1
    return by_kind


def test_the_corpus_is_as_large_and_as_wide_as_promised() -> None:
    """At least 120 cases, every kind of source present, every outcome reached."""
    assert len(CASES) >= 120
    counts = _counts()
    assert all(counts[kind] for kind in KINDS), counts
    assert {o for c in counts.values() for o in c} == set(OUTCOMES)


def test_the_reliability_page_gives_the_corpus_counts() -> None:
    """docs/reliability.md's table of cases matches the manifests, kind by kind."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- corpus-counts -->")[1].split("<!-- /corpus-counts -->")[0]
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    shown = {cells[0].strip().strip("`"): [c.strip() for c in cells[1:]] for cells in rows}
    expected = {}
    for kind, counter in _counts().items():
        expected[kind] = [str(counter[o]) for o in OUTCOMES] + [str(sum(counter.values()))]
    total = collections.Counter(case["outcome"] for case in CASES)
    expected["**total**"] = [f"**{total[o]}**" for o in OUTCOMES] + [f"**{len(CASES)}**"]
    assert shown == expected
    console = sum(1 for case in CASES if case.get("console"))
    runs = f"so the corpus is {3 * len(CASES)} checked runs; {console} of the cases"
    assert runs in " ".join(text.split())
