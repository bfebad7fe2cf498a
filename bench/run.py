"""budgetconf's speed against dynaconf, pydantic-settings and the plain floor, in one table.

Builds one fixture in a temporary folder (a global JSON, a project TOML, a
workflow YAML and a few environment variables) and measures, in one process
and one run, medians of many repetitions taken with `time.perf_counter_ns`:

- `resolve()` of the default preset, warm (nothing changed since the last
  call) over settled files, with a policy file added (`policy_file=`), and
  over files written a moment ago, and cold
  (the project file rewritten before every call);
- `factory("agent.max_steps", preset="opendot")()` against
  `int(os.environ.get(...))`;
- dynaconf and pydantic-settings reading the same files and variables;
- plain `json.load`, `tomllib.load` and `yaml.safe_load` of the fixture files;
- whole-process start-up: a bare interpreter, `import budgetconf` alone and
  with a first `factory()` call, and `budgetconf explain` in both formats;
- the loop executor's cost per turn (the functions of loop_overhead.py);
- pricing one response that reports no cost, at a flat price and through
  genai-prices' calc_price;
- how a resolution scales with fields x sources (generated presets);
- `budgetconf report` on a 10,000-turn events file (the functions of report.py).

The in-process rows take their repetitions in rounds, every row once per
round, so a slow spell of the machine hits all of them alike; so do the
start-ups and the scaling cases. Each issue target is printed beside its row,
with whether it holds. `--quick` runs few repetitions of everything (a smoke
run for CI: its times mean little); `--json FILE` writes the rows and the
machine's facts.

    pip install -e '.[bench]'
    python bench/run.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import tomli_w
import yaml

import budgetconf

HERE = Path(__file__).resolve().parent

# The fixture: each source sets some fields, and together they set all eight.
GLOBAL = {"loop": {"max_steps": 12, "over_cap": "truncate"}, "limits": {"max_tokens": 100_000}}
PROJECT = {"loop": {"max_steps": 20, "max_tool_calls_per_turn": 8}, "limits": {"max_cost_usd": 2.5}}
WORKFLOW = {
    "loop": {"last_turn": "warn"},
    "steps": [{"name": "review", "loop": {"max_steps": 5}}],
}
#: budgetconf's variable -> (section, field, value); dynaconf and pydantic-settings
#: read the same value from BUDGETCONF_<SECTION>__<field>, their spelling of nesting.
VARIABLES = {
    "BUDGETCONF_MAX_STEPS": ("loop", "max_steps", "50"),
    "BUDGETCONF_MAX_TOOL_CALLS": ("limits", "max_tool_calls", "200"),
    "BUDGETCONF_TIMEOUT_SECONDS": ("limits", "timeout_seconds", "120"),
}
#: an administrator's policy, added with policy_file=: a ceiling below the env's 50
POLICY = {
    "loop": {"max_steps": {"max": 30}, "last_turn": {"value": "wrap_up"}},
    "limits": {"max_cost_usd": {"max": 5}, "timeout_seconds": {"max": 900}},
}
#: what the default preset resolves from the fixture (the yaml source does not set max_steps)
EXPECTED = {
    "loop.max_steps": 50,
    "loop.max_tool_calls_per_turn": 8,
    "loop.last_turn": "warn",
    "loop.over_cap": "truncate",
    "limits.max_tool_calls": 200,
    "limits.max_tokens": 100_000,
    "limits.max_cost_usd": 2.5,
    "limits.timeout_seconds": 120.0,
}
#: the shared ledger's fields, at their defaults: the fixture sets none of them
LEDGER_DEFAULTS = {
    "ledger.url": None,
    "ledger.scope": "default",
    "ledger.max_cost_usd": None,
    "ledger.max_tokens": None,
    "ledger.window": "day",
    "ledger.reserve_tokens": 4096,
    "ledger.reserve_cost_usd": 0.05,
    "ledger.lease_seconds": 300.0,
    "ledger.on_unavailable": "stop",
}
#: a fleet's ledger fields, at their defaults (budgetconf's alone: the other libraries' models
#: of the settings hold one scope)
FLEET_DEFAULTS = {
    "ledger.parents": None,
    "ledger.max_cost_usd_by_scope": {},
    "ledger.max_tokens_by_scope": {},
    "ledger.window_by_scope": {},
}
#: the price fields, at their defaults: the fixture sets none of them either
PRICE_DEFAULTS = {
    "prices.input_per_mtok": None,
    "prices.output_per_mtok": None,
    "prices.cached_input_per_mtok": None,
    "prices.table": "genai-prices",
    "prices.unknown": "refuse",
}
#: every field the fixture leaves at its default
DEFAULTS = {
    **LEDGER_DEFAULTS,
    **FLEET_DEFAULTS,
    **PRICE_DEFAULTS,
    "telemetry.otel": False,
    "tools.max_calls": {},
    "limits.warn_at": None,
    "loop.warn_model": False,
    "loop.max_repeats": None,
}
#: a table of three keys, for the row that sets one
TOOL_LIMITS = {"web_search": 3, "fetch": 10, "shell": 1}
OPENDOT_STEPS = "64"
OURS = ("BUDGETCONF_", "OPENDOT_")  # the prefixes of variables that would change what is read

#: the source kinds in rank order; the scaling stacks take them from this list
KINDS = ("default", "global", "project", "profile", "env", "yaml", "cli", "step", "explicit")
FIELD_COUNTS = (10, 100, 1000)
# "linear": a field x source costs the same at the large end as at the small end, within this
# factor (a cost that grew with the square would make it about ten)
LINEAR_SLOPES = 2.0


@dataclass
class Fixture:
    folder: Path
    home: Path
    global_file: Path
    project_file: Path
    workflow: Path
    env: dict[str, str]  # what resolve() is given: the variables and BUDGETCONF_HOME
    competitor_env: dict[str, str]  # the same values, spelt for dynaconf and pydantic-settings


@dataclass
class Row:
    name: str
    median_ns: float
    samples: int
    reading: str = ""  # a ratio, or an amount over a floor
    target: str = ""
    holds: bool | None = None


@dataclass
class Mode:
    quick: bool
    rounds: int  # in-process rounds
    sample_ns: int  # the time one sample of an in-process row aims at
    startups: int  # runs of each start-up command
    turns: int  # loop_overhead.py's turns and repetitions
    loop_repeat: int
    scale_rounds: dict[int, int]  # field count -> rounds

    @classmethod
    def of(cls, quick: bool) -> Mode:
        if quick:
            return cls(True, 3, 200_000, 3, 20, 3, {10: 3, 100: 2, 1000: 1})
        return cls(False, 61, 2_000_000, 21, 200, 31, {10: 101, 100: 41, 1000: 11})


# ---------------------------------------------------------------------------- helpers


def show_time(ns: float) -> str:
    us = ns / 1000
    if us < 10:
        return f"{us:.2f} µs"
    if us < 1000:
        return f"{us:.1f} µs"
    return f"{us / 1000:.1f} ms"


def times(factor: float) -> str:
    return f"{factor:.0f}x" if factor >= 10 else f"{factor:.1f}x"


Take = Callable[[int], float]  # take(n): do the thing n times; the mean ns of one


def batched(fn: Callable[[], object]) -> Take:
    """Time ``n`` calls of ``fn`` in one stretch (the loop's own cost is a few ns a call)."""

    def take(n: int) -> float:
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        return (time.perf_counter_ns() - start) / n

    return take


def calibrate(take: Take, sample_ns: int) -> int:
    """How many operations make one sample of about ``sample_ns``."""
    take(1)  # warm up: imports, caches
    once = min(take(1) for _ in range(3))
    return max(1, min(100_000, round(sample_ns / max(once, 1.0))))


def interleaved(takes: Mapping[str, Take], rounds: int, sample_ns: int) -> dict[str, list[float]]:
    """Samples of every row, one per row in each round, so all rows see the same machine."""
    sizes = {name: calibrate(take, sample_ns) for name, take in takes.items()}
    samples: dict[str, list[float]] = {name: [] for name in takes}
    for _ in range(rounds):
        for name, take in takes.items():
            samples[name].append(take(sizes[name]))
    return samples


@contextlib.contextmanager
def environ(values: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` and none of our other variables; then as it was."""
    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith(OURS)]:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def check(what: str, got: object, expected: object) -> None:
    if got != expected:
        raise RuntimeError(
            f"the benchmark measures a broken path: {what} is {got!r}, not {expected!r}"
        )


AN_HOUR_AGO = time.time_ns() - 3600 * 10**9
AN_HOUR_AHEAD = AN_HOUR_AGO + 2 * 3600 * 10**9


def settle(*paths: Path) -> None:
    """Make files an hour old, as a deployment's are.

    A file changed in the last few seconds is read again at every resolution
    (a preset file, loaded again), since its signature may not tell its
    versions apart: that is not the cost a settled deployment pays.
    """
    for path in paths:
        os.utime(path, ns=(AN_HOUR_AGO, AN_HOUR_AGO))


def fresh_copies(fx: Fixture) -> Fixture:
    """The fixture's files copied and dated an hour ahead: as recent as a file just written.

    A file whose modification time is less than three seconds old (or in the
    future) has a signature that may not tell its versions apart, so each
    resolution reads its bytes again to know it. Dating the copies ahead keeps
    them that recent for the whole measurement.
    """
    folder = fx.folder / "fresh"
    home = folder / "home"
    home.mkdir(parents=True)
    copies = [home / "settings.json", folder / "settings.toml", folder / "workflow.yaml"]
    for original, copy in zip((fx.global_file, fx.project_file, fx.workflow), copies, strict=True):
        copy.write_bytes(original.read_bytes())
        os.utime(copy, ns=(AN_HOUR_AHEAD, AN_HOUR_AHEAD))
    env = {**fx.env, "BUDGETCONF_HOME": str(home)}
    return Fixture(folder, home, *copies, env, fx.competitor_env)


def build_fixture(folder: Path) -> Fixture:
    home = folder / "home"
    home.mkdir()
    global_file = home / "settings.json"
    global_file.write_text(json.dumps(GLOBAL, indent=2), encoding="utf-8")
    project_file = folder / "settings.toml"
    project_file.write_text(tomli_w.dumps(PROJECT), encoding="utf-8")
    workflow = folder / "workflow.yaml"
    workflow.write_text(yaml.safe_dump(WORKFLOW, sort_keys=False), encoding="utf-8")
    settle(global_file, project_file, workflow)
    env = {"BUDGETCONF_HOME": str(home)}
    env.update({name: value for name, (_, _, value) in VARIABLES.items()})
    competitor_env = {
        f"BUDGETCONF_{section.upper()}__{key}": value for section, key, value in VARIABLES.values()
    }
    return Fixture(folder, home, global_file, project_file, workflow, env, competitor_env)


# ---------------------------------------------------------------------------- in process


def resolve_rows(fx: Fixture) -> dict[str, Take]:
    """resolve() warm and cold, and factory() against the floor."""

    def call() -> budgetconf.Resolution:
        return budgetconf.resolve(env=fx.env, project_file=fx.project_file, workflow=fx.workflow)

    res = call()
    check("resolve().values", dict(res.values), {**EXPECTED, **DEFAULTS})
    check("the locator of loop.max_steps", res.trace("loop.max_steps").locator,
          "env:BUDGETCONF_MAX_STEPS")  # fmt: skip

    calls = [0]
    changing = fx.folder / "changing.toml"  # its own file: the warm row's stay as they are

    def cold(n: int) -> float:
        """Rewrite a project file with a new value and a new mtime; time only the resolve()."""
        total = 0
        for _ in range(n):
            calls[0] += 1
            value = 1 + calls[0] % 1000  # never the last call's value
            project = {**PROJECT, "loop": {**PROJECT["loop"], "max_tool_calls_per_turn": value}}
            changing.write_text(tomli_w.dumps(project), encoding="utf-8")
            stamp = AN_HOUR_AGO + calls[0] * 1_000_000  # a new version, settled
            os.utime(changing, ns=(stamp, stamp))
            start = time.perf_counter_ns()
            got = budgetconf.resolve(env=fx.env, project_file=changing, workflow=fx.workflow)
            total += time.perf_counter_ns() - start
            check("the changed file's value", got["loop.max_tool_calls_per_turn"], value)
        return total / n

    factory = budgetconf.factory("agent.max_steps", preset="opendot")
    check("the opendot factory's value", factory(), int(OPENDOT_STEPS))

    def floor() -> int:
        return int(os.environ.get("OPENDOT_MAX_STEPS", "40"))

    policy = fx.folder / "policy.json"
    policy.write_text(json.dumps(POLICY, indent=2), encoding="utf-8")
    settle(policy)

    def call_policed() -> budgetconf.Resolution:
        return budgetconf.resolve(env=fx.env, project_file=fx.project_file,
                                  workflow=fx.workflow, policy_file=policy)  # fmt: skip

    check("the policy's ceiling on loop.max_steps", call_policed()["loop.max_steps"], 30)
    fresh = fresh_copies(fx)

    def call_fresh() -> budgetconf.Resolution:
        return budgetconf.resolve(env=fresh.env, project_file=fresh.project_file,
                                  workflow=fresh.workflow)  # fmt: skip

    check(
        "resolve().values over fresh files",
        dict(call_fresh().values),
        {**EXPECTED, **DEFAULTS},
    )
    tabled = fx.folder / "tabled.toml"  # the project file, and a table of three keys
    tabled.write_text(tomli_w.dumps({**PROJECT, "tools": {"max_calls": TOOL_LIMITS}}), "utf-8")
    settle(tabled)

    def call_tabled() -> budgetconf.Resolution:
        return budgetconf.resolve(env=fx.env, project_file=tabled, workflow=fx.workflow)

    check("the table's keys", dict(call_tabled()["tools.max_calls"]), TOOL_LIMITS)
    return {
        "resolve(), warm": batched(call),
        "resolve(), warm, with a three-key table set": batched(call_tabled),
        "resolve(), warm, with a policy file": batched(call_policed),
        "resolve(), warm: files written a moment ago": batched(call_fresh),
        "resolve(), cold: project file changed": cold,
        'factory("agent.max_steps", preset="opendot")()': batched(factory),
        'floor: int(os.environ.get("OPENDOT_MAX_STEPS", "40"))': batched(floor),
    }


def dynaconf_rows(fx: Fixture) -> dict[str, Take]:
    """dynaconf building a settings object over the three files and the environment."""
    from dynaconf import Dynaconf

    files = [str(fx.global_file), str(fx.project_file), str(fx.workflow)]

    def build() -> Any:
        # merge_enabled: sections merge field by field across files, as budgetconf's do
        return Dynaconf(
            settings_files=files,
            envvar_prefix="BUDGETCONF",
            merge_enabled=True,
            root_path=str(fx.folder),
        )

    settings = build()
    both = {f"loop.{k}": v for k, v in dict(settings.loop).items()}
    both.update({f"limits.{k}": v for k, v in dict(settings.limits).items()})
    check("dynaconf's values", both, EXPECTED)
    return {"dynaconf: Dynaconf(...).loop.max_steps": batched(lambda: build().loop.max_steps)}


def pydantic_rows(fx: Fixture) -> dict[str, Take]:
    """pydantic-settings over the environment and the global JSON file."""
    from pydantic import BaseModel
    from pydantic_settings import (
        BaseSettings,
        JsonConfigSettingsSource,
        PydanticBaseSettingsSource,
        SettingsConfigDict,
    )

    class Loop(BaseModel):
        max_steps: int = 40
        max_tool_calls_per_turn: int = 10
        last_turn: str = "wrap_up"
        over_cap: str = "reject"

    class Limits(BaseModel):
        max_tool_calls: int | None = None
        max_tokens: int | None = None
        max_cost_usd: float | None = None
        timeout_seconds: float | None = None

    class Ledger(BaseModel):  # the default preset's ledger fields, as resolve() reads them
        url: str | None = None
        scope: str = "default"
        max_cost_usd: float | None = None
        max_tokens: int | None = None
        window: str = "day"
        reserve_tokens: int = 4096
        reserve_cost_usd: float = 0.05
        lease_seconds: float = 300.0
        on_unavailable: str = "stop"

    class Prices(BaseModel):  # and its price fields
        input_per_mtok: float | None = None
        output_per_mtok: float | None = None
        cached_input_per_mtok: float | None = None
        table: str = "genai-prices"
        unknown: str = "refuse"

    class Settings(BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix="BUDGETCONF_", env_nested_delimiter="__", json_file=fx.global_file
        )
        loop: Loop = Loop()
        limits: Limits = Limits()
        ledger: Ledger = Ledger()
        prices: Prices = Prices()

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return init_settings, env_settings, JsonConfigSettingsSource(settings_cls)

    got = Settings()
    check("pydantic-settings' max_steps", got.loop.max_steps, EXPECTED["loop.max_steps"])
    check("pydantic-settings' max_tokens", got.limits.max_tokens, EXPECTED["limits.max_tokens"])
    check("pydantic-settings' timeout", got.limits.timeout_seconds, 120.0)
    ledger = {f"ledger.{name}": value for name, value in got.ledger.model_dump().items()}
    check("pydantic-settings' ledger", ledger, LEDGER_DEFAULTS)
    prices = {f"prices.{name}": value for name, value in got.prices.model_dump().items()}
    check("pydantic-settings' prices", prices, PRICE_DEFAULTS)
    return {
        "pydantic-settings: Settings().loop.max_steps": batched(lambda: Settings().loop.max_steps)
    }


def floor_rows(fx: Fixture) -> dict[str, Take]:
    """Reading each fixture file with the plain parser, and nothing else."""

    def read_json() -> Any:
        with open(fx.global_file, encoding="utf-8") as handle:
            return json.load(handle)

    def read_toml() -> Any:
        with open(fx.project_file, "rb") as handle:
            return tomllib.load(handle)

    def read_yaml() -> Any:
        with open(fx.workflow, encoding="utf-8") as handle:
            return yaml.safe_load(handle)

    check("json.load", read_json(), GLOBAL)
    check("yaml.safe_load", read_yaml(), WORKFLOW)
    return {
        "json.load(settings.json)": batched(read_json),
        "tomllib.load(settings.toml)": batched(read_toml),
        "yaml.safe_load(workflow.yaml)": batched(read_yaml),
    }


def in_process(fx: Fixture, mode: Mode) -> list[Row]:
    takes: dict[str, Take] = {}
    with environ({**fx.competitor_env, "OPENDOT_MAX_STEPS": OPENDOT_STEPS}):
        for family in (resolve_rows, dynaconf_rows, pydantic_rows, floor_rows):
            takes.update(family(fx))
        samples = interleaved(takes, mode.rounds, mode.sample_ns)
    fx.project_file.write_text(tomli_w.dumps(PROJECT), encoding="utf-8")  # as the cold row found it
    m = {name: statistics.median(runs) for name, runs in samples.items()}
    rows = {name: Row(name, m[name], len(runs)) for name, runs in samples.items()}

    warm = m["resolve(), warm"]
    row = rows["resolve(), warm"]
    row.target, row.holds = "< 100 µs", warm < 100_000
    tabled = "resolve(), warm, with a three-key table set"
    rows[tabled].target, rows[tabled].holds = "<= 1.2x the call without", m[tabled] <= 1.2 * warm
    rows[tabled].reading = f"{times(m[tabled] / warm)} the call without"
    policed = "resolve(), warm, with a policy file"
    rows[policed].target, rows[policed].holds = "<= 100 µs", m[policed] <= 100_000
    rows[policed].reading = f"{times(m[policed] / warm)} the call without"
    fresh = "resolve(), warm: files written a moment ago"
    rows[fresh].target, rows[fresh].holds = "<= 100 µs", m[fresh] <= 100_000
    rows[fresh].reading = f"{times(m[fresh] / warm)} the settled call"
    cold = "resolve(), cold: project file changed"
    rows[cold].reading = f"{times(m[cold] / warm)} the warm call"
    for name, need in (
        ("dynaconf: Dynaconf(...).loop.max_steps", 100),
        ("pydantic-settings: Settings().loop.max_steps", 8),
    ):
        faster = m[name] / warm
        rows[name].reading = f"resolve() {times(faster)} faster"
        rows[name].target, rows[name].holds = f"resolve() >= {need}x faster", faster >= need
    name = 'factory("agent.max_steps", preset="opendot")()'
    over = m[name] / m['floor: int(os.environ.get("OPENDOT_MAX_STEPS", "40"))']
    rows[name].reading = f"{times(over)} the floor"
    rows[name].target, rows[name].holds = "<= 2x the floor", over <= 2
    return list(rows.values())


# ---------------------------------------------------------------------------- start-up


def budgetconf_command() -> tuple[list[str], str]:
    """The console script beside the interpreter, else ``python -m budgetconf``; and which."""
    script = Path(sys.executable).with_name("budgetconf")
    if script.is_file():
        return [str(script)], f"the console script {script}"
    return [sys.executable, "-m", "budgetconf"], f"{sys.executable} -m budgetconf"


FIRST_USE = "import budgetconf; budgetconf.factory('agent.max_steps', preset='opendot')()"


def startup_rows(fx: Fixture, mode: Mode) -> list[Row]:
    """Whole processes, run in the fixture's folder with its variables; interleaved."""
    cli, _ = budgetconf_command()
    commands = {
        "start-up: python -c pass": [sys.executable, "-c", "pass"],
        'start-up: python -c "import budgetconf"': [sys.executable, "-c", "import budgetconf"],
        # the first resolution reads the preset file, which brings tomllib (and typing) along
        "start-up: import budgetconf, factory(...)()": [sys.executable, "-c", FIRST_USE],
        "start-up: budgetconf explain --format json": [*cli, "explain", "--format", "json"],
        "start-up: budgetconf explain (table)": [*cli, "explain"],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(OURS)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # compiled modules kept in the fixture: the warm-up writes them, the timed runs read them,
    # as an installed package's are, whether or not the source tree may hold a __pycache__
    env["PYTHONPYCACHEPREFIX"] = str(fx.folder / "pycache")
    env.update(fx.env)
    # explain's values: a row for each field, and for each key of a table
    expected = budgetconf.resolve(env=fx.env, project_file=fx.project_file).to_dict()["values"]

    def run(name: str, command: list[str]) -> int:
        start = time.perf_counter_ns()
        done = subprocess.run(command, cwd=fx.folder, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter_ns() - start
        if done.returncode != 0:
            raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.decode()}")
        if command[-1] == "json":
            check("explain's values", json.loads(done.stdout)["values"], expected)
        elif command[-1] == "explain":
            check("a row of the table", b"loop.max_steps" in done.stdout, True)
        return elapsed

    samples: dict[str, list[float]] = {name: [] for name in commands}
    for name, command in commands.items():
        run(name, command)  # warm up: compile to bytecode, fill the file system's caches
    for _ in range(mode.startups):
        for name, command in commands.items():
            samples[name].append(run(name, command))
    m = {name: statistics.median(runs) for name, runs in samples.items()}
    rows = {name: Row(name, m[name], len(runs)) for name, runs in samples.items()}
    bare = m["start-up: python -c pass"]
    for name in list(commands)[1:]:
        rows[name].reading = f"+{show_time(m[name] - bare)} over bare"
    row = rows['start-up: python -c "import budgetconf"']
    row.target, row.holds = "<= 25 ms over bare", m[row.name] - bare <= 25e6
    row = rows["start-up: budgetconf explain --format json"]
    row.target, row.holds = "< 150 ms whole", m[row.name] < 150e6
    return list(rows.values())


# ---------------------------------------------------------------------------- loop executor


#: the targets of the rows measured over another row: what each may add per turn, in ns
_OVER_TARGETS: Final = {
    "LoopExecutor.run, as a sub-agent": ("≤ 5 µs over run (docs)", 5_000),
}


def loop_rows(mode: Mode) -> list[Row]:
    """loop_overhead.py's three loops, per turn; its functions, not a copy of them."""
    spec = importlib.util.spec_from_file_location("loop_overhead", HERE / "loop_overhead.py")
    assert spec is not None
    assert spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        samples = module.measure(mode.turns, mode.loop_repeat)
    finally:
        module._RUNNER.close()
    per_turn = {name: statistics.median(runs) / mode.turns for name, runs in samples.items()}
    floor = per_turn["hand-written loop"]
    rows = []
    for name, ns in per_turn.items():
        row = Row(f"loop: {name}, per turn", ns, len(samples[name]))
        base = module.OVER.get(name)
        if base is not None:  # a sub-agent's turn or a priced one, against the row it adds to
            over = ns - per_turn[base]
            row.reading = f"+{show_time(over)} over {base.removeprefix('LoopExecutor.run, ')}"
            if name in _OVER_TARGETS:
                row.target, limit = _OVER_TARGETS[name]
                row.holds = over <= limit
        elif name != "hand-written loop":
            row.reading = f"+{show_time(ns - floor)} over hand-written"
            row.target, row.holds = "< 15 µs over (docs)", ns - floor < 15_000
        rows.append(row)
    return rows


def price_rows(mode: Mode) -> list[Row]:
    """Pricing one response that reports no cost, as the Meter does, after the model's first
    lookup: at a flat price (budgetconf's own arithmetic), and through calc_price (a tiered
    price). The loop rows above show the same inside a whole turn."""
    from budgetconf._prices import NO_PRICES
    from budgetconf._prices._pricing import Pricing
    from budgetconf._usage import Usage

    usage = Usage(1200, 200, 300)
    takes = {}
    for name, model in (
        ("prices: one response at a flat price (gpt-4o-mini)", "gpt-4o-mini"),
        ("prices: one response through calc_price (gemini-2.5-pro)", "gemini-2.5-pro"),
    ):
        pricing = Pricing(NO_PRICES, model, "openai" if model.startswith("gpt") else "google")
        check(f"{model}'s price", pricing.cost(usage) is not None, True)
        takes[name] = batched(functools.partial(pricing.cost, usage))
    samples = interleaved(takes, mode.rounds, mode.sample_ns)
    rows = [Row(name, statistics.median(runs), len(runs)) for name, runs in samples.items()]
    rows[0].target, rows[0].holds = "≤ 2 µs (PRICES.md)", rows[0].median_ns <= 2_000
    return rows


def report_rows(folder: Path, mode: Mode) -> list[Row]:
    """report.py's measure: `budgetconf report` on a 10,000-turn events file, as a process."""
    spec = importlib.util.spec_from_file_location("report_bench", HERE / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder.mkdir()
    found = module.measure(folder, 10_000, 1 if mode.quick else 5)
    median = statistics.median(found["times_ns"])
    written = found["page_bytes"]
    row = Row("report: 10,000-turn events file", median, len(found["times_ns"]))
    row.reading = f"{written / 1e6:.2f} MB written from {found['events_bytes'] / 1e6:.1f} MB"
    row.target, row.holds = "< 2 s, < 5 MB (issue)", median < 2e9 and written < 5_000_000
    return [row]


# ---------------------------------------------------------------------------- scaling


def stack_of(size: int) -> tuple[str, ...]:
    """The kinds of a stack of ``size`` sources: default, the next ones in rank, explicit on top.

    ``explicit`` is in every stack but the default-only one, so a repetition can change
    one of its values: identical inputs may be answered from a memo without a merge.
    """
    if size == 1:
        return ("default",)
    return ("default", *KINDS[1 : size - 1], "explicit")


def scale_preset(folder: Path, fields: int, kinds: tuple[str, ...]) -> Path:
    lines = ["format = 1", f'name = "scale-{fields}-{len(kinds)}"', ""]
    for kind in kinds:
        lines += ["[[sources]]", f'kind = "{kind}"', ""]
    for i in range(fields):
        lines += [
            f'[fields."s.f{i:04d}"]',
            'type = "int"',
            f"default = {i}",
            f'env = ["SCALE_F{i:04d}"]',
            f'flags = ["--f{i:04d}"]',
            "",
        ]
    path = folder / f"preset-{fields}-{len(kinds)}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    settle(path)
    return path


def scale_inputs(folder: Path, fields: int) -> dict[str, Any]:
    """Every source's value for every field (source i gives field j the value 10_000 i + j)."""

    def values(kind: str) -> dict[str, int]:
        return {f"f{j:04d}": 10_000 * KINDS.index(kind) + j for j in range(fields)}

    suffix = {"global": "json", "project": "toml", "profile": "json"}
    files = {kind: folder / f"{kind}-{fields}.{ext}" for kind, ext in suffix.items()}
    files["global"].write_text(json.dumps({"s": values("global")}, indent=2), encoding="utf-8")
    files["project"].write_text(tomli_w.dumps({"s": values("project")}), encoding="utf-8")
    files["profile"].write_text(json.dumps({"s": values("profile")}, indent=2), encoding="utf-8")
    # written by hand: yaml.safe_dump takes a second for the largest
    workflow = ["s:", *(f"  {k}: {v}" for k, v in values("yaml").items())]
    workflow += ["steps:", "  - name: bench", "    s:"]
    workflow += [f"      {k}: {v}" for k, v in values("step").items()]
    (folder / f"workflow-{fields}.yaml").write_text("\n".join(workflow) + "\n", encoding="utf-8")
    settle(*files.values(), folder / f"workflow-{fields}.yaml")
    return {
        "global_file": files["global"],
        "project_file": files["project"],
        "profile": files["profile"],
        "env": {f"SCALE_{k.upper()}": str(v) for k, v in values("env").items()},
        "argv": [part for k, v in values("cli").items() for part in (f"--{k}", str(v))],
        "workflow": folder / f"workflow-{fields}.yaml",
        "explicit": {f"s.{k}": v for k, v in values("explicit").items()},
    }


memo_hits: set[str] = set()  # the presets whose resolution came from a memo


def scale_call(preset: Path, kinds: tuple[str, ...], inputs: dict[str, Any]) -> Take:
    """Resolve with a new explicit value (default-only: a new, unread variable) each time.

    A default-only stack reads nothing that can change; if resolve() answers it
    from a memo, the row says so (``memo_hits``) rather than pass for a merge.
    """
    args: dict[str, Any] = {"env": dict(inputs["env"]) if "env" in kinds else {}}
    for kind, argument in (
        ("global", "global_file"),
        ("project", "project_file"),
        ("profile", "profile"),
        ("cli", "argv"),
        ("yaml", "workflow"),
        ("explicit", "explicit"),
    ):
        if kind in kinds:
            args[argument] = inputs[argument]
    if "step" in kinds:
        args["step"] = "bench"
    top = kinds[-1]
    last_field = f"s.f{len(inputs['explicit']) - 1:04d}"
    calls = [0]
    last: list[object] = [None]

    def take(n: int) -> float:
        total = 0
        for _ in range(n):
            calls[0] += 1
            if top == "explicit":
                args["explicit"] = {**inputs["explicit"], "s.f0000": calls[0]}
            else:
                args["env"] = {**args["env"], "SCALE_UNREAD": str(calls[0])}
            start = time.perf_counter_ns()
            res = budgetconf.resolve(preset, **args)
            total += time.perf_counter_ns() - start
            check(f"s.f0000 of {preset.name}", res["s.f0000"], calls[0] if top == "explicit" else 0)
            offers = len(res.trace(last_field).candidates)
            check(f"the sources that gave {last_field} in {preset.name}", offers, len(kinds))
            if res is last[0]:
                memo_hits.add(preset.name)
            last[0] = res
        return total / n

    return take


def scale_rows(folder: Path, mode: Mode) -> list[Row]:
    """Time per resolution for 10 to 1,000 fields and 1 to 9 sources, each giving every field."""
    folder.mkdir()
    rows: list[Row] = []
    merged: dict[int, list[tuple[int, float]]] = {}  # fields -> (fields x sources, median ns)
    for fields in FIELD_COUNTS:
        inputs = scale_inputs(folder, fields)
        takes: dict[str, tuple[Take, str, int]] = {}
        for size in range(1, len(KINDS) + 1):
            kinds = stack_of(size)
            preset = scale_preset(folder, fields, kinds)
            name = f"scale: {fields:,} fields × {size} source{'s' if size > 1 else ''}"
            takes[name] = (scale_call(preset, kinds, inputs), preset.name, fields * size)
        for take, _, _ in takes.values():
            take(1)  # warm up: load the preset, parse the files
        samples: dict[str, list[float]] = {name: [] for name in takes}
        for _ in range(mode.scale_rounds[fields]):  # the stacks interleaved
            for name, (take, _, _) in takes.items():
                samples[name].append(take(1))
        for name, (_, preset_name, cells) in takes.items():
            m = statistics.median(samples[name])
            row = Row(name, m, len(samples[name]), f"{show_time(m / cells)} per field×source")
            if preset_name in memo_hits:
                row.reading += ", from a memo: no merge"
            else:
                merged.setdefault(fields, []).append((cells, m))
            rows.append(row)
    rows.append(linearity(merged))
    return rows


def linearity(merged: Mapping[int, list[tuple[int, float]]]) -> Row:
    """What one more field x source costs, at the small end and at the large end.

    For each stack, the cost of the 90 (or 900) cells added by going from 10
    to 100 fields (or from 100 to 1,000), per cell; the median over the
    stacks resists one slow cell. A cost that grows linearly costs the same
    per cell at both ends; one that grew with the square would cost ten
    times more at the large end.
    """
    # fields -> {sources: median ns}
    by_stack = {fields: {cells // fields: t for cells, t in merged[fields]} for fields in merged}
    small, middle, large = (by_stack[fields] for fields in FIELD_COUNTS)
    low, mid, high = FIELD_COUNTS
    stacks = sorted(small.keys() & middle.keys() & large.keys())
    slope_small = statistics.median((middle[n] - small[n]) / ((mid - low) * n) for n in stacks)
    slope_large = statistics.median((large[n] - middle[n]) / ((high - mid) * n) for n in stacks)
    ratio = slope_large / slope_small
    return Row(
        "scale: cost per added field×source",
        slope_large,
        3 * len(stacks),
        f"{times(ratio)} the small schemas' {show_time(slope_small)}",
        f"linear: slopes within {LINEAR_SLOPES:.0f}x",
        ratio <= LINEAR_SLOPES,
    )


# ---------------------------------------------------------------------------- the table


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {
            name: importlib.metadata.version(name)
            for name in ("budgetconf", "dynaconf", "pydantic-settings", "pydantic", "PyYAML")
        },
    }


def render(groups: list[list[Row]], header: list[str]) -> str:
    """One table: a blank line between the row families, the columns aligned."""
    head = ("measurement", "median", "reading", "target", "holds")
    verdict = {None: "", True: "yes", False: "NO"}
    table = [
        [(r.name, show_time(r.median_ns), r.reading, r.target, verdict[r.holds]) for r in group]
        for group in groups
    ]
    widths = [
        max(len(c[i]) for c in [head, *(cell for cells in table for cell in cells)])
        for i in range(len(head))
    ]

    def line(cell: tuple[str, ...]) -> str:
        name, value, reading, target, holds = cell
        return "  ".join(
            [
                name.ljust(widths[0]),
                value.rjust(widths[1]),
                reading.ljust(widths[2]),
                target.ljust(widths[3]),
                holds,
            ]
        ).rstrip()

    lines = [*header, "", line(head)]
    for cells in table:
        lines += ["", *(line(cell) for cell in cells)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    mode = Mode.of(args.quick)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="budgetconf-bench-") as tmp:
        fx = build_fixture(Path(tmp))
        groups = [
            in_process(fx, mode),
            startup_rows(fx, mode),
            loop_rows(mode),
            price_rows(mode),
            scale_rows(Path(tmp) / "scale", mode),
            report_rows(Path(tmp) / "report", mode),
        ]
    rows = [row for group in groups for row in group]
    facts = machine()
    _, startup = budgetconf_command()
    header = [
        f"python {facts['python']}, {facts['platform']}, {facts['cpu_count']} CPUs;"
        f" budgetconf {facts['versions']['budgetconf']}",
        f"{'quick' if mode.quick else 'full'} run in {time.perf_counter() - began:.0f} s:"
        f" {mode.rounds} interleaved rounds in process, {mode.startups} start-ups of each"
        f" command, {mode.loop_repeat} loops of {mode.turns} turns",
        f"budgetconf's commands run {startup}, in the fixture's folder with its variables",
        "start-ups read compiled modules from a PYTHONPYCACHEPREFIX that the warm-up run fills",
    ]
    print(render(groups, header))
    if args.json:
        report = {
            "mode": "quick" if mode.quick else "full",
            "machine": facts,
            "budgetconf_command": startup,
            "seconds": time.perf_counter() - began,
            "rows": {
                r.name: {
                    "median_us": r.median_ns / 1000,
                    "samples": r.samples,
                    "reading": r.reading,
                    "target": r.target,
                    "holds": r.holds,
                }
                for r in rows
            },
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
