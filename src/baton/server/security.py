"""Who may talk to the server: loopback hosts and origins, or the bearer token.

A server that types into agent CLIs is a remote shell. Without a token it stays local:
it binds only to loopback (`require_token_for_remote`), the Host header must name a
loopback host (stops DNS rebinding) and a state-changing request carrying an Origin must
come from a loopback page (stops a web page from typing into an agent). With a token
(`BATON_TOKEN`) it may listen anywhere, and every request but `/health` must carry
`Authorization: Bearer <token>` — the token is then the guard, so Host and Origin are
not checked (a browser page cannot learn the token nor send it cross-origin). Agents
never hold that token: each terminal gets its own (`terminal_tokens.py`), which may do
only what that terminal's tools do (`scopes.py`, 403 otherwise).

A request with more than one Host header is refused (400) whatever the token: which
one a proxy or the server believes would otherwise be anyone's guess.

The web cockpit (`/ui`, see docs/web.md) is for a browser, which cannot send a bearer
header when a person opens a link. With a token, its login form takes the token once and
answers with an HttpOnly, SameSite=Strict cookie derived from it (`ui_cookie_value`);
that cookie opens `/ui` paths only, never the API, and a state-changing request carrying
it must come from the page's own origin. A page asked for without it is redirected to the
login form; the token itself never appears in a URL.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from baton.errors import ConfigError
from baton.server.scopes import ACTING_TERMINAL, Lookup, refusal
from baton.server.terminal_tokens import TerminalTokens

__all__ = [
    "LOOPBACK_HOSTS",
    "UI_COOKIE",
    "UI_LOGIN_PATH",
    "LocalOnlyMiddleware",
    "is_loopback_host",
    "require_token_for_remote",
    "split_host",
    "ui_cookie_value",
]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN_PATHS = frozenset({"/health"})
UI_PREFIX = "/ui"
UI_LOGIN_PATH = "/ui/login"
UI_COOKIE = "baton_ui"
_UI_OPEN_PREFIXES = (UI_LOGIN_PATH, "/ui/static/")
_UI_API_PREFIX = "/ui/api/"


def ui_cookie_value(token: str) -> str:
    """The web cockpit's cookie for `token`: derived, so no session is stored and a new
    token ends every old cookie; it cannot be turned back into the token."""
    return hmac.new(token.encode(), b"baton web cockpit v1", hashlib.sha256).hexdigest()


def _is_ui(path: str) -> bool:
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


def _ui_open(path: str) -> bool:
    return any(path == p or path.startswith(p) for p in _UI_OPEN_PREFIXES)


def _cookie(headers: dict[str, str], name: str) -> str | None:
    try:
        jar = SimpleCookie(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def split_host(value: str) -> str:
    """The host part of a Host header value (`[::1]:9889` -> `::1`), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def is_loopback_host(host: str, extra: Iterable[str] = ()) -> bool:
    """True for `localhost`, `*.localhost`, loopback IP literals and explicitly bound hosts."""
    host = host.rstrip(".")
    if host in LOOPBACK_HOSTS or host.endswith(".localhost") or host in extra:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_token_for_remote(host: str, token: str | None) -> None:
    """Refuse to bind beyond loopback (`0.0.0.0`, a LAN address) unless a token is set."""
    if token or is_loopback_host(split_host(host) if host.startswith("[") else host.lower()):
        return
    raise ConfigError(
        f"refusing to listen on {host!r} without a token: set BATON_TOKEN to serve beyond "
        "loopback (clients send it as Authorization: Bearer <token>)"
    )


class LocalOnlyMiddleware:
    """Reject foreign Host and Origin headers and, when a token is set, missing tokens."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        extra_hosts: Iterable[str] = (),
        terminal_tokens: TerminalTokens | None = None,
        lookup: Lookup | None = None,
    ):
        self.app = app
        self.token = token or None
        self.extra_hosts = frozenset(h.lower() for h in extra_hosts if h)
        self.terminal_tokens = terminal_tokens
        self.lookup = lookup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        hosts = sum(1 for key, _ in scope["headers"] if key.lower() == b"host")
        problem = (400, "more than one Host header") if hosts > 1 else self._check(scope, headers)
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, detail = problem
        body = json.dumps({"detail": detail}).encode("utf-8")
        response_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if status == 401 and self._wants_login_page(scope):
            status = 303  # a person opening a cockpit page: to the login form, then back
            where = quote(scope["path"], safe="/")
            response_headers.append((b"location", f"{UI_LOGIN_PATH}?next={where}".encode()))
        elif status == 401:
            response_headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})

    def _check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        if self.token:
            return self._check_token(scope, headers)
        host = split_host(headers.get("host", ""))
        if not is_loopback_host(host, self.extra_hosts):
            return 403, f"host {headers.get('host', '')!r} is not allowed (loopback only)"
        origin = headers.get("origin")
        if origin is not None and scope["method"] not in _SAFE_METHODS:
            origin_host = urlsplit(origin).hostname or ""
            if not is_loopback_host(origin_host.lower(), self.extra_hosts):
                return 403, f"origin {origin!r} is not allowed (loopback only)"
        return None

    @staticmethod
    def _wants_login_page(scope: Scope) -> bool:
        path = scope["path"]
        return (
            scope["method"] in ("GET", "HEAD")
            and _is_ui(path)
            and not path.startswith(_UI_API_PREFIX)
        )

    def _check_token(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        path = scope["path"]
        if self.token is None or path in _OPEN_PATHS or _ui_open(path):
            return None
        if _is_ui(path) and "authorization" not in headers:
            return self._check_ui_cookie(scope, headers)
        scheme, _, given = headers.get("authorization", "").partition(" ")
        given = given.strip()
        if scheme.lower() != "bearer":
            return 401, "missing or wrong bearer token (set BATON_TOKEN)"
        if secrets.compare_digest(given.encode(), self.token.encode()):
            return None
        return self._check_terminal_token(scope, given)

    def _check_ui_cookie(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """The web cockpit's cookie, on `/ui` paths only; writes only from the page itself."""
        assert self.token is not None
        given = _cookie(headers, UI_COOKIE) or ""
        if not secrets.compare_digest(given.encode(), ui_cookie_value(self.token).encode()):
            return 401, "log in to the web cockpit first (the token of BATON_TOKEN)"
        origin = headers.get("origin")
        if scope["method"] not in _SAFE_METHODS:
            own = split_host(headers.get("host", ""))
            if origin is None or (urlsplit(origin).hostname or "").lower() != own:
                return 403, "a change from the web cockpit must come from its own page"
        return None

    def _check_terminal_token(self, scope: Scope, given: str) -> tuple[int, str] | None:
        """A terminal's own token: allowed only what that terminal's tools do."""
        if self.terminal_tokens is None or self.lookup is None:
            return 401, "missing or wrong bearer token (set BATON_TOKEN)"
        terminal_id = self.terminal_tokens.terminal_for(given)
        own = self.lookup(terminal_id) if terminal_id is not None else None
        if own is None:
            return 401, "missing or wrong bearer token (set BATON_TOKEN)"
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        reason = refusal(scope["method"], scope["path"], query, own, self.lookup)
        if reason is not None:
            return 403, reason
        scope.setdefault("state", {})[ACTING_TERMINAL] = own  # for checks on the body
        return None
