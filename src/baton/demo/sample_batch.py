"""The batch demo's sample project: a git repository with three independent failing features.

Each feature is one small function with its own failing unit test, and its own scenario
for the scripted agent (`features` in `.baton/scenario.json`, picked by the worktree's
name): `median` takes two rounds (its first patch is half right), `clamp` and `slugify`
one. The backlog is a folder of three prompt files, one per feature.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BatchSample", "write_batch_sample"]

_MODULES = {
    "median": (
        "def median(values):\n    return values[len(values) // 2]\n",
        "def median(values):\n    ordered = sorted(values)\n"
        "    return ordered[len(ordered) // 2]\n",
        "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n"
        "    if len(ordered) % 2:\n        return ordered[middle]\n"
        "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
        "    def test_median(self):\n        self.assertEqual(median([3, 1, 2]), 2)\n"
        "        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n",
    ),
    "clamp": (
        "def clamp(value, low, high):\n    return max(value, low)\n",
        None,
        "def clamp(value, low, high):\n    return min(max(value, low), high)\n",
        "    def test_clamp(self):\n        self.assertEqual(clamp(5, 0, 3), 3)\n"
        "        self.assertEqual(clamp(-1, 0, 3), 0)\n",
    ),
    "slugify": (
        "def slugify(text):\n    return text.lower()\n",
        None,
        "import re\n\n\ndef slugify(text):\n"
        "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n",
        "    def test_slugify(self):\n"
        "        self.assertEqual(slugify('Hello, World!'), 'hello-world')\n",
    ),
}


class BatchSample:
    """The sample repository and its backlog folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "project"
        self.backlog = root / "backlog"
        self.features = tuple(_MODULES)

    def test_command(self, feature: str) -> str:
        return f"{shlex.quote(sys.executable)} -m unittest tests.test_{feature}"


def _prompt(sample: BatchSample, feature: str) -> str:
    command = sample.test_command(feature)
    return "\n".join(
        [
            f"Fix `{feature}` in textkit/{feature}.py so that its unit test passes.",
            "",
            "*** ORIGINAL EXPLORE SUMMARY ***",
            f"The package `textkit` has one module per helper; `{feature}` is wrong.",
            f"Its test is tests/test_{feature}.py and runs with: {command}",
            "",
            "*** SCENARIO TEST ***",
            f"In the project directory run: {command}",
            "PASS when the test passes. FAIL otherwise, with its output as evidence.",
        ]
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=60)


def write_batch_sample(root: Path, work_seconds: Mapping[str, float] | None = None) -> BatchSample:
    """Create the repository (one commit) and the backlog under `root`.

    `work_seconds`: how long the scripted agent takes per answer in the named features
    (0.3 s otherwise), so one loop can be kept running while another is watched.
    """
    sample = BatchSample(root)
    files: dict[str, str] = {"textkit/__init__.py": "", "tests/__init__.py": ""}
    scenarios: dict[str, dict[str, object]] = {}
    for name, (buggy, half, fixed, test) in _MODULES.items():
        files[f"textkit/{name}.py"] = buggy
        files[f"tests/test_{name}.py"] = (
            f"import unittest\n\nfrom textkit.{name} import {name}\n\n\n"
            f"class {name.title()}Test(unittest.TestCase):\n{test}"
        )
        patches = [{"files": {f"textkit/{name}.py": text}} for text in (half, fixed) if text]
        scenarios[name] = {"test_command": sample.test_command(name), "patches": patches}
        if work_seconds and name in work_seconds:
            scenarios[name]["work_seconds"] = work_seconds[name]
    scenario = {"work_seconds": 0.3, "features": scenarios}
    files[".baton/scenario.json"] = json.dumps(scenario, indent=2) + "\n"
    for relative, content in files.items():
        path = sample.repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    _git(sample.repo, "init", "-q", "-b", "main")
    # The feature branches' commits (POST_GIT_COMMIT) need an author on any machine.
    _git(sample.repo, "config", "user.name", "Baton demo")
    _git(sample.repo, "config", "user.email", "demo@baton.invalid")
    _git(sample.repo, "add", "-A", "-f")
    _git(
        sample.repo,
        "commit",
        "-q",
        "-m",
        "textkit: three helpers, each with a failing test",
    )
    sample.backlog.mkdir(parents=True, exist_ok=True)
    for name in _MODULES:
        (sample.backlog / f"{name}.md").write_text(_prompt(sample, name) + "\n", encoding="utf-8")
    return sample
