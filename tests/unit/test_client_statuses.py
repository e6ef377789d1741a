"""Statuses come out of the client as `TerminalStatus`, and an unknown one is an error."""

from __future__ import annotations

import httpx
import pytest

from baton.errors import ApiError
from baton.orchestrator.client import ApiClient
from baton.status import TerminalStatus, parse_status


def _client(status: object) -> ApiClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "t1", "status": status})

    return ApiClient("http://127.0.0.1:9", transport=httpx.MockTransport(answer))


def test_every_status_of_the_wire_is_read_as_the_enum() -> None:
    for status in TerminalStatus:
        with _client(status.value) as api:
            read = api.get_status("t1")
            assert read is status
            assert api.wait_status("t1", TerminalStatus.IDLE, 1) is status


@pytest.mark.parametrize("status", ["busy", "", None, 3, "IDLE"])
def test_an_unknown_status_is_one_line_naming_it(status: object) -> None:
    with _client(status) as api, pytest.raises(ApiError) as error:
        api.get_status("t1")
    assert str(error.value).startswith("GET http://127.0.0.1:9/terminals/t1: no known status")
    assert repr(status) in str(error.value)
    assert parse_status(status) is None
