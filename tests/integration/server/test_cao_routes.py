"""The routes CAO 2.5.4's clients call beyond the basics, against a real `baton serve`.

run-step (their handoff), inboxes, siblings, keys, working directory, output ranges,
labels, `caller_id`, `last_active` and session rows; the shapes follow CAO's API.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, running_baton_server, wait_for_status
from tests.support.waiting import wait_until

pytestmark = pytest.mark.tmux


def _create(client: httpx.Client, directory: Path, **params: str) -> dict:
    query = {
        "agent_profile": "programmer",
        "provider": "scripted",
        "working_directory": str(directory),
        **params,
    }
    response = client.post("/sessions", params=query)
    assert response.status_code == 201, response.text
    return response.json()


def _add(client: httpx.Client, session: str, directory: Path, **params: object) -> httpx.Response:
    body = params.pop("json", None)
    query = {"agent_profile": "tester", "provider": "scripted", **params}
    if directory is not None:
        query["working_directory"] = str(directory)
    return client.post(f"/sessions/{session}/terminals", params=query, json=body)


def _response_prompt(directory: Path, name: str, text: str) -> str:
    path = directory / ".tmp" / "agent-responses" / name
    return f"{text}\n\nRESPONSE FILE INSTRUCTION: write your final answer to {path}"


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server whose scripted agents look busy for 2 s per prompt."""
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "2"}) as server:
        yield server


# -- caller_id, last_active, sessions --------------------------------------------------


def test_caller_id_is_recorded_from_the_create_call(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        supervisor = _create(client, tmp_path)
        assert supervisor["caller_id"] is None
        worker = _add(client, supervisor["session_name"], tmp_path, caller_id=supervisor["id"])
        assert worker.status_code == 201, worker.text
        assert worker.json()["caller_id"] == supervisor["id"]
        again = client.get(f"/terminals/{worker.json()['id']}").json()
        assert again["caller_id"] == supervisor["id"]
        # Baton restricts no tools: everything, unless the creator named a list.
        assert again["allowed_tools"] == ["*"]
        limited = _add(
            client,
            supervisor["session_name"],
            tmp_path,
            allowed_tools="fs_read,@cao-mcp-server",
        ).json()
        assert limited["allowed_tools"] == ["fs_read", "@cao-mcp-server"]
        bad = _add(client, supervisor["session_name"], tmp_path, caller_id="NOT-AN-ID")
        assert bad.status_code == 422


def test_last_active_moves_on_input_and_on_status_changes(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)
        created = terminal["last_active"]
        assert created is not None and created.endswith("+00:00")
        time.sleep(0.05)
        assert client.post(f"/terminals/{terminal['id']}/input", params={"message": "hi"})
        typed = client.get(f"/terminals/{terminal['id']}").json()["last_active"]
        assert typed > created
        wait_for_status(client, terminal["id"], {"completed"})
        rested = client.get(f"/terminals/{terminal['id']}").json()["last_active"]
        assert rested > typed


def test_session_rows_name_their_profile_and_directory_and_delete_is_idempotent(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path, agent_profile="system_analyst")
        rows = client.get("/sessions").json()
        assert rows == [
            {
                "id": terminal["session_name"],
                "name": terminal["session_name"],
                "status": "detached",
                "agent_profile": "system_analyst",
                "working_directory": str(tmp_path.resolve()),
            }
        ]
        first = client.delete(f"/sessions/{terminal['session_name']}")
        assert first.status_code == 200
        assert first.json() == {
            "success": True,
            "deleted": [terminal["session_name"]],
            "errors": [],
        }
        again = client.delete(f"/sessions/{terminal['session_name']}")
        assert again.status_code == 200 and again.json()["success"] is True
        assert client.get("/sessions").json() == []


# -- run-step ---------------------------------------------------------------------------


def test_run_step_creates_prompts_answers_and_tears_down(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        supervisor = _create(client, tmp_path)
        prompt = _response_prompt(tmp_path, "analyst_summary.md", "Analyse the bug.")
        response = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "system_analyst",
                "prompt": prompt,
                "session_name": supervisor["session_name"],
                "caller_id": supervisor["id"],
                "timeout": 60,
                "job_id": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            },
        )
        assert response.status_code == 200, response.text
        result = response.json()
        written = (tmp_path / ".tmp" / "agent-responses" / "analyst_summary.md").read_text()
        assert result["status"] == "completed"
        assert result["replayed"] is False
        assert written.startswith("ANALYST_SUMMARY")
        assert result["last_message"].strip().startswith("ANALYST_SUMMARY")
        # The outcome stays readable under the job id, for a client whose request timed out.
        kept = client.get("/handoff-results/0f1e2d3c4b5a69788796a5b4c3d2e1f0").json()
        assert kept["state"] == "completed"
        assert kept["terminal_id"] == result["terminal_id"]
        assert kept["last_message"] == result["last_message"]
        assert kept["error_message"] is None
        assert client.get("/handoff-results/unknown-job").status_code == 404
        # The worker is gone; the supervisor and its session stay.
        assert client.get(f"/terminals/{result['terminal_id']}").status_code == 404
        terminals = client.get(f"/sessions/{supervisor['session_name']}/terminals").json()
        assert [t["id"] for t in terminals] == [supervisor["id"]]


