"""The conformance suite's drivers for the LangGraph bridge, with and without its
`middleware()`: langchain-openai's ChatOpenAI against the suite's loopback server."""

from __future__ import annotations

from typing import Any

import budgetconf

from helpers.conformance import ENDS_AT_A_TOOL_ERROR, KEY, MODEL, Adder, drained, driver


def _agent(
    url: str, adder: Adder, middleware: list[Any], name: str, stream_usage: bool | None = None
) -> Any:
    """langchain's ``create_agent`` with the standard OpenAI chat model and the tool ``add``."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return adder(a, b)

    model = ChatOpenAI(
        base_url=url,
        api_key=KEY,  # type: ignore[arg-type]
        model=name,
        max_retries=2,
        stream_usage=stream_usage,
    )
    return create_agent(model, [add], middleware=middleware)


#: langgraph's ToolNode raises a tool's own exception again, which ends the graph's run
RAISES = "langgraph's tool node raises a tool's exception again, which ends the run"
DIFFERS = {"the same failing call every turn under max_repeats = 3": (ENDS_AT_A_TOOL_ERROR, RAISES)}


@driver("langgraph_middleware", needs="langgraph", differs=DIFFERS)
def with_middleware(url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL) -> Any:
    from budgetconf.integrations import langgraph

    agent = _agent(url, adder, langgraph.middleware(res), model)
    return langgraph.run(agent, {"messages": [{"role": "user", "content": "Add."}]}, res)


#: what the bridge refuses a graph without middleware(), run and streamed
WITHOUT_MIDDLEWARE = {
    # BRIDGES.md: a graph without middleware() cannot answer a call in its tool node's place
    "three calls a response, two allowed": r"loop\.max_tool_calls_per_turn = 2 from"
    r" env:BUDGETCONF_MAX_TOOL_CALLS_PER_TURN cannot be enforced by langgraph;",
    # nor reserve on the shared ledger before a model call it sees only once it is made
    "100 tokens a reply, a ledger's maximum": r"ledger\.url = sqlite:.* cannot be drawn on"
    r" by langgraph: the shared ledger is drawn on before each model call",
    "a ledger's cost maximum at the fields' price": r"ledger\.url = sqlite:.* cannot be"
    r" drawn on by langgraph: the shared ledger is drawn on before each model call",
    # BRIDGES.md: nor a call of a tool past its own limit
    "add three times allowed, the model asks six times": r"tools\.max_calls\.add = 3 from"
    r" env:BUDGETCONF_TOOLS_MAX_CALLS cannot be enforced by langgraph;",
    "a limit for a tool the run does not have": r"tools\.max_calls\.serach = 2 from"
    r" env:BUDGETCONF_TOOLS_MAX_CALLS cannot be enforced by langgraph;",
    # nor edit one model call's input, where a warning would go
    "warned at 60 % of the steps, and told": r"loop\.warn_model = true from"
    r" env:BUDGETCONF_WARN_MODEL: langgraph gives the bridge no way to edit one model call's"
    r" input;",
}


@driver("langgraph", needs="langgraph", refuses=WITHOUT_MIDDLEWARE, differs=DIFFERS)
def without_middleware(
    url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL
) -> Any:
    from budgetconf.integrations import langgraph

    agent = _agent(url, adder, [], model)
    return langgraph.run(agent, {"messages": [{"role": "user", "content": "Add."}]}, res)


#: the input every driver gives the agent
_ASKED = {"messages": [{"role": "user", "content": "Add."}]}


@driver("langgraph_middleware, streamed", needs="langgraph", streams=True, differs=DIFFERS)
def with_middleware_streamed(
    url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL
) -> Any:
    from budgetconf.integrations import langgraph

    agent = _agent(url, adder, langgraph.middleware(res), model)
    return drained(langgraph.stream(agent, _ASKED, res, stream_mode=["messages", "updates"]))


@driver(
    "langgraph, streamed",
    needs="langgraph",
    streams=True,
    refuses=WITHOUT_MIDDLEWARE,
    differs=DIFFERS,
)
def without_middleware_streamed(
    url: str, res: budgetconf.Resolution, adder: Adder, model: str = MODEL
) -> Any:
    """Its model asks for each streamed response's usage (stream_usage=True), which a graph
    without middleware() cannot ask for it: without, a token or cost budget is refused."""
    from budgetconf.integrations import langgraph

    agent = _agent(url, adder, [], model, stream_usage=True)
    return drained(langgraph.stream(agent, _ASKED, res, stream_mode="messages"))
