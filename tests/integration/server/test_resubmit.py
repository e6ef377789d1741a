"""A submit key the CLI drops: the message still in its input box is submitted again.

Gemini CLI reads an Enter handled within 30 ms of the paste as a newline, so on a loaded
machine a message can stay typed but unsent. A provider that says so (`resubmit_after`,
`input_pending`) gets its submit keys pressed again, every `resubmit_after` seconds while
the message waits. Here the scripted agent stands in: its provider's first "submit" (or
first two) is a key the agent ignores (an arrow), so only a resubmission sends it.

A paste the CLI drops (Gemini CLI loading a resumed conversation) never shows: once the
CLI has redrawn at rest with its input box empty, the message is pasted once more.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from tests.support.server import in_process_server

import baton.providers as providers
from baton.providers.base import LaunchSpec, TerminalContext
from baton.providers.scripted import ScriptedProvider
from baton.screen import last_lines
from baton.scripted_agent import ui
from baton.server.creation import ServiceTimings

pytestmark = pytest.mark.tmux


def _typed_in_prompt(screen: str) -> bool:
    """The scripted agent's prompt line holds typed text (`input_pending` for both fakes)."""
    lines = last_lines(screen, 1)
    return bool(lines) and lines[-1].startswith(ui.PROMPT + " ") and len(lines[-1]) > 2


class DroppedEnterProvider(ScriptedProvider):
    """The scripted agent, whose first submit press never reaches it as Enter."""

    name = "dropped_enter"
    resubmit_after: ClassVar[float | None] = 0.5
    presses: ClassVar[int] = 0

    @property  # type: ignore[override]
    def submit_keys(self) -> tuple[str, ...]:
        type(self).presses += 1
        return ("Right",) if type(self).presses == 1 else ("Enter",)

    def input_pending(self, screen: str) -> bool:
        return _typed_in_prompt(screen)


class TwiceDroppedEnter(DroppedEnterProvider):
    """Its first two submit presses are lost: the message is submitted a third time."""

    name = "twice_dropped_enter"

    @property  # type: ignore[override]
    def submit_keys(self) -> tuple[str, ...]:
        type(self).presses += 1
        return ("Right",) if type(self).presses <= 2 else ("Enter",)


class NeverResubmits(DroppedEnterProvider):
    name = "never_resubmits"
    resubmit_after = None


class DroppedPasteProvider(ScriptedProvider):
    """The scripted agent losing its first paste, as a CLI still loading does."""

    name = "dropped_paste"
    resubmit_after: ClassVar[float | None] = 0.5
    paste_wait = 0.5

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        spec = super().launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "--drop-first-paste"], env=spec.env)

    def input_pending(self, screen: str) -> bool:
        return _typed_in_prompt(screen)


class DroppedPasteNoResubmit(DroppedPasteProvider):
    name = "dropped_paste_no_resubmit"
    resubmit_after = None


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for provider in (
        DroppedEnterProvider,
        TwiceDroppedEnter,
        NeverResubmits,
        DroppedPasteProvider,
        DroppedPasteNoResubmit,
    ):
        monkeypatch.setitem(
            providers.BUILTIN_PROVIDERS, provider.name, f"{__name__}:{provider.__name__}"
        )
    timings = ServiceTimings(accept_timeout=4.0)
    with in_process_server(tmp_path / "state", timings=timings) as handle:
        yield handle.base_url


def _send(base_url: str, provider: type[ScriptedProvider], tmp_path: Path) -> int:
    if issubclass(provider, DroppedEnterProvider):
        provider.presses = 0
    created = httpx.post(
        f"{base_url}/sessions",
        params={
            "agent_profile": "tester",
            "provider": provider.name,
            "working_directory": str(tmp_path),
        },
        timeout=60,
    )
    assert created.status_code == 201, created.text
    terminal = created.json()["id"]
    sent = httpx.post(
        f"{base_url}/terminals/{terminal}/input", json={"message": "hello there"}, timeout=60
    )
    return sent.status_code


def test_a_message_left_in_the_input_box_is_submitted_again(server: str, tmp_path: Path) -> None:
    assert _send(server, DroppedEnterProvider, tmp_path) == 200
    assert DroppedEnterProvider.presses == 2


def test_the_message_is_submitted_again_while_it_waits(server: str, tmp_path: Path) -> None:
    assert _send(server, TwiceDroppedEnter, tmp_path) == 200
    assert TwiceDroppedEnter.presses == 3


def test_without_resubmission_the_dropped_enter_is_reported(server: str, tmp_path: Path) -> None:
    assert _send(server, NeverResubmits, tmp_path) == 502
    assert NeverResubmits.presses == 1


def test_a_dropped_paste_is_pasted_again_once_the_cli_redrew_at_rest(
    server: str, tmp_path: Path
) -> None:
    assert _send(server, DroppedPasteProvider, tmp_path) == 200
    received = sorted((tmp_path / "state" / "terminals").glob("*/inputs/*.txt"))
    assert [path.read_text() for path in received] == ["hello there"]  # taken once


def test_without_resubmission_a_dropped_paste_is_reported(server: str, tmp_path: Path) -> None:
    assert _send(server, DroppedPasteNoResubmit, tmp_path) == 502
    assert not list((tmp_path / "state" / "terminals").glob("*/inputs/*.txt"))
