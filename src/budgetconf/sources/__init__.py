"""The providers of raw values, one module per source kind, behind one protocol.

A preset's stack names source kinds; `KINDS`, the registry, maps each kind to
its class, in the rank order of the default stack. Each class declares its
kind's names and options as its ``KIND`` (a `SourceKind`), and every other
list of kinds is read from the registry: a new kind is its own module plus
its entry here. An application may write its own source against `Source`
and `SourceClass`, the protocols.
"""

from __future__ import annotations

from types import MappingProxyType

from budgetconf._description import Argument, MergeMode, Policy, SourceKind, SourceSpec
from budgetconf.sources._records import (
    Context,
    Layer,
    Offer,
    Problem,
    Request,
    SourceStatus,
)
from budgetconf.sources.cli import CliSource
from budgetconf.sources.default import DefaultSource
from budgetconf.sources.dynaconf import DynaconfSource
from budgetconf.sources.env import EnvSource
from budgetconf.sources.explicit import ExplicitSource
from budgetconf.sources.global_file import GlobalSource
from budgetconf.sources.policy import PolicySource
from budgetconf.sources.profile import ProfileSource
from budgetconf.sources.project import ProjectSource
from budgetconf.sources.step import StepSource
from budgetconf.sources.workflow import WorkflowSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

    from budgetconf.sources._protocols import Source, SourceClass

__all__ = [
    "KINDS",
    "Argument",
    "CliSource",
    "Context",
    "DefaultSource",
    "DynaconfSource",
    "EnvSource",
    "ExplicitSource",
    "GlobalSource",
    "Layer",
    "MergeMode",
    "Offer",
    "Policy",
    "PolicySource",
    "Problem",
    "ProfileSource",
    "ProjectSource",
    "Request",
    "Source",
    "SourceClass",
    "SourceKind",
    "SourceSpec",
    "SourceStatus",
    "StepSource",
    "WorkflowSource",
]

#: source kind -> class, in the rank order of the default stack
KINDS: Final[Mapping[str, SourceClass]] = MappingProxyType(
    {
        source.KIND.name: source
        for source in (
            DefaultSource,
            GlobalSource,
            ProjectSource,
            ProfileSource,
            EnvSource,
            WorkflowSource,
            CliSource,
            StepSource,
            ExplicitSource,
            DynaconfSource,  # in no built-in stack: an application places it
            PolicySource,  # above every other: a preset's top-level `policy` places it
        )
    }
)


def __getattr__(name: str) -> object:
    # the protocols need `typing` at run time, which `import budgetconf` does without
    if name in ("Source", "SourceClass"):
        from budgetconf.sources import _protocols

        return getattr(_protocols, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
