"""Helpers shared by the test suites: a real `baton serve` on a free port, cleaned up."""

from tests.support.server import (
    ServerProcess,
    free_port,
    kill_marked_processes,
    running_baton_server,
    wait_for_status,
)

__all__ = [
    "ServerProcess",
    "free_port",
    "kill_marked_processes",
    "running_baton_server",
    "wait_for_status",
]
