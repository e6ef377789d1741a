"""`ApiClient`: the orchestrator's side of the CAO-compatible HTTP API, over httpx.

Paths and query parameters are CAO's, so the same client drives `baton serve` and a stock
`cao-server`. Failures become Baton errors: nothing listening → `ApiUnreachableError`
(one line naming the URL), an HTTP error → `ApiHttpError` with the status code and the
server's `detail`. Only reads (GET) are retried, and only on connection-level errors,
because repeating a POST could type a prompt into an agent twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from baton.errors import ApiError, ApiHttpError, ApiUnreachableError
from baton.usage import Usage

__all__ = ["DEFAULT_TIMEOUT", "ApiClient"]

# Creating a terminal waits for the agent CLI to start and input waits for it to take the
# text, so reads get minutes; connecting is quick or the server is not there.
DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
_READ_RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0)
# `/events` sends a keep-alive at least every 15 s; silence this long means a dead stream.
_STREAM_READ_SECONDS = 45.0
_TRANSIENT = (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout)


class ApiClient:
    """A synchronous client for one CAO-compatible server; close it (or use `with`)."""

    def __init__(
        self,
        base_url: str,
        *,
        provider: str = "codex",
        working_directory: Path | str | None = None,
        token: str | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        read_retry_delays: tuple[float, ...] = _READ_RETRY_DELAYS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.working_directory = str(working_directory) if working_directory else None
        self._read_retry_delays = read_retry_delays
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    # --- resource handling ---

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the API ---

    def health(self) -> dict[str, Any]:
        """`GET /health`, not retried: at startup, nothing listening should be said at once."""
        return self._json("GET", "/health", retry=False)

    def create_session(
        self,
        agent_profile: str,
        *,
        provider: str | None = None,
        working_directory: Path | str | None = None,
        session_name: str | None = None,
    ) -> dict[str, Any]:
        """Create a session with its first terminal; the terminal's JSON (`id`, `session_name`).

        `session_name` chosen beforehand lets a run killed inside this call find the
        session (and its terminal) afterwards.
        """
        params = self._create_params(agent_profile, provider, working_directory)
        if session_name:
            params["session_name"] = session_name
        return self._terminal_json("POST", "/sessions", params)

    def list_sessions(self) -> list[dict[str, Any]]:
        """`GET /sessions`: the server's sessions."""
        data = self._json("GET", "/sessions")
        items = data.get("value", data.get("sessions", []))
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def list_session_terminals(self, session_name: str) -> list[dict[str, Any]]:
        """`GET /sessions/{name}/terminals`: the terminals of a session (404 → ApiHttpError)."""
        data = self._json("GET", f"/sessions/{session_name}/terminals")
        items = data.get("value", data.get("terminals", []))
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def restart_terminal(self, terminal_id: str) -> dict[str, Any]:
        """`POST /terminals/{id}/restart` (baton serve): a fresh CLI in the same terminal.

        A server without the route answers 404 or 405 (ApiHttpError).
        """
        return self._json("POST", f"/terminals/{terminal_id}/restart")

    def delete_terminal(self, terminal_id: str) -> None:
        """`DELETE /terminals/{id}`: stop the CLI and forget the terminal."""
        self._json("DELETE", f"/terminals/{terminal_id}")

    def create_terminal(
        self,
        session_name: str,
        agent_profile: str,
        *,
        provider: str | None = None,
        working_directory: Path | str | None = None,
    ) -> dict[str, Any]:
        """Add a terminal to a session; the terminal's JSON (`id`, `session_name`)."""
        params = self._create_params(agent_profile, provider, working_directory)
        return self._terminal_json("POST", f"/sessions/{session_name}/terminals", params)

    def send_input(self, terminal_id: str, message: str) -> None:
        """Type `message` into the terminal and submit it (`?message=`; body when too long)."""
        path = f"/terminals/{terminal_id}/input"
        try:
            self._http.build_request("POST", path, params={"message": message})
        except httpx.InvalidURL:
            # Longer than a URL can carry: `baton serve` also takes it as the JSON body.
            self._json("POST", path, json={"message": message})
            return
        self._json("POST", path, params={"message": message})

    def send_key(self, terminal_id: str, key: str) -> None:
        """`POST /terminals/{id}/key?key=KEY`: press one key (a dialog's menu choice, Enter)."""
        self._json("POST", f"/terminals/{terminal_id}/key", params={"key": key})

    def get_attach_info(self, terminal_id: str) -> dict[str, Any]:
        """`GET /terminals/{id}/attach` (baton serve): its tmux socket, session and window."""
        return self._json("GET", f"/terminals/{terminal_id}/attach", retry=False)

    def get_terminal(self, terminal_id: str) -> dict[str, Any]:
        """`GET /terminals/{id}`: the terminal's JSON (404 → ApiHttpError)."""
        return self._json("GET", f"/terminals/{terminal_id}")

    def get_status(self, terminal_id: str) -> str:
        """The terminal's status: idle, processing, completed, waiting_user_answer or error."""
        data = self.get_terminal(terminal_id)
        status = data.get("status")
        if not isinstance(status, str):
            raise ApiError(f"GET {self._url(f'/terminals/{terminal_id}')}: no status in answer")
        return status

    def get_last_output(self, terminal_id: str) -> str:
        """The agent's last answer as the server extracts it (`?mode=last`)."""
        data = self._json("GET", f"/terminals/{terminal_id}/output", params={"mode": "last"})
        output = data.get("output")
        return output if isinstance(output, str) else ""

    def get_full_output(self, terminal_id: str) -> str:
        """The terminal's whole scrollback (`?mode=full`)."""
        data = self._json("GET", f"/terminals/{terminal_id}/output", params={"mode": "full"})
        output = data.get("output")
        return output if isinstance(output, str) else ""

    def usage(self, terminal_id: str) -> Usage | None:
        """`GET /terminals/{id}/usage` (a `baton serve` route): the terminal's cumulative
        tokens, None while unknown. A server without the route answers 404 (ApiHttpError)."""
        data = self._json("GET", f"/terminals/{terminal_id}/usage")
        return Usage.from_json(data)

    def iter_events(
        self, *, stop: threading.Event | None = None, terminal_ids: tuple[str, ...] = ()
    ) -> Iterator[dict[str, Any]]:
        """`GET /events`: each `data:` JSON object of the stream, until it ends or `stop` is set.

        Comments (keep-alives) and non-JSON data are skipped; 404/405 (no such route) or
        any other failure raises `ApiError`. Runs on its own connection, so a reader
        thread never holds up the calls of the run.
        """
        params = httpx.QueryParams([("terminal_id", terminal_id) for terminal_id in terminal_ids])
        timeout = httpx.Timeout(_STREAM_READ_SECONDS, connect=5.0)
        url = self._url("/events")
        try:
            with (
                httpx.Client(headers=self._http.headers, timeout=timeout) as http,
                http.stream("GET", url, params=params) as response,
            ):
                if response.status_code >= 400:
                    response.read()
                    raise ApiHttpError("GET", url, response.status_code, _detail(response))
                for line in response.iter_lines():
                    if stop is not None and stop.is_set():
                        return
                    if not line.startswith("data:"):
                        continue
                    try:
                        data = json.loads(line[5:].strip())
                    except ValueError:
                        continue
                    if isinstance(data, dict):
                        yield data
        except httpx.HTTPError as error:
            raise ApiError(f"GET {url}: {_describe(error)}") from None

    def wait_status(self, terminal_id: str, since: str, timeout: float) -> str | None:
        """Long-poll `GET /terminals/{id}/status/wait`: the status once it differs from `since`
        (or when `timeout` ends); None when the server has no such route (404/405)."""
        path = f"/terminals/{terminal_id}/status/wait"
        params = {"since": since, "timeout": f"{timeout:g}"}
        try:
            response = self._http.get(
                path, params=params, timeout=httpx.Timeout(timeout + 30.0, connect=5.0)
            )
        except httpx.HTTPError as error:
            raise ApiError(f"GET {self._url(path)}: {_describe(error)}") from None
        if response.status_code in (404, 405):
            return None
        if response.status_code >= 400:
            raise ApiHttpError("GET", self._url(path), response.status_code, _detail(response))
        try:
            status = response.json().get("status")
        except (ValueError, AttributeError):
            return None
        return status if isinstance(status, str) else None

    def exit_terminal(self, terminal_id: str) -> None:
        """Ask the agent CLI to exit (`POST /terminals/{id}/exit`)."""
        self._json("POST", f"/terminals/{terminal_id}/exit")

    # --- plumbing ---

    def _create_params(
        self, agent_profile: str, provider: str | None, working_directory: Path | str | None
    ) -> dict[str, str]:
        params = {"provider": provider or self.provider, "agent_profile": agent_profile}
        directory = working_directory or self.working_directory
        if directory:
            params["working_directory"] = str(directory)
        return params

    def _terminal_json(self, method: str, path: str, params: dict[str, str]) -> dict[str, Any]:
        data = self._json(method, path, params=params)
        if not isinstance(data.get("id"), str) or not isinstance(data.get("session_name"), str):
            raise ApiError(f"{method} {self._url(path)}: answer lacks `id` or `session_name`")
        return data

    def _url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def _json(self, method: str, path: str, *, retry: bool = True, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, path, retry=retry, **kwargs)
        if response.status_code >= 400:
            raise ApiHttpError(method, self._url(path), response.status_code, _detail(response))
        try:
            data = response.json()
        except ValueError:
            raise ApiError(f"{method} {self._url(path)}: the answer is not JSON") from None
        return data if isinstance(data, dict) else {"value": data}

    def _send(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> httpx.Response:
        delays = self._read_retry_delays if method == "GET" and retry else ()
        attempt = 0
        while True:
            try:
                return self._http.request(method, path, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if attempt >= len(delays):
                    raise ApiUnreachableError(
                        f"cannot reach the API at {self.base_url} ({method} {path}): "
                        "is `baton serve` or `cao-server` running there?"
                    ) from None
            except _TRANSIENT as error:
                if attempt >= len(delays):
                    raise ApiError(f"{method} {self._url(path)}: {_describe(error)}") from None
            except httpx.TimeoutException as error:
                raise ApiError(f"{method} {self._url(path)}: {_describe(error)}") from None
            except httpx.HTTPError as error:
                raise ApiError(f"{method} {self._url(path)}: {_describe(error)}") from None
            time.sleep(delays[attempt])
            attempt += 1


def _describe(error: httpx.HTTPError) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _detail(response: httpx.Response) -> str:
    """The server's `detail` (FastAPI's error shape), else the start of the body."""
    try:
        data = response.json()
    except ValueError:
        if "html" in response.headers.get("content-type", "").lower():
            return f"{response.reason_phrase} (an HTML page, not the CAO API)"
        words = " ".join(response.text.split())  # one line, whatever the body was
        return words[:200] or response.reason_phrase
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):  # validation errors: [{"loc": [...], "msg": "..."}]
        messages = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(part) for part in item.get("loc", ()))
                messages.append(f"{loc}: {item.get('msg', '')}".strip(": "))
        return "; ".join(messages) or str(detail)
    return str(data)[:200]
