"""The environment of a `baton run` started by a test, free of the developer's own settings."""

from __future__ import annotations

import os

from baton.demo.sample import SampleProject
from baton.orchestrator.config import SETTING_KEYS

__all__ = ["RUN_VARIABLES", "scripted_run_env"]

# Settings of `baton run` that must not leak in from the developer's shell.
RUN_VARIABLES = frozenset(
    [key.env for key in SETTING_KEYS] + ["PROMPT", "PROMPT_FILE", "BATON_TOKEN"]
)


def scripted_run_env(api: str, project: SampleProject, **settings: str | None) -> dict[str, str]:
    """A quick run of the sample project by the scripted agent: short polls, no desktop
    notes, the agents closed at the end. A setting given as None is left unset."""
    env = {key: value for key, value in os.environ.items() if key not in RUN_VARIABLES}
    env.update(
        API=api,
        PROVIDER="scripted",
        WD=str(project.root),
        PROMPT=project.prompt(),
        POLL_SECONDS="0.2",
        IDLE_GRACE_SECONDS="5",
        NOTIFY_DESKTOP="0",
        CLEANUP_ON_EXIT="1",
    )
    for name, value in settings.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
