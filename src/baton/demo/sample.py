"""The demo's sample project: a tiny package with a failing test, and its scenario.

The scenario file tells the scripted agent what real work to do: the programmer's first
patch is wrong (the tester sees a real FAIL), the second is right (a real PASS).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

__all__ = ["SampleProject", "write_sample_project"]

_PACKAGE_INIT = '''"""Small statistics helpers."""

from stats.median import median

__all__ = ["median"]
'''

_BUGGY_MEDIAN = '''"""The median of a list of numbers."""


def median(values):
    """Return the middle value of `values`."""
    return values[len(values) // 2]
'''

# Round 1: sorts the input but forgets even-length lists, so one test still fails.
_HALF_FIXED_MEDIAN = '''"""The median of a list of numbers."""


def median(values):
    """Return the middle value of `values`, in sorted order."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
'''

# Round 2: the real fix.
_FIXED_MEDIAN = '''"""The median of a list of numbers."""


def median(values):
    """Return the middle value of `values`; the mean of the middle pair for even lengths."""
    if not values:
        raise ValueError("median() of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
'''

_TESTS = """import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_sorted_odd_length(self):
        self.assertEqual(median([1, 2, 3]), 2)

    def test_unsorted_input(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even_length_averages_the_middle_pair(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
"""


class SampleProject:
    """Where the sample project lives and what the loop is asked to do with it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.test_command = f"{shlex.quote(sys.executable)} -m unittest discover -s tests -t ."

    @property
    def scenario_file(self) -> Path:
        return self.root / ".baton" / "scenario.json"

    def prompt(self) -> str:
        """The feature request, with the two sections the orchestrator requires."""
        return "\n".join(
            [
                "Fix `median` in the sample project so that every unit test passes.",
                "",
                "*** ORIGINAL EXPLORE SUMMARY ***",
                "The project is a tiny Python package `stats` with one function,",
                "`median(values)` in stats/median.py. It neither sorts its input nor",
                "averages the middle pair of an even-length list. The unit tests live in",
                f"tests/test_median.py and run with: {self.test_command}",
                "",
                "*** SCENARIO TEST ***",
                f"In the project directory run: {self.test_command}",
                "PASS when every test passes. FAIL otherwise, with the failing tests and",
                "their output as evidence.",
            ]
        )


def write_sample_project(root: Path) -> SampleProject:
    """Create the sample project and its scenario file under `root` (which may exist)."""
    project = SampleProject(root)
    files = {
        "stats/__init__.py": _PACKAGE_INIT,
        "stats/median.py": _BUGGY_MEDIAN,
        "tests/__init__.py": "",
        "tests/test_median.py": _TESTS,
        "AGENTS.md": f"# Sample project\n\nTest command: `{project.test_command}`\n",
    }
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    scenario = {
        "test_command": project.test_command,
        "patches": [
            {"files": {"stats/median.py": _HALF_FIXED_MEDIAN}},
            {"files": {"stats/median.py": _FIXED_MEDIAN}},
        ],
        "work_seconds": 0.5,
    }
    project.scenario_file.parent.mkdir(parents=True, exist_ok=True)
    project.scenario_file.write_text(json.dumps(scenario, indent=2) + "\n", encoding="utf-8")
    return project
