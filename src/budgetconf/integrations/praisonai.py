"""Run a praisonaiagents `Agent` within a budgetconf budget, and report its stop.

`limits(res)` gives ``{"execution": ExecutionConfig(...)}`` for ``Agent(...,
**limits(res))``; `run(agent, prompt, budget)` lends the budget to the agent's
``execution`` for one ``agent.start(prompt, stream=False, output="silent")``,
restores the agent's own afterwards (also when the run raises), and maps
``agent.last_stop_reason`` to a `BridgeResult`. ``budget=None`` resolves the
``praisonai`` preset.

=========================  ==============================================================
budget                     enforced by
=========================  ==============================================================
max_steps                  the framework: ``ExecutionConfig(max_steps=…)``; one model
                           response a step, the last response's tools run
max_tokens                 the bridge (`run()` only): the usage each response reports, and
                           a cancel token the framework checks before that response's
                           tools; a response that reaches the budget stops the run
max_tool_calls_per_turn    nobody: the OpenAI-native loop never reads it (the LiteLLM
                           loop reads it as a cap on one run's calls). Its preset default
                           is passed along and left unenforced; a value set anywhere else
                           is refused
max_tool_calls, cost,      nobody: refused when set
timeout
=========================  ==============================================================

Turns are the model responses the bridge saw, counted through the
framework's ``llm_end`` display callback (one a call of the native loop):
the bridge relays that callback while a run lasts and passes every event on
to the one registered before, which it puts back afterwards. For the run, it
also turns off ``output_continuation``, whose extra calls after an answer cut
at the length limit would not count against ``max_steps``: such an answer
ends the run as ``length_truncated``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from budgetconf._loop_table import BudgetName, StopReason
from budgetconf._usage import Unreadable, reported_tokens
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    ended,
    refuse_conflicting,
    stopped,
    unreadable,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from typing import Any, Final

    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.loop._budget import Budget

try:
    import praisonaiagents  # type: ignore[import-untyped]  # noqa: F401  (lazy)
except ImportError:
    raise missing("praisonai", "praisonaiagents", "praisonai") from None

__all__ = ["limits", "run"]

FRAMEWORK: Final = FRAMEWORKS["praisonai"]
PRESET: Final = "praisonai"

#: the framework's last_stop_reason for a run no budget stopped -> the stop it reports
_ENDED: Final = {
    "completed": StopReason.COMPLETED,
    "error": StopReason.ERROR,
    "cancelled": StopReason.CANCELLED,
    "content_filtered": StopReason.CONTENT_FILTERED,
    "refused": StopReason.REFUSED,
    "length_truncated": StopReason.LENGTH_TRUNCATED,
}


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"execution": ExecutionConfig(max_steps=…, max_tool_calls_per_turn=…)}`` for `Agent`.

    ``budget`` None resolves the ``praisonai`` preset with ``resolve_kwargs``.
    A budget set that `ExecutionConfig` does not enforce is a `UsageError`.
    """
    checked = bridge_budget(
        FRAMEWORK, _preset(budget), resolve_kwargs, through="limits", default_preset=PRESET
    )
    from praisonaiagents import ExecutionConfig

    return {"execution": ExecutionConfig(**FRAMEWORK.keywords(checked, {})["execution"])}


