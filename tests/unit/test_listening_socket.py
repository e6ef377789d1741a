"""The server's socket listens from the moment its URL can be printed."""

from __future__ import annotations

import socket

import pytest

from baton.errors import ConfigError
from baton.server.app import listening_socket


def test_a_client_connecting_before_the_server_runs_is_queued_not_refused() -> None:
    with listening_socket("127.0.0.1", 0) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            accepted, _ = listener.accept()
            with accepted:
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
                # Nagle off: an answer's second write is not held for the client's ACK.
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_a_taken_port_is_one_line_naming_the_address() -> None:
    with listening_socket("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as raised:
            listening_socket("127.0.0.1", port)
    assert str(raised.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"
