"""The web cockpit behind BATON_TOKEN, in Debian's headless Chromium.

No token: the page sends the browser to a login form and its data is refused. The token
typed once: the page works, and neither the token nor anything derived from it appears
in any URL the browser asked for. The cookie opens the cockpit only, never the API.
Text an agent's screen shows — markup, a script — stays text on the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.live_browser import headless_chromium
from tests.support.server import ServerProcess, create_scripted_terminal, running_baton_server
from tests.support.waiting import wait_until

from baton.server.security import UI_COOKIE, ui_cookie_value

pytestmark = pytest.mark.tmux

TOKEN = "web-cockpit-test-token-7f3a9c"
HOSTILE = (
    "<img src=x onerror=\"document.title='owned'\"> <script>window.owned = 1</script> <b>bold</b>"
)


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_baton_server(tmp_path, env={"BATON_TOKEN": TOKEN}) as server:
        yield server


def test_the_token_gate_and_hostile_screen_text(
    token_server: ServerProcess, tmp_path: Path
) -> None:
    base = token_server.base_url
    with token_server.client() as api:
        terminal = create_scripted_terminal(api, tmp_path)
        terminal_id = terminal["id"]
        # The agent's screen shows text that would be markup and script in a page.
        sent = api.post(f"/terminals/{terminal_id}/input", params={"message": HOSTILE})
        assert sent.status_code == 200, sent.text

    # Without the token: data refused, pages sent to the login form.
    refused = httpx.get(f"{base}/ui/api/overview", timeout=30)
    assert refused.status_code == 401
    page_asked = httpx.get(f"{base}/ui/terminals/{terminal_id}", timeout=30)
    assert page_asked.status_code == 303
    assert page_asked.headers["location"] == f"/ui/login?next=/ui/terminals/{terminal_id}"
    # The cockpit's cookie never opens the API itself, nor a change from another page.
    cookie = {UI_COOKIE: ui_cookie_value(TOKEN)}
    assert httpx.get(f"{base}/sessions", cookies=cookie, timeout=30).status_code == 401
    assert httpx.get(f"{base}/ui/api/overview", cookies=cookie, timeout=30).status_code == 200
    foreign = httpx.post(
        f"{base}/ui/api/terminals/{terminal_id}/answer",
        json={"keys": ["y"], "force": True},
        cookies=cookie,
        headers={"Origin": "http://evil.example"},
        timeout=30,
    )
    assert foreign.status_code == 403

    with headless_chromium() as browser:
        context: Any = browser.new_context(viewport={"width": 390, "height": 844})
        page = context.new_page()
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))

        page.goto(f"{base}/ui/terminals/{terminal_id}")
        assert page.url == f"{base}/ui/login?next=/ui/terminals/{terminal_id}"
        page.fill("input[name=token]", "not-the-token")
        page.click("button[type=submit]")
        assert "That is not the server's token." in page.locator(".problem").inner_text()

        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/ui/terminals/{terminal_id}")
        page.locator("body[data-status]").wait_for(timeout=30_000)
        wait_until(
            lambda: "<script>window.owned = 1</script>" in page.locator("#screen").inner_text(),
            60,
            message="the hostile text never showed on the screen",
        )
        # It is text: no element was made of it, nothing of it ran.
        assert page.locator("#screen img, #screen script, #screen b").count() == 0
        assert page.evaluate("window.owned") is None
        assert page.title() != "owned"

        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies[UI_COOKIE]["httpOnly"] is True
        assert cookies[UI_COOKIE]["sameSite"] == "Strict"
        assert cookies[UI_COOKIE]["value"] != TOKEN
        assert page.evaluate("document.cookie") == ""  # out of the scripts' reach

        # The index works too, with the same cookie; the token is in no URL asked for.
        page.goto(f"{base}/ui")
        page.get_by_text(terminal_id).wait_for(timeout=30_000)
        context.close()
    assert urls, "the browser asked for nothing"
    for url in urls:
        assert TOKEN not in url and ui_cookie_value(TOKEN) not in url, url
