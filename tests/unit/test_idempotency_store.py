"""baton serve's idempotency keys: the registry keeps each key's first outcome, across a
restart (a new process over the same database), for a bounded time and number of keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from baton.server import registry as registry_module
from baton.server.idempotency import IdempotencyMiddleware, outcome_if_cut_off
from baton.server.registry import Registry


class Typist:
    """A stand-in for the input route: counts what it types."""

    def __init__(self) -> None:
        self.typed: list[str] = []
        self.status = 200

    async def handle(self, request: Request) -> JSONResponse:
        self.typed.append(request.query_params["message"])
        return JSONResponse({"success": True, "n": len(self.typed)}, status_code=self.status)


def _server(database: Path, typist: Typist) -> TestClient:
    """One server process: a fresh middleware (a new boot) over the database."""
    app = Starlette(routes=[Route("/terminals/{tid}/input", typist.handle, methods=["POST"])])
    app.add_middleware(IdempotencyMiddleware, registry=Registry(database))
    return TestClient(app)


def _send(client: TestClient, key: str | None, message: str = "hello") -> tuple[int, dict, str]:
    headers = {"Idempotency-Key": key} if key else {}
    response = client.post("/terminals/t1/input", params={"message": message}, headers=headers)
    return response.status_code, response.json(), response.headers.get("Idempotency-Status", "")


def test_a_repeated_key_is_answered_with_the_first_outcome_and_not_typed_again(
    tmp_path: Path,
) -> None:
    typist = Typist()
    client = _server(tmp_path / "baton.db", typist)
    assert _send(client, "k1") == (200, {"success": True, "n": 1}, "")
    assert _send(client, "k1") == (200, {"success": True, "n": 1}, "replayed")
    assert _send(client, "k2") == (200, {"success": True, "n": 2}, "")
    assert _send(client, None) == (200, {"success": True, "n": 3}, "")
    assert typist.typed == ["hello"] * 3


def test_the_outcome_survives_a_restart_of_the_server(tmp_path: Path) -> None:
    typist = Typist()
    _send(_server(tmp_path / "baton.db", typist), "k1")
    restarted = _server(tmp_path / "baton.db", typist)
    assert _send(restarted, "k1")[1:] == ({"success": True, "n": 1}, "replayed")
    assert typist.typed == ["hello"]


def test_an_error_outcome_is_kept_but_a_server_error_is_not(tmp_path: Path) -> None:
    typist = Typist()
    client = _server(tmp_path / "baton.db", typist)
    typist.status = 409
    assert _send(client, "refused")[0] == 409
    typist.status = 200
    assert _send(client, "refused")[0] == 409  # the same answer: nothing typed again
    typist.status = 500
    assert _send(client, "broken")[0] == 500
    typist.status = 200
    assert _send(client, "broken")[0] == 200  # a 5xx did nothing a repeat would double
    assert len(typist.typed) == 3


def test_a_key_cut_off_by_the_server_s_death_is_answered_interrupted(tmp_path: Path) -> None:
    database = tmp_path / "baton.db"
    Registry(database).claim_key("POST /terminals/t1/input k1", "an-earlier-process")
    typist = Typist()
    status, body, marker = _send(_server(database, typist), "k1")
    assert (status, marker) == (409, "interrupted")
    assert "unknown" in body["detail"]
    assert typist.typed == []


def test_the_same_key_on_another_route_is_another_request(tmp_path: Path) -> None:
    typist = Typist()
    client = _server(tmp_path / "baton.db", typist)
    _send(client, "k1")
    response = client.post(
        "/terminals/t2/input", params={"message": "x"}, headers={"Idempotency-Key": "k1"}
    )
    assert response.headers.get("Idempotency-Status") is None
    assert typist.typed == ["hello", "x"]


def test_keys_are_forgotten_after_a_day_and_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = Registry(tmp_path / "baton.db")
    clock = [1_000_000.0]
    monkeypatch.setattr(registry_module.time, "time", lambda: clock[0])
    registry.claim_key("old", "boot")
    registry.finish_key("old", 200, "application/json", b"{}")
    clock[0] += registry_module.IDEMPOTENCY_SECONDS + 1
    registry.claim_key("new", "boot")
    assert registry.key_outcome("old") is None
    assert registry.key_outcome("new") is not None
    monkeypatch.setattr(registry_module, "IDEMPOTENCY_MAX_KEYS", 3)
    for number in range(5):
        clock[0] += 1
        registry.claim_key(f"k{number}", "boot")
    kept = [name for name in ("new", "k0", "k1", "k2", "k3", "k4") if registry.key_outcome(name)]
    assert kept == ["k2", "k3", "k4"]


def test_work_past_undoing_is_answered_as_done_even_if_the_request_then_fails(
    tmp_path: Path,
) -> None:
    typed: list[str] = []

    async def types_then_breaks(request: Request) -> JSONResponse:
        typed.append(request.query_params["message"])
        outcome_if_cut_off(200, {"success": True})  # submitted: a repeat must not retype
        raise RuntimeError("the server broke after typing")

    app = Starlette(routes=[Route("/terminals/{tid}/input", types_then_breaks, methods=["POST"])])
    app.add_middleware(IdempotencyMiddleware, registry=Registry(tmp_path / "baton.db"))
    client = TestClient(app, raise_server_exceptions=False)
    first = client.post(
        "/terminals/t1/input", params={"message": "hello"}, headers={"Idempotency-Key": "k1"}
    )
    assert first.status_code == 500
    assert _send(client, "k1") == (200, {"success": True}, "replayed")
    assert typed == ["hello"]
    outcome_if_cut_off(200, {})  # outside a keyed request: nothing happens
