"""Run a praisonaiagents `Agent` within a budgetconf budget, and report its stop.

`limits(res)` gives ``{"execution": ExecutionConfig(...)}`` for ``Agent(...,
**limits(res))``; `run(agent, prompt, budget)` runs one ``agent.start(prompt,
stream=False, output="silent")`` through the executor's `Meter`, and returns a
`BridgeResult` whose ``message``, ``limit``, ``usage`` and ``events`` are the
executor's; `stream(agent, prompt, budget)` is that run, streamed: its text as
each response streams it, then the same result. ``budget=None`` resolves the
default preset, as every bridge does; ``preset="praisonai"`` gives the
PraisonAI contract's values and sources.

=========================  ==============================================================
budget                     enforced by
=========================  ==============================================================
max_steps                  the bridge: each model request of the OpenAI-native loop asks
                           the Meter first, and the calls of the last permitted response
                           are answered as not executed, as in the executor
                           (``ExecutionConfig(max_steps=…)`` is lent one higher, never
                           reached; `limits()` gives the budget itself)
max_tool_calls_per_turn    the bridge: every tool call goes through the agent's
                           ``execute_tool``, lent for the run, so a response over the cap
                           is rejected (or truncated) with the executor's answer
max_tool_calls             the bridge: the same ``execute_tool``, against every call run
max_tokens                 the bridge, from the usage each response reports
timeout_seconds            the bridge: a deadline that abandons a model request or a tool
                           in flight, and the Meter's checks before each call and batch
max_cost_usd               the bridge: the usage of each response priced at the price of
                           the agent's model (its ``llm``; praisonaiagents' own estimate is
                           not read); refused without a price, and by `limits()`
ledger.url                 the bridge: reserved before each model request, settled with
                           the response's tokens and their cost at that price
                           (``ledger.max_cost_usd`` is drawn on at it)
=========================  ==============================================================

For the run the bridge lends the agent a copy of its OpenAI client (the client
itself is the process's), a fresh dispatcher made from it, its ``execute_tool``
and the budget's ``ExecutionConfig``, and puts back the agent's own afterwards,
also when the run raises; one agent is in one bridged run at a time. It turns
off ``output_continuation``, whose extra calls after an answer cut at the length
limit are model calls the step budget would not see. An agent whose model calls
the bridge cannot see (praisonaiagents' LiteLLM path, a managed backend,
``self_reflect``, ``planning``) is refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    AgentModel,
    BridgeResult,
    bridge_budget,
    lent_steps,
    refuse_conflicting,
    refuse_stream_keyword,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS
from budgetconf.integrations._install import missing
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from typing import Any, Final

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._praisonai_stream import Relay
    from budgetconf.loop import Budget

try:
    import praisonaiagents  # type: ignore[import-untyped]  # its names load when first read
except ImportError:
    raise missing("praisonai", "praisonaiagents", "praisonai") from None

__all__ = ["limits", "run", "stream"]

FRAMEWORK: Final = FRAMEWORKS["praisonai"]


def limits(budget: object = None, **resolve_kwargs: Any) -> dict[str, Any]:
    """``{"execution": ExecutionConfig(max_steps=…, max_tool_calls_per_turn=…)}`` for `Agent`.

    ``budget`` None resolves ``resolve_kwargs`` (the default preset unless they name
    another, such as ``preset="praisonai"``).
    A budget set that `ExecutionConfig` does not enforce is a `UsageError`.
    """
    checked = bridge_budget(FRAMEWORK, budget, resolve_kwargs, through="limits")
    return {"execution": _config(FRAMEWORK.keywords(checked, {})["execution"])}


def run(
    agent: Any,
    input: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Run ``agent.start(input)`` within ``budget``; a budget stop is a result, not an error.

    ``framework_kwargs`` go to ``agent.start`` (``stream=True`` is refused, naming
    `stream`, and so is a verbose ``output``: the bridge reads each finished
    response; a ``cancel_token`` still cancels). ``on_event`` hears the run's
    events and ``name`` names it, as in `LoopExecutor`. A model or tool failure
    is a ``failed`` result whose ``native`` is the exception, a KeyboardInterrupt
    a ``cancelled`` one, as in the executor; a keyword ``start`` does not take is
    raised, as the framework raises it.
    """
    refuse_conflicting(FRAMEWORK, framework_kwargs)
    refuse_streaming(framework_kwargs)
    checked, model = _checked(agent, input, budget, unenforced, framework_kwargs)
    return _run(agent, input, checked, model, on_event, name, framework_kwargs)


