"""The real work behind the scripted agent's answers: patches, test runs, response files.

The role comes from the response file named in the prompt, so any orchestrator that
follows the file-handoff spec can drive the agent. What to change and how to test comes
from `<working directory>/.baton/scenario.json`:

    {"test_command": "python -m pytest -q",
     "patches": [{"files": {"pkg/mod.py": "<full new content>"}}, ...],
     "work_seconds": 1.0}          (or [low, high]: a random time per answer)

A `features` object maps a directory name to keys that replace these for the project in
a directory of that name: a batch's worktrees are named after their features.

The programmer works like a person would, from the project and the conversation, not
from one orchestrator's wording: it starts with `patches[0]`; it moves on to the next
patch (clamped to the last) only when asked afresh — the prompt quotes new upstream work
(another analysis, a tester's verdict) or its review cycle starts over — and the test
command still fails on the patch in place; a review revision keeps the patch. The tester
runs the test command and reports PASS or FAIL from its real exit code.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from baton.scripted_agent import answers
from baton.scripted_agent.answers import ResponseTarget

__all__ = ["Outcome", "RoleWorker", "Scenario", "ScenarioError", "load_scenario"]

SCENARIO_FILE = Path(".baton") / "scenario.json"
DEFAULT_WORK_SECONDS = 0.5
_TEST_COMMAND_LINE = re.compile(r"use this project test command:\s*(?P<cmd>.+?)\s*$", re.I | re.M)
_OUTPUT_TAIL_LINES = 40
_TEST_TIMEOUT_SECONDS = 1800


class ScenarioError(ValueError):
    """The scenario file exists but cannot be used; the message names the problem."""


@dataclass(frozen=True)
class Scenario:
    test_command: str | None = None
    patches: tuple[dict[str, str], ...] = ()
    work_seconds: float | tuple[float, float] | None = None


@dataclass
class Outcome:
    """What one prompt produced: the answer shown on screen and where it was written."""

    answer: str
    written_to: Path | None = None
    files_changed: list[str] = field(default_factory=list)


def load_scenario(directory: Path) -> Scenario | None:
    """The scenario of the project in `directory`, or None when there is no scenario file."""
    path = directory / SCENARIO_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ScenarioError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a JSON object")
    features = data.get("features")
    if isinstance(features, dict) and isinstance(features.get(directory.name), dict):
        # One scenario per feature of a batch: each worktree is named after its feature.
        data = {**data, **features[directory.name]}
    command = data.get("test_command")
    if command is not None and not isinstance(command, str):
        raise ScenarioError(f"{path}: test_command must be a string")
    patches = []
    for index, patch in enumerate(data.get("patches") or []):
        files = patch.get("files") if isinstance(patch, dict) else None
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise ScenarioError(f"{path}: patches[{index}].files must map paths to text")
        patches.append(dict(files))
    seconds = _work_seconds(data.get("work_seconds"), path)
    return Scenario(
        test_command=command or None,
        patches=tuple(patches),
        work_seconds=seconds,
    )


def _work_seconds(value: object, path: Path) -> float | tuple[float, float] | None:
    """`work_seconds` from the scenario: a number, or `[low, high]` for a random time."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(item, int | float) and not isinstance(item, bool) for item in value)
        and value[0] <= value[1]
    ):
        return (float(value[0]), float(value[1]))
    raise ScenarioError(f"{path}: work_seconds must be a number or [low, high]")


