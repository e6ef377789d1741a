"""Before any terminal exists: resume or start new, and which prompt the run uses.

RESUME unset resumes a RUNNING state by itself (a finished one, or phase `done`, starts a
new run); RESUME=1 must resume, and for a run that already finished it only reports that
run's result (docs/configuration.md, RESUME); RESUME=0 always starts new. The
prompt is checked here, so a bad one stops the run before the API is even called.

START_AGENT starts a new run at a later role. What that role would have received from
the roles before it is stood in for by the explore summary: the programmer gets it as
its analyst output, the tester as the programmer's (with a note that no one changed the
code in this run). Only the first round starts there; a FAIL goes back to the analyst.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.errors import ConfigError, PromptError, StateFileError
from baton.orchestrator.config import Settings
from baton.orchestrator.prompts import PromptParts, parse_prompt, prompt_example
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import (
    FinalStatus,
    Phase,
    RunState,
    load_state,
    should_auto_resume,
)

__all__ = ["PreparedRun", "prepare_run", "start_at"]


@dataclass
class PreparedRun:
    """The state to run from, whether it is resumed, and the parsed prompt.

    `finished`: RESUME=1 found a run that already ended; there is nothing to run (`parts`
    is then None) and its `final_status` is the result.
    """

    state: RunState
    resumed: bool
    parts: PromptParts | None
    finished: bool = False


def prepare_run(settings: Settings, log: RunLog) -> PreparedRun:
    """Decide between resuming and a new run; ConfigError/StateFileError when neither can."""
    path = settings.state_path
    resume = settings.resume
    if resume is True and not path.is_file():
        raise StateFileError(f"RESUME=1 but there is no state file at {path}")
    if resume is None:
        resume = should_auto_resume(path)
    if resume:
        if settings.start_agent:
            log.info(f"START_AGENT={settings.start_agent} applies to a new run only; resuming")
        return _resume(settings, log)
    if settings.prompt is None:
        raise PromptError(
            'no prompt: give the request (baton run "Add …" --test CMD), a prompt file, '
            "or set PROMPT or PROMPT_FILE (or prompt in the config)",
            prompt_example(),
        )
    parts = parse_prompt(settings.prompt, source=settings.prompt_source)
    state = RunState(
        api=settings.api,
        provider=settings.provider,
        wd=str(settings.wd),
        prompt=settings.prompt,
    )
    if settings.start_agent and settings.start_agent != "analyst":
        start_at(state, settings.start_agent, parts)
        log.info(
            f"START_AGENT={settings.start_agent}: the run starts at the {settings.start_agent}"
        )
    return PreparedRun(state, False, parts)


def start_at(state: RunState, role: str, parts: PromptParts) -> None:
    """Put a new run's state at `role` (programmer or tester), upstream from the prompt."""
    summary = parts.explore_summary.strip()
    state.current_phase = Phase(role)
    state.outputs["analyst"] = (
        "ANALYST_SUMMARY\n"
        f"(No analyst ran: this run started at the {role} with START_AGENT. "
        "The request's explore summary stands in for the analysis.)\n\n"
        f"{summary}"
    )
    if role == "tester":
        state.outputs["programmer"] = (
            "PROGRAMMER_SUMMARY\n"
            "(No programmer ran: this run started at the tester with START_AGENT. "
            "Test the project as it is now against the scenario test; the request was:)\n\n"
            f"{summary}"
        )


def _resume(settings: Settings, log: RunLog) -> PreparedRun:
    path = settings.state_path
    state = load_state(path)
    if state.final_status != FinalStatus.RUNNING or state.current_phase == Phase.DONE:
        return PreparedRun(state, True, None, finished=True)
    prompt, source = state.prompt, f"the state file {path}"
    if settings.prompt is not None:
        if settings.prompt != state.prompt:
            log.info("resuming with the prompt given now (it differs from the saved one)")
            state.explore_sent = []
        prompt, source = settings.prompt, settings.prompt_source
    if not prompt.strip():
        raise ConfigError(f"no prompt: {source} has none; set PROMPT or PROMPT_FILE")
    parts = parse_prompt(prompt, source=source)
    state.prompt = prompt

    where = f"round {state.current_round}, phase {state.current_phase}"
    if state.current_phase in (Phase.ANALYST, Phase.PROGRAMMER):
        where += f", cycle {state.current_cycle}, {state.current_step} step"
    log.info(f"resuming the run in {path} ({where}; session {state.session_name})")
    if state.api and state.api.rstrip("/") != settings.api:
        log.warning(f"the saved run used API {state.api}; now using {settings.api}")
    return PreparedRun(state, True, parts)