def stream(
    agent: Any,
    input: str,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[str]:
    """`run`, streamed: the text of each response, piece by piece, as it arrives.

    The run is `run`'s (``agent.start``'s own loop, on a thread of its own, in the
    context ``stream`` is called in), its requests streamed with their usage;
    iterating the stream yields the text as ``agent.start(stream=True)`` yields
    it, and ends without raising at a stop, where ``result`` is the result `run`
    gives. The keywords and refusals are `run`'s, ``stream=`` the bridge's own; a
    keyword ``start`` does not take is raised here, the run begins at the first
    item. Closing the stream before its end abandons the request streaming and
    ends the run ``cancelled``.
    """
    refuse_stream_keyword(framework_kwargs)
    refuse_conflicting(FRAMEWORK, framework_kwargs)
    checked, model = _checked(agent, input, budget, unenforced, framework_kwargs)
    from budgetconf.integrations._praisonai_stream import Relay
    from budgetconf.integrations._threaded import Streamed

    streamed = Streamed(
        lambda relay: _run(agent, input, checked, model, on_event, name, framework_kwargs, relay),
        Relay(),
        "budgetconf-praisonai",
    )
    return BridgeStream(streamed.items(), streamed.finish)


def _checked(
    agent: Any, input: str, budget: object, unenforced: Unenforced, kwargs: dict[str, Any]
) -> tuple[Budget, AgentModel]:
    """The budget `run` and `stream` run ``agent`` within, and its model, once every refusal
    is past (``kwargs`` gains the silent ``output`` unless it names one)."""
    model = _agent_model(agent)
    checked = bridge_budget(
        FRAMEWORK, budget, {}, through="run", unenforced=unenforced, model=model
    )
    if not isinstance(agent, praisonaiagents.Agent):
        raise UsageError(f"agent: expected a praisonaiagents Agent, got {type(agent).__name__}")
    _refuse_verbose(agent, kwargs.setdefault("output", "silent"))
    _refuse_resumed(agent)
    _refuse_unseen(agent)
    _check_keywords(agent, input, kwargs)
    return checked, model


def _run(
    agent: Any,
    input: str,
    checked: Budget,
    model: AgentModel,
    on_event: Sink | None,
    name: str | None,
    framework_kwargs: dict[str, Any],
    relay: Relay | None = None,
) -> BridgeResult:
    """One run of ``agent.start(input)`` through the Meter (its requests streamed through
    ``relay``, for `stream`)."""
    from budgetconf.integrations._metered import LENT, claimed
    from budgetconf.integrations._praisonai_run import Stop, Watch

    with claimed(agent, agent.name, LENT.format("client and tools")):
        theirs = framework_kwargs.pop("cancel_token", None)
        watch = Watch(agent, checked, theirs, on_event, name, model, relay)
        framework_kwargs["cancel_token"] = watch  # set once the Meter ends the run, or theirs is
        framework_kwargs["stream"] = False  # the bridge streams each request itself
        with watch.lent(), _lent(agent, _execution(agent, checked)):
            try:
                answer = agent.start(input, **framework_kwargs)
            except Stop as stop:
                return watch.stopped(stop)
            except InterruptedError as exc:  # the caller's token, set before the first call
                return watch.interrupted(exc)
            except Exception as exc:  # the framework's own failure, outside model and tools
                return watch.bridged.failed(exc)
            except KeyboardInterrupt as exc:  # as the executor takes one: the run cancelled
                return watch.bridged.cancelled(exc)
            except SystemExit as exc:  # the process is leaving: the run's end recorded first
                watch.bridged.failed(exc)
                raise
    return watch.finished(answer)


def _agent_model(agent: Any) -> AgentModel:
    """The agent's model: its ``llm`` name, on the OpenAI client praisonaiagents makes for it
    (the base URL the agent gives, else ``OPENAI_API_BASE``, else ``OPENAI_BASE_URL``)."""
    import os

    url = (
        getattr(agent, "_openai_base_url", None)
        or os.environ.get("OPENAI_API_BASE")
        or os.environ.get("OPENAI_BASE_URL")
    )
    return AgentModel(getattr(agent, "llm", None), "openai", url)


def _config(values: Mapping[str, Any], own: Any = None) -> Any:
    """An `ExecutionConfig` with ``values`` (over the agent's ``own``, if it has one).

    ExecutionConfig, made outside praisonaiagents, warns that its ``context_compaction``
    default will change: the bridge makes it for the caller, so the notice is not theirs.
    """
    import warnings

    from praisonaiagents import ExecutionConfig

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "ExecutionConfig.context_compaction will default", DeprecationWarning
        )
        if isinstance(own, ExecutionConfig):
            import dataclasses  # with the framework's config: praisonaiagents loads it by then

            return dataclasses.replace(own, **values)
        return ExecutionConfig(**values)


