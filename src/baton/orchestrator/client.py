"""`ApiClient`: the orchestrator's side of the CAO-compatible HTTP API, over httpx.

Paths and query parameters are CAO's, so the same client drives `baton serve` and a stock
`cao-server`. Failures become Baton errors: nothing listening → `ApiUnreachableError`
(one line naming the URL), an HTTP error → `ApiHttpError` with the status code and the
server's `detail`.

Every call goes through `ApiCalls`, which waits out a server's outage and sends a write
again only where that cannot do it twice; a write whose outcome stays unknown is checked
instead (`send_input` does it itself, see `_settle_input`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import httpx

from baton.errors import ApiError, ApiHttpError, ApiOutcomeUnknown
from baton.orchestrator.api_calls import IDEMPOTENCY_HEADER, ApiCalls, describe, detail, new_key
from baton.orchestrator.outage import OutageWindow
from baton.status import TerminalStatus, parse_status
from baton.usage import Usage
from baton.wire import SessionSummaryJSON, TerminalJSON

__all__ = ["DEFAULT_TIMEOUT", "IDEMPOTENCY_HEADER", "ApiClient"]

# Creating a terminal waits for the agent CLI to start and input waits for it to take the
# text, so reads get minutes; connecting is quick or the server is not there.
DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
# Without a run's SERVER_OUTAGE_SECONDS: ride out a blip, report a stopped server soon.
_DEFAULT_OUTAGE_SECONDS = 3.75
# `/events` sends a keep-alive at least every 15 s; silence this long means a dead stream.
_STREAM_READ_SECONDS = 45.0


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
        outage: OutageWindow | None = None,
        outage_seconds: float = _DEFAULT_OUTAGE_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.working_directory = str(working_directory) if working_directory else None
        self.outage = outage or OutageWindow(self.base_url, outage_seconds)
        self._calls = ApiCalls(
            self.base_url, token=token, timeout=timeout, outage=self.outage, transport=transport
        )
        self._json = self._calls.json
        self._url = self._calls.url

    # --- resource handling ---

    def close(self) -> None:
        """Close the connection pool."""
        self._calls.close()

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
    ) -> TerminalJSON:
        """Create a session with its first terminal; the terminal's JSON (`id`, `session_name`).

        `session_name` chosen beforehand lets a run killed inside this call find the
        session (and its terminal) afterwards. An answer lost to a server that does not
        honour `Idempotency-Key` is `ApiOutcomeUnknown`: list the session to find out.
        """
        params = self._create_params(agent_profile, provider, working_directory)
        if session_name:
            params["session_name"] = session_name
        return self._terminal_json("POST", "/sessions", params, key=new_key())

    def list_sessions(self) -> list[SessionSummaryJSON]:
        """`GET /sessions`: the server's sessions."""
        data = self._json("GET", "/sessions")
        items = _items(data.get("value", data.get("sessions", [])))
        return cast(list[SessionSummaryJSON], items)

    def list_session_terminals(self, session_name: str) -> list[TerminalJSON]:
        """`GET /sessions/{name}/terminals`: the terminals of a session (404 → ApiHttpError)."""
        data = self._json("GET", f"/sessions/{session_name}/terminals")
        items = _items(data.get("value", data.get("terminals", [])))
        return cast(list[TerminalJSON], items)

    def restart_terminal(self, terminal_id: str) -> dict[str, Any]:
        """`POST /terminals/{id}/restart` (baton serve): a fresh CLI in the same terminal.

        A server without the route answers 404 or 405 (ApiHttpError).
        """
        return self._json("POST", f"/terminals/{terminal_id}/restart", key=new_key())

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
        on_sent: Callable[[], None] | None = None,
    ) -> TerminalJSON:
        """Add a terminal to a session; the terminal's JSON (`id`, `session_name`).

        `on_sent` is called once the request is written (the server answers after the CLI
        started): creates asked for one after another reach the server in that order.
        `ApiOutcomeUnknown` as for `create_session`: the terminal may exist.
        """
        params = self._create_params(agent_profile, provider, working_directory)
        path = f"/sessions/{session_name}/terminals"
        extensions = {"trace": _when_sent(on_sent)} if on_sent is not None else None
        return self._terminal_json("POST", path, params, key=new_key(), extensions=extensions)

    def send_input(
        self, terminal_id: str, message: str, *, arrived: Callable[[], bool] | None = None
    ) -> None:
        """Type `message` into the terminal and submit it (`?message=`; body when too long).

        One key for this send, on every attempt: baton serve types it once however often
        it is asked. Any other server whose answer was lost is checked first
        (`_settle_input`, and `arrived`: the caller's own sign, such as the answer file),
        and asked again only when the message did not arrive.
        """
        try:
            self._send_input_once(terminal_id, message, new_key())
        except ApiOutcomeUnknown:
            if self._settle_input(terminal_id, message) or (arrived is not None and arrived()):
                return
            self._send_input_once(terminal_id, message, new_key())

    def _send_input_once(self, terminal_id: str, message: str, key: str) -> None:
        path = f"/terminals/{terminal_id}/input"
        try:
            self._json("POST", path, key=key, params={"message": message})
        except httpx.InvalidURL:
            # Longer than a URL can carry (refused before anything is sent): `baton serve`
            # also takes it as the JSON body.
            self._json("POST", path, key=key, json={"message": message})

    def _settle_input(self, terminal_id: str, message: str) -> bool:
        """Whether a send whose answer was lost reached the CLI, once the server answers.

        It did when the terminal is working on it (`processing`, or a dialog it raised) or
        when its output shows the message's longest line; otherwise it did not. These
        reads wait out the outage like any other.
        """
        status = self.get_status(terminal_id)
        if status in (TerminalStatus.PROCESSING, TerminalStatus.WAITING_USER_ANSWER):
            return True
        data = self._json("GET", f"/terminals/{terminal_id}/output", params={"mode": "full"})
        output = data.get("output")
        fingerprint = _fingerprint(message)
        return bool(fingerprint) and isinstance(output, str) and fingerprint in output

    def send_key(self, terminal_id: str, key: str) -> None:
        """`POST /terminals/{id}/key?key=KEY`: press one key (a dialog's menu choice, Enter)."""
        self._json("POST", f"/terminals/{terminal_id}/key", params={"key": key})

    def announce_run(self, session_name: str, state_file: Path, wd: Path) -> str | None:
        """`PUT /baton/runs/{session}` (baton serve): tell the server's web cockpit where this
        run's state file is. The page's path, or None from a server without the route (a
        stock cao-server) or that refused it: the run goes on without a web page."""
        body = {"state_file": str(state_file), "wd": str(wd)}
        try:
            data = self._json("PUT", f"/baton/runs/{session_name}", json=body, retry=False)
        except ApiError:
            return None
        page = data.get("page")
        return page if isinstance(page, str) and page.startswith("/") else None

    def get_attach_info(self, terminal_id: str) -> dict[str, Any]:
        """`GET /terminals/{id}/attach` (baton serve): its tmux socket, session and window."""
        return self._json("GET", f"/terminals/{terminal_id}/attach", retry=False)

    def get_terminal(self, terminal_id: str) -> TerminalJSON:
        """`GET /terminals/{id}`: the terminal's JSON (404 → ApiHttpError).

        As the server sent it: a caller reads `status` through `get_status`, which checks it.
        """
        return cast(TerminalJSON, self._json("GET", f"/terminals/{terminal_id}"))

    def get_status(self, terminal_id: str) -> TerminalStatus:
        """The terminal's status: idle, processing, completed, waiting_user_answer or error."""
        data = self.get_terminal(terminal_id)
        status = parse_status(data.get("status"))
        if status is None:
            shown = data.get("status")
            raise ApiError(
                f"GET {self._url(f'/terminals/{terminal_id}')}: no known status in answer "
                f"({shown!r})"
            )
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
        self,
        *,
        stop: threading.Event | None = None,
        terminal_ids: tuple[str, ...] = (),
        session_name: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """`GET /events`: each `data:` JSON object of the stream, until it ends or `stop` is set.

        `terminal_ids` and `session_name` ask for those terminals' events only (a server
        that does not filter sends them all).

        Comments (keep-alives) and non-JSON data are skipped; 404/405 (no such route) or
        any other failure raises `ApiError`. Runs on its own connection, so a reader
        thread never holds up the calls of the run.
        """
        wanted = {"terminal_id": list(terminal_ids)}
        if session_name is not None:
            wanted["session_name"] = [session_name]
        params = httpx.QueryParams(wanted)
        timeout = httpx.Timeout(_STREAM_READ_SECONDS, connect=5.0)
        url = self._url("/events")
        try:
            with (
                httpx.Client(
                    headers=self._calls.http.headers, timeout=timeout, verify=self._calls.verify
                ) as http,
                http.stream("GET", url, params=params) as response,
            ):
                if response.status_code >= 400:
                    response.read()
                    raise ApiHttpError("GET", url, response.status_code, detail(response))
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
            raise ApiError(f"GET {url}: {describe(error)}") from None

    def wait_status(
        self, terminal_id: str, since: TerminalStatus, timeout: float
    ) -> TerminalStatus | None:
        """Long-poll `GET /terminals/{id}/status/wait`: the status once it differs from `since`
        (or when `timeout` ends); None when the server has no such route (404/405)."""
        path = f"/terminals/{terminal_id}/status/wait"
        params = {"since": since, "timeout": f"{timeout:g}"}
        try:
            response = self._calls.http.get(
                path, params=params, timeout=httpx.Timeout(timeout + 30.0, connect=5.0)
            )
        except httpx.HTTPError as error:
            raise ApiError(f"GET {self._url(path)}: {describe(error)}") from None
        if response.status_code in (404, 405):
            return None
        if response.status_code >= 400:
            raise ApiHttpError("GET", self._url(path), response.status_code, detail(response))
        try:
            return parse_status(response.json().get("status"))
        except (ValueError, AttributeError):
            return None

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

    def _terminal_json(
        self,
        method: str,
        path: str,
        params: dict[str, str],
        *,
        key: str | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> TerminalJSON:
        data = self._json(method, path, key=key, params=params, extensions=extensions)
        if not isinstance(data.get("id"), str) or not isinstance(data.get("session_name"), str):
            raise ApiError(f"{method} {self._url(path)}: answer lacks `id` or `session_name`")
        return cast(TerminalJSON, data)


def _when_sent(callback: Callable[[], None]) -> Callable[[str, dict[str, Any]], None]:
    """An httpcore trace hook calling `callback` when a request's body is written."""

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith("send_request_body.complete"):
            callback()

    return trace


def _items(value: object) -> list[dict[str, Any]]:
    """The objects of a list answer; [] for anything else."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _fingerprint(message: str) -> str:
    """The message's longest line, cut to what one terminal row surely shows whole."""
    lines = [" ".join(line.split()) for line in message.splitlines()]
    return max(lines, key=len, default="")[:40]
