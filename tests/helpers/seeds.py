"""The seeds' files and words, shared by the tests of a preset's resolution and of its loop.

Copied here from the seed documents, so that a preset that drifts from them fails.
"""

from __future__ import annotations

# Skiller: the reviewer's profile, the workflow step that selects it, and its overrides
SKILLER_PROFILE = "~/.skiller/profiles/agent.reviewer.json"
SKILLER_WORKFLOW = f"""\
- agent: reviewer
  config:
    file: "{SKILLER_PROFILE}"
"""
# the seed's step overrides: max_turns on line 4, max_tool_calls on line 5
SKILLER_OVERRIDES = SKILLER_WORKFLOW + "  max_turns: 15\n  max_tool_calls: 3\n"

# PraisonAI: an agents.yaml, `execution:` on line 3, its first key on line 4
AGENTS = """\
framework: praisonai
topic: Refactor the auth module across all files
execution:
  max_steps: 5
roles:
  coder:
    role: Coding assistant
    goal: Refactor
    tools: [read_file, write_file]
"""
WRAP_UP = (
    "You are approaching the maximum number of tool-use steps for this task. Stop calling tools"
    " now and provide your best final answer, summarising the work completed so far and clearly"
    " noting anything left incomplete."
)
SEED_WARNING = (
    "Run hit the step/iteration limit; the answer above is a summary of partial progress, not a"
    " completed task. Raise the budget with ExecutionConfig(max_steps=…) on the agent (or"
    " `execution: {max_steps: …}` in the YAML) and re-run."
)
