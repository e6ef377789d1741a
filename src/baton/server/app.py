"""The CAO-compatible HTTP API (`baton serve`) and the ways to run it.

Routes, query parameters, JSON shapes and status strings follow `cao-server`, so a
client written for the CLI Agent Orchestrator drives Baton unchanged. Every error comes
back as `{"detail": "<one line>"}`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from baton import __version__
from baton.delivery import DEFAULT_MAX_MESSAGE_BYTES
from baton.errors import ConfigError, ServerError
from baton.private import hide_process_from_same_user, private_dir
from baton.server.delivery import (
    BodySizeLimitMiddleware,
    MessageDelivery,
    body_limit_for,
    message_limit_from,
)
from baton.server.events_routes import events_router
from baton.server.idempotency import IdempotencyMiddleware
from baton.server.live_terminal import DEFAULT_MAX_PANE_LOG_BYTES
from baton.server.pane_environment import pane_environment
from baton.server.pane_launcher import MAX_NICE
from baton.server.profiles import ProfileStore, cao_agent_store, cao_home
from baton.server.registry import Registry
from baton.server.routes import ROUTERS, Services, install_error_handlers
from baton.server.routes.common import TERMINAL_ID_PATTERN
from baton.server.security import LocalOnlyMiddleware, require_token_for_remote
from baton.server.sessions import SessionService
from baton.server.skills import SkillStore
from baton.server.status_reads import StatusReadMiddleware
from baton.server.terminal_tokens import SECRET_VARIABLES, TerminalTokens
from baton.server.terminals import ServiceTimings, TerminalService
from baton.server.tmux import TmuxServer

__all__ = [
    "AppExtension",
    "ServerHandle",
    "ServerOptions",
    "close_app",
    "create_app",
    "run_server_in_thread",
    "serve_forever",
    "server_url",
]

# Something mounted on the app beside the API (the web cockpit): called once, at creation.
AppExtension = Callable[[FastAPI, TerminalService, "ServerOptions"], None]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9889
# Agents level with the server unless asked to yield (pane_launcher.py, docs/server.md).
DEFAULT_AGENT_NICE = 0
_BACKLOG = 2048  # uvicorn's own default, which it applies again when it starts

logger = logging.getLogger("baton.server")


@dataclass(frozen=True)
class ServerOptions:
    """Everything `baton serve` needs; built from flags and the environment."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    state_dir: Path = field(default_factory=lambda: Path.home() / ".local/state/baton")
    profiles_dir: Path | None = None
    # CAO's agent store (`cao install` writes there), searched after `profiles_dir`.
    cao_agent_store: Path | None = None
    # CAO's skill store (`GET /skills/{name}`, the catalog some profiles ask for).
    cao_skills_dir: Path | None = None
    tmux_socket: Path | None = None
    token: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    timings: ServiceTimings = field(default_factory=ServiceTimings)
    # Delete every terminal and stop the private tmux server when the server stops
    # (for the in-process server of `baton demo`; `baton serve` keeps terminals alive).
    kill_tmux_on_exit: bool = False
    # A deleted terminal's runtime folder (pane log, the CLI's records) is removed unless set.
    keep_transcripts: bool = False
    # A pane log is rotated (to pane.log.1) once it reaches this size; 0: never.
    max_pane_log_bytes: int = DEFAULT_MAX_PANE_LOG_BYTES
    # The agents run this many nice values below the server (0: at its priority).
    agent_nice: int = DEFAULT_AGENT_NICE

    @classmethod
    def from_environment(
        cls,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        state_dir: Path | None = None,
        profiles_dir: Path | None = None,
        max_message_bytes: int | None = None,
        keep_transcripts: bool = False,
        max_pane_log_bytes: int | None = None,
        agent_nice: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ServerOptions:
        """Flags win; then BATON_STATE_DIR, BATON_PROFILES_DIR, BATON_TMUX_SOCKET, BATON_TOKEN,
        BATON_MAX_MESSAGE_BYTES, BATON_MAX_PANE_LOG_BYTES, BATON_KEEP_TRANSCRIPTS,
        BATON_AGENT_NICE."""
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
            queue_timeout=_float_env(env, "BATON_INPUT_QUEUE_TIMEOUT", 240.0),
        )
        return cls(
            host=host,
            port=port,
            state_dir=state_dir.expanduser().absolute(),
            profiles_dir=profiles_dir.expanduser().absolute() if profiles_dir else None,
            cao_agent_store=cao_agent_store(env),
            cao_skills_dir=cao_home(env) / "skills",
            tmux_socket=socket,
            token=env.get("BATON_TOKEN") or None,
            max_message_bytes=max_message_bytes or message_limit_from(env),
            timings=timings,
            keep_transcripts=keep_transcripts or _flag_env(env, "BATON_KEEP_TRANSCRIPTS"),
            max_pane_log_bytes=(
                _int_env(env, "BATON_MAX_PANE_LOG_BYTES", DEFAULT_MAX_PANE_LOG_BYTES)
                if max_pane_log_bytes is None
                else max_pane_log_bytes
            ),
            agent_nice=_nice_env(env) if agent_nice is None else agent_nice,
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


def _int_env(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"{name} must be a whole number of bytes (0: no limit), got {raw!r}")
    return value


def _nice_env(env: Mapping[str, str]) -> int:
    raw = (env.get("BATON_AGENT_NICE") or "").strip()
    if not raw:
        return DEFAULT_AGENT_NICE
    if not raw.isdigit() or int(raw) > MAX_NICE:
        raise ConfigError(
            f"BATON_AGENT_NICE must be a whole number from 0 to {MAX_NICE}, got {raw!r}"
        )
    return int(raw)


def _flag_env(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name} must be 1 or 0, got {env.get(name)!r}")


def build_service(options: ServerOptions) -> TerminalService:
    """The terminal service over the state directory, registry and private tmux server."""
    if shutil.which("tmux") is None:
        raise ConfigError("tmux is not installed (baton serve runs agent CLIs in tmux)")
    try:
        private_dir(options.state_dir)
        registry = Registry(options.state_dir / "baton.db")
    except (OSError, sqlite3.Error) as error:
        raise ConfigError(f"cannot use state directory {options.state_dir}: {error}") from None
    tmux = TmuxServer(
        options.resolved_socket(), options.state_dir / "tmux.conf", pane_nice=options.agent_nice
    )
    if tmux.is_running():  # started by an older server: its global environment may hold one
        for name in sorted(SECRET_VARIABLES):
            tmux.run("set-environment", "-g", "-u", name, check=False)
    return TerminalService(
        registry=registry,
        tmux=tmux,
        profiles=ProfileStore(
            options.profiles_dir, options.cao_agent_store, SkillStore(options.cao_skills_dir)
        ),
        state_dir=options.state_dir,
        timings=options.timings,
        delivery=MessageDelivery(tmux, max_message_bytes=options.max_message_bytes),
        # With a master token, each agent gets a token of its own terminal instead.
        terminal_tokens=TerminalTokens(options.state_dir / "tokens") if options.token else None,
        keep_transcripts=options.keep_transcripts,
        max_pane_log_bytes=options.max_pane_log_bytes,
        environment=pane_environment(os.environ, options.host, options.port),
    )


def create_app(
    options: ServerOptions,
    service: TerminalService | None = None,
    extensions: Sequence[AppExtension] = (),
) -> FastAPI:
    """The FastAPI application with every CAO route, the safety middleware and error shapes.

    `extensions` add routes of a layer above the server (the web cockpit, from the command
    line), so the server never imports them. Starts the inbox courier; `close_app` stops it.
    """
    require_token_for_remote(options.host, options.token)
    service = service or build_service(options)
    app = FastAPI(title="Baton", version=__version__, description=__doc__)
    services = Services.over(service)
    app.state.services = services
    # Innermost: a status read the safety checks let through is answered from memory.
    app.add_middleware(StatusReadMiddleware, terminals=service, id_pattern=TERMINAL_ID_PATTERN)
    # Only requests the safety checks let through are kept.
    app.add_middleware(IdempotencyMiddleware, registry=service.registry)
    extra_hosts = () if options.host in ("0.0.0.0", "::", "") else (options.host,)
    app.add_middleware(
        LocalOnlyMiddleware,
        token=options.token,
        extra_hosts=extra_hosts,
        terminal_tokens=service.terminal_tokens,
        lookup=service.registry.get_terminal,
    )
    app.add_middleware(
        BodySizeLimitMiddleware, max_body_bytes=body_limit_for(options.max_message_bytes)
    )
    install_error_handlers(app)

    @app.get("/health")
    def health() -> dict[str, str]:
        # `idempotency`: the header whose repeats are answered, not done again.
        return {
            "status": "ok",
            "service": "baton",
            "version": __version__,
            "idempotency": "Idempotency-Key",
        }

    for router in ROUTERS:
        app.include_router(router)
    app.include_router(events_router(service, TERMINAL_ID_PATTERN))  # the live status events
    for extend in extensions:
        extend(app, service, options)
    services.inbox.start()
    return app


def close_app(app: FastAPI) -> None:
    """Stop what `create_app` started (the inbox courier)."""
    services: Services = app.state.services
    services.inbox.stop()


def shutdown_everything(service: TerminalService) -> None:
    """Delete every session (stopping each CLI and its daemons), then the tmux server."""
    sessions = SessionService(service)
    for session in service.registry.sessions():
        try:
            sessions.delete_session(session.name)
        except ServerError:
            continue
    service.tmux.kill_server()


def server_url(host: str, port: int) -> str:
    """The URL a person can paste: IPv6 literals in brackets (`http://[::1]:9889`)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before anything starts (one clear line when
    the address is taken); for port 0 on the free port the kernel picks, so the URL
    printed and the port the panes are told (CAO_API_PORT) are the ones served. It listens
    at once: a client that connects as soon as the URL is printed waits in the backlog
    until uvicorn accepts instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        # Connections accepted from it inherit this; uvicorn, given the socket, does not set
        # it, and a response written in two parts then waits ~40 ms for a delayed ACK.
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        listener.listen(_BACKLOG)
    except OSError as error:
        listener.close()
        where = server_url(host, port).removeprefix("http://")
        raise ConfigError(f"cannot listen on {where}: {error.strerror}") from None
    return listener


def _bound_port(listener: socket.socket) -> int:
    port: int = listener.getsockname()[1]
    return port


def _keep_secrets_from_children(*, hide_environ: bool) -> None:
    """No program this process starts (tmux, and through it every agent) inherits an API
    credential; with `hide_environ`, other processes of the user (the agents) cannot read
    the master token from /proc/<pid>/environ either (the process is made non-dumpable)."""
    for name in SECRET_VARIABLES:
        os.environ.pop(name, None)
    if hide_environ:
        hide_process_from_same_user()


def serve_forever(options: ServerOptions, extensions: Sequence[AppExtension] = ()) -> None:
    """Run the API in the foreground until SIGINT/SIGTERM; terminals outlive the server."""
    with listening_socket(options.host, options.port) as listener:
        options = replace(options, port=_bound_port(listener))
        _keep_secrets_from_children(hide_environ=options.token is not None)
        service = build_service(options)
        app = create_app(options, service, extensions)
        print(f"baton serve: listening on {server_url(options.host, options.port)}", flush=True)
        try:
            # Open event streams never end by themselves: give them a moment, then close.
            config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
            uvicorn.Server(config).run(sockets=[listener])
        finally:
            close_app(app)
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
def run_server_in_thread(
    options: ServerOptions, extensions: Sequence[AppExtension] = ()
) -> Iterator[ServerHandle]:
    """Serve the API from a thread (port 0 picks a free port); stop it on exit.

    With `options.kill_tmux_on_exit`, every terminal and the private tmux server go too.
    """
    with listening_socket(options.host, options.port) as listener:
        options = replace(options, port=_bound_port(listener))
        service = build_service(options)
        app = create_app(options, service, extensions)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [listener]}, name="baton-server", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise ConfigError(f"could not start the server on {options.host}:{options.port}")
            time.sleep(0.02)
        try:
            yield ServerHandle(
                base_url=server_url(options.host, options.port),
                port=options.port,
                options=options,
                service=service,
            )
        finally:
            service.events.close()  # end open event streams, so the server can stop
            server.should_exit = True
            thread.join(timeout=10)
            close_app(app)
            try:
                if options.kill_tmux_on_exit:
                    shutdown_everything(service)
            finally:
                service.close()
