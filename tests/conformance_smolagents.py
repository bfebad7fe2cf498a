"""The conformance suite's driver for the smolagents bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/conformance.py)."""
