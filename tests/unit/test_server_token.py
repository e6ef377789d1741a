"""The bearer token check of `LocalOnlyMiddleware`, on the middleware alone (no app, no server).

Only the exact token after `Bearer ` lets a request through: no part of it, nothing more,
no other scheme.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton.server.security import LocalOnlyMiddleware

TOKEN = "s3cret-T0ken"


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _request(authorization: str | None, path: str = "/sessions") -> tuple[int, dict[str, str]]:
    """The status and headers the middleware (in front of an app that says 200) answers."""
    headers = [(b"host", b"127.0.0.1:9889")]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode("latin-1")))
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(LocalOnlyMiddleware(_ok, token=TOKEN)(scope, receive, send))
    start = sent[0]
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}


def test_the_exact_token_passes() -> None:
    assert _request(f"Bearer {TOKEN}")[0] == 200


def test_the_scheme_is_case_insensitive() -> None:
    assert _request(f"bearer {TOKEN}")[0] == 200


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no-header"),
        pytest.param("", id="empty-header"),
        pytest.param("Bearer", id="scheme-only"),
        pytest.param("Bearer ", id="empty-value"),
        pytest.param("Bearer  ", id="blank-value"),
        pytest.param(f"Bearer {TOKEN[:-1]}", id="prefix"),
        pytest.param(f"Bearer {TOKEN[:1]}", id="first-char"),
        pytest.param(f"Bearer {TOKEN[1:]}", id="suffix"),
        pytest.param(f"Bearer {TOKEN}x", id="extra-char-after"),
        pytest.param(f"Bearer x{TOKEN}", id="extra-char-before"),
        pytest.param(f"Bearer {TOKEN.upper()}", id="other-case"),
        pytest.param(f"Basic {TOKEN}", id="basic-scheme"),
        pytest.param(f"Token {TOKEN}", id="token-scheme"),
        pytest.param(f"Bearerx {TOKEN}", id="longer-scheme"),
        pytest.param(TOKEN, id="no-scheme"),
        pytest.param(f" {TOKEN}", id="empty-scheme"),
    ],
)
def test_anything_but_the_exact_token_is_refused(authorization: str | None) -> None:
    status, headers = _request(authorization)
    assert status == 401
    assert headers["www-authenticate"] == "Bearer"


def test_health_is_open_without_the_token() -> None:
    assert _request(None, path="/health")[0] == 200