def test_run_step_without_a_session_uses_a_fresh_one_and_can_keep_the_worker(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        response = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": "Say hello.",
                "working_directory": str(tmp_path),
                "teardown": False,
            },
        )
        assert response.status_code == 200, response.text
        worker = client.get(f"/terminals/{response.json()['terminal_id']}").json()
        assert worker["status"] == "completed"
        assert worker["caller_id"] is None
        assert "Received 1 line(s)" in response.json()["last_message"]
        # A second step on the same worker: the answer is the new one, not the old.
        again = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": "Say hello\nagain.",
                "reuse_terminal_id": worker["id"],
                "teardown": True,
            },
        )
        assert again.status_code == 200, again.text
        assert "Received 2 line(s)" in again.json()["last_message"]
        # Reused terminals belong to the caller: never torn down by the step.
        assert client.get(f"/terminals/{worker['id']}").status_code == 200
        # A prompt the agent never works on (a slash command it ignores) is not answered
        # with the previous turn's message: the step runs out of time instead.
        ignored = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": "/noop",
                "reuse_terminal_id": worker["id"],
                "timeout": 2,
            },
        )
        assert ignored.status_code == 504, ignored.text
        assert ignored.json()["detail"]["kind"] == "timeout"


def test_run_step_worker_inherits_the_callers_directory(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "supervisor-dir"
    elsewhere.mkdir()
    with baton_server.client() as client:
        supervisor = _create(client, elsewhere)
        response = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": _response_prompt(elsewhere, "analyst_summary.md", "Look."),
                "session_name": supervisor["session_name"],
                "caller_id": supervisor["id"],
            },
        )
        assert response.status_code == 200, response.text
    assert (elsewhere / ".tmp" / "agent-responses" / "analyst_summary.md").is_file()


def test_run_step_errors_as_cao_clients_read_them(
    slow_server: ServerProcess, tmp_path: Path
) -> None:
    with slow_server.client() as client:
        unknown = client.post(
            "/terminals/run-step",
            json={"provider": "scripted", "agent": "nobody", "prompt": "x"},
        )
        assert unknown.status_code == 400
        assert "unknown agent_profile" in unknown.json()["detail"]

        slow = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": "take your time",
                "working_directory": str(tmp_path),
                "timeout": 0.5,
                "job_id": "slow-job",
            },
        )
        assert slow.status_code == 504
        detail = slow.json()["detail"]
        assert detail["kind"] == "timeout"
        assert "did not complete within 0.5s" in detail["message"]
        failed = client.get("/handoff-results/slow-job").json()
        assert failed["state"] == "error"
        assert failed["terminal_id"] == detail["terminal_id"]
        assert "did not complete" in failed["error_message"]
        # A worker that ran long is left for the caller to inspect or delete.
        assert client.get(f"/terminals/{detail['terminal_id']}").status_code == 200

        mismatch = client.post(
            "/terminals/run-step",
            json={
                "provider": "codex",
                "agent": "tester",
                "prompt": "x",
                "reuse_terminal_id": detail["terminal_id"],
            },
        )
        assert mismatch.status_code == 400
        assert "runs provider 'scripted'" in mismatch.json()["detail"]

        project = tmp_path / "broken"
        (project / ".baton").mkdir(parents=True)
        (project / ".baton" / "scenario.json").write_text("[not json", encoding="utf-8")
        crashed = client.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "tester",
                "prompt": _response_prompt(project, "test_result.md", "Run the tests."),
                "working_directory": str(project),
                "timeout": 60,
            },
        )
        assert crashed.status_code == 502, crashed.text
        assert crashed.json()["detail"]["kind"] == "error"
        assert crashed.json()["detail"]["terminal_id"]


# -- inbox ------------------------------------------------------------------------------


