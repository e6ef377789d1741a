"""A full disk under the state directory is one clear 507, and the server carries on.

The disk is filled for real as far as the server can tell: its file-size limit
(RLIMIT_FSIZE, set on the running `baton serve` with prlimit; Python ignores SIGXFSZ)
is lowered to just above the registry's size, so sqlite's next growth fails as it does
on a full disk.
"""

from __future__ import annotations

import http.client
import json
import resource
import select
import socket
import time
from pathlib import Path

import pytest
from tests.support.server import ServerProcess, create_scripted_terminal


def test_a_full_state_dir_is_507_with_one_line_and_passes(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path)["id"]
        assert baton_server.process is not None
        pid = baton_server.process.pid
        database = baton_server.state_dir / "baton.db"
        limits = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (database.stat().st_size + 4096, limits[1]))
        try:
            full = client.post(
                f"/terminals/{terminal}/inbox/messages",
                params={"sender_id": terminal, "message": "x" * 30_000},
            )
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, limits)
        assert full.status_code == 507, full.text
        detail = full.json()["detail"]
        assert detail.startswith("cannot write the server's state")
        assert "\n" not in detail and "rollback" not in detail
        # Space is back: the same request works, nothing was left half-done.
        again = client.post(
            f"/terminals/{terminal}/inbox/messages",
            params={"sender_id": terminal, "message": "y" * 30_000},
        )
        assert again.status_code == 200, again.text
        assert client.get(f"/terminals/{terminal}").status_code == 200


def _closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """True when the server has closed the kept-alive connection after its answer."""
    sock = connection.sock
    if sock is None:
        return True
    time.sleep(0.5)  # uvicorn closes right after the answer, when it does
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "idempotency-key"])
def test_a_507_keeps_the_connection_open(
    baton_server: ServerProcess, tmp_path: Path, keyed: bool
) -> None:
    """A full disk met outside the registry (a runtime file) or by the idempotency record
    is answered 507 like any other answer: the client's kept-alive connection stays open,
    so its next request is not reset."""
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, profile="tester")["id"]
    assert baton_server.process is not None
    pid = baton_server.process.pid
    connection = http.client.HTTPConnection("127.0.0.1", baton_server.port, timeout=60)
    limits = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (16, limits[1]))  # every file is full
    try:
        # The restart writes the CLI's instruction file before any registry write.
        headers = {"Idempotency-Key": "full-disk"} if keyed else {}
        connection.request("POST", f"/terminals/{terminal}/restart", headers=headers)
        answer = connection.getresponse()
        body = answer.read().decode()
        closed = _closed_by_server(connection)
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, limits)
        connection.close()
    assert answer.status == 507, body
    detail = json.loads(body)["detail"]
    assert detail.startswith("cannot write the server's state") and "\n" not in detail
    assert not closed