def _execution(agent: Any, budget: Budget) -> Any:
    """The agent's own `ExecutionConfig` with the budget's values, its steps lent (`lent_steps`:
    for a budget without a step budget, the framework's own, its ``max_iter``, 20 by default,
    which ``max_steps=None`` falls back to, must not end the run either), and no continuation
    calls."""
    values = {**FRAMEWORK.keywords(budget, {})["execution"], "max_steps": lent_steps(budget)}
    return _config({**values, "output_continuation": False}, getattr(agent, "execution", None))


def _refuse_verbose(agent: Any, output: object) -> None:
    """An ``output`` that leaves the agent verbose makes praisonaiagents stream each request
    to the console, and a stream reports no usage: refused (the bridge reads each response)."""
    from praisonaiagents.config.presets import OUTPUT_PRESETS  # type: ignore[import-untyped]

    # start() applies a preset it knows; any other value leaves the agent's own verbosity
    preset = OUTPUT_PRESETS.get(output) if isinstance(output, str) else None
    verbose = getattr(agent, "verbose", False) if preset is None else preset.get("verbose")
    if verbose:
        raise UsageError(
            f"output={output!r} leaves the agent verbose, so praisonaiagents streams each"
            " response to the console, where no usage is reported: the bridge reads each"
            " response itself; pass output='silent' (the default) or another quiet preset"
        )


def _refuse_resumed(agent: Any) -> None:
    """A durable run being resumed counts its earlier steps against the budget: refused."""
    own = getattr(agent, "execution", None)
    if getattr(own, "durable", False) and getattr(own, "resume_run_id", None):
        raise UsageError(
            "execution.resume_run_id: a resumed durable run counts its earlier steps against"
            " max_steps; run() gives the budget to one whole run, so resume it with agent.start"
        )


def _refuse_unseen(agent: Any) -> None:
    """An agent whose model calls do not all go through its OpenAI client: refused by name."""
    unseen = [
        phrase
        for attribute, phrase in (
            (
                "_using_custom_llm",
                "a model praisonaiagents calls through its LLM class (model='provider/model',"
                " base_url= or a model object)",
            ),
            ("backend", "a managed backend"),
            ("self_reflect", "reflection"),
            ("planning", "planning"),
        )
        if getattr(agent, attribute, None)
    ]
    if unseen:
        raise UsageError(
            f"the agent {getattr(agent, 'name', None)!r} has {unseen[0]}, whose model requests"
            " run() cannot count: it sees those of praisonaiagents' OpenAI-native tool loop"
            " only; pass **limits(...) to Agent and call agent.start yourself"
        )


def _check_keywords(agent: Any, input: str, kwargs: Mapping[str, Any]) -> None:
    """A keyword ``agent.start`` would pass on to ``chat`` and ``chat`` does not take is the
    caller's error: raised as Python raises it, before the run starts."""
    import inspect

    passed = {k: v for k, v in kwargs.items() if k not in ("output", "cancel_token")}
    inspect.signature(agent.chat).bind(input, **passed)


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
