"""Signals, auto-resume, resume checks, the shell script's state file, CLEANUP_ON_EXIT."""

from __future__ import annotations

import json
import signal

from tests.integration.orchestrator.conftest import PROMPT, Project, wait_until
from tests.integration.orchestrator.fake_cao import Turn, answer_plan


def _slow_first_programmer(turn: Turn) -> list:
    return answer_plan(turn, work=2.0 if turn.count == 1 else 0.1)


def _interrupt_while_programmer_works(project: Project, signum: int) -> int:
    project.cao.behaviour["programmer"] = _slow_first_programmer
    run = project.start()
    wait_until(lambda: project.awaiting_role() == "programmer")
    run.send_signal(signum)
    return run.wait()


def test_sigint_then_auto_resume_without_a_new_session(project: Project) -> None:
    assert _interrupt_while_programmer_works(project, signal.SIGINT) == 130
    state = project.state()
    assert state["final_status"] == "RUNNING"
    assert state["current_phase"] == "programmer"
    assert "Traceback" not in project.runs[0].stderr

    second = project.run()  # RESUME unset: picks up the RUNNING state by itself
    assert second.returncode == 0, second.stderr
    assert len(project.cao.posts("/sessions")) == 1
    assert len(project.cao.posts("/terminals")) == 4
    assert "resuming the run" in second.stderr
    # The programmer was asked once in cycle 1; the resumed run waited for that answer.
    programmer_prompts = project.cao.terminal("programmer").prompts
    assert "Programmer review cycle: 1" in programmer_prompts[0]
    assert "Programmer review cycle: 1" not in programmer_prompts[1]
    assert project.state()["final_status"] == "PASS"


def test_sigterm_saves_state_and_exits_143(project: Project) -> None:
    assert _interrupt_while_programmer_works(project, signal.SIGTERM) == 143
    state = project.state()
    assert state["final_status"] == "RUNNING"
    assert state["outputs"]["analyst"].startswith("ANALYST_SUMMARY")
    assert state["terminals"]["tester"]


def test_resume_replaces_a_terminal_the_server_lost(project: Project) -> None:
    """A plain `baton run` repairs the team: a new tester terminal in the same session."""
    assert _interrupt_while_programmer_works(project, signal.SIGINT) == 130
    before = project.state()
    tester = before["terminals"]["tester"]
    project.cao.forget(tester)
    run = project.run()
    assert run.returncode == 0, run.stderr
    assert "resuming the run" in run.stderr
    replaced = [line for line in run.stderr.splitlines() if f"(terminal {tester}) died" in line]
    assert len(replaced) == 1 and "replaced it with terminal" in replaced[0]
    after = project.state()
    assert after["terminals"]["tester"] not in ("", tester)
    assert after["restarts"] == {"tester": 1}
    assert len(project.cao.posts("/sessions")) == 1  # no new session was started
    new_tester = project.cao.terminals[after["terminals"]["tester"]]
    assert new_tester.session_name == before["session_name"]
    assert new_tester.profile == "tester"


def test_resume_with_a_lost_terminal_and_no_restarts_allowed(project: Project) -> None:
    assert _interrupt_while_programmer_works(project, signal.SIGINT) == 130
    tester = project.state()["terminals"]["tester"]
    project.cao.forget(tester)
    run = project.run(AGENT_RESTARTS="0")
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("baton: error:")]
    assert len(errors) == 1
    assert f"tester (terminal {tester}) died" in errors[0] and "AGENT_RESTARTS=0" in errors[0]
    assert project.state()["final_status"] == "RUNNING"  # still resumable
    assert "Traceback" not in run.stderr


def test_resume_without_a_state_file_is_an_error(project: Project) -> None:
    run = project.run(RESUME="1")
    assert run.returncode == 1
    assert "RESUME=1 but there is no state file" in run.stderr
    assert project.cao.requests == []


def test_finished_state_starts_a_new_run(project: Project) -> None:
    assert project.run(MAX_ROUNDS="1").returncode == 0
    assert project.run(MAX_ROUNDS="1").returncode == 0
    assert len(project.cao.posts("/sessions")) == 2


