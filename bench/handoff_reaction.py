"""Reaction time of `baton run`: an agent's answer complete → the next prompt sent.

Runs the demo project (scripted agents, real tmux, two rounds: FAIL then PASS; each answer
takes 0.2–2.2 s at random) with `baton run` as a subprocess at default settings three
ways, in the same run:

- events:     against `baton serve`, which streams status events (`GET /events`);
- no events:  against the same server behind a proxy that answers 404 to `/events` and
              `/terminals/{id}/status/wait` (what a server without events looks like);
- polling:    against `baton serve` with HANDOFF_WATCH=0, i.e. a status read every
              POLL_SECONDS=2 (the behaviour before events; the seeds' orchestrator's too).

A turn's reaction is measured from the answer file's completion (its mtime: the agent
renames it into place and is at rest a moment later) to the next prompt: `decided` is
when the next prompt was archived (just before it is typed), `sent` when the server
accepted it (`prompt_sent` in the run record: `POST /terminals/{id}/input` returns once
the CLI took the text, which is the server's own time). Every handoff of every run counts.

    .venv/bin/python bench/handoff_reaction.py [--runs 1] [--api URL]

`--api` uses a running `baton serve` instead of starting one (its terminals run in its
own tmux); it must serve the scripted provider.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from events_stream import free_port

from baton.demo.sample import write_sample_project
from baton.orchestrator.events import read_events

_WORK_SECONDS = (0.2, 2.2)


class NoEventsProxy:
    """Forwards every call to `upstream` except the status-event routes (404)."""

    def __init__(self, upstream: str) -> None:
        client = httpx.Client(base_url=upstream, timeout=300)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/events" or path.endswith("/status/wait"):
                    self._answer(404, b'{"detail":"Not Found"}', "application/json")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    key: value
                    for key, value in self.headers.items()
                    if key.lower() in ("content-type", "authorization")
                }
                response = client.request(self.command, self.path, content=body, headers=headers)
                self._answer(
                    response.status_code,
                    response.content,
                    response.headers.get("content-type", "application/json"),
                )

            def _answer(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def baton_serve(workdir: Path) -> Iterator[str]:
    """`baton serve` as a subprocess with its own state and private tmux; its URL."""
    socket_path = Path(tempfile.mkdtemp(prefix="baton-bench-")) / "tmux.sock"
    env = {**os.environ, "BATON_TMUX_SOCKET": str(socket_path)}
    port = free_port()
    log = (workdir / "server.log").open("ab")
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "baton", "serve", "--host", "127.0.0.1"),
            *("--port", str(port), "--state-dir", str(workdir / "server")),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"baton serve did not start; see {workdir / 'server.log'}")
            time.sleep(0.1)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        subprocess.run(["tmux", "-S", str(socket_path), "kill-server"], capture_output=True)
        shutil.rmtree(socket_path.parent, ignore_errors=True)
        log.close()


def run_once(api: str, root: Path, *, watch: bool) -> tuple[list[float], list[float], int]:
    """One `baton run` of the demo project; (decided, sent) reactions in seconds, exit code."""
    project = write_sample_project(root)
    # Answers take 0.2–2.2 s, at random: where an answer falls in the POLL_SECONDS cycle
    # decides what polling costs, so a fixed time would flatter or punish it.
    scenario = json.loads(project.scenario_file.read_text())
    scenario["work_seconds"] = list(_WORK_SECONDS)
    project.scenario_file.write_text(json.dumps(scenario))
    env = {
        **os.environ,
        "API": api,
        "PROVIDER": "scripted",
        "WD": str(project.root),
        "PROMPT": project.prompt(),
        "CLEANUP_ON_EXIT": "1",
        "HANDOFF_WATCH": "1" if watch else "0",
    }
    for name in ("POLL_SECONDS", "IDLE_GRACE_SECONDS", "RESPONSE_TIMEOUT"):
        env.pop(name, None)  # default settings
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "run"],
        env=env,
        cwd=project.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if completed.returncode not in (0, 1):
        raise SystemExit(f"baton run failed ({completed.returncode}):\n{completed.stderr}")
    archive = max((p for p in (project.root / ".tmp").glob("2*") if p.is_dir()), default=None)
    if archive is None:
        raise SystemExit(f"no archive under {project.root / '.tmp'}")
    decided, sent = reactions(archive)
    return decided, sent, completed.returncode


def reactions(archive: Path) -> tuple[list[float], list[float]]:
    """Per handoff: next prompt archived − answer complete, next prompt sent − answer complete."""
    answers, prompts = {}, {}
    for path in archive.glob("[0-9][0-9][0-9]-*.md"):
        number = int(path.name[:3])
        if path.name.endswith("-prompt.md"):
            prompts[number] = path.stat().st_mtime
        elif not path.name.endswith("-stale.md"):
            answers[number] = path.stat().st_mtime
    sent_at = {
        Path(event["file"]).name[:3]: _epoch(event["ts"])
        for event in read_events(archive / "events.jsonl")
        if event.get("event") == "prompt_sent" and event.get("file")
    }
    decided, sent = [], []
    for number, done in sorted(answers.items()):
        following = [n for n in prompts if n > number]
        if not following:
            continue
        nxt = min(following)
        decided.append(prompts[nxt] - done)
        if f"{nxt:03d}" in sent_at:
            sent.append(sent_at[f"{nxt:03d}"] - done)
    return decided, sent


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _row(label: str, samples: list[float]) -> str:
    if not samples:
        return f"{label:<44} (no samples)"
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"{label:<44} n={len(samples):<4} p50 {statistics.median(samples) * 1000:8.1f} ms"
        f"   p95 {p95 * 1000:8.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="demo runs per way (default 1)")
    parser.add_argument("--api", help="a running `baton serve` to use instead of starting one")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="baton-reaction-"))
    results: dict[str, tuple[list[float], list[float]]] = {}
    try:
        with contextlib.ExitStack() as stack:
            api = args.api or stack.enter_context(baton_serve(workdir))
            offers = _offers_events(api)
            proxy = NoEventsProxy(api)
            stack.callback(proxy.close)
            ways = [
                (f"baton serve ({'with' if offers else 'WITHOUT'} /events)", api, True),
                ("server without events (proxy: 404)", proxy.url, True),
                ("polling baseline (HANDOFF_WATCH=0)", api, False),
            ]
            for label, url, watch in ways:
                decided: list[float] = []
                sent: list[float] = []
                for index in range(args.runs):
                    root = workdir / f"{len(results)}-{index}"
                    got_decided, got_sent, code = run_once(url, root, watch=watch)
                    decided += got_decided
                    sent += got_sent
                    verdict = "PASS" if code == 0 else "FAIL"
                    print(f"  {label}: run {index + 1} {verdict}", file=sys.stderr)
                results[label] = (decided, sent)
        print("reaction: answer file complete → next prompt (POLL_SECONDS=2, defaults)")
        for label, (decided, sent) in results.items():
            print(_row(f"{label} · decided", decided))
            print(_row(f"{label} · sent", sent))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _offers_events(api: str) -> bool:
    """Whether `GET /events` answers with an event stream."""
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(2.0)) as client,
            client.stream("GET", f"{api}/events") as response,
        ):
            kind = response.headers.get("content-type", "")
            return response.status_code == 200 and kind.startswith("text/event-stream")
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
