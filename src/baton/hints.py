"""The commands Baton prints for a person to copy: runnable as printed, from any directory.

Every hint names the executable the way this shell can start it (`baton` when that is on
PATH and is this Baton, else its absolute path, or `python -m baton`), shell-quotes each
word and makes every path absolute. `RunCommand` is how a run was started (its argv, its
directory and the run settings it took from the environment), saved in the state file so
the resume hint repeats it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunCommand", "baton_command", "baton_executable"]

# Environment settings never repeated in a printed hint: notification targets may carry
# secrets, PROMPT is kept in the state file (a resume takes it from there), and RESUME=0
# would start a new run instead of resuming.
_NOT_REPEATED = frozenset(
    {"PROMPT", "RESUME", "NTFY_TOPIC", "NTFY_URL", "WEBHOOK_URL", "NOTIFY_URLS", "BATON_TOKEN"}
)


def baton_executable(
    argv0: str | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The words that start this Baton from any directory in the user's shell."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    environ = os.environ if environ is None else environ
    if argv0.endswith("__main__.py") or not argv0:
        return [sys.executable, "-m", "baton"]
    program = Path(argv0)
    if program.name != "baton":  # run from elsewhere (a test runner, a script): the module
        return [sys.executable, "-m", "baton"]
    found = shutil.which("baton", path=environ.get("PATH"))
    if found and _same_file(Path(found), program):
        return ["baton"]
    return [str(program.absolute())]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve(strict=True) == b.resolve(strict=True)
    except OSError:
        return False


def baton_command(*args: str | Path, executable: Sequence[str] | None = None) -> str:
    """`baton ARGS` as one shell line; a Path argument is made absolute."""
    words = [str(Path(arg).absolute()) if isinstance(arg, Path) else arg for arg in args]
    return shlex.join([*(executable or baton_executable()), *words])


@dataclass(frozen=True)
class RunCommand:
    """How a `baton run` was started: argv after the program, its directory, its settings
    taken from the environment (those safe to print, see `_NOT_REPEATED`)."""

    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls, setting_names: Iterable[str], environ: Mapping[str, str]) -> RunCommand:
        """This process's command line, with the run settings its environment sets."""
        env = {
            name: environ[name]
            for name in sorted(set(setting_names) | {"PROMPT_FILE"})
            if environ.get(name) and name not in _NOT_REPEATED
        }
        return cls(tuple(sys.argv[1:]), os.getcwd(), env)

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "cwd": self.cwd, "env": dict(self.env)}

    @classmethod
    def from_json(cls, data: Any) -> RunCommand | None:
        """The saved field, or None when it is absent or not in this shape."""
        if not isinstance(data, dict):
            return None
        argv, cwd, env = data.get("argv"), data.get("cwd"), data.get("env") or {}
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return None
        if not isinstance(cwd, str) or not cwd or not isinstance(env, dict):
            return None
        env = {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
        return cls(tuple(argv), cwd, env)

    def shell_line(self, executable: Sequence[str] | None = None) -> str:
        """`cd DIR && NAME=value … baton ARGV`: the same run again, from any directory."""
        assignments = [f"{name}={shlex.quote(value)}" for name, value in self.env.items()]
        command = shlex.join([*(executable or baton_executable()), *self.argv])
        return " ".join([f"cd {shlex.quote(self.cwd)} &&", *assignments, command])