def test_state_written_by_the_shell_script_resumes_at_its_phase(project: Project) -> None:
    cao = project.cao
    first = cao.add_terminal("system_analyst", wd=str(project.wd))
    others = [
        cao.add_terminal(profile, session_name=first.session_name, wd=str(project.wd))
        for profile in ("peer_system_analyst", "programmer", "peer_programmer", "tester")
    ]
    ids = [first.id] + [t.id for t in others]
    shell_state = {
        "version": 1,
        "updated_at": "2026-01-01T00:00:00Z",
        "api": cao.url,
        "provider": "codex",
        "wd": str(project.wd),
        "prompt": PROMPT,
        "current_round": 2,
        "current_phase": "programmer",
        "final_status": "RUNNING",
        "session_name": first.session_name,
        "terminals": dict(
            zip(
                ["analyst", "peer_analyst", "programmer", "peer_programmer", "tester"],
                ids,
                strict=True,
            )
        ),
        "feedback": "RESULT: FAIL\nEVIDENCE:\n- total off by one",
        "analyst_feedback": "None yet.",
        "programmer_feedback": "None yet.",
        "outputs": {
            "analyst": "ANALYST_SUMMARY\nshell-run-analyst-marker",
            "analyst_review": "REVIEW_RESULT: APPROVED",
            "programmer": "",
            "programmer_review": "",
            "tester": "",
        },
    }
    project.state_file.parent.mkdir(parents=True)
    project.state_file.write_text(json.dumps(shell_state))
    env = {k: v for k, v in project.env.items() if k != "PROMPT"}  # prompt from the state
    project.env = env
    run = project.run()
    assert run.returncode == 0, run.stderr
    roles = [role for role, _ in cao.inputs()]
    assert roles[0] == "programmer"
    assert "shell-run-analyst-marker" in cao.inputs()[0][1]
    assert "Round: 2" in cao.inputs()[0][1]
    assert cao.posts("/sessions") == [] and cao.posts("/terminals") == []
    state = project.state()
    assert state["final_status"] == "PASS" and state["current_round"] == 2


def test_cleanup_on_exit_exits_all_five_terminals(project: Project) -> None:
    run = project.run(CLEANUP_ON_EXIT="1", MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    exited = sorted(r.path.split("/")[2] for r in project.cao.posts("/exit"))
    assert exited == sorted(project.state()["terminals"].values())
    assert len(exited) == 5


def test_cleanup_on_exit_also_after_an_error(project: Project) -> None:
    project.cao.behaviour["analyst"] = lambda turn: [("status", "error")]
    run = project.run(CLEANUP_ON_EXIT="1")
    assert run.returncode == 1
    assert len(project.cao.posts("/exit")) == 5


def test_no_cleanup_by_default(project: Project) -> None:
    assert project.run(MAX_ROUNDS="1").returncode == 0
    assert project.cao.posts("/exit") == []


def test_resumed_prompt_that_never_gets_an_answer_is_sent_again(project: Project) -> None:
    """The programmer lost the prompt sent before the interruption: resume asks again."""

    def programmer(turn: Turn) -> list:
        if turn.count == 1:  # works, then rests without ever writing its file
            return [("status", "processing"), ("sleep", 1.5), ("status", "completed")]
        return answer_plan(turn)

    project.cao.behaviour["programmer"] = programmer
    run = project.start()
    wait_until(lambda: project.awaiting_role() == "programmer")
    run.send_signal(signal.SIGINT)
    assert run.wait() == 130

    second = project.run()
    assert second.returncode == 0, second.stderr
    assert "sending it again" in second.stderr
    prompts = project.cao.terminal("programmer").prompts
    assert "Programmer review cycle: 1" in prompts[0]
    assert "Programmer review cycle: 1" in prompts[1]  # the same prompt, sent again
    assert "Programmer review cycle: 2" in prompts[2]


def test_resume_restarts_a_dead_agent_where_the_server_can(project: Project) -> None:
    """The tester's CLI died while no run was watching: a plain `baton run` brings it back."""
    project.cao.can_restart = True
    assert _interrupt_while_programmer_works(project, signal.SIGINT) == 130
    tester = project.state()["terminals"]["tester"]
    project.cao.kill(tester)
    run = project.run()
    assert run.returncode == 0, run.stderr
    assert project.cao.restarted == [tester]
    assert project.state()["terminals"]["tester"] == tester
    assert project.state()["restarts"] == {"tester": 1}
    assert "restarted its CLI in the same terminal" in run.stderr
