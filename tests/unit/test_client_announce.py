"""`ApiClient.announce_run`: the run tells the server's web cockpit where its state file is,
and a server without the route (a stock cao-server) costs the run nothing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from baton.orchestrator.client import ApiClient


def _client(handler: object) -> ApiClient:
    return ApiClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


def test_the_run_announces_its_state_file_and_gets_its_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"success": True, "page": "/ui/runs/baton-1"})

    with _client(handler) as api:
        page = api.announce_run("baton-1", Path("/w/.tmp/s.json"), Path("/w"))
    assert page == "/ui/runs/baton-1"
    assert seen[0].method == "PUT" and seen[0].url.path == "/baton/runs/baton-1"
    assert json.loads(seen[0].content) == {"state_file": "/w/.tmp/s.json", "wd": "/w"}


def test_a_server_without_the_route_or_not_answering_is_no_error() -> None:
    def missing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "Not Found"})

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    for handler in (missing, down):
        with _client(handler) as api:
            assert api.announce_run("baton-1", Path("/w/s.json"), Path("/w")) is None
