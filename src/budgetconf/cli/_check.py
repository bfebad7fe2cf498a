"""``budgetconf check``: resolve and report, for CI; exit 1 on any error or warning.

With ``--policy PATH`` it judges that policy file alone, for its administrator:
exit 0 when every rule holds, 1 when the file cannot be read, parsed or judged.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from budgetconf.cli._explain import shown
from budgetconf.cli._flags import given_flags
from budgetconf.cli._output import (
    EXIT_ERROR,
    EXIT_OK,
    plural,
    problems,
    say,
    write_json,
)
from budgetconf.cli._parser import OPTIONS, CommandLine, Usage
from budgetconf.cli._resolution import Resolved, chosen_preset

if TYPE_CHECKING:
    from collections.abc import Mapping

    from budgetconf._engine import Preset
    from budgetconf._resolution import Resolution
    from budgetconf._rules import Rule


def command(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """Carry out ``check``: a preset file that cannot be read fails it as explain's would."""
    if getattr(line.ns, "policy_file", None) is not None:
        return _policy(line, out, err)
    return shown(line, check, out, err)


def check(found: Resolved, fmt: str, out: TextIO, err: TextIO) -> int:
    """The problems, then one line that says whether the check passed; or the JSON document."""
    res, preset, fields = found.res, found.preset, found.fields
    paired = _paired(res)  # a rule across fields, which a run would refuse
    failed = bool(res.errors or res.warnings or paired)
    if fmt == "json":
        doc = res.to_dict(fields)
        doc["errors"] += paired
        write_json(doc, out)
    else:
        problems(res, err, warnings=True)
        errors = len(res.errors) + len(paired)
        for problem in paired:
            say(err, f"budgetconf: error: {problem}")
        if failed:
            say(
                out,
                f"check failed: {plural(errors, 'error')}, "
                f"{plural(len(res.warnings), 'warning')} (preset {preset.name})",
            )
        else:
            count = plural(len(fields or res.values), "field")
            say(out, f"ok: {count} resolved, no warnings (preset {preset.name})")
    return EXIT_ERROR if failed else EXIT_OK


def _paired(res: Resolution) -> list[str]:
    """The fields a run reads together and the resolution judges one by one: a price set by
    half (docs/prices.md)."""
    if res.errors:
        return []
    from budgetconf._prices import PriceSettings
    from budgetconf.errors import ConfigError

    try:
        PriceSettings.from_resolution(res)
    except ConfigError as exc:
        return [str(exc)]
    return []


def _policy(line: CommandLine, out: TextIO, err: TextIO) -> int:
    """``check --policy PATH``: the policy file alone, judged against the preset's fields."""
    from budgetconf.errors import SourceError
    from budgetconf.sources.policy import read_policy

    preset = _policy_preset(line)
    path = os.path.abspath(os.path.expanduser(line.ns.policy_file))  # as explain reads it
    error: str | None = None
    try:
        rules = read_policy(path, preset.schema, preset.description.max_file_bytes, named=True)
    except SourceError as exc:
        error, rules = str(exc), {}
    assert rules is not None, "a named policy file exists, or reading it fails"
    warnings = _policy_warnings(preset, rules)
    if line.ns.format == "json":
        schema = preset.schema  # a rule is a field's, or a table's key's
        write_json(
            {
                "version": 1,
                "preset": preset.name,
                "policy": path,
                "rules": {p: rule.to_dict(schema.at(p).secret) for p, rule in rules.items()},
                "errors": [] if error is None else [error],
                "warnings": warnings,
            },
            out,
        )
    elif error is not None:
        say(err, f"budgetconf: error: {error}")
        say(out, f"check failed: 1 error (policy {path}, preset {preset.name})")
    elif warnings:
        for warning in warnings:
            say(err, f"budgetconf: warning: {warning}")
        count = plural(len(warnings), "warning")
        say(out, f"check failed: 0 errors, {count} (policy {path}, preset {preset.name})")
    else:
        say(out, f"ok: policy {path}, {plural(len(rules), 'rule')} (preset {preset.name})")
    return EXIT_OK if error is None and not warnings else EXIT_ERROR


def _policy_warnings(preset: Preset, rules: Mapping[str, Rule]) -> list[str]:
    """What a resolution would warn of in the rules: a locked value or a default that holds
    the mask where a secret was shown."""
    from budgetconf._merge import mask_warning

    found = []
    for path, rule in rules.items():
        field = preset.schema.lookup(path)
        for bound in (rule.value, rule.default):
            if bound is not None:
                warning = mask_warning(field, bound.value, bound.locator, "policy")
                if warning is not None:
                    found.append(warning)
    return found


def _policy_preset(line: CommandLine) -> Preset:
    """The preset whose fields the policy file is judged by; it must have a policy source.

    The file is judged alone: another resolution option, a flag or a field is a usage error.
    """
    from budgetconf._resolve import check_request
    from budgetconf.errors import UsageError
    from budgetconf.sources import Request

    ns = line.ns
    others = [a.option for a in OPTIONS if a.name != "policy_file" and getattr(ns, a.name)]
    if others or given_flags(ns) or line.app_args is not None or ns.fields:
        extra = others[0] if others else "fields and flags"
        raise Usage(f"check --policy judges the policy file alone; it takes no {extra}")
    preset = chosen_preset(ns)
    try:
        check_request(preset, Request({}, policy_file=ns.policy_file), command_line=True)
    except UsageError as exc:
        raise Usage(str(exc)) from None
    return preset
