"""`ScriptedModel`: a model that answers from a prepared list, for demos and tests."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from budgetconf.errors import UsageError

MAX_SCRIPT_BYTES: Final = 16 << 20  # a script is read whole; /dev/zero must not be


class ScriptedModel:
    """Returns its responses in order; once they are used up, the last one repeats.

    ``calls`` counts the calls. With ``record`` (the default), ``received``
    holds the messages of every call as the model saw them, control messages
    included; a long run keeps a copy per turn, so turn it off for those.
    """

    __module__ = "budgetconf.loop"

    def __init__(self, responses: Sequence[Mapping[str, Any]], *, record: bool = True) -> None:
        if not isinstance(responses, list | tuple) or not responses:
            raise UsageError("a scripted model needs a non-empty list of responses")
        for i, response in enumerate(responses):
            if not isinstance(response, Mapping):
                raise UsageError(f"responses[{i}]: expected an object, got {response!r}")
        self.responses = list(responses)
        self.record = record
        self.calls = 0
        self.received: list[list[dict[str, Any]]] = []

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, record: bool = True) -> ScriptedModel:
        """The model of a script file: ``{"responses": [{"content": ..., "tool_calls": ...}]}``."""
        from budgetconf._files import FileProblem, read_limited

        try:
            data = json.loads(read_limited(os.fspath(path), MAX_SCRIPT_BYTES)[0])
        except FileProblem as exc:
            raise UsageError(f"model script {os.fspath(path)}: {exc.problem}") from None
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"model script {os.fspath(path)}: not JSON: {exc}") from None
        responses = data.get("responses") if isinstance(data, dict) else None
        if not isinstance(responses, list):
            raise UsageError(f'model script {os.fspath(path)}: expected {{"responses": [...]}}')
        try:
            return cls(responses, record=record)
        except UsageError as exc:
            raise UsageError(f"model script {os.fspath(path)}: {exc}") from None

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.calls += 1
        if self.record:
            self.received.append(list(messages))
        return self.responses[min(self.calls, len(self.responses)) - 1]
