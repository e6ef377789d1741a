"""TmuxServer against a real tmux: acts reach only the pane bound to their terminal, and
the words of a bound act reach tmux exactly as given (quoting)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.waiting import wait_until

from baton.errors import TerminalExitedError
from baton.server.tmux import PaneRef, TmuxServer, bound_pane
from baton.server.tmux_windows import PaneLaunch, create_window

pytestmark = pytest.mark.tmux

AWKWARD = [
    "plain",
    "it's",
    'say "hi"',
    "#(touch MARKER) #{pane_pid} ##",
    "semi;colon ; kill-server",
    "$HOME ~ `id` \\back\\",
    "new\nline",
    "%0 %if -t",
    "{ braces }",
]


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[TmuxServer]:
    socket_dir = Path(tempfile.mkdtemp(prefix="baton-tmux-"))
    server = TmuxServer(socket_dir / "tmux.sock", tmp_path / "state" / "tmux.conf")
    try:
        yield server
    finally:
        server.kill_server()
        shutil.rmtree(socket_dir, ignore_errors=True)


def _window(tmux: TmuxServer, tmp_path: Path, terminal_id: str, *, new_session: bool) -> PaneRef:
    runtime = tmp_path / "state" / "terminals" / terminal_id
    window = create_window(
        tmux,
        session="s1",
        window_name=f"w-{terminal_id}",
        new_session=new_session,
        terminal_id=terminal_id,
        launch=PaneLaunch(["cat"], {"PATH": "/usr/bin:/bin"}, tmp_path, runtime),
    )
    return PaneRef(pane_id=window.pane_id, terminal_id=terminal_id)


def test_bound_words_reach_tmux_unchanged(tmux: TmuxServer, tmp_path: Path) -> None:
    pane = _window(tmux, tmp_path, "t1", new_session=True)
    for value in AWKWARD:
        tmux.run_bound(pane, ["set-option", "-p", "-t", pane.pane_id, "@probe", value])
        shown = tmux.run("show-options", "-p", "-v", "-t", pane.pane_id, "@probe")
        assert shown.removesuffix("\n") == value
    assert not (tmp_path / "MARKER").exists()


def test_acts_refuse_a_pane_bound_to_another_terminal(tmux: TmuxServer, tmp_path: Path) -> None:
    mine = _window(tmux, tmp_path, "mine", new_session=True)
    other = _window(tmux, tmp_path, "other", new_session=False)
    # The other terminal's pane, named with this terminal's id (as a stale record would).
    impostor = PaneRef(pane_id=other.pane_id, terminal_id=mine.terminal_id)
    with pytest.raises(TerminalExitedError):
        tmux.send_keys(impostor, ["x", "Enter"])
    with pytest.raises(TerminalExitedError):
        tmux.paste(impostor, "pasted")
    with pytest.raises(TerminalExitedError):
        tmux.capture(impostor)
    assert tmux.snapshot(impostor) is None
    assert not tmux.pane_state(impostor).exists
    assert tmux.pane_current_path(impostor) is None
    assert tmux.pane_environment(impostor) is None
    assert bound_pane(tmux.list_panes() or {}, impostor) is None
    tmux.kill_window(impostor)
    assert tmux.pane_state(other).exists and not tmux.pane_state(other).dead
    # A pane id that does not exist at all is gone too (display-message would fall back).
    with pytest.raises(TerminalExitedError):
        tmux.send_keys(PaneRef(pane_id="%99", terminal_id="mine"), ["x"])
    # The pane's own terminal reaches it.
    tmux.send_keys(other, ["typed", "Enter"])
    wait_until(lambda: "typed" in tmux.capture(other), 10, message="the keys never arrived")
    assert "typed" not in tmux.capture(mine)
    assert tmux.pane_current_path(other) == str(tmp_path)
    tmux.kill_window(other)
    assert not tmux.pane_state(other).exists
    assert tmux.pane_state(mine).exists


def test_the_command_reaches_the_pane_word_for_word(tmux: TmuxServer, tmp_path: Path) -> None:
    """tmux ends a command at an argument ending in `;`: the CLI's words never go through it."""
    out = tmp_path / "words"
    runtime = tmp_path / "state" / "terminals" / "t9"
    words = ["a;", "kill-server", "#{pane_pid}", "new\nline"]
    script = f'printf "%s|" "$@" > {out}.tmp && mv {out}.tmp {out}; sleep 30'
    window = create_window(
        tmux,
        session="s1",
        window_name="w",
        new_session=True,
        terminal_id="t9",
        launch=PaneLaunch(
            ["sh", "-c", script, "sh", *words], {"PATH": "/usr/bin:/bin"}, tmp_path, runtime
        ),
    )
    wait_until(out.exists, 10, message="the command never wrote its words")
    assert out.read_text() == "|".join(words) + "|"
    assert tmux.pane_state(PaneRef(pane_id=window.pane_id, terminal_id="t9")).exists


def test_a_paste_leaves_no_buffer_behind(tmux: TmuxServer, tmp_path: Path) -> None:
    """`paste-buffer -d` deletes a pasted buffer; a refused paste deletes its own."""
    mine = _window(tmux, tmp_path, "mine", new_session=True)
    other = _window(tmux, tmp_path, "other", new_session=False)
    tmux.paste(mine, "pasted")
    wait_until(lambda: "pasted" in tmux.capture(mine), 10, message="the paste never arrived")
    assert tmux.run("list-buffers", "-F", "#{buffer_name}", check=False).strip() == ""
    with pytest.raises(TerminalExitedError):
        tmux.paste(PaneRef(pane_id=other.pane_id, terminal_id="mine"), "refused")
    assert tmux.run("list-buffers", "-F", "#{buffer_name}", check=False).strip() == ""


def test_a_new_pane_is_bound_only_while_it_runs_the_process_it_was_made_with(
    tmux: TmuxServer, tmp_path: Path
) -> None:
    """What a pane of a new tmux server that took the id would look like: another pid."""
    made = _window(tmux, tmp_path, "t1", new_session=True)
    pid = int(tmux.run("display-message", "-p", "-t", made.pane_id, "#{pane_pid}").strip())
    stranger = PaneRef(pane_id=made.pane_id, terminal_id="t2")
    with pytest.raises(TerminalExitedError):
        tmux.bind_new_pane(stranger, pid + 1)
    bound = "#{@baton_terminal}"
    assert tmux.run("display-message", "-p", "-t", made.pane_id, bound).strip() == "t1"
    tmux.bind_new_pane(stranger, pid)
    assert tmux.run("display-message", "-p", "-t", made.pane_id, bound).strip() == "t2"
