"""The conformance suite's drivers for the LangGraph bridge, with and without its
`middleware()`: langchain-openai's ChatOpenAI against the suite's loopback server."""
