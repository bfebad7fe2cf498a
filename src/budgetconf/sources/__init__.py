"""The providers of raw values, one module per source kind, behind one protocol.

A preset's stack names source kinds; `KINDS` maps each kind to its class.
"""

from __future__ import annotations

from collections.abc import Mapping

from budgetconf.schema import Schema
from budgetconf.sources._base import (
    Context,
    Layer,
    MergeMode,
    Offer,
    Policy,
    Problem,
    Request,
    SourceSpec,
    SourceStatus,
)
from budgetconf.sources.cli import CliSource
from budgetconf.sources.default import DefaultSource
from budgetconf.sources.dynaconf import DynaconfSource
from budgetconf.sources.env import EnvSource
from budgetconf.sources.explicit import ExplicitSource
from budgetconf.sources.global_file import GlobalSource
from budgetconf.sources.profile import ProfileSource
from budgetconf.sources.project import ProjectSource
from budgetconf.sources.step import StepSource
from budgetconf.sources.workflow import WorkflowSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Protocol

    from budgetconf.sources._base import Source

__all__ = [
    "KINDS",
    "Context",
    "Layer",
    "MergeMode",
    "Offer",
    "Policy",
    "Problem",
    "Request",
    "Source",
    "SourceClass",
    "SourceSpec",
    "SourceStatus",
]


if TYPE_CHECKING:  # for the type checker only, like `Source`

    class SourceClass(Protocol):
        """A source class: its preset options, and how it is built for a preset."""

        #: option name -> accepted type, for the strict check of preset files
        OPTIONS: Mapping[str, type]
        #: whether it reads sections, so that a merge mode means something for it
        DEFINES_SECTIONS: bool

        def __call__(self, spec: SourceSpec, schema: Schema) -> Source: ...


#: source kind -> class, in the rank order of the default stack
KINDS: Final[Mapping[str, SourceClass]] = {
    "default": DefaultSource,
    "global": GlobalSource,
    "project": ProjectSource,
    "profile": ProfileSource,
    "env": EnvSource,
    "yaml": WorkflowSource,
    "cli": CliSource,
    "step": StepSource,
    "explicit": ExplicitSource,
    "dynaconf": DynaconfSource,  # in no built-in stack: an application places it
}
