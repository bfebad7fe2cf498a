"""budgetconf.events: one vocabulary every run records in, docs/loop.md's table, the sink's
open_run and close_run, and the events file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import budgetconf
from budgetconf import UsageError
from budgetconf.events import COMMON, TYPES, VERSION, EventsFile, RunInfo, table, version_of
from budgetconf.loop import LoopExecutor, ScriptedModel, current_run

from helpers import DOCS


def call(cid: str, name: str = "echo") -> dict[str, Any]:
    """A call to ``echo`` (with its text), or to another tool with no arguments."""
    return {"id": cid, "name": name, "arguments": {"text": "x"} if name == "echo" else {}}


def busy_run(tmp_path: Path, sink: Any = None) -> Any:
    """A run that records nearly every type: a child, a rejected batch, a truncated one, an
    unknown tool, the ledger, the last-turn notice, a budget's stop."""

    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        child = ScriptedModel([{"content": "done"}])
        return LoopExecutor(child, budget=handle.carve(max_steps=2)).run("go").output

    script: list[dict[str, Any]] = [
        {"tool_calls": [call("a"), call("b"), call("c")]},  # over the cap of 2: rejected
        {"tool_calls": [call("d"), call("e", "nope")]},
        {"tool_calls": [call("f", "spawn")], "usage": {"total_tokens": 5}},
        {"tool_calls": [call("g")]},  # the last turn: not executed
    ]
    env = {
        "BUDGETCONF_MAX_STEPS": "4",
        "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN": "2",
        "BUDGETCONF_LEDGER_URL": f"sqlite:///{tmp_path / 'ledger.db'}",
    }
    tools: dict[str, Any] = {"echo": lambda text: text, "spawn": spawn}
    ex = LoopExecutor(ScriptedModel(script), tools, budgetconf.resolve(env=env), on_event=sink)
    return ex.run("go")


def test_every_event_a_run_records_is_in_the_vocabulary_with_its_keys(tmp_path: Path) -> None:
    """Each event's type is one of TYPES, and its keys are the common ones and its type's."""
    result = busy_run(tmp_path)
    seen = {e["type"] for e in result.events}
    assert {"run_started", "batch_rejected", "tool_refused", "child_start", "child_end"} <= seen
    assert {"ledger_reserve", "ledger_settle", "last_turn_notice", "budget_exhausted"} <= seen
    common = {key for key, _ in COMMON}
    for event in result.events:
        kind = TYPES[event["type"]]
        declared = {key for key, _ in kind.keys}
        extra = set(event) - common - declared
        if "…" in declared:  # a stop's event repeats the limit's own keys
            assert event["type"] in ("budget_exhausted", "ledger_refused")
        else:
            assert extra == set(), event["type"]


def test_run_started_names_the_version_the_run_and_what_it_resumes(tmp_path: Path) -> None:
    model = ScriptedModel([{"tool_calls": [call("a")]}])
    ex = LoopExecutor(model, {"echo": lambda text: text}, {"loop.max_steps": 1}, name="scout")
    first = ex.run("go")
    started = first.events[0]
    assert (started["version"], started["name"], started["preset"]) == (
        VERSION,
        "scout",
        "budgetconf",
    )
    assert (started["framework"], started["resumed_from"]) == (None, None)
    more = ex.resume(first, extra_steps=1)
    assert more.events[0]["resumed_from"] == first.run_id
    plain = LoopExecutor(model, {"echo": lambda text: text}, {"loop.max_steps": 1}).run("go")
    assert plain.events[0]["name"] == "budgetconf"  # the preset's name


def test_a_run_recorded_without_a_version_is_version_1() -> None:
    assert version_of({"type": "run_started"}) == 1
    assert version_of({"type": "run_started", "version": 2}) == 2
    assert version_of({"type": "run_started", "version": "2"}) == 1


def test_docs_loop_md_shows_the_vocabulary_as_it_is() -> None:
    """The events table in docs/loop.md is budgetconf.events.table(), whole."""
    assert table() in (DOCS / "loop.md").read_text(encoding="utf-8")


class Recorder:
    """A sink with open_run and close_run, noting each call and what was current then."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.calls.append(("event", event["type"]))

    def open_run(self, run: RunInfo) -> None:
        self.calls.append(("open", run))

    def close_run(self, run: RunInfo) -> None:
        self.calls.append(("close", run))


def test_a_sink_opens_before_the_first_event_and_closes_after_the_last() -> None:
    sink = Recorder()
    result = LoopExecutor(ScriptedModel([{"content": "hi"}]), on_event=sink, name="n").run("go")
    kinds = [kind for kind, _ in sink.calls]
    assert kinds[0] == "open"
    assert kinds[-1] == "close"
    assert kinds.count("open") == kinds.count("close") == 1
    opened = sink.calls[0][1]
    assert (opened.run_id, opened.name, opened.preset, opened.parent) == (
        result.run_id,
        "n",
        "budgetconf",
        None,
    )
    assert sink.calls[-1][1] is opened


def test_a_childs_run_info_names_its_parent() -> None:
    sink = Recorder()
    infos: list[RunInfo] = []

    def spawn() -> str:
        handle = current_run()
        assert handle is not None
        child = LoopExecutor(
            ScriptedModel([{"content": "ok"}]), budget=handle.carve(), on_event=sink
        )
        child.run("go")
        return "spawned"

    model = ScriptedModel([{"tool_calls": [call("s", "spawn")]}, {"content": "done"}])
    parent = LoopExecutor(model, {"spawn": spawn}, on_event=sink).run("go")
    infos = [info for kind, info in sink.calls if kind == "open"]
    assert infos[0].run_id == parent.run_id
    child = infos[1]
    assert child.parent is not None
    assert child.parent.run_id == parent.run_id
    assert repr(child) == f"RunInfo('budgetconf', run_id={child.run_id!r})"


def test_a_sink_whose_open_run_raises_fails_the_run_before_any_call() -> None:
    class Broken(Recorder):
        def open_run(self, run: RunInfo) -> None:
            raise RuntimeError("no exporter")

    model = ScriptedModel([{"content": "hi"}])
    result = LoopExecutor(model, on_event=Broken()).run("go")
    assert (result.status.value, result.stop_reason, model.calls) == ("failed", "error", 0)
    assert "on_event raised RuntimeError: no exporter" in result.message


def test_ctrl_c_in_a_sinks_open_run_is_not_taken_for_the_sinks_fault() -> None:
    """A KeyboardInterrupt from open_run reaches the caller, as it would from anywhere else."""

    class Interrupted(Recorder):
        def open_run(self, run: RunInfo) -> None:
            raise KeyboardInterrupt

    model = ScriptedModel([{"content": "hi"}])
    with pytest.raises(KeyboardInterrupt):
        LoopExecutor(model, on_event=Interrupted()).run("go")
    assert model.calls == 0


def test_the_events_file_appends_one_json_line_an_event(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "earlier"}\n')
    with EventsFile(str(path)) as sink:
        LoopExecutor(ScriptedModel([{"content": "hi"}]), on_event=sink).run("go")
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"type": "earlier"}  # never lost
    assert [json.loads(line)["type"] for line in lines[1:]] == [
        "run_started",
        "turn_started",
        "model_response",
        "stopped",
    ]
    assert sink.lost is None


def test_a_fifo_no_process_reads_is_refused_naming_the_label(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"^--events .*pipe: a FIFO that no process reads$"):
        EventsFile(str(fifo), label=f"--events {fifo}")
