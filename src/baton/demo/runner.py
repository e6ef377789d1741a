"""Run the demo: a sample project, `baton serve` in-process, `baton run` against it.

Everything the demo starts lives under the project directory (`.baton-demo/`: the
server's state, its private tmux socket) and is stopped when the demo ends, unless
`keep` asks to leave the agents' tmux session open for a look around.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from baton.demo.sample import SampleProject, write_sample_project
from baton.errors import ConfigError
from baton.hints import baton_command
from baton.orchestrator.config import Settings
from baton.orchestrator.loop import run_orchestrator
from baton.orchestrator.runlog import RunLog
from baton.server.app import ServerOptions, run_server_in_thread
from baton.web import install_web

__all__ = ["run_demo"]

_DEMO_DIR = ".baton-demo"


def run_demo(directory: Path | None = None, *, keep: bool = False) -> int:
    """Create the sample project in `directory` (a new temporary one by default); run the loop.

    Returns the loop's exit code: 0 when the tester reports PASS.
    """
    root = _project_root(directory)
    project = write_sample_project(root)
    log = RunLog(prefix="baton demo")
    log.info(f"sample project: {project.root} (one failing unit test in stats/median.py)")
    # The socket lives in a short temporary path: unix socket paths are limited in length.
    socket_dir = Path(tempfile.mkdtemp(prefix="baton-demo-"))
    options = ServerOptions(
        port=0,
        state_dir=project.root / _DEMO_DIR / "server",
        tmux_socket=socket_dir / "tmux.sock",
        kill_tmux_on_exit=not keep,
    )
    try:
        with run_server_in_thread(options, extensions=(install_web,)) as server:
            log.info(f"baton serve (in-process): {server.base_url}")
            log.info(f"the web cockpit: {server.base_url}/ui")
            log.info(f"watch the agents live: tmux -S {options.tmux_socket} attach")
            settings = Settings(
                api=server.base_url,
                provider="scripted",
                wd=project.root,
                prompt=project.prompt(),
                poll_seconds=0.2,
                idle_grace_seconds=10,
                response_timeout=300,
            )
            exit_code = run_orchestrator(
                settings,
                log=log,
                not_resumable="its agents end with the demo; to see it again run: "
                + baton_command("demo"),
            )
    finally:
        if not keep:
            shutil.rmtree(socket_dir, ignore_errors=True)
    _print_where_to_look(project, settings, options, keep=keep)
    return exit_code


def _project_root(directory: Path | None) -> Path:
    if directory is None:
        return Path(tempfile.mkdtemp(prefix="baton-demo-project-"))
    root = directory.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--dir: not a directory: {root}")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _q(path: Path | str | None) -> str:
    """A path as a shell word, so a printed command works when copied."""
    return shlex.quote(str(path))


def _print_where_to_look(
    project: SampleProject, settings: Settings, options: ServerOptions, *, keep: bool
) -> None:
    archives = sorted(path for path in (project.root / ".tmp").glob("2*") if path.is_dir())
    rows = [
        ("project", str(project.root)),
        ("state file", str(settings.state_path)),
        ("where it stands", baton_command("status", settings.state_path)),
        ("the report", baton_command("report", settings.state_path)),
        ("every answer", str(archives[-1]) if archives else "(none)"),
        ("the fix", str(project.root / "stats" / "median.py")),
        ("run the tests", f"cd {_q(project.root)} && {project.test_command}"),
    ]
    if keep:
        rows += [
            ("the agents", f"tmux -S {_q(options.tmux_socket)} attach"),
            ("stop them", f"tmux -S {_q(options.tmux_socket)} kill-server"),
        ]
    width = max(len(label) for label, _ in rows)
    lines = ["", "Where to look:", *(f"  {label:<{width}}  {value}" for label, value in rows)]
    print("\n".join(lines), file=sys.stderr, flush=True)