def test_inbox_delivers_when_the_receiver_rests_one_message_per_rest(
    slow_server: ServerProcess, tmp_path: Path
) -> None:
    with slow_server.client() as client:
        receiver = _create(client, tmp_path)["id"]
        sender = "0badcafe"
        client.post(f"/terminals/{receiver}/input", params={"message": "busy now"})
        first = client.post(
            f"/terminals/{receiver}/inbox/messages",
            params={"sender_id": sender, "message": "first note"},
        )
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["success"] is True and body["sender_id"] == sender
        assert body["receiver_id"] == receiver and body["created_at"].endswith("+00:00")
        second = client.post(
            f"/terminals/{receiver}/inbox/messages",
            params={"sender_id": sender, "message": "second note"},
        ).json()
        assert second["message_id"] > body["message_id"]
        # The receiver is working: both wait.
        pending = client.get(f"/terminals/{receiver}/inbox/messages").json()
        assert [(m["message"], m["status"]) for m in pending] == [
            ("first note", "pending"),
            ("second note", "pending"),
        ]
        assert set(pending[0]) == {
            "id",
            "sender_id",
            "receiver_id",
            "message",
            "status",
            "created_at",
        }

        # It rests, takes the first one, works on it; the second waits for the next rest.
        def statuses() -> list[tuple[str, str]]:
            messages = client.get(f"/terminals/{receiver}/inbox/messages").json()
            return [(m["status"], m["message"]) for m in messages]

        wait_until(lambda: statuses()[0][0] == "delivered", 30, interval=0.1)
        assert statuses() == [("delivered", "first note"), ("pending", "second note")]
        wait_for_status(client, receiver, {"completed"}, timeout=30)

        def delivered() -> list[str]:
            messages = client.get(
                f"/terminals/{receiver}/inbox/messages", params={"status": "delivered"}
            ).json()
            return [m["message"] for m in messages]

        wait_until(lambda: len(delivered()) == 2, 30, interval=0.1)
        assert delivered() == ["first note", "second note"]
        wait_for_status(client, receiver, {"completed"}, timeout=30)

        # Both reached the CLI as typed text (its scrollback shows them once drawn).
        def output() -> str:
            full = client.get(f"/terminals/{receiver}/output", params={"mode": "full"})
            return str(full.json()["output"])

        wait_until(lambda: "first note" in output() and "second note" in output(), 10, interval=0.2)