class RoleWorker:
    """Turns one prompt into one answer, remembering what it was asked and what it did."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.asked: dict[str, int] = {}  # prompts answered per role
        self._patch_index: int | None = None  # the patch the programmer last put in place
        self._upstream: str | None = None  # the upstream work that patch answered
        self._cycle: int | None = None  # the review cycle of the last programmer prompt

    def work_seconds(self, prompt: str = "") -> float:
        """How long to look busy on `prompt`: BATON_SCRIPTED_WORK_SECONDS, the scenario,
        or a default.

        The variable is a number for every role, or `ROLE=SECONDS` pairs separated by
        commas (output keys: `programmer=3`) for the roles named; the others fall through.
        """
        override = os.environ.get("BATON_SCRIPTED_WORK_SECONDS", "").strip()
        if override and "=" not in override:
            return float(override)
        if override:
            target = answers.find_response_target(prompt)
            per_role = dict(pair.split("=", 1) for pair in override.split(",") if "=" in pair)
            seconds = per_role.get(target.role.output_key) if target is not None else None
            if seconds is not None:
                return float(seconds)
        try:
            scenario = load_scenario(self.directory)
        except ScenarioError:
            return DEFAULT_WORK_SECONDS
        if scenario is not None and isinstance(scenario.work_seconds, tuple):
            return max(0.0, random.uniform(*scenario.work_seconds))
        if scenario is not None and isinstance(scenario.work_seconds, float | int):
            return max(0.0, float(scenario.work_seconds))
        return DEFAULT_WORK_SECONDS

    def handle(self, prompt: str) -> Outcome:
        target = answers.find_response_target(prompt)
        if target is None:
            return Outcome(answer=_receipt(prompt))
        scenario = load_scenario(self.directory)
        key = target.role.output_key
        self.asked[key] = self.asked.get(key, 0) + 1
        files: list[str] = []
        if key == "programmer":
            files, behaviour = self._program(prompt, scenario)
            text = answers.programmer_answer(prompt, files_changed=files, behaviour=behaviour)
        elif key == "tester":
            text = self._run_test(prompt, scenario)
        else:
            text = answers.answer_for(target, prompt, asked=self.asked[key])
        _write_atomically(target, text)
        return Outcome(answer=text, written_to=target.path, files_changed=files)

    # -- programmer ------------------------------------------------------------------

    def _program(self, prompt: str, scenario: Scenario | None) -> tuple[list[str], str]:
        """Put the right patch in place; (files written, what the answer says it did)."""
        if scenario is None or not scenario.patches:
            return [], "no scenario patch applies; nothing changed."
        index = self._choose_patch(prompt, scenario)
        files = self._apply(scenario.patches[index])
        return files, f"applied scenario patch {index + 1} of {len(scenario.patches)}."

    def _choose_patch(self, prompt: str, scenario: Scenario) -> int:
        """The patch to put in place for this prompt (see the module docstring)."""
        upstream = answers.upstream_fingerprint(prompt)
        _, own_text = answers.split_upstream(prompt)  # not the cycles quoted from upstream
        cycle = answers.read_number(own_text, "Programmer review cycle") or answers.read_cycle(
            own_text
        )
        current = self._patch_index
        if current is None:
            current = self._patch_in_place(scenario)
        if current is None:
            index = 0
        else:
            afresh = (upstream is not None and upstream != self._upstream) or (
                cycle is not None and self._cycle is not None and cycle <= self._cycle
            )
            if afresh and not self._test_passes(prompt, scenario):
                index = min(current + 1, len(scenario.patches) - 1)
            else:
                index = current
        self._patch_index = index
        if upstream is not None:
            self._upstream = upstream
        self._cycle = cycle
        return index

    def _patch_in_place(self, scenario: Scenario) -> int | None:
        """The latest patch whose files the project holds now (an agent started afresh)."""
        root = self.directory.resolve()
        for index in range(len(scenario.patches) - 1, -1, -1):
            files = scenario.patches[index]
            try:
                if all(
                    (root / name).read_text(encoding="utf-8") == text
                    for name, text in files.items()
                ):
                    return index
            except OSError:
                continue
        return None

    def _test_passes(self, prompt: str, scenario: Scenario) -> bool:
        """Whether the project's test command passes now (False when there is none)."""
        command = self._test_command(prompt, scenario)
        if not command:
            return False
        code, _ = self._run(command)
        return code == 0

    def _apply(self, files: dict[str, str]) -> list[str]:
        root = self.directory.resolve()
        for relative, content in files.items():
            path = (root / relative).resolve()
            if root not in path.parents:
                raise ScenarioError(f"patch path escapes the project: {relative!r}")
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temporary.write_text(content, encoding="utf-8")
            os.replace(temporary, path)
        return list(files)

    # -- tester -----------------------------------------------------------------------

    def _test_command(self, prompt: str, scenario: Scenario | None) -> str | None:
        command = scenario.test_command if scenario else None
        if not command:
            found = _TEST_COMMAND_LINE.findall(prompt)
            command = _unquote(found[-1]) if found else None
        return command or None

    def _run(self, command: str) -> tuple[int, str]:
        """Run `command` in the project; (exit code, its output)."""
        import subprocess  # here: only a tester runs commands, and every agent starts faster

        try:
            completed = subprocess.run(
                command,
                shell=True,
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=_TEST_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return -1, f"timed out after {_TEST_TIMEOUT_SECONDS}s"
        return completed.returncode, completed.stdout.decode("utf-8", "replace")

    def _run_test(self, prompt: str, scenario: Scenario | None) -> str:
        command = self._test_command(prompt, scenario)
        if not command:
            return answers.tester_answer(
                passed=False,
                commands=[],
                output="no test command: no .baton/scenario.json and no "
                "'use this project test command:' line in the prompt",
                failed_criteria="the scenario test could not be run.",
                next_fix="give the project test command.",
            )
        code, output = self._run(command)
        tail = "\n".join(output.strip().splitlines()[-_OUTPUT_TAIL_LINES:])
        return answers.tester_answer(
            passed=code == 0,
            commands=[command],
            output=f"{tail}\nexit code: {code}",
            failed_criteria=f"the test command exited with code {code}.",
            next_fix="fix the failures shown in the output above.",
        )


def _unquote(command: str) -> str:
    """`pytest -q` written as inline code in the prompt -> pytest -q."""
    command = command.strip()
    if len(command) > 1 and command[0] == command[-1] == "`":
        return command[1:-1].strip()
    return command


def _receipt(prompt: str) -> str:
    import hashlib  # here: a rare answer, and every agent starts faster without it

    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    lines = prompt.count("\n") + 1
    return (
        f"Received {lines} line(s), {len(prompt)} character(s), sha256 {digest}.\n"
        "No response file was named, so there is nothing to hand over."
    )


def _write_atomically(target: ResponseTarget, text: str) -> None:
    """Temp file in the same directory, then rename: readers never see half an answer."""
    target.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.path.with_name(f".{target.path.name}.{os.getpid()}.tmp")
    temporary.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    os.replace(temporary, target.path)
