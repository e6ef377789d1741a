"""CPU-seconds spent by a batch and the server behind it, from /proc and getrusage.

Wall time on a shared machine moves with everyone else's work; CPU-seconds do not (much).
Counted: this process's waited-for children (the batch, its `baton run`s, their git calls),
the server process with its waited-for children (tmux commands), and the tmux server with
its waited-for children (the agents in the panes, the tests they run).
"""

from __future__ import annotations

import os
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float:
    """CPU-seconds the whole machine has spent (user, nice, system, irq, softirq): for
    processes out of this one's reach (Ray's are the raylets' children)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields)
    return (user + nice + system + irq + softirq) / _TICK


def _proc_cpu(pid: int | None) -> tuple[float, float]:
    """(utime + stime, cutime + cstime) of one live process, in seconds: its own CPU and
    its waited-for children's ((0, 0) when gone)."""
    if pid is None:
        return 0.0, 0.0
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0, 0.0
    fields = [int(value) for value in text.rsplit(")", 1)[1].split()[11:15]]
    return (fields[0] + fields[1]) / _TICK, (fields[2] + fields[3]) / _TICK


def tmux_server_pid(socket: Path) -> int | None:
    """The pid of the tmux server on `socket`, or None when none runs."""
    done = subprocess.run(
        ["tmux", "-S", str(socket), "display-message", "-p", "#{pid}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


@dataclass(frozen=True)
class CpuSnapshot:
    """Cumulative CPU-seconds at one moment: ours (children), the server's own and its
    children's (tmux commands), the tmux server's own and its children's (the agents)."""

    batch: float
    server: float
    server_children: float
    tmux: float
    agents: float

    @classmethod
    def take(cls, server_pid: int | None, tmux_pid: int | None) -> CpuSnapshot:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        server, commands = _proc_cpu(server_pid)
        tmux, agents = _proc_cpu(tmux_pid)
        return cls(usage.ru_utime + usage.ru_stime, server, commands, tmux, agents)

    def since(self, start: CpuSnapshot) -> CpuSnapshot:
        return CpuSnapshot(
            self.batch - start.batch,
            self.server - start.server,
            self.server_children - start.server_children,
            self.tmux - start.tmux,
            self.agents - start.agents,
        )

    @property
    def total(self) -> float:
        return self.batch + self.server + self.server_children + self.tmux + self.agents

    def describe(self, loops: int) -> str:
        per = self.total / max(1, loops)
        return (
            f"CPU {self.total:.1f} s ({per:.2f} s per loop): batch+runs {self.batch:.1f}, "
            f"server {self.server:.1f} (+ its tmux commands {self.server_children:.1f}), "
            f"tmux {self.tmux:.1f}, agents {self.agents:.1f}"
        )
