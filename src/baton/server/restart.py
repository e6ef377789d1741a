"""`POST /terminals/{id}/restart`: a fresh agent CLI in the same terminal (id and window).

The orchestrator calls it when an agent CLI has exited or been killed mid-run. Whatever
is left of the old CLI is stopped, then the pane is respawned with the provider's
`resume_launch` (the CLI's own conversation resumed) or, when the provider has none,
its ordinary `launch`. The answer is the terminal as `GET /terminals/{id}` shows it, plus
`resumed` (whether the conversation was resumed).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter
from fastapi import Path as PathParam

from baton.errors import BadRequestError, NotFoundError
from baton.server.processes import kill_process_tree, kill_processes_with_env
from baton.server.terminals import TERMINAL_ID_VARIABLE, TerminalService

__all__ = ["restart_router", "restart_terminal"]

# The gate the pane's first command waits on (as for a new window), so the pane log
# is attached again before the CLI writes anything.
_GATE_SCRIPT = (
    'i=0; while [ ! -e "$0" ] && [ "$i" -lt 400 ]; do sleep 0.025; i=$((i+1)); done; '
    'rm -f "$0"; exec "$@"'
)
_ENV_SKIP = frozenset({"TMUX", "TMUX_PANE", "COLUMNS", "LINES"})
_TERMINAL_ID = Annotated[str, PathParam(pattern=r"^[0-9a-f]{8}$")]


def restart_router(service: TerminalService) -> APIRouter:
    """The router `create_app` includes; one route, bound to `service`."""
    router = APIRouter()

    @router.post("/terminals/{terminal_id}/restart")
    def restart(terminal_id: _TERMINAL_ID) -> dict[str, Any]:
        return restart_terminal(service, terminal_id)

    return router


def restart_terminal(service: TerminalService, terminal_id: str) -> dict[str, Any]:
    """Stop what is left of the terminal's CLI, start it again in the same pane, settle it."""
    record = service.record(terminal_id)
    if not service.tmux.pane_state(record.pane_id).exists:
        raise NotFoundError(f"terminal {terminal_id}: its tmux window is gone")
    with service._lock_for(terminal_id):
        provider, ctx = service._provider(record)
        state = service.tmux.pane_state(record.pane_id)
        if state.pid is not None and not state.dead:
            kill_process_tree(state.pid)
        kill_processes_with_env(TERMINAL_ID_VARIABLE, record.id)
        resumed_spec = provider.resume_launch(ctx)
        spec = resumed_spec or provider.launch(ctx)
        env = {
            **service.environment,
            **spec.env,
            TERMINAL_ID_VARIABLE: record.id,
            "CAO_TERMINAL_ID": record.id,
        }
        if not spec.command_found(env.get("PATH", os.defpath)):
            raise BadRequestError(
                f"provider {record.provider!r} needs {spec.argv[0]!r}, "
                "which is not on the PATH of baton serve"
            )
        runtime_dir = Path(record.runtime_dir)
        gate = runtime_dir / ".launch-gate"
        gate.unlink(missing_ok=True)
        env_args: list[str] = []
        for key, value in env.items():
            if key in _ENV_SKIP or "=" in key or not key:
                continue
            env_args += ["-e", f"{key}={value}"]
        service.tmux.run(
            "respawn-pane",
            "-k",
            "-t",
            record.pane_id,
            "-c",
            record.working_directory,
            *env_args,
            "--",
            "/bin/sh",
            "-c",
            _GATE_SCRIPT,
            str(gate),
            *spec.argv,
        )
        pane_log = runtime_dir / "pane.log"
        try:
            # The old pipe survives the respawn, but its `cat` carries the terminal's id in
            # its environment and may have been killed with the CLI: close it (which only
            # works on a live pane), then attach the pane log afresh.
            service.tmux.run("pipe-pane", "-t", record.pane_id, check=False)
            service.tmux.run(
                "pipe-pane", "-t", record.pane_id, f"cat >> {shlex.quote(str(pane_log))}"
            )
        finally:
            gate.touch()
    service._settle(record)
    return {**service.describe(record), "resumed": resumed_spec is not None}
