"""Turn end with the real Codex: from Codex's own signal to Baton's `completed` event.

Codex 0.169 runs offline under a real `baton serve` against the scripted model server of
the end-to-end tests (tests/e2e/model), so the pinned CLIs must be installed. Codex says
a turn has ended twice: `OSC 7501 state=done` in its output (the pane log) and its
`notify` program (a line appended to `codex-notify.jsonl`). The bench watches both files
with inotify and prints, per turn, how long after each signal the `completed` status
event arrived on `GET /events`. No figure is asserted.

    .venv/bin/python bench/codex_turn_end.py [--turns 6]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from events_stream import CompletedListener, free_port
from inotify_simple import INotify
from inotify_simple import flags as inotify_flags

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.model.brain import Brain  # noqa: E402
from tests.e2e.model.openai_responses import codex_environment, openai_model_server  # noqa: E402
from tests.e2e.record_codex import response_prompt  # noqa: E402

_OSC_DONE = b"\x1b]7501;state=done"


class SignalWatch:
    """First time (perf_counter) each Codex turn-end signal appears after `arm()`."""

    def __init__(self, runtime_dir: Path) -> None:
        self.runtime_dir = runtime_dir
        self.osc_at: float | None = None
        self.notify_at: float | None = None
        self._inotify = INotify()
        self._inotify.add_watch(runtime_dir, inotify_flags.MODIFY | inotify_flags.CREATE)
        self._sizes = {"pane.log": 0, "codex-notify.jsonl": 0}
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def arm(self) -> None:
        for name in self._sizes:
            with contextlib.suppress(OSError):
                self._sizes[name] = (self.runtime_dir / name).stat().st_size
        self.osc_at = self.notify_at = None
        if not self._thread.is_alive():
            self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            for event in self._inotify.read(timeout=100):
                now = time.perf_counter()
                if event.name == "codex-notify.jsonl" and self.notify_at is None:
                    self.notify_at = now
                elif event.name == "pane.log" and self.osc_at is None:
                    with (self.runtime_dir / "pane.log").open("rb") as handle:
                        handle.seek(max(0, self._sizes["pane.log"] - 64))
                        if _OSC_DONE in handle.read():
                            self.osc_at = now

    def close(self) -> None:
        self._stop = True
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self._inotify.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codex-turn-end-"))
    sock = Path(tempfile.mkdtemp(prefix="bt-")) / "tmux.sock"
    project = work / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    port = free_port()
    after_osc: list[float] = []
    after_notify: list[float] = []
    with openai_model_server(Brain()) as model:
        env = {
            **os.environ,
            **codex_environment(work, model),
            "BATON_STATE_DIR": str(work / "state"),
            "BATON_TMUX_SOCKET": str(sock),
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "baton", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(base + "/health").status_code == 200:
                        break
                time.sleep(0.1)
            client = httpx.Client(base_url=base, timeout=120)
            terminal = client.post(
                "/sessions",
                params={
                    "provider": "codex",
                    "agent_profile": "tester",
                    "working_directory": str(project),
                },
            ).json()["id"]
            watch = SignalWatch(work / "state" / "terminals" / terminal)
            for turn in range(args.turns):
                name = ("analyst_summary.md", "programmer_summary.md")[turn % 2]
                (project / ".tmp" / "agent-responses" / name).unlink(missing_ok=True)
                listener = CompletedListener(base, terminal)
                watch.arm()
                prompt = response_prompt(project, name, f"Round: {turn + 1}\nDo it.")
                client.post(f"/terminals/{terminal}/input", json={"message": prompt})
                arrived = [at] if (at := listener.join(90)) is not None else []
                time.sleep(1.0)  # the notify program may run after the event
                if arrived and watch.osc_at is not None:
                    after_osc.append(arrived[0] - watch.osc_at)
                if arrived and watch.notify_at is not None:
                    after_notify.append(arrived[0] - watch.notify_at)
            watch.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
            subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True)
            shutil.rmtree(sock.parent, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)
    for label, samples in (("OSC 7501 done", after_osc), ("notify", after_notify)):
        if samples:
            shown = ", ".join(f"{s * 1000:.0f}" for s in samples)
            print(
                f"completed event after {label:<14} n={len(samples)}  "
                f"p50 {statistics.median(samples) * 1000:7.1f} ms  max "
                f"{max(samples) * 1000:7.1f} ms   ({shown} ms; negative: event came first)"
            )
        else:
            print(f"completed event after {label}: no samples")


if __name__ == "__main__":
    main()