def test_a_message_the_receiver_ignores_holds_the_next_one_back(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """The next message waits for the next rest, even when the last one caused no work."""
    with baton_server.client() as client:
        receiver = _create(client, tmp_path)["id"]
        post = f"/terminals/{receiver}/inbox/messages"
        client.post(post, params={"sender_id": "0badcafe", "message": "/noop"})
        client.post(post, params={"sender_id": "0badcafe", "message": "real work"})
        messages = client.get(post).json()
        assert [(m["message"], m["status"]) for m in messages] == [
            ("/noop", "delivered"),
            ("real work", "pending"),
        ]
        wait_until(lambda: client.get(post).json()[1]["status"] == "delivered", 30, interval=0.2)
        assert wait_for_status(client, receiver, {"completed"}) == "completed"


def test_inbox_errors(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        receiver = _create(client, tmp_path)["id"]
        missing = client.post(
            "/terminals/0000aaaa/inbox/messages", params={"sender_id": "x", "message": "y"}
        )
        assert missing.status_code == 404
        no_text = client.post(f"/terminals/{receiver}/inbox/messages", params={"sender_id": "x"})
        assert no_text.status_code == 422
        bad_status = client.get(f"/terminals/{receiver}/inbox/messages?status=lost")
        assert bad_status.status_code == 400
        assert "pending, delivered or failed" in bad_status.json()["detail"]
        too_many = client.get(f"/terminals/{receiver}/inbox/messages?limit=101")
        assert too_many.status_code == 422
        assert client.get("/terminals/0000aaaa/inbox/messages").status_code == 404


# -- siblings and labels -----------------------------------------------------------------


def test_siblings_share_a_group_prefix_within_the_session(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        first = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
            json={"group": ["acme", "billing"], "metadata": {"task": "lead"}},
        ).json()
        assert first["group"] == ["acme", "billing"]
        session = first["session_name"]
        second = _add(
            client, session, tmp_path, json={"group": ["acme", "billing", "tests"]}
        ).json()
        third = _add(client, session, tmp_path, json={"group": ["acme", "shipping"]}).json()
        loner = _add(client, session, tmp_path).json()
        elsewhere = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
            json={"group": ["acme", "billing"]},
        ).json()

        siblings = client.get(f"/terminals/{first['id']}/siblings").json()
        assert [s["id"] for s in siblings] == [second["id"]]
        assert siblings[0]["group"] == ["acme", "billing", "tests"]
        assert siblings[0]["status"] == "idle"
        assert siblings[0]["metadata"] is None
        wider = client.get(f"/terminals/{first['id']}/siblings", params={"depth": 1}).json()
        assert {s["id"] for s in wider} == {second["id"], third["id"]}
        across = client.get(
            f"/terminals/{first['id']}/siblings", params={"cross_session": "true"}
        ).json()
        assert {s["id"] for s in across} == {second["id"], elsewhere["id"]}
        from_second = client.get(f"/terminals/{second['id']}/siblings").json()
        assert from_second == []  # its own group is longer than anyone else's
        assert client.get(f"/terminals/{loner['id']}/siblings").json() == []
        assert client.get(f"/terminals/{first['id']}/siblings?depth=0").status_code == 422
        assert client.get("/terminals/0000aaaa/siblings").status_code == 404


def test_metadata_and_group_are_replaced_whole(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)["id"]
        updated = client.patch(
            f"/terminals/{terminal}/metadata", json={"metadata": {"doing": "tests", "step": 2}}
        )
        assert updated.status_code == 200
        assert updated.json()["metadata"] == {"doing": "tests", "step": 2}
        replaced = client.patch(f"/terminals/{terminal}/metadata", json={"metadata": {"a": 1}})
        assert replaced.json()["metadata"] == {"a": 1}
        cleared = client.patch(f"/terminals/{terminal}/metadata", json={"metadata": None})
        assert cleared.json()["metadata"] is None
        assert client.patch(f"/terminals/{terminal}/metadata", json={}).status_code == 422
        huge = {"blob": "x" * 17000}
        too_big = client.patch(f"/terminals/{terminal}/metadata", json={"metadata": huge})
        assert too_big.status_code == 400 and "max 16384" in too_big.json()["detail"]
        grouped = client.patch(f"/terminals/{terminal}/group", json={"group": ["a", "b"]})
        assert grouped.json()["group"] == ["a", "b"]
        assert client.get(f"/terminals/{terminal}").json()["group"] == ["a", "b"]
        unknown = client.patch("/terminals/0000aaaa/metadata", json={"metadata": {}})
        assert unknown.status_code == 404


# -- keys, working directory, output ranges ----------------------------------------------


def test_keys_are_pressed_one_at_a_time_and_refused_once_the_cli_exited(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)["id"]
        for key in ("h", "i"):
            pressed = client.post(f"/terminals/{terminal}/key", params={"key": key})
            assert pressed.status_code == 200 and pressed.json() == {"success": True}
        wait_until(lambda: "› hi" in baton_server.screen(), 10, message="the keys never showed")
        assert client.post(f"/terminals/{terminal}/key", params={"key": "Enter"}).is_success
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        # Exactly one key: no trailing newline (typed as text plus Enter), no `;` (tmux's
        # command separator), no text.
        bad_keys = ("hello", "C-", "Enter; rm", "", "C-a\n", "Enter\n", "y\n", ";", "C-;")
        for bad in bad_keys:
            refused = client.post(f"/terminals/{terminal}/key", params={"key": bad})
            assert refused.status_code == 400, bad
            detail = refused.json()["detail"]
            assert isinstance(detail, str) and "\n" not in detail, bad
        assert "C-a" not in baton_server.screen()
        assert client.get(f"/terminals/{terminal}").json()["status"] == "completed"
        client.post(f"/terminals/{terminal}/exit")
        assert wait_for_status(client, terminal, {"error"}) == "error"
        dead = client.post(f"/terminals/{terminal}/key", params={"key": "Enter"})
        assert dead.status_code == 409


def test_working_directory_and_output_ranges(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)["id"]
        where = client.get(f"/terminals/{terminal}/working-directory")
        assert where.json() == {"working_directory": str(tmp_path.resolve())}
        log = (baton_server.state_dir / "terminals" / terminal / "pane.log").read_bytes()
        part = client.get(
            f"/terminals/{terminal}/output/range", params={"offset": 8, "length": 30}
        ).json()
        assert part["terminal_id"] == terminal
        assert (part["offset"], part["length"]) == (8, 30)
        assert part["data"] == log[8:38].decode("utf-8", "replace")
        beyond = client.get(
            f"/terminals/{terminal}/output/range", params={"offset": 10**9, "length": 5}
        )
        assert beyond.json()["data"] == ""
        too_long = client.get(
            f"/terminals/{terminal}/output/range", params={"offset": 0, "length": 2 * 1024**2}
        )
        assert too_long.status_code == 422
        negative = client.get(
            f"/terminals/{terminal}/output/range", params={"offset": -1, "length": 5}
        )
        assert negative.status_code == 422
        assert client.get("/terminals/0000aaaa/working-directory").status_code == 404


def test_a_terminal_json_round_trips_through_json(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """Every field CAO's Terminal model reads is present and JSON-serialisable."""
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)
    for key in ("id", "name", "provider", "session_name", "caller_id", "status", "last_active"):
        assert key in terminal
    assert json.loads(json.dumps(terminal)) == terminal
