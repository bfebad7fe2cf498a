"""Typed objects from a resolution, through a strict cattrs converter.

cattrs costs tens of milliseconds to import, so only `Resolution.structure`
imports this module.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

import cattrs

from budgetconf.errors import ConfigError

T = TypeVar("T")


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:  # bool is an int subclass; floats would be truncated
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _strict_float(value: Any, _: type) -> float:
    if type(value) not in (int, float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _strict_bool(value: Any, _: type) -> bool:
    if type(value) is not bool:
        raise TypeError(f"expected a boolean, got {value!r}")
    return bool(value)


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {value!r}")
    return str(value)


@cache
def converter() -> cattrs.Converter:
    """The strict converter: no bool for int, no float truncated, no number as text."""
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook(str, _strict_str)
    return conv


def structure(values: dict[str, dict[str, Any]], cls: type[T]) -> T:
    try:
        return converter().structure(values, cls)
    except cattrs.BaseValidationError as exc:
        details = "; ".join(cattrs.transform_error(exc, path="$"))
        raise ConfigError(f"resolved values do not fit {cls.__qualname__}: {details}") from None
    except cattrs.StructureHandlerNotFoundError as exc:
        raise ConfigError(f"cannot build {cls.__qualname__}: {exc}") from None
    except NameError as exc:  # a string annotation naming a class local to a function
        raise ConfigError(
            f"cannot build {cls.__qualname__}: its annotations name {exc.name!r}, which cannot be "
            "found; define it at module level"
        ) from None