def run(
    agent: Any,
    input: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.start(input)`` within ``budget``; a budget stop is a result, not an error.

    ``framework_kwargs`` go to ``agent.start`` (``stream=True`` is refused: the
    bridge reads the finished answer). Any exception of the run is re-raised
    unchanged, after the agent's own ``execution`` is put back.
    """
    refuse_conflicting(FRAMEWORK, framework_kwargs)
    if framework_kwargs.get("stream"):
        raise UsageError(
            "stream=True: run() reads the finished answer; to stream, pass"
            " **limits(...) to Agent and iterate agent.start(...) yourself"
        )
    checked = bridge_budget(
        FRAMEWORK, _preset(budget), {}, through="run", unenforced=unenforced, default_preset=PRESET
    )
    _refuse_resumed(agent)
    watch = _Watch(checked.value(BudgetName.MAX_TOKENS), framework_kwargs.pop("cancel_token", None))
    framework_kwargs["cancel_token"] = watch  # set by a budget spent or a usage unreadable
    framework_kwargs.setdefault("stream", False)
    framework_kwargs.setdefault("output", "silent")
    answer = _started(agent, input, _execution(agent, checked), watch, framework_kwargs)
    # every test runs this line, but coverage's tracer loses the calling frames inside start()
    output = _text(answer) or watch.text  # pragma: no cover
    return _result(checked, str(agent.last_stop_reason), output, watch, answer)  # pragma: no cover


def _started(
    agent: Any, input: str, execution: Any, watch: _Watch, kwargs: Mapping[str, Any]
) -> object:
    """``agent.start(input)`` with ``execution`` lent to it, while ``watch`` hears its calls."""
    with _lent(agent, execution), _watching(watch):
        return agent.start(input, **kwargs)


def _preset(budget: object) -> object:
    """A mapping of field values is read by the ``praisonai`` preset, as budget=None is."""
    if isinstance(budget, Mapping):
        from budgetconf._resolve import resolve

        return resolve(PRESET, explicit=budget)
    return budget


def _execution(agent: Any, budget: Budget) -> Any:
    """The agent's own `ExecutionConfig` with the budget's values, and no continuation calls."""
    from praisonaiagents import ExecutionConfig

    values = {**FRAMEWORK.keywords(budget, {})["execution"], "output_continuation": False}
    own = getattr(agent, "execution", None)
    if isinstance(own, ExecutionConfig):
        import dataclasses  # with the framework's config: praisonaiagents loads it by then

        return dataclasses.replace(own, **values)
    return ExecutionConfig(**values)


def _refuse_resumed(agent: Any) -> None:
    """A durable run being resumed counts its earlier steps against the budget: refused."""
    own = getattr(agent, "execution", None)
    if getattr(own, "durable", False) and getattr(own, "resume_run_id", None):
        raise UsageError(
            "execution.resume_run_id: a resumed durable run counts its earlier steps against"
            " max_steps; run() gives the budget to one whole run, so resume it with agent.start"
        )


@contextmanager
def _lent(agent: Any, execution: Any) -> Iterator[None]:
    """The agent runs with ``execution``; its own is put back afterwards, also on error."""
    own = {name: getattr(agent, name) for name in ("execution", "_execution_config")}
    for name in own:
        setattr(agent, name, execution)
    try:
        yield
    finally:
        for name, value in own.items():
            setattr(agent, name, value)


class _Watch:
    """One run's model responses, as the ``llm_end`` callback reports them; and its cancel token.

    The framework checks the token before a response's tools run and before
    each call: it is set when the responses' tokens reach ``limit``, or when
    the caller's own token (or the agent's interrupt controller) is.
    """

    def __init__(self, limit: int | float | None, theirs: Any) -> None:
        self.limit = limit
        self.theirs = theirs
        self.turns = 0
        self.tokens = 0
        self.spent = False  # the token budget stopped the run
        self.fault: Unreadable | None = None  # a usage no response can report stopped it
        self.text = ""  # the last text sent along with tool calls

    def response(self, tokens_in: Any = 0, tokens_out: Any = 0, **_: Any) -> None:
        self.turns += 1
        try:
            used = reported_tokens(
                reported_tokens(tokens_in or 0, "usage.prompt_tokens")
                + reported_tokens(tokens_out or 0, "usage.completion_tokens"),
                "usage.prompt_tokens + usage.completion_tokens",
            )
        except Unreadable as exc:  # the framework stops at the token, before the tools
            self.fault = self.fault or exc
            return
        self.tokens += used
        if self.limit is not None and self.tokens >= self.limit:
            self.spent = True

    def content(self, content: Any = None, **_: Any) -> None:
        if isinstance(content, str) and content:
            self.text = content

    def is_set(self) -> bool:
        theirs = self.theirs
        stopped = self.spent or self.fault is not None
        return stopped or bool(theirs is not None and theirs.is_set())

    @property
    def reason(self) -> str | None:
        if self.fault is not None:
            return "a response's usage cannot be read"
        return "the token budget is spent" if self.spent else getattr(self.theirs, "reason", None)


_local = threading.local()
_lock = threading.Lock()
_saved: dict[str, Any] = {}
_runs = 0


def _relay(event: str, handle: Callable[..., None]) -> Callable[..., None]:
    """The display callback the bridge registers for ``event`` while runs last."""

    def relay(**kwargs: Any) -> None:
        watch = getattr(_local, "watch", None)
        if watch is not None:
            handle(watch, **kwargs)
        theirs = _saved.get(event)
        if theirs is not None:  # the callback registered before the run still hears it
            from praisonaiagents.main import _filter_callback_kwargs  # type: ignore[import-untyped]

            theirs(**_filter_callback_kwargs(theirs, kwargs))

    return relay


_RELAYS: Final[Mapping[str, Callable[..., None]]] = {
    "llm_end": _relay("llm_end", _Watch.response),
    "llm_content": _relay("llm_content", _Watch.content),
}


@contextmanager
def _watching(watch: _Watch) -> Iterator[None]:
    """While the block runs on this thread, ``watch`` hears each model response.

    The framework keeps one display callback an event, for the whole process:
    the first run to start registers the relays, the last to end puts back
    what was there (unless something replaced the relays meanwhile).
    """
    global _runs
    from praisonaiagents import main

    with _lock:
        if _runs == 0:
            with main._callbacks_lock:
                for event, relay in _RELAYS.items():
                    _saved[event] = main.sync_display_callbacks.get(event)
                    main.sync_display_callbacks[event] = relay
        _runs += 1
    outer, _local.watch = getattr(_local, "watch", None), watch
    try:
        yield
    finally:
        _local.watch = outer
        with _lock:
            _runs -= 1
            if _runs == 0:
                _restore(main)


def _restore(main: Any) -> None:
    with main._callbacks_lock:
        for event, relay in _RELAYS.items():
            theirs = _saved.pop(event, None)
            if main.sync_display_callbacks.get(event) is not relay:
                continue  # registered during the run: it stays
            if theirs is None:
                del main.sync_display_callbacks[event]
            else:
                main.sync_display_callbacks[event] = theirs


def _text(answer: object) -> str:
    """The run's answer as text: ``start()`` gives None after an error."""
    if answer is None:
        return ""
    return answer if isinstance(answer, str) else str(answer)


