"""Put a value for one field into any source of the default stack, then resolve.

Shared by the precedence tests and the hypothesis laws.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml

import budgetconf

KINDS: Final = (
    "default",
    "global",
    "project",
    "profile",
    "env",
    "yaml",
    "cli",
    "step",
    "explicit",
)
FLAGS: Final = {
    "loop.max_steps": "--max-steps",
    "loop.max_tool_calls_per_turn": "--max-tool-calls-per-turn",
}
ENV: Final = {
    "loop.max_steps": "BUDGETCONF_MAX_STEPS",
    "loop.max_tool_calls_per_turn": "BUDGETCONF_MAX_TOOL_CALLS_PER_TURN",
}


class Layers:
    """The default preset's sources, filled field by field under ``work`` and ``home``."""

    def __init__(self, work: Path, home: Path) -> None:
        self.work = work
        self.home = home
        self.files: dict[str, dict[str, dict[str, Any]]] = {
            "global": {},
            "project": {},
            "profile": {},
            "yaml": {},
            "step": {},
        }
        self.env: dict[str, str] = {"HOME": str(home)}
        self.argv: list[str] | None = None
        self.explicit: dict[str, object] | None = None

    def set(self, kind: str, path: str, value: int) -> None:
        """Make source ``kind`` give ``value`` for the field at ``path``."""
        section, name = path.split(".")
        if kind in self.files:
            self.files[kind].setdefault(section, {})[name] = value
        elif kind == "env":
            self.env[ENV[path]] = str(value)
        elif kind == "cli":
            self.argv = [*(self.argv or []), FLAGS[path], str(value)]
        elif kind == "explicit":
            self.explicit = {**(self.explicit or {}), path: value}
        else:
            raise ValueError(f"cannot set a value in {kind}")

    def define(self, kind: str, section: str) -> None:
        """Make a file source define ``section`` without setting any field in it."""
        self.files[kind].setdefault(section, {})

    def locator(self, kind: str, path: str) -> str:
        """The locator a candidate from ``kind`` has (file lines as ``write`` lays them out)."""
        section, name = path.split(".")
        line = self._line(kind, section, name)
        return {
            "default": "built-in default",
            "global": f"{self.home}/.budgetconf/settings.json:{line}",
            "project": f"{self.work}/settings.toml:{line}",
            "profile": f"{self.work}/profile.json:{line}",
            "env": f"env:{ENV.get(path)}",
            "yaml": f"{self.work}/workflow.yaml:{line}",
            "cli": FLAGS.get(path, ""),
            "step": f"step:review ({self.work}/workflow.yaml:{line})",
            "explicit": "explicit",
        }[kind]

    def _line(self, kind: str, section: str, name: str) -> int | None:
        if kind not in self.files:
            return None
        text = self._text(kind)
        marker = f'"{name}"' if kind in ("global", "profile") else name
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip().startswith(marker) and (kind != "step" or number > self._steps_at()):
                return number
        return None

    def _steps_at(self) -> int:
        return self._text("yaml").splitlines().index("steps:") + 1

    def _text(self, kind: str) -> str:
        if kind in ("global", "profile"):
            return json.dumps(self.files[kind], indent=2)
        if kind == "project":
            lines = []
            for section, values in self.files["project"].items():
                lines.append(f"[{section}]")
                lines += [f"{name} = {value}" for name, value in values.items()]
            return "\n".join(lines) + "\n"
        document: dict[str, Any] = dict(self.files["yaml"])
        if self.files["step"]:
            document["steps"] = [{"name": "review", **self.files["step"]}]
        return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)

    def write(self) -> dict[str, Any]:
        """Write the files and return the resolve() keywords that reach every used source."""
        kwargs: dict[str, Any] = {"env": self.env, "argv": self.argv, "explicit": self.explicit}
        if self.files["global"]:
            folder = self.home / ".budgetconf"
            folder.mkdir(exist_ok=True)
            (folder / "settings.json").write_text(self._text("global"))
        if self.files["project"]:
            (self.work / "settings.toml").write_text(self._text("project"))
            kwargs["project_file"] = str(self.work / "settings.toml")
        if self.files["profile"]:
            (self.work / "profile.json").write_text(self._text("profile"))
            kwargs["profile"] = str(self.work / "profile.json")
        if self.files["yaml"] or self.files["step"]:
            (self.work / "workflow.yaml").write_text(self._text("yaml"))
            kwargs["workflow"] = str(self.work / "workflow.yaml")
        if self.files["step"]:
            kwargs["step"] = "review"
        return kwargs

    def resolve(self, preset: str = "budgetconf") -> budgetconf.Resolution:
        return budgetconf.resolve(preset, **self.write())
