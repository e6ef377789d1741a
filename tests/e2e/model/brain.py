"""The scripted model's mind, shared by the OpenAI and Anthropic model servers.

A real agent CLI sends the prompt it was given to a model and runs the tool calls the
model asks for. These servers stand in for the model: from the latest prompt and the
number of tool results that came back since, `Brain.next_step` decides the next reply —
one shell command to run, or the final message that ends the turn. The shell commands do
the role's real work (apply the scenario patch, run the real test) and follow the
RESPONSE FILE INSTRUCTION (heredoc to a temporary name, then `mv`).

The brain also keeps the turn timeline (when each role's turn opened and closed on the
model side), which the status-timeline test compares with what `baton serve` reported.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from tests.e2e.model.cao_tasks import cao_pause, cao_step
from tests.e2e.model.step import Step

from baton.scripted_agent import answers
from baton.scripted_agent.answers import ResponseTarget
from baton.scripted_agent.work import load_scenario

__all__ = ["Brain", "Misbehaviour", "Step", "TurnRecord", "response_target"]

# Printed by the tester's command so its final message can quote the verdict.
_VERDICT_MARK = "BATON_VERDICT "
_OTHER = "other"
# A prompt starting with this gets the rest of itself back as the answer.
QUOTE_BACK = "QUOTE BACK:"
_REPORT_START = re.compile(r"^RESULT: (?:PASS|FAIL)$", re.MULTILINE)


class Misbehaviour(StrEnum):
    """Ways a model server can let the agent CLI down, chosen per role."""

    NONE = "none"
    IGNORE_FILE = "ignore_file"  # answer in the chat only; never write the response file
    SLOW = "slow"  # wait `slow_seconds` before every reply of the turn
    HTTP_500 = "http_500"  # answer every request with HTTP 500
    CUT_STREAM = "cut_stream"  # start the event stream, then drop the connection
    STALL = "stall"  # accept a turn's first request, then send nothing (`stall_times` turns)


@dataclass
class TurnRecord:
    """One turn as the model server saw it (monotonic clock of the test process)."""

    role: str
    opened: float
    closed: float | None = None


def response_target(prompt: str) -> ResponseTarget | None:
    """The role and response file a prompt names (its RESPONSE FILE INSTRUCTION)."""
    return answers.find_response_target(prompt)


@dataclass
class Brain:
    """Decides every reply; thread-safe, since the servers answer requests concurrently.

    `behaviours` maps a role's output key (`analyst`, `analyst_review`, `programmer`,
    `programmer_review`, `tester`) or `*` to a Misbehaviour.
    """

    behaviours: Mapping[str, Misbehaviour] = field(default_factory=dict)
    slow_seconds: float = 3.0
    # Which of the role's turns (0 for its first prompt, 1 for its second…) are SLOW;
    # None: every one of them.
    slow_turns: frozenset[int] | None = None
    stall_times: int = 1
    # Turns of the role answered before its stalls begin: the CLI has booted and loaded
    # its providers, so a slow start is never taken for the stall.
    stall_after: int = 0
    timeline: list[TurnRecord] = field(default_factory=list)
    _round: int = 1
    _stalled: dict[str, int] = field(default_factory=dict)
    _prompts: dict[str, list[str]] = field(default_factory=dict)  # each role's, in order
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- what to do ---------------------------------------------------------------------

    def role_of(self, prompt: str) -> str:
        target = response_target(prompt)
        return target.role.output_key if target else _OTHER

    def misbehaviour_for(self, prompt: str) -> Misbehaviour:
        role = self.role_of(prompt)
        return self.behaviours.get(role, self.behaviours.get("*", Misbehaviour.NONE))

    def delay_for(self, prompt: str) -> float:
        """Seconds to wait before replying (the SLOW misbehaviour; a CAO worker's pace)."""
        if self.misbehaviour_for(prompt) is Misbehaviour.SLOW:
            if self.slow_turns is None or self._turn_index(prompt) in self.slow_turns:
                return self.slow_seconds
            return 0.0
        return cao_pause(prompt) if response_target(prompt) is None else 0.0

    def _turn_index(self, prompt: str) -> int:
        """Which of its role's prompts `prompt` is (0: the first one this brain saw)."""
        role = self.role_of(prompt)
        with self._lock:
            prompts = self._prompts.setdefault(role, [])
            if prompt not in prompts:
                prompts.append(prompt)
            return prompts.index(prompt)

    def takes_stall(self, prompt: str, done_steps: int) -> bool:
        """Whether this request gets no answer at all (STALL: a turn's first request, for
        the first `stall_times` turns of the role after `stall_after` answered ones; the
        prompt sent again is answered)."""
        if done_steps or self.misbehaviour_for(prompt) is not Misbehaviour.STALL:
            return False
        role = self.role_of(prompt)
        index = self._turn_index(prompt)
        with self._lock:
            if index < self.stall_after:
                return False
            if self._stalled.get(role, 0) >= self.stall_times:
                return False
            self._stalled[role] = self._stalled.get(role, 0) + 1
            return True

    def stalls_taken(self, role: str) -> int:
        with self._lock:
            return self._stalled.get(role, 0)

    def next_step(
        self, prompt: str, done_steps: int, last_tool_output: str = "", instructions: str = ""
    ) -> Step:
        """The reply after `done_steps` tool results came back for this prompt
        (`instructions`: the system and developer text the CLI sent with it)."""
        target = response_target(prompt)
        if target is None:
            cao_reply = cao_step(prompt, done_steps, last_tool_output, instructions)
            if cao_reply is not None:
                return cao_reply
            return Step(message=_plain_reply(prompt))
        key = target.role.output_key
        if key == "analyst":
            with self._lock:
                self._round = answers.read_number(prompt, "Round") or self._round
        ignore_file = self.misbehaviour_for(prompt) is Misbehaviour.IGNORE_FILE
        if key == "tester":
            return self._tester_step(target, prompt, done_steps, last_tool_output, ignore_file)
        if key == "programmer":
            text, commands = self._programmer_work(target, prompt)
        else:
            text, commands = answers.answer_for(target, prompt), []
        if ignore_file:
            return Step(message=text) if done_steps >= len(commands) else commands[0]
        commands.append(_write_step(target.path, text))
        if done_steps < len(commands):
            return commands[done_steps]
        return Step(message=text)

    def _programmer_work(self, target: ResponseTarget, prompt: str) -> tuple[str, list[Step]]:
        project = _project_of(target)
        scenario = load_scenario(project)
        with self._lock:
            round_number = self._round
        files: dict[str, str] = {}
        if scenario is not None and scenario.patches:
            files = scenario.patches[min(round_number, len(scenario.patches)) - 1]
        commands = [_write_step(project / name, body) for name, body in files.items()]
        behaviour = f"applied the round {round_number} change." if files else "nothing to change."
        text = answers.programmer_answer(prompt, files_changed=list(files), behaviour=behaviour)
        return text, commands

    def _tester_step(
        self,
        target: ResponseTarget,
        prompt: str,
        done_steps: int,
        last_tool_output: str,
        ignore_file: bool,
    ) -> Step:
        if done_steps == 0:
            project = _project_of(target)
            scenario = load_scenario(project)
            test_command = scenario.test_command if scenario and scenario.test_command else "true"
            return Step(command=_tester_command(project, test_command, target, ignore_file))
        verdict = "PASS" if f"{_VERDICT_MARK}PASS" in last_tool_output else "FAIL"
        # The CLI may echo the command back with its output: the report starts at the
        # last line that is a verdict, and ends where the verdict mark is printed.
        output = last_tool_output.rsplit(_VERDICT_MARK, 1)[0]
        starts = list(_REPORT_START.finditer(output))
        if starts:
            return Step(message=output[starts[-1].start() :].strip())
        return Step(message=f"RESULT: {verdict}\nEVIDENCE:\n{output.strip()}")

    # -- the timeline -----------------------------------------------------------------------

    def turn_opened(self, prompt: str) -> None:
        """A request with no tool results yet for this prompt: the turn starts."""
        with self._lock:
            self.timeline.append(TurnRecord(role=self.role_of(prompt), opened=time.monotonic()))

    def turn_closed(self, prompt: str) -> None:
        """The final message was sent in full (or the turn failed): the turn ends."""
        role = self.role_of(prompt)
        with self._lock:
            for record in reversed(self.timeline):
                if record.role == role and record.closed is None:
                    record.closed = time.monotonic()
                    return

    def open_turns(self) -> list[TurnRecord]:
        with self._lock:
            return [record for record in self.timeline if record.closed is None]


def _write_step(path: Path, text: str) -> Step:
    return Step(command=answers.write_file_command(path, text), writes=(path, text))


def _project_of(target: ResponseTarget) -> Path:
    """WD, from WD/.tmp/agent-responses/<file>."""
    return target.path.parents[2]


def _plain_reply(prompt: str) -> str:
    if prompt.lstrip().startswith(QUOTE_BACK):
        # The answer is the rest of the prompt, verbatim: answers that quote screen text.
        return prompt.lstrip()[len(QUOTE_BACK) :].strip("\n")
    first = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return f"READY. (No response file was named; I read: {first[:80]})"


def _tester_command(
    project: Path, test_command: str, target: ResponseTarget, ignore_file: bool
) -> str:
    """Run the scenario test; report RESULT and EVIDENCE from its real exit code and output.

    The report goes to the response file (temporary name, then `mv`) and is printed, or,
    for an agent that ignores the file instruction, only printed. No `rm`: Codex refuses
    commands it deems destructive when it may not ask for approval. No command
    substitution (`$(…)`): Gemini CLI blocks any shell command that has one, so the
    test's output goes through a file beside the response file.
    """
    path = shlex.quote(str(target.path))
    temporary = shlex.quote(str(target.path.with_name(f".{target.path.name}.tester.tmp")))
    output = shlex.quote(str(target.path.with_name(f".{target.path.name}.tester.out")))
    report = (
        'if [ "$code" -eq 0 ]; then verdict=PASS; else verdict=FAIL; fi; '
        f"{{ printf 'RESULT: %s\\nEVIDENCE:\\nCommands run:\\n- %s\\nKey output:\\n' "
        f'"$verdict" {shlex.quote(test_command)}; '
        f"tail -n 30 {output} | sed 's/^/  /'; "
        "printf '  exit code: %s\\n' \"$code\"; "
        '[ "$verdict" = FAIL ] && printf \'Failed criteria: the scenario test exited with '
        'code %s.\\nRecommended next fix: make the failing assertions hold.\\n\' "$code"; '
        "}"
    )
    run = (
        f"mkdir -p {shlex.quote(str(target.path.parent))} && cd {shlex.quote(str(project))} "
        f"&& {{ {test_command} ; }} > {output} 2>&1; code=$?; "
    )
    if ignore_file:
        return f'{run}{report}; echo "{_VERDICT_MARK}$verdict"'
    return (
        f"{run}{report} > {temporary}; "
        f"mv -f {temporary} {path}; "
        f'cat {path}; echo "{_VERDICT_MARK}$verdict"'
    )