def _result(budget: Budget, why: str, output: str, watch: _Watch, answer: object) -> BridgeResult:
    """The framework's stop reason, as budgetconf reports it."""
    turns = watch.turns
    if watch.fault is not None:
        return unreadable(FRAMEWORK, watch.fault, output=output, turns=turns, native=answer)
    if watch.spent:
        return stopped(
            FRAMEWORK, budget, StopReason.MAX_TOKENS, output=output, turns=turns, native=answer
        )
    steps = budget.value(BudgetName.MAX_STEPS)
    if why == "max_steps" and steps is not None and turns >= steps:
        return stopped(
            FRAMEWORK, budget, StopReason.MAX_STEPS, output=output, turns=turns, native=answer
        )
    reason = _ENDED.get(why)
    if reason is None:  # max_steps short of the budget: a limit of the framework's own
        reason = StopReason.MAX_STEPS if why == "max_steps" else StopReason.ERROR
        message = f"stopped: praisonaiagents ended the run ({why}) after {turns} turns"
    else:
        message = _message(reason, turns)
    return ended(FRAMEWORK, reason, message, output=output, turns=turns, native=answer)


def _message(reason: StopReason, turns: int) -> str:
    done = f"{turns} turn{'' if turns == 1 else 's'}"
    if reason is StopReason.COMPLETED:
        return f"completed in {done}"
    if reason is StopReason.ERROR:
        return f"failed: the model call or its handling failed after {done} (see the log)"
    if reason is StopReason.CANCELLED:
        return f"cancelled: the run's cancel token was set after {done}"
    what = {
        StopReason.CONTENT_FILTERED: "the provider's content filter stopped the answer",
        StopReason.REFUSED: "the model refused",
        StopReason.LENGTH_TRUNCATED: "the answer was cut off at the model's length limit",
    }[reason]
    return f"blocked: {what} on turn {turns}"
