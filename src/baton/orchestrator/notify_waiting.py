"""The "needs you" notification: who waits, what it asks, and every way to answer it.

Its commands work as printed from any directory (the state file is absolute and
shell-quoted); with the dialog read from the agent's screen it lists the options as the
agent shows them, the exact `baton answer … --key K` for each, one-time answer buttons,
and the agent's cockpit page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton.hints import baton_command
from baton.orchestrator.notify_answers import WaitingDetails
from baton.orchestrator.notify_channels import Notification, NotifyAction
from baton.roles import Role

__all__ = ["answer_command", "waiting_notification"]


def answer_command(role: Role, state_file: str | None, *, keys: tuple[str, ...] = ()) -> str:
    """`baton answer ROLE …` that works from any directory (free text: `TEXT`)."""
    what = [word for key in keys for word in ("--key", key)] if keys else ["TEXT"]
    return baton_command("answer", role.terminal_key, *what, *_state_file(state_file))


def _state_file(state_file: str | None) -> tuple[str | Path, ...]:
    return ("--state-file", Path(state_file)) if state_file else ()


def waiting_notification(
    role: Role,
    terminal: str,
    where: str,
    fields: dict[str, Any],
    details: WaitingDetails | None,
) -> Notification:
    key = role.terminal_key
    state_file = fields.get("state_file")
    folder = f" in {fields['wd']}" if fields.get("wd") else ""  # which run (of a batch)
    lines = [f"The {role.title} (terminal {terminal}) is waiting for an answer{where}{folder}."]
    fields["answer_command"] = answer_command(role, state_file)
    fields["attach_command"] = baton_command("attach", key, *_state_file(state_file))
    actions: tuple[NotifyAction, ...] = ()
    click = ""
    if details is not None:
        dialog = details.dialog
        fields["question"] = dialog.question
        fields["options"] = [{"label": o.label, "keys": list(o.keys)} for o in dialog.options]
        fields["cockpit_url"] = details.cockpit_url
        if dialog.question:
            lines.append(f"It asks: {dialog.question}")
        for number, option in enumerate(dialog.options, 1):
            command = answer_command(role, state_file, keys=option.keys)
            lines.append(f"  {number}. {option.label}  →  {command}")
        actions, click = details.actions, details.cockpit_url
    lines.append(f"Answer: {fields['answer_command']}")
    lines.append(f"Look first: {fields['attach_command']}")
    if click:
        lines.append(f"Cockpit: {click}")
    return Notification(
        "waiting",
        f"Baton: the {role.title} needs you",
        "\n".join(lines),
        "high",
        ("bell",),
        fields,
        actions,
        click,
    )
