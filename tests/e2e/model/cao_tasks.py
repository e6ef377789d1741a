"""The scripted model's answers to the tasks CAO's own end-to-end tests give an agent.

CAO's suite (run against `baton serve` by tests/e2e/cao/suite.py) sends Codex plain
tasks with no RESPONSE FILE INSTRUCTION: write a named function, analyse a small
dataset, draft a report template, run an exact shell command, and — as a supervisor —
delegate with CAO's MCP tools `handoff` and `assign`. A real model would do them; this
one recognises each and answers what the test checks: it runs the command, or calls
the MCP tool (a worker given a callback reports back with `send_message`), or refuses
a shell command when its instructions restrict it to tools that are not a shell, as
CAO's soft enforcement for Codex asks.
"""

from __future__ import annotations

import re
import statistics

from tests.e2e.model.step import Step

__all__ = ["cao_step"]

_FUNCTION = re.compile(r"function called '([A-Za-z_]\w*)'")
_SHELL = re.compile(r"Run this exact shell command: (.+)$", re.MULTILINE)
_DATASET = re.compile(r"(Dataset \w+): \[([\d.,\s-]+)\]")
_ANALYZE = re.compile(r"Analy[sz]e (Dataset \w+): \[([\d.,\s-]+)\]")
_DELEGATE = re.compile(r"Use the handoff tool to delegate this task to the (\w+) agent: (.+?\.)")
_ALLOWED = re.compile(r"You only have access to these tools: (.+)")
_NO_TOOLS = "You may not use any tools."
# Allowed-tool names under which a shell is among an agent's tools (CAO's vocabulary).
_SHELL_GRANTS = ("*", "@builtin", "execute_bash", "shell", "bash")
_REPORT_TASK = (
    "Create a simple report template with sections for Summary, Analysis, and Conclusions."
)


def cao_step(prompt: str, done_steps: int, last_tool_output: str, instructions: str) -> Step | None:
    """The next reply to one of CAO's test tasks, or None when the prompt is not one."""
    for scenario in (_shell_task, _supervisor_assign, _supervisor_handoff, _worker_task):
        step = scenario(prompt, done_steps, last_tool_output, instructions)
        if step is not None:
            return step
    return None


def _shell_task(prompt: str, done: int, output: str, instructions: str) -> Step | None:
    shell = _SHELL.search(prompt)
    if shell is None:
        return None
    if not _shell_allowed(instructions):
        return Step(
            message="I can't run that: my instructions restrict me to tools that are not a "
            "shell, so I will not execute shell commands."
        )
    if done == 0:
        return Step(command=shell.group(1).strip())
    return Step(message=f"Ran the command. Output:\n{output.strip()}")


def _shell_allowed(instructions: str) -> bool:
    if _NO_TOOLS in instructions:
        return False
    allowed = _ALLOWED.findall(instructions)
    if not allowed:
        return True
    names = [name.strip() for name in allowed[-1].split(",")]
    return any(name in _SHELL_GRANTS for name in names)


def _supervisor_handoff(prompt: str, done: int, output: str, instructions: str) -> Step | None:
    delegate = _DELEGATE.search(prompt)
    if delegate is None:
        return None
    if done == 0:
        arguments = {"agent_profile": delegate.group(1), "message": delegate.group(2)}
        return Step(tool="handoff", arguments=arguments)
    return Step(message=f"Report template received from {delegate.group(1)}:\n{output.strip()}")


def _supervisor_assign(prompt: str, done: int, output: str, instructions: str) -> Step | None:
    """Assign a data_analyst (it reports back by send_message), hand off the template to
    report_generator, then present both."""
    if "Use assign to spawn a data_analyst" not in prompt:
        return None
    dataset = _DATASET.search(prompt)
    name, values = (dataset.group(1), dataset.group(2)) if dataset else ("Dataset A", "1")
    if done == 0:
        task = (
            f"Analyze {name}: [{values}]. Calculate mean, median, and standard deviation. "
            "When done, send your results back to me with the send_message tool."
        )
        return Step(tool="assign", arguments={"agent_profile": "data_analyst", "message": task})
    if done == 1:
        arguments = {"agent_profile": "report_generator", "message": _REPORT_TASK}
        return Step(tool="handoff", arguments=arguments)
    return Step(message=f"Final report\n\n{_analysis(name, values)}\n\nTemplate:\n{output.strip()}")


def _worker_task(prompt: str, done: int, output: str, instructions: str) -> Step | None:
    functions = _FUNCTION.findall(prompt)
    if functions:
        return Step(message=f"```python\ndef {functions[-1]}(value):\n    return value\n```")
    dataset = _ANALYZE.search(prompt)
    if dataset:
        analysis = _analysis(dataset.group(1), dataset.group(2))
        if done == 0 and "send_message" in prompt:
            return Step(tool="send_message", arguments={"message": analysis})
        return Step(message=analysis)
    if "report template" in prompt.lower():
        return Step(message="Report template\n\n## Summary\n\n## Analysis\n\n## Conclusions\n")
    return None


def _analysis(name: str, numbers: str) -> str:
    values = [float(part) for part in numbers.split(",") if part.strip()]
    return (
        f"{name} analysis: mean {statistics.mean(values):.1f}, "
        f"median {statistics.median(values):.1f}, "
        f"standard deviation {statistics.pstdev(values):.2f}."
    )
