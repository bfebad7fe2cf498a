"""A LangGraph graph (or a langchain ``create_agent`` agent) run within a budget.

>>> from budgetconf.integrations.langgraph import limits, middleware, run
>>> graph.invoke(state, **limits(res))  # doctest: +SKIP
>>> agent = create_agent(model, tools, middleware=middleware(res))  # doctest: +SKIP
>>> result = run(agent, state, res)  # doctest: +SKIP

`run()` and `arun()` enforce the budget through the executor's `Meter`, and
return a `BridgeResult` whose ``message``, ``limit``, ``usage`` and ``events``
are the executor's. A turn is one model call. With the bridge's `middleware()`
in a ``create_agent`` graph, the Meter sees each model call before it is made
and each tool call before it runs, as in the executor. Any other graph is
streamed with ``stream_mode="values"``: the bridge sees the state after every
graph step, and stops the run between two steps. `stream()` and `astream()`
are those runs streamed: they yield what ``graph.stream`` yields for the
caller's ``stream_mode`` and end, without raising, where the run ends.

============================  ==================================================
budget                        enforced by
============================  ==================================================
``max_steps``                 `limits()`: ``config["recursion_limit"]`` =
                              ``steps_per_turn x max_steps`` (graph steps; 2 for
                              an agent-tools loop). `run()`: the Meter, with the
                              recursion limit set above it: no model call after
                              the last turn, whose calls are answered as not
                              executed (`middleware()`, which also adds the
                              last-turn notice to that call), or whose tools
                              node does not run (the stream ends there)
``max_tool_calls_per_turn``   `middleware()`: a response over it is rejected
                              (or truncated) with the executor's answers, and
                              the run goes on; any other graph cannot (the
                              default of 10 is left unenforced, a cap set
                              anywhere else is refused)
``max_tool_calls``            `middleware()`: the calls past it are answered as
                              not executed and the run stops; any other graph
                              stops before the tools node of such a response
``max_tokens``                the ``usage_metadata`` of each response: one that
                              takes the run past it runs no calls, and a spent
                              budget stops the next model call; `middleware()`
                              asks a streamed call for it, any other graph
                              refuses it where its model streams none
``timeout_seconds``           the Meter's deadline, checked before each model
                              call and each response's calls; `arun()` also
                              cancels a step still running at the deadline
``max_cost_usd``              the ``usage_metadata`` of each response priced at
                              the price of the graph's model (the chat model its
                              model node calls, by its LangSmith name), as the
                              tokens; refused by `run()` without a price (a fake
                              model with no name: but the price fields), and by
                              `limits()`; `middleware()` leaves it to `run()`
``ledger.url``                `middleware()`: its ``wrap_model_call`` reserves
                              before each model call and settles with the
                              response's ``usage_metadata`` and its cost at that
                              price (``ledger.max_cost_usd`` is drawn on at it);
                              any other graph refuses it
============================  ==================================================

`limits()` carries ``max_steps`` only: any other budget set is refused
(`UsageError`), or run without and warned about with ``unenforced="warn"``.
The bridge changes nothing of the caller's graph or config, so one graph may
serve runs at once; a graph built with `middleware()` runs only through
`run()` or `arun()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

try:
    import langgraph  # noqa: F401  (cheap: the heavy modules are imported when used)
except ImportError:
    from budgetconf.integrations._install import missing

    raise missing("langgraph", "langgraph", "langgraph") from None

from budgetconf._loop_table import BudgetName
from budgetconf.errors import UsageError
from budgetconf.integrations._bridge import (
    BridgeResult,
    bridge_budget,
    refuse_conflicting,
    refuse_streaming,
)
from budgetconf.integrations._frameworks import FRAMEWORKS, Framework
from budgetconf.integrations._stream import BridgeStream

TYPE_CHECKING = False
if TYPE_CHECKING:  # the loop is loaded by the first run, not by importing the bridge
    from contextvars import Context
    from typing import Any

    from budgetconf.events import Sink
    from budgetconf.integrations._bridge import Unenforced
    from budgetconf.integrations._langgraph_run import GraphRun
    from budgetconf.integrations._langgraph_stream import Shape
    from budgetconf.loop import Budget

__all__ = ["arun", "astream", "limits", "middleware", "run", "stream"]

_FRAMEWORK: Framework = FRAMEWORKS["langgraph"]
#: what middleware() checks a budget against: all the bridge enforces through it
_MIDDLEWARE = Framework(
    "langgraph",
    package="langgraph's middleware()",  # as a refusal names it
    extra="langgraph",
    knobs=_FRAMEWORK.knobs,
    bridged=_FRAMEWORK.bridged,
    conflicting=(),
    keywords=_FRAMEWORK.keywords,
    ledger=_FRAMEWORK.ledger,
)
#: a graph without the bridge's middleware: no call can be answered in its tool node's place,
#: and no model call is seen before it is made
_UNDRAWN = Framework(
    "langgraph",
    package="langgraph",
    extra="langgraph",
    knobs=_FRAMEWORK.knobs,
    bridged={
        n: how
        for n, how in _FRAMEWORK.bridged.items()
        if n not in (BudgetName.MAX_TOOL_CALLS_PER_TURN, BudgetName.MAX_CALLS_BY_TOOL)
    },
    conflicting=_FRAMEWORK.conflicting,
    keywords=_FRAMEWORK.keywords,
    notices=False,
)
#: the class attribute that marks a middleware as the bridge's
_MARK = "budgetconf_meter"
#: keywords of ``graph.stream`` that would change the states the bridge reads
_OWN = ("output_keys", "version")


def limits(
    budget: object = None, *, steps_per_turn: int = 2, **resolve_kwargs: Any
) -> dict[str, Any]:
    """``{"config": {"recursion_limit": steps_per_turn * max_steps}}``, for ``graph.invoke``.

    ``steps_per_turn`` is the number of graph steps one model response takes
    (2 for an agent-tools loop; more with ``create_agent`` middleware). Without
    a step budget, ``{}``.
    """
    checked = bridge_budget(_FRAMEWORK, budget, resolve_kwargs, through="limits")
    per_turn = _per_turn(steps_per_turn)
    limit = _FRAMEWORK.keywords(checked, {"steps_per_turn": per_turn})["config"]["recursion_limit"]
    return {} if limit is None else {"config": {"recursion_limit": limit}}


def middleware(
    budget: object = None, *, unenforced: Unenforced = "error", **resolve_kwargs: Any
) -> list[Any]:
    """The bridge's middleware for ``create_agent``: each model call and tool call of the graph
    through the Meter of the `run()` or `arun()` it runs in.

    The budget is the run's; ``budget`` (resolved like `run()`'s) is checked
    here too, so a budget the middleware cannot enforce is refused as the
    graph is built.
    """
    # the graph's model is not known yet: run() judges a cost budget at its price
    bridge_budget(
        _MIDDLEWARE,
        budget,
        resolve_kwargs,
        through="run",
        unenforced=unenforced,
        priced_later=True,
    )
    try:
        import langchain.agents.middleware  # noqa: F401  (create_agent's: the class builds on it)
    except ImportError:
        from budgetconf.integrations._install import missing

        raise missing("langgraph", "langchain", "langgraph") from None
    from budgetconf.integrations._langchain_middleware import MeterMiddleware

    return [MeterMiddleware()]


def run(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """Stream ``graph`` on ``input`` within ``budget``; a budget stop is a result.

    ``config`` and ``framework_kwargs`` go to ``graph.stream``; a
    ``recursion_limit`` in either is refused: the budget sets it. A failure of
    the graph (its model, a tool) is a ``failed`` result whose ``native`` is
    the exception; an error of the caller's (a bad input or update) is raised.
    ``on_event`` and ``name`` are the run's, as `LoopExecutor`'s.
    """
    from budgetconf.integrations import _langgraph_stream as streaming

    graph_run, context, options, shape = _ran(
        graph, budget, unenforced, steps_per_turn, config, on_event, name, framework_kwargs
    )
    found = streaming.items(
        graph_run, context, lambda: graph.stream(input, stream_mode=shape.asked, **options), shape
    )
    return streaming.drained(graph_run, found)  # type: ignore[no-any-return]


async def arun(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeResult:
    """`run()` through ``graph.astream``; at the deadline a step still running is cancelled
    (the deadline cancels the run, not the caller's task)."""
    from budgetconf.integrations import _langgraph_stream as streaming

    graph_run, context, options, shape = _ran(
        graph, budget, unenforced, steps_per_turn, config, on_event, name, framework_kwargs
    )
    found = streaming.aitems(
        graph_run, context, lambda: graph.astream(input, stream_mode=shape.asked, **options), shape
    )
    return await streaming.adrained(graph_run, found)  # type: ignore[no-any-return]


def stream(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    stream_mode: str | Sequence[str] | None = None,
    subgraphs: bool = False,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Any]:
    """`run()`, streamed: iterating the `BridgeStream` yields what ``graph.stream(input,
    stream_mode=..., subgraphs=...)`` yields (``stream_mode`` None: the graph's own), and
    ends at the run's end or its budget stop, without raising; its ``result`` is then
    `run()`'s. Closing it early closes the graph's stream, and the run is cancelled."""
    from budgetconf.integrations import _langgraph_stream as streaming

    graph_run, context, options, shape = _streamed(
        graph, stream_mode, subgraphs, budget, unenforced, steps_per_turn, config, on_event, name,
        framework_kwargs,
    )  # fmt: skip
    found = streaming.items(
        graph_run,
        context,
        lambda: graph.stream(input, stream_mode=shape.asked, subgraphs=subgraphs, **options),
        shape,
    )
    return BridgeStream(found, partial(streaming.finished, graph_run))


def astream(
    graph: Any,
    input: Any,
    budget: object = None,
    *,
    stream_mode: str | Sequence[str] | None = None,
    subgraphs: bool = False,
    unenforced: Unenforced = "error",
    steps_per_turn: int = 2,
    config: Mapping[str, Any] | None = None,
    on_event: Sink | None = None,
    name: str | None = None,
    **framework_kwargs: Any,
) -> BridgeStream[Any]:
    """`stream()` through ``graph.astream``, iterated with ``async for``; at the deadline a
    step still running is cancelled, as in `arun()`."""
    from budgetconf.integrations import _langgraph_stream as streaming

    graph_run, context, options, shape = _streamed(
        graph, stream_mode, subgraphs, budget, unenforced, steps_per_turn, config, on_event, name,
        framework_kwargs,
    )  # fmt: skip
    found = streaming.aitems(
        graph_run,
        context,
        lambda: graph.astream(input, stream_mode=shape.asked, subgraphs=subgraphs, **options),
        shape,
    )
    return BridgeStream(found, partial(streaming.finished, graph_run))


def _ran(
    graph: Any,
    budget: object,
    unenforced: Unenforced,
    steps_per_turn: int,
    config: Mapping[str, Any] | None,
    on_event: Sink | None,
    name: str | None,
    kwargs: Mapping[str, Any],
) -> tuple[GraphRun, Context, dict[str, Any], Shape]:
    """`run()`'s run, its context, its keywords of ``graph.stream`` and its `Shape`: the
    states alone, none of them yielded."""
    refuse_streaming(kwargs)
    for own in ("stream_mode", "subgraphs", *_OWN):
        if own in kwargs:
            raise UsageError(
                f'{own}= is set by the bridge (stream_mode="values"), which reads the messages'
                " of every state; to stream the run in modes of your own, call stream()"
            )
    from budgetconf.integrations._langgraph_stream import Shape, context_of

    shape = Shape("values", subgraphs=False)
    graph_run, options = _prepare(
        graph, budget, unenforced, steps_per_turn, config, on_event, name, kwargs, shape
    )
    return graph_run, context_of(graph_run), options, shape


def _streamed(
    graph: Any,
    stream_mode: str | Sequence[str] | None,
    subgraphs: bool,
    budget: object,
    unenforced: Unenforced,
    steps_per_turn: int,
    config: Mapping[str, Any] | None,
    on_event: Sink | None,
    name: str | None,
    kwargs: Mapping[str, Any],
) -> tuple[GraphRun, Context, dict[str, Any], Shape]:
    """`stream()`'s run, its context, its keywords of ``graph.stream`` and its `Shape`: the
    caller's modes, and the states."""
    for own in _OWN:
        if own in kwargs:
            raise UsageError(
                f"{own}= would change the states the bridge reads (their messages): stream()"
                " takes stream_mode= and subgraphs="
            )
    if not isinstance(subgraphs, bool):
        raise UsageError(f"subgraphs: expected True or False, got {subgraphs!r}")
    from budgetconf.integrations._langgraph_stream import Shape, context_of

    mode = getattr(graph, "stream_mode", "values") if stream_mode is None else stream_mode
    shape = Shape(mode, subgraphs)
    graph_run, options = _prepare(
        graph, budget, unenforced, steps_per_turn, config, on_event, name, kwargs, shape
    )
    return graph_run, context_of(graph_run), options, shape


def _per_turn(steps_per_turn: object) -> int:
    if (
        isinstance(steps_per_turn, bool)
        or not isinstance(steps_per_turn, int)
        or steps_per_turn < 1
    ):
        raise UsageError(f"steps_per_turn: expected a whole number above 0, got {steps_per_turn!r}")
    return steps_per_turn


def _prepare(
    graph: Any,
    budget: object,
    unenforced: Unenforced,
    steps_per_turn: int,
    config: Mapping[str, Any] | None,
    on_event: Sink | None,
    name: str | None,
    kwargs: Mapping[str, Any],
    shape: Shape,
) -> tuple[GraphRun, dict[str, Any]]:
    """The run, its budget checked, and the keywords of ``graph.stream`` that carry it."""
    per_turn = _per_turn(steps_per_turn)
    if not (callable(getattr(graph, "stream", None)) and callable(getattr(graph, "astream", None))):
        raise UsageError(f"graph: expected a compiled LangGraph graph, got {type(graph).__name__}")
    if config is not None and not isinstance(config, Mapping):
        raise UsageError(f"config: expected a mapping, got {type(config).__name__}")
    refuse_conflicting(_FRAMEWORK, {**(config or {}), **kwargs})
    owners, tools, nodes, bound = _found(graph)
    from budgetconf.integrations._langgraph_run import (
        Everything,
        GraphRun,
        chat_model,
        graph_model,
    )

    found_model = chat_model(bound)
    model = graph_model(bound)
    framework = _FRAMEWORK if owners else _UNDRAWN
    checked = bridge_budget(
        framework, budget, {}, through="run", unenforced=unenforced, model=model
    )
    if not owners and _uncounted(found_model, shape):
        checked = _counted(checked, found_model, unenforced)
    steps = checked.value(BudgetName.MAX_STEPS)
    if steps is None:
        raise UsageError("the budget sets no loop.max_steps: a bridged run counts its turns")
    options = {**kwargs, "config": dict(config or {})}
    if owners:  # the Meter stops the run: give every turn's middleware steps to spare
        options["config"]["recursion_limit"] = max(nodes, per_turn) * (int(steps) + 1) + 1
    else:
        options["config"]["recursion_limit"] = per_turn * int(steps)
        checked = _unbridged(checked)
    found = set(tools) if owners or tools else Everything()
    run = GraphRun(
        checked, owners=tuple(owners), tools=found, on_event=on_event, name=name, model=model
    )
    return run, options


def _uncounted(model: object, shape: Shape) -> bool:
    """Whether the graph's model streams its responses (asked for ``"messages"``, or its own
    ``streaming``) without their usage, which a graph without `middleware()` cannot ask for."""
    from budgetconf.integrations._langgraph_run import streams_no_usage

    streamed = "messages" in shape.asked or getattr(model, "streaming", None) is True
    return streamed and streams_no_usage(model)


def _counted(budget: Budget, model: object, unenforced: Unenforced) -> Budget:
    """The budget, refused (or warned about and left out) where it counts tokens a streamed
    response of ``model`` does not report."""
    import warnings
    from dataclasses import replace

    from budgetconf.errors import BudgetConfWarning

    counted = (BudgetName.MAX_TOKENS, BudgetName.MAX_COST_USD)
    refused = [
        limit for n, limit in budget.limits.items() if n in counted and limit.source != "default"
    ]
    if not refused:
        return budget
    what = "; ".join(
        f"{limit.field} = {limit.shown()} from {limit.locator} cannot be counted by langgraph"
        f" streaming a {type(model).__name__} that reports no usage: ask it for its usage"
        " (stream_usage=True), or give create_agent the bridge's middleware(), which does"
        for limit in refused
    )
    if unenforced == "error" or any(limit.source == "policy" for limit in refused):
        raise UsageError(f"{what}; unset it, or pass unenforced='warn' to run without it")
    warnings.warn(f"{what}; running without it", BudgetConfWarning, stacklevel=4)
    left_out = {limit.budget for limit in refused}
    kept = {n: limit for n, limit in budget.limits.items() if n not in left_out}
    return replace(budget, limits=kept)


def _unbridged(budget: Budget) -> Budget:
    """The budget a graph without the middleware runs on: without what nothing can enforce
    there and was let through (the default per-response cap; one warned about) or warned
    about (the shared ledger, each tool's own limit, telling the model of a warning)."""
    from dataclasses import replace

    cap = BudgetName.MAX_TOOL_CALLS_PER_TURN
    kept = {n: limit for n, limit in budget.limits.items() if n != cap}
    warnings = {n: limit for n, limit in budget.warnings.items() if n != "warn_model"}
    return replace(budget, limits=kept, ledger=None, tools={}, warnings=warnings)


def _found(graph: Any) -> tuple[list[Any], set[str], int, list[Any]]:
    """The bridge's middleware in ``graph`` (and its subgraphs), each once; the names of the
    tools its tool nodes run; the most nodes one of them has (the most steps a turn takes);
    and what each node runs (where its chat model is found)."""
    owners: list[Any] = []
    tools: set[str] = set()
    bound_nodes: list[Any] = []
    most = 0
    todo, seen = [graph], set()
    while todo:
        each = todo.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        nodes = getattr(each, "nodes", {})
        most = max(most, len(nodes))
        for node in nodes.values():
            bound = getattr(node, "bound", None)
            bound_nodes.append(bound)
            by_name = getattr(bound, "tools_by_name", None)
            if isinstance(by_name, Mapping):  # a ToolNode
                tools.update(n for n in by_name if isinstance(n, str))
            owner = getattr(getattr(bound, "func", None), "__self__", None)
            if getattr(type(owner), _MARK, False) is True and all(owner is not o for o in owners):
                owners.append(owner)
            if isinstance(getattr(bound, "nodes", None), Mapping):  # a subgraph
                todo.append(bound)
    return owners, tools, most, bound_nodes
