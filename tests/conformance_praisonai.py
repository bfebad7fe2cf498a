"""The conformance suite's driver for the PraisonAI bridge: its framework's standard
OpenAI client against the suite's loopback server (tests/conformance.py)."""
