"""The pieces of the CAO-suite gate that need no server: what the scripted model does with
CAO's test tasks, the deselection rules of the swap plugin, and the list in the docs."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

import pytest
from tests.e2e.cao.suite import SuiteResult
from tests.e2e.cao.suite_selection import CI_SUBSET, DESELECTED
from tests.e2e.model.brain import Brain
from tests.e2e.model.cao_tasks import cao_pause, cao_step
from tests.e2e.model.openai_responses import ModelServer, _find_tool, _Responder
from tests.e2e.model.step import Step

ROOT = Path(__file__).resolve().parents[2]
SHELL_TASK = "Run this exact shell command: echo SUCCESS > /tmp/marker && cat /tmp/marker"
RESTRICTED = "## SECURITY CONSTRAINTS\nYou only have access to these tools: @cao-mcp-server\n"


def _plugin() -> ModuleType:
    path = ROOT / "tests" / "e2e" / "cao" / "plugin" / "baton_serve_swap.py"
    spec = importlib.util.spec_from_file_location("baton_serve_swap", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_shell_task_runs_the_command_then_reports_its_output() -> None:
    first = cao_step(SHELL_TASK, 0, "", "")
    assert first == Step(command="echo SUCCESS > /tmp/marker && cat /tmp/marker")
    last = cao_step(SHELL_TASK, 1, "SUCCESS\n", "")
    assert last is not None and last.is_final and "SUCCESS" in (last.message or "")


@pytest.mark.parametrize(
    "instructions",
    [RESTRICTED, "You may not use any tools. Do not attempt to call one."],
)
def test_a_shell_task_is_refused_when_the_instructions_leave_no_shell(instructions: str) -> None:
    step = cao_step(SHELL_TASK, 0, "", instructions)
    assert step is not None and step.is_final and "can't run" in (step.message or "")


def test_a_shell_task_runs_when_the_allowed_tools_include_a_shell() -> None:
    allowed = "You only have access to these tools: @builtin, @cao-mcp-server"
    assert cao_step(SHELL_TASK, 0, "", allowed) == Step(command=SHELL_TASK.split(": ", 1)[1])


def test_a_supervisor_hands_off_then_presents_what_came_back() -> None:
    task = (
        "Use the handoff tool to delegate this task to the report_generator agent: "
        "Create a simple report template with sections for Summary, Analysis, and "
        "Conclusions. Then present the report template you received back from the handoff."
    )
    call = cao_step(task, 0, "", "")
    assert call is not None and call.tool == "handoff"
    assert call.arguments == {
        "agent_profile": "report_generator",
        "message": "Create a simple report template with sections for Summary, Analysis, "
        "and Conclusions.",
    }
    # What Codex hands back from CAO's tool: its timing, then the tool's JSON result.
    result = json.dumps({"success": True, "output": "## Summary\n## Conclusions\n"})
    final = cao_step(task, 1, f"Wall time: 4.4 seconds\nOutput:\n{result}", "")
    assert final is not None and final.is_final
    assert (
        final.message
        == "Report template received from report_generator:\n## Summary\n## Conclusions"
    )
    # The worker the handoff starts thinks for a while; the supervisor itself does not.
    assert cao_pause(task) == 0.0
    assert cao_pause(call.arguments["message"]) > 5.0


def test_a_supervisor_assigns_an_analyst_then_hands_off_the_template() -> None:
    task = (
        "Analyze this dataset and create a report:\n- Dataset A: [1, 2, 3, 4, 5]\n\n"
        "Use assign to spawn a data_analyst for Dataset A, and use handoff to get a report "
        "template from report_generator. Then combine the results and present the final report."
    )
    assign = cao_step(task, 0, "", "")
    assert assign is not None and assign.tool == "assign"
    assert assign.arguments is not None and assign.arguments["agent_profile"] == "data_analyst"
    handoff = cao_step(task, 1, "assigned", "")
    assert handoff is not None and handoff.tool == "handoff"
    turn_end = cao_step(task, 2, "## Summary", "")
    assert turn_end is not None and turn_end.is_final
    assert "mean" not in (turn_end.message or "")  # the results are the analyst's to send
    # The analyst's send_message reaches the supervisor's inbox as its next prompt.
    results = "Dataset A analysis: mean 3.0, median 3.0, standard deviation 1.41."
    arrived = f"{results}\n\n[Message from terminal 1a2b3c4d. Use send_message MCP tool.]"
    report = cao_step(arrived, 0, "", "")
    assert report is not None and report.is_final
    assert "Final report" in (report.message or "") and results in (report.message or "")
    assert cao_step(results, 0, "", "") is None  # not from a worker: no report


def test_an_assigned_analyst_reports_back_with_send_message_only_when_asked() -> None:
    task = "Analyze Dataset A: [1, 2, 3, 4, 5]. Calculate mean, median, and standard deviation."
    callback = cao_step(f"{task} Send results with send_message.", 0, "", "")
    assert callback is not None and callback.tool == "send_message"
    direct = cao_step(f"{task} Present your analysis results directly.", 0, "", "")
    assert direct is not None and direct.is_final
    assert "mean 3.0, median 3.0, standard deviation 1.41" in (direct.message or "")


def test_named_functions_and_unknown_prompts() -> None:
    step = cao_step("Create a Python function called 'greet' that takes a name.", 0, "", "")
    assert step is not None and "def greet(" in (step.message or "")
    assert cao_step("Say hello.", 0, "", "") is None


def test_an_mcp_tool_is_found_by_its_own_name_at_top_level_or_in_a_namespace() -> None:
    top = [{"type": "function", "name": "mcp__cao-mcp-server__handoff"}]
    assert _find_tool(top, "handoff") == ("", "mcp__cao-mcp-server__handoff")
    nested = [{"type": "namespace", "name": "cao", "tools": [{"name": "assign"}]}]
    assert _find_tool(nested, "assign") == ("cao", "assign")
    assert _find_tool([{"type": "function", "name": "exec_command"}], "handoff") is None


def test_a_tool_call_for_a_tool_not_offered_is_said_in_words() -> None:
    responder = _Responder(ModelServer(base_url="", brain=Brain()))
    item = responder._tool_item(Step(tool="handoff", arguments={}), [{"name": "exec_command"}])
    assert item["type"] == "message"
    offered = [{"type": "function", "name": "mcp__cao__handoff"}]
    call = responder._tool_item(Step(tool="handoff", arguments={"message": "m"}), offered)
    assert call["name"] == "mcp__cao__handoff" and json.loads(call["arguments"]) == {"message": "m"}


def test_the_plugin_deselects_by_pattern_with_the_reason() -> None:
    gate = _plugin().SuiteGate([(pattern, reason) for pattern, reason in DESELECTED])
    assert "Kiro CLI" in gate.reason_for("test/e2e/test_handoff.py::TestKiroCliHandoff::test_x")
    assert gate.reason_for("test/e2e/examples/test_examples_gallery_e2e.py::test_loop")
    assert gate.reason_for("test/e2e/test_handoff.py::TestCodexHandoff::test_x") is None


def test_every_deselection_has_a_reason_and_is_in_the_docs() -> None:
    docs = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
    section = docs.split("## CAO's own suite against baton serve", 1)[1].split("\n## ", 1)[0]
    for pattern, reason in DESELECTED:
        assert reason.strip(), pattern
        assert f"`{pattern}`" in section, f"{pattern} is not listed in docs/server.md"
    for target in CI_SUBSET:
        name = target.rsplit("/", 1)[1]
        assert f"`{name}`" in section, f"{target} is not listed in docs/server.md"


def test_a_failed_cao_test_shows_the_last_screen_of_each_terminal_made_while_it_ran(
    tmp_path: Path,
) -> None:
    terminals = tmp_path / "terminals"
    for name, text in (("earlier", b"an earlier test"), ("during", b"\x1b[1mStarting up\x1b[0m")):
        (terminals / name).mkdir(parents=True)
        (terminals / name / "pane.log").write_bytes(text)
    earlier = (terminals / "earlier").stat().st_mtime
    os.utime(terminals / "earlier", (earlier - 100, earlier - 100))
    made = (terminals / "during").stat().st_mtime
    node = "test/e2e/test_handoff.py::TestCodexHandoff::test_handoff_simple_function"
    result = SuiteResult(
        outcomes={},
        deselected={},
        seconds=1.0,
        returncode=1,
        output="",
        windows={node: [made - 1, made + 1]},
        terminals_dir=terminals,
    )

    shown = result.screens_during(node)

    assert "terminal during, last screen:\nStarting up" in shown
    assert "earlier" not in shown
    assert "no terminal folders" in result.screens_during("test/e2e/other.py::test_x")
