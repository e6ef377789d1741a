"""A scripted CAO-compatible HTTP server for orchestrator tests (real HTTP on 127.0.0.1).

Each terminal runs a fake agent: when input arrives, the terminal's behaviour turns the
prompt into a plan of timed steps (set a status, sleep, write the response file named in
the prompt, set the last output) that a worker thread plays. Every request is recorded,
so tests can assert exactly what arrived (paths, query parameters, message bytes).

    with FakeCao() as cao:
        cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=turn.count > 1)
        ... run `baton run` with API=cao.url ...
        assert [r.path for r in cao.requests if r.method == "POST"] == [...]
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from baton.scripted_agent import answers

__all__ = [
    "PROFILE_ROLE",
    "FakeCao",
    "FakeTerminal",
    "Recorded",
    "Step",
    "Turn",
    "answer_plan",
    "canned_answer",
]

PROFILE_ROLE = {
    "system_analyst": "analyst",
    "peer_system_analyst": "peer_analyst",
    "programmer": "programmer",
    "peer_programmer": "peer_programmer",
    "tester": "tester",
}

# A step: ("status", "processing") · ("sleep", 0.2) · ("write", text) · ("output", text)
# · ("die", None): the CLI is killed (status error from then on)
# · ("hang", None): nothing more happens until Escape is pressed (`POST …/key?key=Escape`)
# · ("until", event): nothing more happens until the test sets the threading.Event
Step = tuple[str, Any]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: bytes
    headers: dict[str, str]


@dataclass
class Turn:
    """One prompt delivered to a fake agent: what it says and how many came before."""

    terminal: FakeTerminal
    prompt: str
    count: int  # 1 for this terminal's first prompt

    @property
    def role(self) -> str:
        return self.terminal.role

    @property
    def response_path(self) -> Path | None:
        target = answers.find_response_target(self.prompt)
        return target.path if target else None


Behaviour = Callable[[Turn], list[Step]]


@dataclass
class FakeTerminal:
    id: str
    session_name: str
    profile: str
    provider: str
    working_directory: str
    status: str = "idle"
    last_output: str = ""
    prompts: list[str] = field(default_factory=list)
    exited: bool = False
    dead: bool = False
    keys: list[str] = field(default_factory=list)
    interrupted: threading.Event = field(default_factory=threading.Event, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def role(self) -> str:
        return PROFILE_ROLE.get(self.profile, self.profile)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": f"{self.profile}-{self.id[:4]}",
            "session_name": self.session_name,
            "provider": self.provider,
            "agent_profile": self.profile,
            "status": self.status,
            "working_directory": self.working_directory,
        }


def canned_answer(turn: Turn, *, tester_passes: bool = True) -> str:
    """A valid answer for the turn's role (REVISE on review cycle 1, APPROVED with evidence)."""
    role = turn.role
    if role == "analyst":
        return answers.analyst_answer(turn.prompt)
    if role == "peer_analyst":
        return answers.analyst_review_answer(turn.prompt)
    if role == "programmer":
        return answers.programmer_answer(turn.prompt, files_changed=["src/app.py"])
    if role == "peer_programmer":
        return answers.programmer_review_answer(turn.prompt)
    return answers.tester_answer(
        passed=tester_passes,
        commands=["make test"],
        output="1 passed" if tester_passes else "1 failed: test_total",
        failed_criteria="" if tester_passes else "the total is off by one",
        next_fix="" if tester_passes else "include the last item in the sum",
    )


def answer_plan(
    turn: Turn,
    text: str | None = None,
    *,
    work: float = 0.15,
    stale_idle: float = 0.0,
    tester_passes: bool = True,
) -> list[Step]:
    """Work for `work` seconds, write the answer file atomically, then show `completed`.

    `stale_idle` keeps the old idle status for that long first (the startup race).
    """
    body = text if text is not None else canned_answer(turn, tester_passes=tester_passes)
    steps: list[Step] = []
    if stale_idle:
        steps += [("status", "idle"), ("sleep", stale_idle)]
    return [
        *steps,
        ("status", "processing"),
        ("sleep", work),
        ("write", body),
        ("output", body),
        ("status", "completed"),
    ]


def default_behaviour(turn: Turn) -> list[Step]:
    return answer_plan(turn)


