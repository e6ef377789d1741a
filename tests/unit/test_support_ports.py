"""tests/support: a server counts as started only when it is the one holding its port.

Parallel workers pick free ports at the same moment; one worker's server may take the
port another picked, and that worker must not take the foreign server for its own.
"""

from __future__ import annotations

import os
import socket

from tests.support.server import free_port, listens_on


def test_the_listening_process_is_told_apart_from_others() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert listens_on(os.getpid(), port)
        assert not listens_on(os.getppid(), port)
        assert not listens_on(os.getpid(), free_port())


def test_a_bound_socket_that_does_not_listen_does_not_count() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        assert not listens_on(os.getpid(), bound.getsockname()[1])
