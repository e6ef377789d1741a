"""`POST /terminals/{id}/restart`: a fresh agent CLI in the same terminal (same id).

The orchestrator calls it when an agent CLI has exited or been killed mid-run. Whatever
is left of the old CLI is stopped, then the terminal's own pane is respawned with the
provider's `resume_launch` (the CLI's own conversation resumed) or, when the provider has
none, its ordinary `launch`. A terminal whose pane is gone (its tmux server died, and a
new server may have handed the pane's id to another terminal) gets a new window of its
own instead. The answer is the terminal as `GET /terminals/{id}` shows it, plus
`resumed` (whether the conversation was resumed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from baton.errors import BadRequestError
from baton.server import tool_policy
from baton.server.mcp_offer import with_mcp_servers
from baton.server.processes import stop_terminal_processes
from baton.server.skills import pane_preface
from baton.server.terminals import TERMINAL_ID_VARIABLE, TerminalService
from baton.server.tmux_windows import PaneLaunch, respawn_pane

__all__ = ["restart_terminal"]


def restart_terminal(service: TerminalService, terminal_id: str) -> dict[str, Any]:
    """Stop what is left of the terminal's CLI, start it again in its own pane, settle it."""
    record = service.record(terminal_id)
    with service.runtime.lock_for(terminal_id):
        provider, ctx = service.runtime.provider(record)
        # The old CLI's screen model ends here; the new CLI's is seeded from tmux below.
        service.watcher.forget(record.id)
        state = service.tmux.pane_state(record.pane)
        alive = [state.pid] if state.pid is not None and not state.dead else []
        stop_terminal_processes(alive, TERMINAL_ID_VARIABLE, [record.id])
        ctx = tool_policy.apply_to_context(ctx, record.allowed_tools, record.provider)
        resumed_spec = provider.resume_launch(ctx)
        launch = resumed_spec or provider.launch(ctx)
        spec = with_mcp_servers(record.provider, launch, ctx, record.allowed_tools)
        spec = tool_policy.apply_to_launch(spec, record.allowed_tools, record.provider)
        env = {
            **service.environment,
            **spec.env,
            TERMINAL_ID_VARIABLE: record.id,
            "CAO_TERMINAL_ID": record.id,
            **service.pane_credentials(record.id),  # a fresh token; never the master token
        }
        if not spec.command_found(env.get("PATH", os.defpath)):
            raise BadRequestError(
                f"provider {record.provider!r} needs {spec.argv[0]!r}, "
                "which is not on the PATH of baton serve"
            )
        if state.exists:
            runtime_dir = Path(record.runtime_dir)
            respawn_pane(
                service.tmux,
                record.pane,
                PaneLaunch(
                    spec.argv,
                    env,
                    Path(record.working_directory),
                    runtime_dir,
                    pane_preface(ctx.profile),
                ),
            )
        else:
            preface = pane_preface(ctx.profile)
            record = service.creator.reopen(record, argv=spec.argv, env=env, preface=preface)
        service.watcher.track_record(record, provider, ctx, fresh=False)
    service.creator.settle(record)
    return {**service.describe(record), "resumed": resumed_spec is not None}
