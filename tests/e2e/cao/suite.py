"""Run CAO 2.5.4's own end-to-end tests against `baton serve`, with real Codex offline.

The suite comes from CAO's published source distribution, unpacked with a virtualenv
holding CAO and pytest by `scripts/cao-suite.sh` (in .tools/cao-suite). This module
starts the scripted OpenAI model server and `baton serve` (Codex pointed at the model),
then runs CAO's pytest in CAO's virtualenv with the plugin in tests/e2e/cao/plugin,
which makes CAO's `cao_server` fixture yield this `baton serve` and deselects what
tests/e2e/cao/suite_selection.py lists. CAO's tests reach the server's tmux through
the default socket (they capture panes themselves), so `baton serve`'s private tmux
socket is the default one of the TMUX_TMPDIR the suite gets.

    python -m tests.e2e.cao.suite [--all] [pytest arguments]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.cao.suite_selection import CI_SUBSET, DESELECTED
from tests.e2e.clis import AGENT_BIN_DIR
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import codex_environment, openai_model_server
from tests.support.server import running_baton_server

from baton.server.emulator import PaneEmulator

__all__ = [
    "SUITE_DIR",
    "SUITE_PYTHON",
    "SUITE_TIMEOUT_SECONDS",
    "SuiteResult",
    "missing_suite",
    "run_suite",
]

_ROOT = Path(__file__).resolve().parents[3]
CAO_VERSION = "2.5.4"
SUITE_PREFIX = _ROOT / ".tools" / "cao-suite"
SUITE_DIR = SUITE_PREFIX / "src" / f"cli_agent_orchestrator-{CAO_VERSION}"
SUITE_PYTHON = SUITE_PREFIX / "venv" / "bin" / "python"
_PLUGIN_DIR = Path(__file__).with_name("plugin")
# Bounds on one CAO test and on the whole run. CAO's own waits go up to 1200 s (its
# supervisor tests); against the scripted model a healthy test takes well under a minute.
TEST_TIMEOUT_SECONDS = 300
SUITE_TIMEOUT_SECONDS = 1500.0


@dataclass
class SuiteResult:
    """CAO's suite as it ran: each test's outcome (and failure line), the deselections."""

    outcomes: dict[str, dict[str, str]]
    deselected: dict[str, str]
    seconds: float
    returncode: int
    output: str = field(repr=False)
    # When each test ran, and the server's terminal folders (kept after deletion).
    windows: dict[str, list[float]] = field(default_factory=dict)
    terminals_dir: Path | None = None

    def by_outcome(self, outcome: str) -> list[str]:
        return sorted(node for node, row in self.outcomes.items() if row["outcome"] == outcome)

    def counts(self) -> Counter[str]:
        return Counter(row["outcome"] for row in self.outcomes.values())

    def screens_during(self, node: str) -> str:
        """The last screen of each terminal made while `node` ran: what its CLI showed
        when the test gave up on it (the server keeps a deleted terminal's pane log)."""
        window = self.windows.get(node)
        if window is None or self.terminals_dir is None or not self.terminals_dir.is_dir():
            return f"{node}: no terminal folders to show"
        shown = []
        for folder in sorted(self.terminals_dir.iterdir()):
            made = _made_at(folder)
            if made is None or not window[0] <= made <= window[1]:
                continue
            pane_log = folder / "pane.log"
            screen = _last_screen(pane_log) if pane_log.exists() else "(no pane log)"
            shown.append(f"--- terminal {folder.name}, last screen:\n{screen}")
        return "\n".join(shown) or f"{node}: no terminal was made while it ran"

    def summary(self) -> str:
        """One line per test and per deselection, then the totals and the duration."""
        lines = []
        for node, row in sorted(self.outcomes.items()):
            detail = f"  -- {row['detail']}" if row["detail"] else ""
            lines.append(f"{row['outcome'].upper():8} {node}{detail}")
        for node, reason in sorted(self.deselected.items()):
            lines.append(f"DESELECT {node}  -- {reason}")
        totals = ", ".join(f"{count} {name}" for name, count in sorted(self.counts().items()))
        lines.append(
            f"CAO {CAO_VERSION} suite against baton serve: {totals or 'nothing ran'}, "
            f"{len(self.deselected)} deselected, in {self.seconds:.0f} s"
        )
        return "\n".join(lines)


def _made_at(folder: Path) -> float | None:
    """When a terminal was made: its runtime folder last gained an entry (the pane log,
    at creation; a Codex terminal's folder holds nothing else)."""
    try:
        return folder.stat().st_mtime
    except OSError:
        return None


def _last_screen(pane_log: Path) -> str:
    emulator = PaneEmulator(200, 50)
    emulator.feed(pane_log.read_bytes())
    return "\n".join(line.rstrip() for line in emulator.visible().splitlines()).strip()


def missing_suite() -> str | None:
    """Why CAO's suite cannot run here, or None when its source and virtualenv are in place."""
    if not (SUITE_DIR / "test" / "e2e" / "conftest.py").exists():
        return f"CAO {CAO_VERSION}'s source distribution is not unpacked in {SUITE_DIR}"
    if not SUITE_PYTHON.exists():
        return f"CAO's suite virtualenv is missing ({SUITE_PYTHON})"
    return None


def run_suite(
    workdir: Path, *, whole: bool = False, pytest_args: Sequence[str] = ()
) -> SuiteResult:
    """Run CAO's e2e tests (the CI subset, or `whole`) against a fresh `baton serve`."""
    home = workdir / "home"
    home.mkdir(parents=True)
    tmux_dir = Path(tempfile.mkdtemp(prefix="cao-suite-tmux-"))
    socket = tmux_dir / f"tmux-{os.getuid()}" / "default"
    socket.parent.mkdir(mode=0o700)
    deselect_file = workdir / "deselected.json"
    deselect_file.write_text(
        json.dumps([{"pattern": p, "reason": r} for p, r in DESELECTED]), encoding="utf-8"
    )
    report_file = workdir / "report.json"
    try:
        with openai_model_server(Brain()) as model:
            codex_env = codex_environment(workdir, model)
            server_env = {
                **codex_env,
                # CAO's `cao-mcp-server` (its profiles name it bare): cao-server finds it
                # beside its own interpreter, baton serve on its PATH.
                "PATH": os.pathsep.join([str(SUITE_PYTHON.parent), codex_env["PATH"]]),
                "HOME": str(home),
                "BATON_TMUX_SOCKET": str(socket),
                # CAO's tests delete their terminals: keep their pane logs to show a failure.
                "BATON_KEEP_TRANSCRIPTS": "1",
            }
            profiles = _builtin_cao_profiles(workdir / "cao-profiles")
            with running_baton_server(workdir, env=server_env, profiles_dir=profiles) as server:
                env = _suite_environment(home, tmux_dir, server.base_url, server.log_path)
                env["BATON_CAO_SUITE_DESELECT"] = str(deselect_file)
                env["BATON_CAO_SUITE_REPORT"] = str(report_file)
                started = time.monotonic()
                completed = subprocess.run(
                    _pytest_command(whole, pytest_args),
                    cwd=SUITE_DIR,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=SUITE_TIMEOUT_SECONDS,
                    check=False,
                )
                seconds = time.monotonic() - started
                terminals_dir = server.state_dir / "terminals"
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)
        shutil.rmtree(tmux_dir, ignore_errors=True)
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return SuiteResult(
        outcomes=report.get("outcomes", {}),
        deselected=report.get("deselected", {}),
        seconds=seconds,
        returncode=completed.returncode,
        output=completed.stdout + completed.stderr,
        windows=report.get("windows", {}),
        terminals_dir=terminals_dir,
    )


