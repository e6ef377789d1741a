"""ApiClient through a server outage: waits, idempotency keys, no prompt typed twice.

The server is an httpx transport that fails in chosen ways; the outage window runs on a
manual clock, so nothing here sleeps.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

import httpx
import pytest

from baton.errors import (
    ApiError,
    ApiHttpError,
    ApiOutcomeUnknown,
    ApiUnreachableError,
    RunInterrupted,
)
from baton.orchestrator.client import IDEMPOTENCY_HEADER, ApiClient
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.outage import (
    ENDING_OUTAGE_SECONDS,
    OutagePhase,
    OutageReport,
    OutageWindow,
)

URL = "http://127.0.0.1:9"
MESSAGE = "Implement the feature.\nWrite your whole answer to analyst.md, then stop."


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class Server:
    """A scripted CAO server: `faults` are consumed one per request, first to last.

    A fault is "connect" (nothing listening), "reset" (the request arrived, was acted
    on, and the answer was lost), "drop" (arrived, lost before anything was done) or an
    HTTP status (a proxy's answer). Inputs it acts on are `typed`, once per key when
    `honours_keys`.
    """

    honours_keys: bool = True
    status: str = "idle"
    output: str = ""
    faults: list[object] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    outcomes: dict[str, httpx.Response] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        fault = self.faults.pop(0) if self.faults else None
        if fault == "connect":
            raise httpx.ConnectError("connection refused", request=request)
        if fault == "drop":
            raise httpx.RemoteProtocolError("server disconnected", request=request)
        if isinstance(fault, int):
            return httpx.Response(fault, text="Bad Gateway")
        response = self._act(request)
        if fault == "reset":
            raise httpx.ReadError("connection reset by peer", request=request)
        return response

    def _act(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path == "/health":
            data = {"status": "ok"}
            if self.honours_keys:
                data["idempotency"] = "Idempotency-Key"
            return httpx.Response(200, json=data)
        if request.method == "GET" and path.endswith("/output"):
            return httpx.Response(200, json={"output": self.output})
        if request.method == "GET":
            return httpx.Response(200, json={"id": "t1", "status": self.status})
        key = request.headers.get(IDEMPOTENCY_HEADER)
        self.keys.append(key)
        if self.honours_keys and key in self.outcomes:
            return self.outcomes[key]
        if path.endswith("/input"):
            self.typed.append(request.url.params["message"])
            self.status = "processing"
            response = httpx.Response(200, json={"success": True})
        else:
            terminal_id = f"t{len(self.created) + 1}"
            self.created.append(terminal_id)
            response = httpx.Response(201, json={"id": terminal_id, "session_name": "s"})
        if self.honours_keys and key:
            self.outcomes[key] = response
        return response


def _client(
    server: Server, seconds: float = 600.0
) -> tuple[ApiClient, ManualClock, list[OutageReport]]:
    clock = ManualClock()
    reports: list[OutageReport] = []
    window = OutageWindow(URL, seconds, report=reports.append, clock=clock, sleep=clock.sleep)
    api = ApiClient(URL, outage=window, transport=httpx.MockTransport(server))
    return api, clock, reports


def test_a_read_waits_through_the_outage_and_reports_its_start_and_end_once() -> None:
    server = Server(status="completed", faults=["connect"] * 5 + [503, 502])
    api, clock, reports = _client(server)
    assert api.get_status("t1") == "completed"
    assert [report.phase for report in reports] == [OutagePhase.BEGAN, OutagePhase.ENDED]
    assert reports[1].seconds == pytest.approx(clock.now)
    assert clock.now > 3.75  # longer than the old read retries allowed


def test_past_the_window_the_call_fails_in_one_line() -> None:
    server = Server(faults=["connect"] * 1000)
    api, clock, reports = _client(server, seconds=30.0)
    with pytest.raises(ApiUnreachableError) as raised:
        api.get_status("t1")
    assert URL in str(raised.value) and "\n" not in str(raised.value)
    assert clock.now == pytest.approx(30.0)
    assert [report.phase for report in reports] == [OutagePhase.BEGAN]


def test_a_long_outage_is_reported_once_while_it_lasts() -> None:
    server = Server(faults=["connect"] * 60)
    api, _, reports = _client(server)
    api.get_status("t1")
    phases = [report.phase for report in reports]
    assert phases == [OutagePhase.BEGAN, OutagePhase.LONG, OutagePhase.ENDED]


def test_a_write_that_never_arrived_is_sent_again_even_to_a_server_without_keys() -> None:
    server = Server(honours_keys=False, faults=["connect", "connect"])
    api, _, _ = _client(server)
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]


def test_a_lost_answer_is_asked_again_with_the_same_key_and_typed_once() -> None:
    server = Server(faults=["reset", "connect", "connect"])
    api, _, reports = _client(server)
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]
    assert len(server.keys) == 2 and server.keys[0] == server.keys[1] and server.keys[0]
    assert [report.phase for report in reports] == [OutagePhase.BEGAN, OutagePhase.ENDED]


def test_each_send_has_its_own_key() -> None:
    server = Server()
    api, _, _ = _client(server)
    api.send_input("t1", MESSAGE)
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE, MESSAGE]
    assert server.keys[0] != server.keys[1]


def test_without_keys_a_message_the_agent_is_working_on_is_not_sent_again() -> None:
    server = Server(honours_keys=False, faults=["reset"])
    api, _, _ = _client(server)
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]  # status processing: it arrived


def test_without_keys_a_message_shown_on_screen_is_not_sent_again() -> None:
    server = Server(honours_keys=False, faults=["reset"])
    server.output = "› Write your whole answer to analyst.md, then stop.\n"

    def typed_but_done(request: httpx.Request) -> httpx.Response:
        response = server(request)
        server.status = "completed"  # it finished before the server answered again
        return response

    api = ApiClient(URL, outage_seconds=5, transport=httpx.MockTransport(typed_but_done))
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]


def test_without_keys_a_message_that_did_not_arrive_is_sent_once_more() -> None:
    server = Server(honours_keys=False, faults=["drop"])
    api, _, _ = _client(server)
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]  # the first never arrived; the second did
    assert len(server.keys) == 1


def test_an_interrupted_key_is_checked_before_sending_again() -> None:
    server = Server()

    def interrupted_once(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and not server.keys:
            server.keys.append(request.headers.get(IDEMPOTENCY_HEADER))
            return httpx.Response(
                409, json={"detail": "cut off"}, headers={"Idempotency-Status": "interrupted"}
            )
        return server(request)

    api = ApiClient(URL, transport=httpx.MockTransport(interrupted_once))
    api.send_input("t1", MESSAGE)
    assert server.typed == [MESSAGE]  # idle, not on screen: sent again, with a new key
    assert server.keys[0] != server.keys[1]


def test_a_create_whose_answer_was_lost_is_returned_once_by_a_server_with_keys() -> None:
    server = Server(faults=["reset"])
    api, _, _ = _client(server)
    created = api.create_terminal("s", "tester")
    assert created["id"] == "t1" and server.created == ["t1"]


def test_a_create_whose_answer_was_lost_is_unknown_to_a_server_without_keys() -> None:
    server = Server(honours_keys=False, faults=["reset"])
    api, _, _ = _client(server)
    with pytest.raises(ApiOutcomeUnknown):
        api.create_terminal("s", "tester")
    assert server.created == ["t1"]  # not asked twice


def test_a_slow_write_is_not_taken_for_an_outage() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    api = ApiClient(URL, transport=httpx.MockTransport(slow))
    with pytest.raises(ApiError) as raised:
        api.send_input("t1", MESSAGE)
    assert not isinstance(raised.value, ApiOutcomeUnknown)


def test_health_is_not_waited_for() -> None:
    calls: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ConnectError("refused", request=request)

    api = ApiClient(URL, outage_seconds=600, transport=httpx.MockTransport(refuse))
    with pytest.raises(ApiUnreachableError):
        api.health()
    assert calls == ["/health"]


def test_without_keys_the_caller_s_own_sign_settles_a_finished_turn() -> None:
    for answer_file_written, times_typed in ((True, 1), (False, 2)):
        server = Server(honours_keys=False, faults=["reset"])

        def finished(request: httpx.Request, server: Server = server) -> httpx.Response:
            response = server(request)
            server.status = "completed"  # done during the outage; its screen shows no prompt
            return response

        api = ApiClient(URL, transport=httpx.MockTransport(finished))
        api.send_input("t1", MESSAGE, arrived=lambda written=answer_file_written: written)
        assert server.typed == [MESSAGE] * times_typed


def test_the_server_s_own_5xx_is_an_answer_not_an_outage() -> None:
    posts: list[str] = []

    def not_taken(request: httpx.Request) -> httpx.Response:
        posts.append(request.method)
        detail = {"detail": "terminal t1: the CLI did not take the input"}
        return httpx.Response(502, json=detail)

    clock = ManualClock()
    window = OutageWindow(URL, 600, clock=clock, sleep=clock.sleep)
    api = ApiClient(URL, outage=window, transport=httpx.MockTransport(not_taken))
    with pytest.raises(ApiHttpError) as raised:
        api.send_input("t1", MESSAGE)
    assert raised.value.status_code == 502 and posts == ["POST"]
    assert clock.slept == []


def test_a_stop_held_while_a_prompt_waits_for_an_absent_server_ends_the_wait() -> None:
    """A SIGTERM during a prompt's send (signals held) must not sit out the whole window:
    the batch that stopped the run is waiting for its state file."""
    clock = ManualClock()

    def sleep_then_stop(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 3:  # three attempts in, the batch stops its loops
            os.kill(os.getpid(), signal.SIGTERM)

    window = OutageWindow(URL, 600.0, clock=clock, sleep=sleep_then_stop)
    server = Server(faults=["connect"] * 1000)
    api = ApiClient(URL, outage=window, transport=httpx.MockTransport(server))
    guard = SignalGuard(on_held=window.ending)
    guard.install()
    try:
        with pytest.raises(RunInterrupted), guard.critical():  # noqa: SIM117 (the order)
            with pytest.raises(ApiUnreachableError):
                api.send_input("t1", MESSAGE)
    finally:
        guard.restore()
    assert server.typed == []
    assert sum(clock.slept) <= ENDING_OUTAGE_SECONDS + 2.0  # not the 600 s window
