"""The CAO-compatible HTTP API (`baton serve`) and the ways to run it.

Routes, query parameters, JSON shapes and status strings follow `cao-server`, so a
client written for the CLI Agent Orchestrator drives Baton unchanged. Every error comes
back as `{"detail": "<one line>"}`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from baton import __version__
from baton.errors import BadRequestError, ConfigError, ServerError
from baton.server.events_routes import events_router
from baton.server.profiles import ProfileStore
from baton.server.registry import Registry
from baton.server.security import LocalOnlyMiddleware
from baton.server.sessions import SessionService
from baton.server.terminals import ServiceTimings, TerminalService
from baton.server.tmux import TmuxServer

__all__ = [
    "ServerHandle",
    "ServerOptions",
    "create_app",
    "run_server_in_thread",
    "serve_forever",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9889
TERMINAL_ID_PATTERN = r"^[a-f0-9]{8}$"

logger = logging.getLogger("baton.server")

TerminalId = Annotated[str, PathParam(pattern=TERMINAL_ID_PATTERN)]


class CreateBody(BaseModel):
    """Optional JSON body of the create routes (as CAO's): extra environment, first message."""

    env_vars: dict[str, str] | None = None
    initial_message: str | None = None


@dataclass(frozen=True)
class ServerOptions:
    """Everything `baton serve` needs; built from flags and the environment."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    state_dir: Path = field(default_factory=lambda: Path.home() / ".local/state/baton")
    profiles_dir: Path | None = None
    tmux_socket: Path | None = None
    token: str | None = None
    timings: ServiceTimings = field(default_factory=ServiceTimings)
    # Delete every terminal and stop the private tmux server when the server stops
    # (for the in-process server of `baton demo`; `baton serve` keeps terminals alive).
    kill_tmux_on_exit: bool = False

    @classmethod
    def from_environment(
        cls,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        state_dir: Path | None = None,
        profiles_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ServerOptions:
        """Flags win; then BATON_STATE_DIR, BATON_PROFILES_DIR, BATON_TMUX_SOCKET, BATON_TOKEN."""
        env = os.environ if environ is None else environ
        if state_dir is None:
            state_dir = Path(env.get("BATON_STATE_DIR") or Path.home() / ".local/state/baton")
        if profiles_dir is None and env.get("BATON_PROFILES_DIR"):
            profiles_dir = Path(env["BATON_PROFILES_DIR"])
        if profiles_dir is not None and not profiles_dir.is_dir():
            raise ConfigError(f"profiles directory does not exist: {profiles_dir}")
        socket = Path(env["BATON_TMUX_SOCKET"]) if env.get("BATON_TMUX_SOCKET") else None
        timings = ServiceTimings(
            startup_timeout=_float_env(env, "BATON_STARTUP_TIMEOUT", 30.0),
            accept_timeout=_float_env(env, "BATON_ACCEPT_TIMEOUT", 10.0),
        )
        return cls(
            host=host,
            port=port,
            state_dir=state_dir.expanduser().absolute(),
            profiles_dir=profiles_dir.expanduser().absolute() if profiles_dir else None,
            tmux_socket=socket,
            token=env.get("BATON_TOKEN") or None,
            timings=timings,
        )

    def resolved_socket(self) -> Path:
        """BATON_TMUX_SOCKET, else `<state_dir>/tmux.sock` (moved to /tmp when too long)."""
        if self.tmux_socket is not None:
            return self.tmux_socket
        socket = self.state_dir / "tmux.sock"
        if len(str(socket)) > 100:  # unix socket paths are limited to ~107 bytes
            digest = hashlib.sha1(str(self.state_dir).encode()).hexdigest()[:12]
            socket = Path(tempfile.gettempdir()) / f"baton-{os.getuid()}" / f"{digest}.sock"
        return socket


def _float_env(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def build_service(options: ServerOptions) -> TerminalService:
    """The terminal service over the state directory, registry and private tmux server."""
    if shutil.which("tmux") is None:
        raise ConfigError("tmux is not installed (baton serve runs agent CLIs in tmux)")
    try:
        options.state_dir.mkdir(parents=True, exist_ok=True)
        registry = Registry(options.state_dir / "baton.db")
    except (OSError, sqlite3.Error) as error:
        raise ConfigError(f"cannot use state directory {options.state_dir}: {error}") from None
    return TerminalService(
        registry=registry,
        tmux=TmuxServer(options.resolved_socket(), options.state_dir / "tmux.conf"),
        profiles=ProfileStore(options.profiles_dir),
        state_dir=options.state_dir,
        timings=options.timings,
    )


def create_app(options: ServerOptions, service: TerminalService | None = None) -> FastAPI:
    """The FastAPI application with every CAO route, the safety middleware and error shapes."""
    service = service or build_service(options)
    app = FastAPI(title="Baton", version=__version__, description=__doc__)
    sessions = SessionService(service)
    app.state.service = service
    app.state.sessions = sessions
    extra_hosts = () if options.host in ("0.0.0.0", "::", "") else (options.host,)
    app.add_middleware(LocalOnlyMiddleware, token=options.token, extra_hosts=extra_hosts)

    @app.exception_handler(ServerError)
    async def _server_error(_: Request, error: ServerError) -> JSONResponse:
        return JSONResponse(status_code=error.status_code, content={"detail": str(error)})

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        # Still one JSON line for the client; the traceback goes to the server's log.
        logger.exception("unexpected error")
        detail = f"internal error: {type(error).__name__}: {error}"
        return JSONResponse(status_code=500, content={"detail": detail})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        parts = []
        for item in error.errors():
            where = ".".join(str(p) for p in item.get("loc", ()) if p not in ("path", "query"))
            parts.append(f"{where}: {item.get('msg', 'invalid')}")
        return JSONResponse(status_code=422, content={"detail": "; ".join(parts)})

    app.include_router(events_router(service, TERMINAL_ID_PATTERN))

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok", "service": "baton", "version": __version__}

    @app.post("/sessions", status_code=201)
    def create_session(
        agent_profile: str,
        provider: str | None = None,
        working_directory: str | None = None,
        session_name: str | None = None,
        body: CreateBody | None = None,
    ) -> dict[str, Any]:
        return service.create_terminal(
            agent_profile=agent_profile,
            provider=provider,
            working_directory=working_directory,
            session_name=session_name,
            new_session=True,
            env_vars=body.env_vars if body else None,
            initial_message=body.initial_message if body else None,
        )

    @app.get("/sessions")
    def list_sessions() -> list[dict[str, Any]]:
        return sessions.list_sessions()

    @app.get("/sessions/{session_name}")
    def get_session(session_name: str) -> dict[str, Any]:
        return sessions.get_session(session_name)

    @app.delete("/sessions/{session_name}")
    def delete_session(session_name: str) -> dict[str, bool]:
        sessions.delete_session(session_name)
        return {"success": True}

    @app.post("/sessions/{session_name}/terminals", status_code=201)
    def create_terminal(
        session_name: str,
        agent_profile: str,
        provider: str | None = None,
        working_directory: str | None = None,
        body: CreateBody | None = None,
    ) -> dict[str, Any]:
        return service.create_terminal(
            agent_profile=agent_profile,
            provider=provider,
            working_directory=working_directory,
            session_name=session_name,
            new_session=False,
            env_vars=body.env_vars if body else None,
            initial_message=body.initial_message if body else None,
        )

    @app.get("/sessions/{session_name}/terminals")
    def list_session_terminals(session_name: str) -> list[dict[str, Any]]:
        return sessions.session_terminals(session_name)

    @app.get("/terminals/{terminal_id}", response_model=None)
    async def get_terminal(terminal_id: TerminalId) -> Response:
        # The call every client polls: from memory on the event loop (no thread hop, no
        # response model to validate); through tmux in a worker thread when it must.
        if service.answers_from_memory(terminal_id):
            described = service.get_terminal(terminal_id)
        else:
            described = await run_in_threadpool(service.get_terminal, terminal_id)
        return Response(json.dumps(described).encode(), media_type="application/json")

    @app.post("/terminals/{terminal_id}/input")
    async def send_input(
        terminal_id: TerminalId, request: Request, message: str | None = None
    ) -> dict[str, bool]:
        # CAO clients send `?message=`; a message too long for a URL may come as the body
        # instead: JSON `{"message": "..."}` or plain UTF-8 text.
        if message is None:
            message = await _message_from_body(request)
        await run_in_threadpool(service.send_input, terminal_id, message)
        return {"success": True}

    @app.get("/terminals/{terminal_id}/output")
    def get_output(
        terminal_id: TerminalId, mode: Annotated[Literal["full", "last"], Query()] = "full"
    ) -> dict[str, str]:
        return {"output": service.get_output(terminal_id, mode), "mode": mode}

    @app.post("/terminals/{terminal_id}/exit")
    def exit_terminal(terminal_id: TerminalId) -> dict[str, bool]:
        service.exit_terminal(terminal_id)
        return {"success": True}

    @app.delete("/terminals/{terminal_id}")
    def delete_terminal(terminal_id: TerminalId) -> dict[str, bool]:
        service.delete_terminal(terminal_id)
        return {"success": True}

    return app


async def _message_from_body(request: Request) -> str:
    body = await request.body()
    if not body:
        raise RequestValidationError(
            [{"loc": ("query", "message"), "msg": "Field required", "type": "missing"}]
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequestError("the message body is not UTF-8") from None
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(text)
        except ValueError:
            raise BadRequestError("the message body is not valid JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("message"), str):
            raise BadRequestError('the JSON body must be {"message": "<text>"}')
        return data["message"]
    return text


def shutdown_everything(service: TerminalService) -> None:
    """Delete every session (stopping each CLI and its daemons), then the tmux server."""
    sessions = SessionService(service)
    for session in service.registry.sessions():
        try:
            sessions.delete_session(session.name)
        except ServerError:
            continue
    service.tmux.kill_server()


def _check_bindable(host: str, port: int) -> None:
    """Fail with one clear line, before anything starts, when the address is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise ConfigError(f"cannot listen on {host}:{port}: {error.strerror}") from None


def serve_forever(options: ServerOptions) -> None:
    """Run the API in the foreground until SIGINT/SIGTERM; terminals outlive the server."""
    _check_bindable(options.host, options.port)
    service = build_service(options)
    app = create_app(options, service)
    print(f"baton serve: listening on http://{options.host}:{options.port}", flush=True)
    try:
        # Open event streams never end by themselves: give them a moment, then close.
        uvicorn.run(
            app,
            host=options.host,
            port=options.port,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
    finally:
        if options.kill_tmux_on_exit:
            shutdown_everything(service)
        service.close()


@dataclass(frozen=True)
class ServerHandle:
    """A server running in a background thread of this process."""

    base_url: str
    port: int
    options: ServerOptions
    service: TerminalService


@contextmanager
def run_server_in_thread(options: ServerOptions) -> Iterator[ServerHandle]:
    """Serve the API from a thread (port 0 picks a free port); stop it on exit.

    With `options.kill_tmux_on_exit`, every terminal and the private tmux server go too.
    """
    service = build_service(options)
    app = create_app(options, service)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="baton-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"could not start the server on {options.host}:{options.port}")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    host = f"[{options.host}]" if ":" in options.host else options.host
    try:
        yield ServerHandle(
            base_url=f"http://{host}:{port}", port=port, options=options, service=service
        )
    finally:
        service.events.close()  # end open event streams, so the server can stop
        server.should_exit = True
        thread.join(timeout=10)
        try:
            if options.kill_tmux_on_exit:
                shutdown_everything(service)
        finally:
            service.close()
