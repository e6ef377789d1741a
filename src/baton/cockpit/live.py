"""What the server says right now about a run's terminals, for views that must not hang.

`baton watch` and `baton status` ask the API of the run (the state's `api`) for each
terminal's live status and screen. Unlike the orchestrator's client, nothing here retries
or waits long: a server that is down or slow makes the view fall back to the run record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from baton.tls import tls_verify_for

__all__ = ["ServerProbe"]

_TIMEOUT = httpx.Timeout(3.0, connect=1.0)


class ServerProbe:
    """Short, failure-tolerant reads from a CAO-compatible server; close it (or use `with`)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=_TIMEOUT,
            transport=transport,
            verify=tls_verify_for(self.base_url),
        )
        self.reachable: bool | None = None  # None until the first request
        self.problem = ""

    @classmethod
    def for_environment(cls, base_url: str, environ: Mapping[str, str]) -> ServerProbe:
        """A probe using BATON_TOKEN when the environment has one (as `baton run` does)."""
        return cls(base_url, token=environ.get("BATON_TOKEN") or None)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServerProbe:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _get(self, path: str, **params: str) -> httpx.Response | None:
        if not self.base_url:
            self.reachable, self.problem = False, "the state names no API"
            return None
        try:
            response = self._http.get(path, params=params or None)
        except httpx.HTTPError as error:
            self.reachable = False
            self.problem = f"{self.base_url} does not answer ({type(error).__name__})"
            return None
        self.reachable, self.problem = True, ""
        return response if response.status_code == 200 else None

    def terminal(self, terminal_id: str) -> dict[str, Any] | None:
        """`GET /terminals/{id}` (status, tmux session and window), or None."""
        if not terminal_id:
            return None
        response = self._get(f"/terminals/{terminal_id}")
        if response is None:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def status(self, terminal_id: str) -> str | None:
        found = self.terminal(terminal_id)
        status = found.get("status") if found else None
        return status if isinstance(status, str) else None

    def screen_tail(self, terminal_id: str, lines: int) -> str | None:
        """The last `lines` non-blank-trailing lines of `GET /terminals/{id}/output?mode=full`."""
        output = self.screen(terminal_id)
        if output is None:
            return None
        rows = output.rstrip().splitlines()
        return "\n".join(rows[-lines:]) if lines > 0 else ""

    def screen(self, terminal_id: str) -> str | None:
        """The whole of `GET /terminals/{id}/output?mode=full`, or None."""
        if not terminal_id:
            return None
        response = self._get(f"/terminals/{terminal_id}/output", mode="full")
        if response is None:
            return None
        try:
            output = response.json().get("output")
        except (ValueError, AttributeError):
            return None
        return output if isinstance(output, str) else None