class FakeCao:
    """The server; a context manager that stops it (and its agent threads) on exit."""

    def __init__(self, *, token: str | None = None, port: int = 0) -> None:
        self.token = token
        self.behaviour: dict[str, Behaviour] = {}
        self.refuse_profiles: set[str] = set()  # creating these answers refuse_status
        self.refuse_status = 500  # 400: refused as a bad request (an unknown profile)
        # POST paths ending so: done, then the connection closed with no answer (first match
        # taken off the list), as when a server dies right after acting.
        self.lose_answers: list[str] = []
        self.can_restart = False  # True: POST /terminals/{id}/restart, as `baton serve` has
        # Set: terminal creates after the session's wait until it is set (slow CLIs).
        self.terminal_creates_wait: threading.Event | None = None
        self.restarted: list[str] = []  # terminal ids restarted in place
        self.deleted: list[str] = []  # terminal ids deleted
        self.terminals: dict[str, FakeTerminal] = {}
        self.requests: list[Recorded] = []
        self.sessions: list[str] = []
        self._forgotten: dict[str, FakeTerminal] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # --- lifecycle ---

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeCao:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    # --- helpers for tests ---

    def terminal(self, role: str) -> FakeTerminal:
        """The newest terminal of a role (`analyst`, `peer_analyst`, …)."""
        found = [t for t in self.terminals.values() if t.role == role]
        if not found:
            raise KeyError(role)
        return found[-1]

    def forget(self, terminal_id: str) -> None:
        """Drop a terminal so it answers 404, as after a server restart that lost it."""
        with self._lock:
            if terminal_id in self.terminals:
                self._forgotten[terminal_id] = self.terminals.pop(terminal_id)

    def kill(self, terminal_id: str) -> None:
        """The agent CLI dies: status `error` from now on, its pending turn never finishes."""
        terminal = self.terminals[terminal_id]
        terminal.dead = True
        terminal.status = "error"

    def live_terminals(self) -> list[FakeTerminal]:
        """Terminals neither deleted, exited nor dead (what a run may have left behind)."""
        return [t for t in self.terminals.values() if not t.exited and not t.dead]

    def _lose_answer(self, path: str) -> bool:
        with self._lock:
            for suffix in self.lose_answers:
                if path.endswith(suffix):
                    self.lose_answers.remove(suffix)
                    return True
        return False

    def posts(self, suffix: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith(suffix)]

    def inputs(self) -> list[tuple[str, str]]:
        """(role, message) of every input, in arrival order."""
        result = []
        for request in self.posts("/input"):
            terminal_id = request.path.split("/")[2]
            role = next((t.role for t in self._all_terminals() if t.id == terminal_id), terminal_id)
            result.append((role, _message_of(request)))
        return result

    def _all_terminals(self) -> list[FakeTerminal]:
        return list(self.terminals.values()) + list(self._forgotten.values())

    def add_terminal(
        self, profile: str, *, session_name: str | None = None, wd: str = "/tmp"
    ) -> FakeTerminal:
        """Create a terminal directly (as if an earlier run had made it)."""
        with self._lock:
            self._counter += 1
            if session_name is None:
                session_name = f"fake-{self._counter}"
                self.sessions.append(session_name)
            terminal = FakeTerminal(
                id=f"{self._counter:08x}",
                session_name=session_name,
                profile=profile,
                provider="codex",
                working_directory=wd,
            )
            self.terminals[terminal.id] = terminal
            return terminal

    # --- agent simulation ---

    def _deliver(self, terminal: FakeTerminal, prompt: str) -> None:
        terminal.prompts.append(prompt)
        turn = Turn(terminal, prompt, len(terminal.prompts))
        plan = self.behaviour.get(terminal.role, default_behaviour)(turn)

        def play() -> None:
            with terminal.lock:
                for kind, value in plan:
                    if self._stopping.is_set() or terminal.dead:
                        return
                    if kind == "die":  # the CLI is killed mid-turn
                        terminal.dead = True
                        terminal.status = "error"
                        return
                    if kind == "hang":
                        terminal.interrupted.clear()
                        while not terminal.interrupted.wait(0.05):
                            if self._stopping.is_set():
                                return
                    elif kind == "status":
                        terminal.status = value
                    elif kind == "sleep":
                        self._stopping.wait(value)
                    elif kind == "until":
                        while not value.wait(0.05):
                            if self._stopping.is_set():
                                return
                    elif kind == "output":
                        terminal.last_output = value
                    elif kind == "write":
                        path = turn.response_path
                        assert path is not None, "prompt names no response file"
                        path.parent.mkdir(parents=True, exist_ok=True)
                        temporary = path.with_name(f".{path.name}.fake.tmp")
                        temporary.write_text(value, encoding="utf-8")
                        temporary.replace(path)

        thread = threading.Thread(target=play, daemon=True)
        self._threads.append(thread)
        thread.start()

    # --- HTTP ---

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        cao = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, code: int, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                record = Recorded(method, parts.path, query, body, dict(self.headers.items()))
                with cao._lock:
                    cao.requests.append(record)
                expected = f"Bearer {cao.token}"
                if (
                    cao.token
                    and parts.path != "/health"
                    and self.headers.get("Authorization") != expected
                ):
                    self._answer(401, {"detail": "missing or wrong bearer token"})
                    return
                try:
                    code, data = cao._route(method, parts.path, query, body)
                except KeyError as missing:
                    code, data = 404, {"detail": f"terminal {missing.args[0]} not found"}
                if method == "POST" and cao._lose_answer(parts.path):
                    self.close_connection = True
                    return
                self._answer(code, data)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        return Handler

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes) -> tuple[int, Any]:
        segments = [s for s in path.split("/") if s]
        if method == "GET" and segments == ["health"]:
            return 200, {"status": "ok"}
        if method == "POST" and segments == ["sessions"]:
            name = query.get("session_name")
            if name is not None:
                with self._lock:
                    if name in self.sessions:
                        return 400, {"detail": f"session {name} already exists"}
                    self.sessions.append(name)
            terminal = self.add_terminal(
                query.get("agent_profile", ""),
                session_name=name,
                wd=query.get("working_directory", "/tmp"),
            )
            terminal.provider = query.get("provider", "codex")
            return 201, terminal.as_json()
        if method == "GET" and segments == ["sessions"]:
            return 200, [{"id": name, "name": name} for name in self.sessions]
        if method == "GET" and len(segments) == 3 and segments[::2] == ["sessions", "terminals"]:
            if segments[1] not in self.sessions:
                return 404, {"detail": f"session {segments[1]} not found"}
            return 200, [
                t.as_json() for t in self.terminals.values() if t.session_name == segments[1]
            ]
        if method == "POST" and query.get("agent_profile") in self.refuse_profiles:
            detail = f"cannot start {query['agent_profile']}: tmux failed"
            return self.refuse_status, {"detail": detail}
        if method == "POST" and len(segments) == 3 and segments[::2] == ["sessions", "terminals"]:
            if self.terminal_creates_wait is not None:
                self.terminal_creates_wait.wait(60)
            if segments[1] not in self.sessions:
                return 404, {"detail": f"session {segments[1]} not found"}
            terminal = self.add_terminal(
                query.get("agent_profile", ""),
                session_name=segments[1],
                wd=query.get("working_directory", "/tmp"),
            )
            terminal.provider = query.get("provider", "codex")
            return 201, terminal.as_json()
        if segments[:1] == ["terminals"] and len(segments) >= 2:
            terminal = self.terminals.get(segments[1])
            if terminal is None:
                raise KeyError(segments[1])
            rest = segments[2:]
            if method == "GET" and not rest:
                return 200, terminal.as_json()
            if method == "GET" and rest == ["output"]:
                return 200, {"output": terminal.last_output, "mode": query.get("mode", "full")}
            if method == "POST" and rest == ["input"] and terminal.dead:
                return 409, {"detail": f"terminal {terminal.id}: the agent CLI has exited"}
            if method == "POST" and rest == ["input"]:
                message = query.get("message")
                if message is None:
                    message = json.loads(body or b"{}").get("message")
                if message is None:
                    return 422, {"detail": [{"loc": ["query", "message"], "msg": "required"}]}
                self._deliver(terminal, message)
                return 200, {"success": True}
            if method == "POST" and rest == ["key"]:
                terminal.keys.append(query.get("key", ""))
                if query.get("key") == "Escape":
                    terminal.interrupted.set()
                return 200, {"success": True}
            if method == "POST" and rest == ["exit"]:
                terminal.exited = True
                return 200, {"success": True}
            if method == "DELETE" and not rest:
                self.deleted.append(terminal.id)
                self.forget(terminal.id)
                return 200, {"success": True}
            if method == "POST" and rest == ["restart"] and self.can_restart:
                with terminal.lock:
                    terminal.dead = False
                    terminal.status = "idle"
                self.restarted.append(terminal.id)
                return 200, {**terminal.as_json(), "resumed": False}
        return 404, {"detail": f"no route {method} {path}"}


def _message_of(request: Recorded) -> str:
    if "message" in request.query:
        return request.query["message"]
    return json.loads(request.body or b"{}").get("message", "")
