"""The cockpit's pages: one HTML shell per view, its script and style, the login form,
and a run's report and diff.

The shell holds no data: the script (`assets/cockpit.js`) fetches it from `/ui/api` and
puts every value in the page as text. Every page carries a strict Content-Security-Policy
(scripts and styles from this server only, nothing inline), so text an agent printed can
never run even if it reached the page as markup.
"""

from __future__ import annotations

import html
import secrets
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from baton.cockpit.record import load_run
from baton.cockpit.report.builder import build_report
from baton.errors import BatonError, NotFoundError
from baton.server.routes.common import TERMINAL_ID_PATTERN
from baton.server.security import UI_COOKIE, ui_cookie_value
from baton.web.batches import BATCH_ID_PATTERN
from baton.web.runs import SESSION_PATTERN
from baton.web.views import CockpitViews

__all__ = ["PAGE_POLICY", "pages_router"]

PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# The report is one self-contained page with its own inline style and no script.
_REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"
_ASSETS = {"cockpit.js": "text/javascript", "cockpit.css": "text/css"}
_COOKIE_DAYS = 30
_MAX_DIFF_BYTES = 4 * 1024 * 1024

TerminalId = Annotated[str, PathParam(pattern=TERMINAL_ID_PATTERN)]
Session = Annotated[str, PathParam(pattern=SESSION_PATTERN)]
BatchId = Annotated[str, PathParam(pattern=BATCH_ID_PATTERN)]


def _asset(name: str) -> str:
    return resources.files("baton.web").joinpath("assets", name).read_text(encoding="utf-8")


def _headers(policy: str = PAGE_POLICY) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


@dataclass(frozen=True)
class _Shell:
    """The page template, read once."""

    text: str

    def render(self, view: str, ident: str = "", title: str = "Baton") -> HTMLResponse:
        page = (
            self.text.replace("{{view}}", html.escape(view))
            .replace("{{id}}", html.escape(ident))
            .replace("{{title}}", html.escape(title))
        )
        return HTMLResponse(page, headers=_headers())


def pages_router(views: CockpitViews, token: str | None) -> APIRouter:
    """The HTML routes; `token` is the server's BATON_TOKEN (None: loopback only, no login)."""
    router = APIRouter()
    shell = _Shell(_asset("page.html"))
    login_page = _asset("login.html")
    assets = {name: _asset(name) for name in _ASSETS}

    @router.get("/ui")
    def index() -> HTMLResponse:
        return shell.render("index")

    @router.get("/ui/runs/{session}")
    def run_page(session: Session) -> HTMLResponse:
        return shell.render("run", session, f"Baton · {session}")

    @router.get("/ui/terminals/{terminal_id}")
    def terminal_page(terminal_id: TerminalId) -> HTMLResponse:
        return shell.render("terminal", terminal_id, f"Baton · agent {terminal_id}")

    @router.get("/ui/static/{name}")
    def asset(name: str) -> Response:
        if name not in assets:
            raise NotFoundError(f"no asset {name!r}")
        return Response(assets[name], media_type=_ASSETS[name], headers=_headers())

    @router.get("/ui/login", response_model=None)
    def login_form(next: str = "/ui") -> Response:
        if token is None:
            return RedirectResponse(_local(next), status_code=303)
        return _login(login_page, _local(next), "")

    @router.post("/ui/login", response_model=None)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        target = _local((form.get("next") or ["/ui"])[0])
        if token is None:
            return RedirectResponse(target, status_code=303)
        given = (form.get("token") or [""])[0].strip()
        if not secrets.compare_digest(given.encode(), token.encode()):
            return _login(login_page, target, "That is not the server's token.", status=401)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            UI_COOKIE,
            ui_cookie_value(token),
            max_age=_COOKIE_DAYS * 86400,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    @router.post("/ui/logout")
    def logout() -> RedirectResponse:
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(UI_COOKIE, path="/ui")
        return response

    @router.get("/ui/runs/{session}/report")
    async def report(session: Session) -> HTMLResponse:
        state_path = views.state_path(session)
        page = await run_in_threadpool(_report_html, state_path)
        return HTMLResponse(page, headers=_headers(_REPORT_POLICY))

    @router.get("/ui/batches/{batch_id}/report")
    async def batch_report(batch_id: BatchId) -> HTMLResponse:
        page = await run_in_threadpool(views.batches.report_html, batch_id)
        return HTMLResponse(page, headers=_headers(_REPORT_POLICY))

    @router.get("/ui/runs/{session}/diff")
    async def diff(session: Session) -> PlainTextResponse:
        text = await run_in_threadpool(_diff_text, views.state_path(session))
        return PlainTextResponse(text, headers=_headers())

    return router


def _local(target: str) -> str:
    """Only a path of the cockpit itself: a login never sends the browser elsewhere."""
    if target.startswith("/ui") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui"


def _login(page: str, target: str, problem: str, status: int = 200) -> HTMLResponse:
    text = page.replace("{{next}}", html.escape(target)).replace(
        "{{problem}}", html.escape(problem)
    )
    return HTMLResponse(text, status_code=status, headers=_headers())


def _report_html(state_path: Path) -> str:
    """`baton report`'s page for the run, written beside its record as that command does."""
    try:
        written = build_report(load_run(state_path))
        return written.path.read_text(encoding="utf-8")
    except (BatonError, OSError) as error:
        raise NotFoundError(f"no report for {state_path}: {error}") from None


def _diff_text(state_path: Path) -> str:
    """`git diff` of the working directory against the commit the run started from."""
    try:
        record = load_run(state_path)
    except (BatonError, OSError) as error:
        raise NotFoundError(f"cannot read {state_path}: {error}") from None
    head, wd = record.git_head, record.state.wd
    if not head or not wd:
        return "No starting commit recorded for this run (not a git repository?)."
    try:
        completed = subprocess.run(
            ["git", "-C", wd, "diff", "--no-color", "--no-ext-diff", head],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"git diff failed: {error}"
    if completed.returncode != 0:
        return f"git diff failed: {completed.stderr.decode('utf-8', 'replace').strip()}"
    text = completed.stdout[:_MAX_DIFF_BYTES].decode("utf-8", "replace")
    cut = len(completed.stdout) > _MAX_DIFF_BYTES
    return (text + "\n[… cut at 4 MiB]\n") if cut else (text or "No change since the start.")
