"""A full disk under the state directory is one clear 507, and the server carries on.

The disk is filled for real as far as the server can tell: its file-size limit
(RLIMIT_FSIZE, set on the running `baton serve` with prlimit; Python ignores SIGXFSZ)
is lowered to just above the registry's size, so sqlite's next growth fails as it does
on a full disk.
"""

from __future__ import annotations

import resource
from pathlib import Path

from tests.support.server import ServerProcess


def test_a_full_state_dir_is_507_with_one_line_and_passes(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        assert created.status_code == 201, created.text
        terminal = created.json()["id"]
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