def _builtin_cao_profiles(directory: Path) -> Path:
    """CAO's built-in profiles (developer, code_supervisor, …), which `cao-server` finds in
    its own package and CAO's tests take for granted, as a `--profiles-dir` for Baton."""
    directory.mkdir()
    for profile in sorted(_cao_package().joinpath("agent_store").glob("*.md")):
        shutil.copy2(profile, directory / profile.name)
    return directory


def _cao_package() -> Path:
    site = next((SUITE_PREFIX / "venv" / "lib").glob("python*/site-packages"))
    return site / "cli_agent_orchestrator"


def _pytest_command(whole: bool, pytest_args: Sequence[str]) -> list[str]:
    named = any(arg.startswith("test/") for arg in pytest_args)
    targets = [] if named else ["test/e2e"] if whole else list(CI_SUBSET)
    return [
        str(SUITE_PYTHON),
        "-m",
        "pytest",
        "-p",
        "baton_serve_swap",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-m",
        "e2e",
        "-rA",
        f"--timeout={TEST_TIMEOUT_SECONDS}",
        *targets,
        *pytest_args,
    ]


def _suite_environment(home: Path, tmux_dir: Path, url: str, log: Path) -> dict[str, str]:
    """CAO's tests: their HOME is the server's, their tmux is the server's, Codex on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CAO_", "VIRTUAL_ENV", "PYTHON", "TMUX", "BATON_"))
    }
    port = url.rsplit(":", 1)[1]
    path = [str(AGENT_BIN_DIR), str(SUITE_PYTHON.parent), env.get("PATH", "/usr/bin:/bin")]
    env.update(
        {
            "HOME": str(home),
            "PATH": os.pathsep.join(path),
            "PYTHONPATH": str(_PLUGIN_DIR),
            "TMUX_TMPDIR": str(tmux_dir),
            "CAO_API_HOST": "127.0.0.1",
            "CAO_API_PORT": port,
            "OTEL_SDK_DISABLED": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "BATON_CAO_SUITE_URL": url,
            "BATON_CAO_SUITE_HOME": str(home),
            "BATON_CAO_SUITE_LOG": str(log),
        }
    )
    return env


def main(argv: Sequence[str]) -> int:
    """Run the suite in a temporary directory; print every outcome; 0 when none failed."""
    args = list(argv)
    whole = "--all" in args
    args = [arg for arg in args if arg != "--all"]
    reason = missing_suite()
    if reason is not None:
        print(f"cao-suite: {reason} (run scripts/cao-suite.sh)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cao-suite-") as directory:
        result = run_suite(Path(directory), whole=whole, pytest_args=args)
    if not result.outcomes:
        print(result.output[-6000:], file=sys.stderr)
    print(result.summary())
    failed = result.counts()["failed"] + result.counts()["error"]
    return 1 if failed or result.returncode not in (0, 1) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
