"""What each framework bridge can enforce, and the keywords it passes: plain data.

This module imports no framework, so `budgetconf explain --for NAME` can say
what a framework would get without the cost (seconds, for some) of importing
it, and each bridge checks a budget against the same table it documents
(`budgetconf.integrations._verdicts` judges a budget by it).

A budget is enforced by the framework's own keyword (``knobs``: `limits()`
passes it, and so does `run()`), by the bridge around the run (``bridged``:
hooks, callbacks, middleware, deadlines; `run()` only), or not at all. A
``how`` that holds ``{price}`` names, there, the price a cost budget is
enforced at.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from budgetconf._loop_table import BudgetName

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeAlias

    from budgetconf.loop import Budget

    Keywords: TypeAlias = Callable[[Budget, Mapping[str, Any]], dict[str, Any]]

#: the plain keyword arguments `limits()` gives, before the bridge builds framework objects

_B = BudgetName


class Framework:
    """One framework a bridge runs: its names, what enforces each budget, and its keywords."""

    __slots__ = (
        "bridged",
        "conflicting",
        "extra",
        "fewest_steps",
        "imports",
        "instrumented_by",
        "keywords",
        "knobs",
        "ledger",
        "name",
        "notices",
        "package",
        "reports_cost",
    )

    def __init__(
        self,
        name: str,
        *,
        package: str,
        extra: str,
        knobs: Mapping[BudgetName, str],
        bridged: Mapping[BudgetName, str],
        conflicting: tuple[str, ...],
        keywords: Keywords,
        ledger: str | None = None,
        fewest_steps: tuple[int, str] = (1, ""),
        reports_cost: bool = False,
        instrumented_by: tuple[str, ...] = (),
        imports: str | None = None,
        notices: bool = True,
    ) -> None:
        self.name = name  # the module's last name, and a result's ``framework``
        self.package = package  # on the package index
        self.imports = imports or name  # the module the framework imports as
        self.extra = extra  # budgetconf's extra that installs it
        self.knobs = knobs  # budget -> the framework keyword that carries it
        self.bridged = bridged  # budget -> how the bridge enforces it in run()
        self.conflicting = conflicting  # run() keywords that would set a limit of their own
        self.keywords = keywords
        # how the bridge draws on the shared ledger per model call in run(); None: it cannot,
        # so a set ledger.url is refused like any budget nothing enforces
        self.ledger = ledger
        # the step budget the keyword limits() passes can carry, and why no fewer
        self.fewest_steps = fewest_steps
        # whether the framework prices its own responses (their usage carries a cost): then a
        # cost budget holds on what it reports, and on the model's price where it reports none
        self.reports_cost = reports_cost
        # the instrumentations ("module:Instrumentor") that trace its model and tool calls: while
        # one is active, the run's span is budgetconf's only span (docs/telemetry.md)
        self.instrumented_by = instrumented_by
        # whether the bridge can edit one model call's input: the last-turn notice, and the
        # warnings loop.warn_model sends in its place
        self.notices = notices

    def __repr__(self) -> str:
        return f"Framework({self.name!r})"

    def enforcer(self, budget: BudgetName) -> tuple[str, str] | None:
        """What enforces ``budget`` and how: ``("framework", keyword)`` (in `limits()` and
        `run()`), ``("bridge", how)`` (in `run()` only), or None when nothing can."""
        if budget in self.knobs:
            return "framework", self.knobs[budget]
        if budget in self.bridged:
            return "bridge", self.bridged[budget]
        return None


def _steps(budget: Budget) -> int | None:
    value = budget.value(_B.MAX_STEPS)
    return None if value is None else int(value)


def _openai_agents(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    return {"max_turns": _steps(budget)}


def _langgraph(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    steps = _steps(budget)
    per_turn = int(options.get("steps_per_turn", 2))
    return {"config": {"recursion_limit": None if steps is None else per_turn * steps}}


def _smolagents(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    steps = _steps(budget)  # its forced final answer is one more model call
    return {"max_steps": None if steps is None else steps - 1}


def _pydantic_ai(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    # request_limit always: pydantic-ai's own default is 50; None (unlimited) only for a budget
    # that sets no step budget, as the Meter has no last turn then
    limits: dict[str, Any] = {"request_limit": _steps(budget)}
    for budget_name, field in (
        (_B.MAX_TOOL_CALLS, "tool_calls_limit"),
        (_B.MAX_TOKENS, "total_tokens_limit"),
        (_B.MAX_COST_USD, "cost_limit"),
    ):
        value = budget.value(budget_name)
        if value is not None:
            limits[field] = value
    keywords: dict[str, Any] = {"usage_limits": limits}
    timeout = budget.value(_B.TIMEOUT_SECONDS)
    if timeout is not None:
        keywords["timeout"] = float(timeout)
    return keywords


def _praisonai(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    execution = {
        "max_steps": _steps(budget),
        "max_tool_calls_per_turn": budget.value(_B.MAX_TOOL_CALLS_PER_TURN),
    }
    return {"execution": {k: v for k, v in execution.items() if v is not None}}


def _crewai(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    steps = _steps(budget)  # at max_iter CrewAI makes one more, tool-less, call
    keywords: dict[str, Any] = {"max_iter": None if steps is None else steps - 1}
    timeout = budget.value(_B.TIMEOUT_SECONDS)
    if timeout is not None:
        keywords["max_execution_time"] = math.ceil(timeout)  # whole seconds, never shorter
    return {k: v for k, v in keywords.items() if v is not None}


def _agno(budget: Budget, options: Mapping[str, Any]) -> dict[str, Any]:
    calls = budget.value(_B.MAX_TOOL_CALLS)
    return {} if calls is None else {"tool_call_limit": int(calls)}


FRAMEWORKS: Final[Mapping[str, Framework]] = {
    f.name: f
    for f in (
        Framework(
            "openai_agents",
            imports="agents",
            package="openai-agents",
            extra="openai-agents",
            knobs={
                _B.MAX_STEPS: "max_turns (in run(), the Meter counts the model calls through"
                " RunConfig.call_model_input_filter and answers the last turn's calls as not"
                " executed)"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "each function tool runs through a wrapper: calls"
                " past the cap are rejected (or truncated), and the run goes on",
                _B.MAX_TOOL_CALLS: "the function tools' wrapper answers the calls past it as"
                " not executed",
                _B.MAX_TOKENS: "RunHooks.on_llm_end, from the usage each response reports; a"
                " spent budget stops the next call",
                _B.MAX_COST_USD: "RunHooks.on_llm_end, each response's usage priced at {price};"
                " a spent budget stops the next call",
                _B.TIMEOUT_SECONDS: "a deadline that cancels the run, and the Meter's checks"
                " before each call and batch",
                _B.MAX_CALLS_BY_TOOL: "each function tool's wrapper answers a tool's calls past"
                " its own limit (tools.max_calls) as not executed, and the run goes on",
                _B.MAX_REPEATS: "each function tool's wrapper sees each call's result: the same"
                " call with the same result max_repeats times in a row stops the run before its"
                " next model call",
            },
            conflicting=("max_turns",),
            keywords=_openai_agents,
            ledger="RunConfig.call_model_input_filter reserves before each model call (a refusal"
            " stops the run before it); RunHooks.on_llm_end settles with the tokens the response"
            " reports",
            instrumented_by=(
                "openinference.instrumentation.openai_agents:OpenAIAgentsInstrumentor",
            ),
        ),
        Framework(
            "langgraph",
            package="langgraph",
            extra="langgraph",
            knobs={
                _B.MAX_STEPS: 'config["recursion_limit"] (steps_per_turn x max_steps); in run(),'
                " a count of the model calls: the last turn's calls are answered as not"
                " executed (middleware()), or the stream ends before its tools node"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "with create_agent and middleware(): its"
                " wrap_tool_call rejects (or truncates) a response over it, and the run goes on;"
                " a graph without middleware() refuses a cap set anywhere but the default",
                _B.MAX_TOOL_CALLS: "with middleware(), its wrap_tool_call answers the calls past"
                " it as not executed; any other graph stops before its tools node",
                _B.MAX_TOKENS: "the usage_metadata of each response (middleware(), or the"
                " streamed states); a spent budget stops the next model call",
                _B.MAX_COST_USD: "the usage_metadata of each response (middleware(), or the"
                " streamed states), priced at {price}; a spent budget stops the next model call",
                _B.TIMEOUT_SECONDS: "a deadline checked before each model call and each"
                " response's tools (arun() also cancels a step still running)",
                _B.MAX_CALLS_BY_TOOL: "with middleware(), its wrap_tool_call answers a tool's"
                " calls past its own limit (tools.max_calls) as not executed, and the run goes"
                " on; any other graph refuses it",
                _B.MAX_REPEATS: "each tool message (middleware(), or the streamed states): the"
                " same call with the same result max_repeats times in a row stops the run"
                " before its next model call",
            },
            conflicting=("recursion_limit",),
            keywords=_langgraph,
            ledger="with create_agent and middleware(): its wrap_model_call reserves before each"
            " model call and settles with the response's usage_metadata (any other graph"
            " refuses it)",
            instrumented_by=("openinference.instrumentation.langchain:LangChainInstrumentor",),
        ),
        Framework(
            "smolagents",
            package="smolagents",
            extra="smolagents",
            knobs={
                _B.MAX_STEPS: "max_steps (max_steps - 1 in limits(): its forced final answer is"
                " one more call); in run(), the agent's model, wrapped, refuses the call past"
                " it and the last response's calls are answered as not executed"
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "a ToolCallingAgent's tools, wrapped: a response"
                " over it is rejected (or its surplus skipped) and the run goes on (refused for"
                " a CodeAgent, unless it is the preset's default)",
                _B.MAX_TOOL_CALLS: "a ToolCallingAgent's tools, wrapped: calls past it are"
                " answered as not executed and the run stops (refused for a CodeAgent)",
                _B.MAX_TOKENS: "the agent's model, wrapped, from each response's token_usage; a"
                " spent budget stops the next call",
                _B.MAX_COST_USD: "the agent's model, wrapped, each response's token_usage priced"
                " at {price}; a spent budget stops the next call",
                _B.TIMEOUT_SECONDS: "the agent's model, wrapped: checked before each call and"
                " each response's tools; a call still running at the deadline is abandoned",
                _B.MAX_CALLS_BY_TOOL: "a ToolCallingAgent's tools, wrapped, answers a tool's"
                " calls past its own limit (tools.max_calls) as not executed, and the run goes"
                " on",
                _B.MAX_REPEATS: "a ToolCallingAgent's tools, wrapped, sees each call's result:"
                " the same call with the same result max_repeats times in a row stops the run"
                " before its next model call",
            },
            conflicting=("max_steps",),
            keywords=_smolagents,
            fewest_steps=(2, "its forced final answer is one more model call"),
            ledger="the agent's model, wrapped, reserves before each model call (a refusal stops"
            " the run before it) and settles with the response's token_usage",
        ),
        Framework(
            "pydantic_ai",
            package="pydantic-ai-slim",
            extra="pydantic-ai",
            # limits() passes these keywords; run() enforces each through the Meter instead
            knobs={
                _B.MAX_STEPS: "UsageLimits(request_limit=…); run(): the Meter, before each model"
                " call, the last permitted response's calls answered as not executed",
                _B.MAX_TOOL_CALLS: "UsageLimits(tool_calls_limit=…); run(): the wrapped toolset,"
                " a response whose calls would pass it stopping the run before any runs",
                _B.MAX_TOKENS: "UsageLimits(total_tokens_limit=…); run(): the Meter, from each"
                " response's usage before its tools run",
                _B.MAX_COST_USD: "UsageLimits(cost_limit=…); run(): the Meter, from the cost"
                " pydantic-ai prices each response at{price}",
                _B.TIMEOUT_SECONDS: "the run's timeout=; run(): the Meter's deadline, and"
                " timeout= set to what is left of it",
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "the wrapped toolset: a response over it rejected"
                " whole (or truncated), each call answered, and the run goes on",
                _B.MAX_CALLS_BY_TOOL: "the wrapped toolset answers a tool's calls past its own"
                " limit (tools.max_calls) as not executed, and the run goes on",
                _B.MAX_REPEATS: "the wrapped toolset sees each call's result: the same call with"
                " the same result max_repeats times in a row stops the run before its next"
                " model call",
            },
            conflicting=("usage_limits", "timeout"),
            keywords=_pydantic_ai,
            ledger="the wrapped model reserves before each model call (a refusal stops the run"
            " before it) and settles with the response's tokens and the cost pydantic-ai prices",
            reports_cost=True,
        ),
        Framework(
            "praisonai",
            imports="praisonaiagents",
            package="praisonaiagents",
            extra="praisonai",
            knobs={
                _B.MAX_STEPS: "ExecutionConfig(max_steps=…); in run(), the bridge asks before"
                " each model request and answers the last turn's calls as not executed"
            },
            # run() lends the agent a copy of its OpenAI client and its execute_tool, so the
            # Meter sees every model request and decides every tool call
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "the agent's execute_tool, lent for the run: a"
                " response over it is rejected (or truncated) with the executor's answer",
                _B.MAX_TOOL_CALLS: "the agent's execute_tool, lent for the run: calls past it"
                " are answered as not executed, and the run stops at the next model call",
                _B.MAX_TOKENS: "the usage of each response its OpenAI client returns",
                _B.MAX_COST_USD: "the usage of each response its OpenAI client returns, priced at"
                " {price}",
                _B.TIMEOUT_SECONDS: "a deadline that abandons a model request or a tool in"
                " flight, checked too before each model call",
                _B.MAX_CALLS_BY_TOOL: "the agent's execute_tool, lent for the run, answers a"
                " tool's calls past its own limit (tools.max_calls) as not executed, and the"
                " run goes on",
                _B.MAX_REPEATS: "the agent's execute_tool, lent for the run, sees each call's"
                " result: the same call with the same result max_repeats times in a row stops"
                " the run before its next model call",
            },
            conflicting=("execution",),
            keywords=_praisonai,
            ledger="its OpenAI client, lent for the run, reserves before each model request (a"
            " refusal stops the run before it) and settles with the tokens the response reports",
        ),
        Framework(
            "crewai",
            package="crewai",
            extra="crewai",
            knobs={
                _B.MAX_STEPS: "Agent(max_iter=…), as max_steps - 1 (at max_iter CrewAI makes one"
                " more, tool-less, call); in run(), its before_llm_call hook asks the Meter"
                " before each model call and the last turn's calls are answered as not executed",
                _B.TIMEOUT_SECONDS: "Agent(max_execution_time=…), in whole seconds, for each task"
                " the agent runs in a Crew (Agent.kickoff does not read it); in run(), the"
                " Meter's deadline, which abandons the run in flight",
            },
            bridged={
                _B.MAX_TOOL_CALLS_PER_TURN: "its before_tool_call and after_tool_call hooks: a"
                " response over it is rejected (or truncated) with the executor's answers",
                _B.MAX_TOOL_CALLS: "its before_tool_call and after_tool_call hooks answer the"
                " calls past it as not executed, and the run stops at the next model call",
                _B.MAX_TOKENS: "the usage of each response the agent's LLM reports (a copy of it,"
                " lent for the run)",
                _B.MAX_COST_USD: "the usage of each response the agent's LLM reports (a copy of"
                " it, lent for the run), priced at {price}",
                _B.MAX_CALLS_BY_TOOL: "its before_tool_call and after_tool_call hooks answers a"
                " tool's calls past its own limit (tools.max_calls) as not executed, and the"
                " run goes on",
                _B.MAX_REPEATS: "its before_tool_call and after_tool_call hooks sees each call's"
                " result: the same call with the same result max_repeats times in a row stops"
                " the run before its next model call",
            },
            conflicting=("max_iter", "max_execution_time"),
            keywords=_crewai,
            fewest_steps=(
                2,
                "max_iter is max_steps - 1, and a max_iter of 0 makes its flow refuse its first"
                " step",
            ),
            ledger="its before_llm_call hook reserves before each model call (a refusal stops"
            " the run before it); the lent LLM's report of the completed call settles with the"
            " response's usage",
        ),
        Framework(
            "agno",
            package="agno",
            extra="agno",
            knobs={
                _B.MAX_TOOL_CALLS: "Agent(tool_call_limit=…), which agno keeps soft (it answers"
                " the calls past it with an error and calls the model again); in run(), the"
                " bridge's tool hook answers them as not executed and StopAgentRun ends agno's"
                " loop: a hard limit"
            },
            bridged={
                _B.MAX_STEPS: "the agent's model, lent for the run, asks the Meter before each"
                " model call, and the last permitted response's calls are answered as not"
                " executed (agno has no step limit of its own)",
                _B.MAX_TOOL_CALLS_PER_TURN: "the bridge's tool hook, first on each of the run's"
                " tools: a response over it is rejected (or truncated) with the executor's"
                " answers, and the run goes on",
                _B.MAX_TOKENS: "the metrics agno reads from each response; a spent budget stops"
                " the next model call",
                _B.MAX_COST_USD: "the cost agno reports for each response (metrics.cost){price};"
                " a spent budget stops the next model call",
                _B.TIMEOUT_SECONDS: "a deadline that abandons a model call in flight (not a"
                " streamed one), checked too before each model call and each response's tools",
                _B.MAX_CALLS_BY_TOOL: "the bridge's tool hook answers a tool's calls past its own"
                " limit (tools.max_calls) as not executed, and the run goes on",
                _B.MAX_REPEATS: "the bridge's tool hook sees each call's result: the same call"
                " with the same result max_repeats times in a row stops the run before its next"
                " model call",
            },
            conflicting=("tool_call_limit",),
            keywords=_agno,
            ledger="the agent's model, lent for the run, reserves before each model call (a"
            " refusal stops the run before it) and settles with the response's usage and the"
            " cost agno reports, else at the model's price",
            reports_cost=True,
        ),
    )
}


def framework_named(name: str) -> Framework:
    """The framework of a module name (``openai_agents``) or an extra's (``openai-agents``).

    Raises `KeyError` naming the known ones.
    """
    found = FRAMEWORKS.get(name.replace("-", "_"))
    if found is None:
        known = ", ".join(f.extra for f in FRAMEWORKS.values())
        raise KeyError(f"unknown framework {name!r}: one of {known}")
    return found
