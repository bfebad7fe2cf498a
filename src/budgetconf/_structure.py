"""Typed objects from a resolution, through a strict cattrs converter.

cattrs costs tens of milliseconds to import, so only `Resolution.structure`
imports this module.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

import cattrs

from budgetconf._values import type_name
from budgetconf.errors import ConfigError

T = TypeVar("T")


# The messages name the type a value was expected to have, never the value: a
# secret field's value is structured like any other, and its type is no secret.


class _Mismatch(TypeError):
    """A value of the wrong type, said without the value."""


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:  # bool is an int subclass; floats would be truncated
        raise _Mismatch(f"expected an integer, got {type_name(value)}")
    return value


def _strict_float(value: Any, _: type) -> float:
    if type(value) not in (int, float):
        raise _Mismatch(f"expected a number, got {type_name(value)}")
    return float(value)


def _strict_bool(value: Any, _: type) -> bool:
    if type(value) is not bool:
        raise _Mismatch(f"expected a boolean, got {type_name(value)}")
    return bool(value)


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise _Mismatch(f"expected a string, got {type_name(value)}")
    return str(value)


def _described(exc: BaseException, wanted: type | None) -> str:
    """One problem of a structuring, by the type it wanted: its text may quote the value."""
    if isinstance(exc, _Mismatch):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if wanted is None:
        return "invalid value"
    name = wanted.__name__ if isinstance(wanted, type) else repr(wanted)  # Literal['a', 'b']
    return f"invalid value for type, expected {name}"


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
        details = "; ".join(cattrs.transform_error(exc, path="$", format_exception=_described))
        raise ConfigError(f"resolved values do not fit {cls.__qualname__}: {details}") from None
    except cattrs.StructureHandlerNotFoundError as exc:
        raise ConfigError(f"cannot build {cls.__qualname__}: {exc}") from None
    except NameError as exc:  # a string annotation naming a class local to a function
        raise ConfigError(
            f"cannot build {cls.__qualname__}: its annotations name {exc.name!r}, which cannot be "
            "found; define it at module level"
        ) from None
