"""The web cockpit's cookie in `LocalOnlyMiddleware`, on the middleware alone (no server).

With a token, the cookie the login form sets opens `/ui` paths and nothing else; a write
carrying it must come from the page's own origin; a page asked for without it is sent to
the login form (its path in `next`, never a token); the form and the assets are open.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton.server.security import UI_COOKIE, LocalOnlyMiddleware, ui_cookie_value

TOKEN = "s3cret-T0ken"
COOKIE = f"{UI_COOKIE}={ui_cookie_value(TOKEN)}"


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _request(
    path: str,
    *,
    method: str = "GET",
    cookie: str | None = None,
    origin: str | None = None,
    token: str | None = TOKEN,
) -> tuple[int, dict[str, str]]:
    headers = [(b"host", b"127.0.0.1:9889")]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(LocalOnlyMiddleware(_ok, token=token)(scope, receive, send))
    return sent[0]["status"], {k.decode(): v.decode() for k, v in sent[0]["headers"]}


def test_the_cookie_is_derived_and_not_the_token() -> None:
    assert ui_cookie_value(TOKEN) != TOKEN and TOKEN not in ui_cookie_value(TOKEN)
    assert ui_cookie_value(TOKEN) == ui_cookie_value(TOKEN)
    assert ui_cookie_value(TOKEN) != ui_cookie_value(TOKEN + "x")


@pytest.mark.parametrize("path", ["/ui", "/ui/runs/baton-1", "/ui/api/overview"])
def test_the_cookie_opens_the_cockpit(path: str) -> None:
    assert _request(path, cookie=COOKIE)[0] == 200


@pytest.mark.parametrize("path", ["/sessions", "/terminals/abcdef01", "/events", "/uix"])
def test_the_cookie_never_opens_the_api(path: str) -> None:
    assert _request(path, cookie=COOKIE)[0] == 401


@pytest.mark.parametrize(
    "cookie",
    [None, f"{UI_COOKIE}=", f"{UI_COOKIE}={TOKEN}", f"{UI_COOKIE}={ui_cookie_value('other')}"],
)
def test_data_without_the_right_cookie_is_refused(cookie: str | None) -> None:
    assert _request("/ui/api/overview", cookie=cookie)[0] == 401


def test_a_page_without_the_cookie_goes_to_the_login_form() -> None:
    status, headers = _request("/ui/terminals/abcdef01")
    assert status == 303
    assert headers["location"] == "/ui/login?next=/ui/terminals/abcdef01"


@pytest.mark.parametrize("path", ["/ui/login", "/ui/static/cockpit.js"])
def test_the_login_form_and_assets_are_open(path: str) -> None:
    assert _request(path)[0] == 200
    assert _request(path, method="POST" if path == "/ui/login" else "GET")[0] == 200


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://127.0.0.1:9889", 200),
        ("http://evil.example", 403),
        (None, 403),
    ],
)
def test_a_write_with_the_cookie_must_come_from_the_page(origin: str | None, status: int) -> None:
    path = "/ui/api/terminals/abcdef01/answer"
    assert _request(path, method="POST", cookie=COOKIE, origin=origin)[0] == status


def test_without_a_token_the_cockpit_is_loopback_only() -> None:
    assert _request("/ui/api/overview", token=None)[0] == 200
    path = "/ui/api/terminals/abcdef01/answer"
    assert _request(path, method="POST", origin="http://evil.example", token=None)[0] == 403
