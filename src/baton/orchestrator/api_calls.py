"""`ApiCalls`: one call to a CAO-compatible server, carried through the server's outages.

A server that stops answering (restarted, a proxy's 502/503/504) is waited for, every
call alike, for as long as its `OutageWindow` allows (SERVER_OUTAGE_SECONDS in a run). A
write that never reached it is simply sent again. A write whose answer was lost may have
been done: it is sent again only to a server that honours `Idempotency-Key` (baton serve
answers the repeat with the first outcome); to any other it is `ApiOutcomeUnknown`, and
the caller checks what happened instead. `ApiClient` speaks the API's routes over it.
"""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from baton.errors import ApiError, ApiHttpError, ApiOutcomeUnknown, ApiUnreachableError
from baton.orchestrator.outage import OutageWindow
from baton.tls import tls_verify_for

__all__ = ["IDEMPOTENCY_HEADER", "ApiCalls", "describe", "detail", "new_key"]

IDEMPOTENCY_HEADER = "Idempotency-Key"
# What a proxy answers while the server behind it is away.
_SERVER_AWAY = frozenset({502, 503, 504})
# Methods whose repeat does no harm (a second DELETE finds the terminal gone: 404).
_REPEATABLE = frozenset({"GET", "DELETE"})
# A write whose answer is lost again and again while /health answers: give up at last.
_MAX_RESENDS = 5
_TRANSIENT = (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout)


class ApiCalls:
    """The connection pool to one server, and the rules for calling it through outages."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        timeout: httpx.Timeout | float,
        outage: OutageWindow,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.outage = outage
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.verify = tls_verify_for(self.base_url)
        self.http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            verify=self.verify,
        )

    def close(self) -> None:
        self.http.close()

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def json(
        self, method: str, path: str, *, retry: bool = True, key: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        response = self.send(method, path, retry=retry, key=key, **kwargs)
        if response.status_code >= 400:
            raise ApiHttpError(method, self.url(path), response.status_code, detail(response))
        try:
            data = response.json()
        except ValueError:
            raise ApiError(f"{method} {self.url(path)}: the answer is not JSON") from None
        return data if isinstance(data, dict) else {"value": data}

    def send(
        self, method: str, path: str, *, retry: bool, key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One call, tried again while the server is away (see the module's docstring)."""
        headers = {IDEMPOTENCY_HEADER: key} if key else None
        attempt = resends = 0
        while True:
            reached = True  # whether the server may have received the request
            try:
                response = self.http.request(method, path, headers=headers, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                reached, failure = False, describe(error)
            except _TRANSIENT as error:
                failure = describe(error)
                slow_write = method not in _REPEATABLE and isinstance(error, httpx.ReadTimeout)
                if not retry or slow_write:  # a write that takes too long is not an outage
                    raise ApiError(f"{method} {self.url(path)}: {failure}") from None
            except httpx.HTTPError as error:
                raise ApiError(f"{method} {self.url(path)}: {describe(error)}") from None
            else:
                if not retry or not _server_away(response):
                    self.outage.answered()
                    if key and _interrupted(response):
                        raise ApiOutcomeUnknown(f"{method} {self.url(path)}: {detail(response)}")
                    return response
                failure = f"HTTP {response.status_code} {response.reason_phrase}"
            if reached and method not in _REPEATABLE:
                if not key or resends >= _MAX_RESENDS or not self._honours_keys():
                    raise ApiOutcomeUnknown(
                        f"{method} {self.url(path)}: {failure}; the server may have done it"
                    )
                resends += 1  # the server is back (it answered /health): the same key again
                continue
            if not retry or not self.outage.failed(f"{method} {path}: {failure}", attempt):
                if not reached:
                    raise ApiUnreachableError(
                        f"cannot reach the API at {self.base_url} ({method} {path}): "
                        "is `baton serve` or `cao-server` running there?"
                    )
                raise ApiError(f"{method} {self.url(path)}: {failure}")
            attempt += 1

    def _honours_keys(self) -> bool:
        """Whether the server answers a repeated `Idempotency-Key` instead of acting again.

        Asked afresh after each lost answer (waiting out the outage): only then does it
        matter, and the server that answers may not be the one that was asked.
        """
        try:
            data = self.json("GET", "/health")
        except ApiHttpError:
            return False  # no /health (or not this one): a server that does not say so
        return data.get("idempotency") == IDEMPOTENCY_HEADER


def new_key() -> str:
    """A fresh idempotency key: one per logical write, reused on each of its attempts."""
    return secrets.token_hex(16)


def _server_away(response: httpx.Response) -> bool:
    """A proxy's 502/503/504 for a server behind it that is not there.

    The server's own 5xx (baton serve's 502 "the CLI did not take the input", 504 for a
    run-step) comes as JSON with a `detail`: an answer, not an outage.
    """
    if response.status_code not in _SERVER_AWAY:
        return False
    try:
        data = response.json()
    except ValueError:
        return True
    return not (isinstance(data, dict) and "detail" in data)


def _interrupted(response: httpx.Response) -> bool:
    """baton serve's answer to a key whose first request died with the server."""
    return response.status_code == 409 and (
        response.headers.get("Idempotency-Status", "") == "interrupted"
    )


def describe(error: httpx.HTTPError) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def detail(response: httpx.Response) -> str:
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
