"""Helpers shared by the test suites: a real `baton serve` on a free port, cleaned up."""

from tests.support.server import ServerProcess, free_port, running_baton_server

__all__ = ["ServerProcess", "free_port", "running_baton_server"]
